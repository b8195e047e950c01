"""The decisions of a replay, kept small: a long replay makes hundreds of thousands of them.

Every decision updates the solver's counters (how many, how many victim
searches, how many proved, how many unknown, the solve times). A decision that
changes nothing and repeats its job's last outcome of the same action is only
counted (``repeated``): the outcomes of a waiting job are logged when they
change, and a job placed, evicted or moved starts afresh. Every other decision's
JSON line for ``events.jsonl`` goes to a temporary file (only when the replay
writes one), and only the decisions that changed something (placed tasks,
victims, moves) stay in memory as objects. An outcome the memo of the cycle
(:mod:`gpu_preempt.actions.memo`) let stand is counted as the repeat it is.
"""

from __future__ import annotations

import json
import tempfile
import weakref
from array import array
from collections.abc import Iterator
from typing import IO, Any

from gpu_preempt.models.decision import Decision

__all__ = ["DecisionLog"]


class DecisionLog:
    """Counters of every decision, the changing ones, and (with ``lines``) every decision's JSON line."""

    def __init__(self, *, lines: bool) -> None:
        self.count = 0
        self.searches = 0
        """Victim searches: reclaim, preempt and enforce-quota decisions that were not skipped."""
        self.proved = 0
        """Searches proved: optimal, or infeasible (only a proof gives infeasible)."""
        self.unknown = 0
        self.repeated = 0
        """Decisions that repeated their job's last outcome of the same action and changed nothing."""
        self._last: dict[str, dict[str, str]] = {}
        """Job (or queue) -> action -> its last outcome that changed nothing."""
        self.solve_ms = array("d")
        """Each searched decision's solve time; a repeat's (no search, 0 ms) is only counted, in ``stood``."""
        self.stood = 0
        self.changing: list[tuple[float, Decision]] = []
        """Decisions that placed tasks, evicted or moved something, with their time."""
        # the file lives as long as the log: closed by close(), or when the log is freed
        self._file: IO[bytes] | None = tempfile.TemporaryFile() if lines else None  # noqa: SIM115
        if self._file is not None:
            weakref.finalize(self, self._file.close)

    def add(self, at: float, decision: Decision) -> None:
        self._count([decision])
        self.solve_ms.append(decision.solve_ms)
        moves = getattr(decision, "moves", None) or []
        if decision.victims or decision.placements or moves:
            self.changing.append((at, decision))
            for job in {decision.job, *(v.job for v in decision.victims), *(m.job for m in moves)}:
                self._last.pop(job, None)
        else:
            last = self._last.setdefault(getattr(decision, "queue", "") or decision.job, {})
            if last.get(decision.action) == decision.outcome:
                self.repeated += 1
                return
            last[decision.action] = decision.outcome
        if self._file is not None:
            line = {"time": round(at, 3), **decision.to_dict(timing=False)}
            self._file.write(json.dumps(line).encode() + b"\n")

    def repeat(self, decisions: list[Decision]) -> None:
        """Count ``decisions``, outcomes that stood without a new search, as they would count made again."""
        self._count(decisions)
        self.stood += len(decisions)
        self.repeated += len(decisions)

    def _count(self, decisions: list[Decision]) -> None:
        """Count ``decisions``: victim searches (reclaim and preempt that were not skipped), those proved, unknowns."""
        self.count += len(decisions)
        searched = [d for d in decisions if d.action != "allocate" and d.outcome != "skipped"]
        self.searches += len(searched)
        self.proved += sum(1 for d in searched if d.optimal or d.outcome == "infeasible")
        self.unknown += sum(1 for d in decisions if d.outcome == "unknown")

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
