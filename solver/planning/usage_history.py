"""A replay's own usage history, for KAI's time-based fair share (docs/rules.md, "Time-based fair share").

Each queue's usage of a resource at time ``t`` is what it held of it in the window (milli-unit-seconds of its
running tasks), each second weighed by half to the power of its age over ``half_life`` (no weight without one),
over the cluster's capacity of it in the window weighed alike: KAI's usage database, which decays past allocations
and divides them by the capacity. A ``sliding`` window is the
last ``window`` seconds; a ``tumbling`` one starts at each multiple of ``window`` from the replay's start. Time is
kept in buckets of a 168th of the window (an hour of a week), each weighed at its middle. A queue's usage counts the
GPUs its leaves under it hold, as fair share divides among siblings at every level.

>>> from gpu_preempt.models.fair_share_usage import FairShareUsage
>>> history = UsageHistory(FairShareUsage(window="1w"), {"a": ["a"], "b": ["b"]})
>>> history.add(0.0, 3600.0, {"a": {"gpu": 6000}}, {"gpu": 8000, "cpu": 64000})
>>> history.usage(3600.0)
{'a': {'gpu': 0.75, 'cpu': 0.0}, 'b': {'gpu': 0.0, 'cpu': 0.0}}
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping

from gpu_preempt.models.fair_share_usage import FairShareUsage

__all__ = ["BUCKETS", "UsageHistory"]

BUCKETS = 168
"""Buckets a window is kept in."""


class UsageHistory:
    """What each leaf queue held and what the cluster had, per resource, in buckets over the window."""

    def __init__(self, settings: FairShareUsage, leaves_under: Mapping[str, list[str]]) -> None:
        self.settings = settings
        self.leaves_under = dict(leaves_under)
        """Queue -> the leaf queues under it (itself, for a leaf)."""
        self.size = settings.window / BUCKETS
        self.buckets: deque[tuple[int, dict[tuple[str, str], float], dict[str, float]]] = deque()
        """(bucket index, held per (leaf, resource), capacity per resource), in milli-unit-seconds, oldest first."""

    def add(self, start: float, dt: float, held: Mapping[str, Mapping[str, int]], capacity: Mapping[str, int]) -> None:
        """``held`` milli-units per leaf queue and resource, and the cluster's ``capacity``, from ``start`` for
        ``dt`` seconds."""
        end = start + dt
        for index in range(math.floor(start / self.size), math.floor(end / self.size) + 1):
            part = min(end, (index + 1) * self.size) - max(start, index * self.size)
            if part <= 0:
                continue
            if not self.buckets or self.buckets[-1][0] != index:
                self.buckets.append((index, {}, {}))
            _, amounts, totals = self.buckets[-1]
            for queue, resources in held.items():
                for resource, amount in resources.items():
                    if amount:
                        amounts[queue, resource] = amounts.get((queue, resource), 0.0) + amount * part
            for resource, amount in capacity.items():
                totals[resource] = totals.get(resource, 0.0) + amount * part

    def usage(self, now: float) -> dict[str, dict[str, float]]:
        """Each queue's usage at ``now`` per resource: a share of the capacity, 0 to 1, rounded to 6 places."""
        if self.settings.window_type == "tumbling":
            first = math.floor(now / self.settings.window) * BUCKETS
        else:
            first = math.floor((now - self.settings.window) / self.size) + 1
        while self.buckets and self.buckets[0][0] < first:
            self.buckets.popleft()
        half = self.settings.half_life
        held: dict[tuple[str, str], float] = {}
        capacity: dict[str, float] = {}
        for index, amounts, totals in self.buckets:
            age = max(0.0, now - (index + 0.5) * self.size)
            weight = 1.0 if not half else 0.5 ** (age / half)
            for resource, amount in totals.items():
                capacity[resource] = capacity.get(resource, 0.0) + amount * weight
            for key, amount in amounts.items():
                held[key] = held.get(key, 0.0) + amount * weight

        def share(leaves: list[str], resource: str) -> float:
            total = capacity[resource]
            used = sum(held.get((leaf, resource), 0.0) for leaf in leaves)
            return round(min(1.0, used / total), 6) if total > 0 else 0.0

        return {queue: {r: share(leaves, r) for r in capacity} for queue, leaves in self.leaves_under.items()}
