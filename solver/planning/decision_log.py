"""The decisions of a replay, kept small: a long replay makes hundreds of thousands of them.

Every decision updates the solver's counters (how many, how many victim
searches, how many proved, how many unknown, the solve times). Its JSON line for
``events.jsonl`` goes to a temporary file (only when the replay writes one), and
only the decisions that changed something (placed tasks, victims, moves) stay
in memory as objects.
"""

from __future__ import annotations

import json
import tempfile
import weakref
from array import array
from collections.abc import Iterator
from typing import IO, Any

from gpu_preempt.models.decision import Decision


class DecisionLog:
    """Counters of every decision, the changing ones, and (with ``lines``) every decision's JSON line."""

    def __init__(self, *, lines: bool) -> None:
        self.count = 0
        self.searches = 0
        """Victim searches: reclaim, preempt and enforce-quota decisions that were not skipped."""
        self.proved = 0
        """Searches proved: optimal, or infeasible (only a proof gives infeasible)."""
        self.unknown = 0
        self.solve_ms = array("d")
        self.changing: list[tuple[float, Decision]] = []
        """Decisions that placed tasks, evicted or moved something, with their time."""
        # the file lives as long as the log: closed by close(), or when the log is freed
        self._file: IO[bytes] | None = tempfile.TemporaryFile() if lines else None  # noqa: SIM115
        if self._file is not None:
            weakref.finalize(self, self._file.close)

    def add(self, at: float, decision: Decision) -> None:
        self.count += 1
        self.solve_ms.append(decision.solve_ms)
        if decision.action != "allocate" and decision.outcome != "skipped":
            self.searches += 1
            self.proved += bool(decision.optimal or decision.outcome == "infeasible")
        self.unknown += decision.outcome == "unknown"
        if decision.victims or decision.placements or getattr(decision, "moves", None):
            self.changing.append((at, decision))
        if self._file is not None:
            line = {"time": round(at, 3), **decision.to_dict(timing=False)}
            self._file.write(json.dumps(line).encode() + b"\n")

    def lines(self) -> Iterator[str]:
        """Every decision's JSON line, in order (empty when the log keeps none)."""
        if self._file is None:
            return
        self._file.flush()
        self._file.seek(0)
        for raw in self._file:
            yield raw.decode()
        self._file.seek(0, 2)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __getstate__(self) -> dict[str, Any]:  # never pickled with its file
        state = dict(self.__dict__)
        state["_file"] = None
        return state
