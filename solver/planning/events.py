"""The replay's event queue: simulated time advances from one event to the next, never in fixed steps.

Events at equal times are handled in the order of their :class:`Kind` (a finished job frees its GPUs before the cycle
at that instant runs), then in the order they were pushed.

>>> queue = EventQueue()
>>> queue.push(5.0, Kind.CYCLE)
>>> queue.push(5.0, Kind.DONE, ("train", 1))
>>> queue.push(1.0, Kind.SAMPLE)
>>> [queue.pop()[:2] for _ in range(3)]
[(1.0, <Kind.SAMPLE: 6>), (5.0, <Kind.DONE: 0>), (5.0, <Kind.CYCLE: 5>)]
"""

from __future__ import annotations

import heapq
import itertools
from enum import IntEnum
from typing import Any

__all__ = ["EventQueue", "Kind"]


class Kind(IntEnum):
    """What happens at an event, in the order events at equal times are handled."""

    DONE = 0
    """A job's work may be done (payload: its name, and the epoch its completion was scheduled in)."""
    GONE = 1
    """Evicted tasks have left their nodes after the grace period (payload: job name, task positions)."""
    CHANGE = 2
    """A scheduled change of the cluster (payload: its position among the replay's changes)."""
    ARRIVE = 3
    """A job of the workload is submitted (payload: its name)."""
    WAKE = 4
    """Something may have become possible: a protection or a backoff ended, a quota delay ran out."""
    CYCLE = 5
    """A scheduling cycle."""
    SAMPLE = 6
    """A row of the time series."""


class EventQueue:
    """A heap of ``(time, kind, order pushed, payload)``."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Any]] = []
        self._order = itertools.count()
        self.waiting = 0
        """Events in the queue other than samples: when none is left, nothing can change any more."""

    def push(self, at: float, kind: Kind, payload: Any = None) -> None:
        heapq.heappush(self._heap, (at, kind, next(self._order), payload))
        if kind != Kind.SAMPLE:
            self.waiting += 1

    def pop(self) -> tuple[float, Kind, Any]:
        at, kind, _, payload = heapq.heappop(self._heap)
        if kind != Kind.SAMPLE:
            self.waiting -= 1
        return at, Kind(kind), payload
