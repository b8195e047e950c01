"""A quota-enforcement decision: one queue brought back within its limit (docs/rules.md, "Quota enforcement").

It has the shape of a job's decision (docs/snapshot-format.md, "Commands and output"), extended
minimally: ``job`` is null and ``queue`` names the queue; ``placements`` is
empty; ``outcome`` is ``enforced`` (usage within the limit in every resource),
``partial`` (best effort: within ``limit * (1 + quota_miss)``), ``infeasible``
(preemption does not help: nothing evicted, ``reason`` says why in numbers),
``unknown`` (time limit) or ``skipped`` (switch off, no delay, timer running,
or within the limit). The ``quota`` block gives, per resource over the limit,
the usage before and after, the limit and the tolerated bound, in milli-units
(as ``validate --json``), and the instant the delay timer fired (``due``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_preempt.models import format_time

from .decision import Decision

__all__ = ["QuotaDecision", "QuotaResource"]


@dataclass(frozen=True)
class QuotaResource:
    """One resource of the enforced queue: usage before and after the decision, the limit, the tolerated bound."""

    usage: int
    limit: int
    tolerated: int
    after: int

    def to_dict(self) -> dict[str, int]:
        return {"usage": self.usage, "limit": self.limit, "tolerated": self.tolerated, "after": self.after}


@dataclass
class QuotaDecision(Decision):
    """The result of ``enforce-quota`` for one queue."""

    queue: str = ""
    resources: dict[str, QuotaResource] = field(default_factory=dict)
    due: float | None = None
    """``limit_changed_at + quota_preemption_delay``: when enforcement became due (None: no timer)."""
    miss: float | str = 0.0
    """``config.quota_miss``: a fraction, or ``best_effort``."""

    @property
    def evicts(self) -> bool:
        return self.outcome in ("enforced", "partial")

    def changes(self) -> list[tuple[str, str, str | None]]:
        """Victims' tasks become ``releasing``; nothing is placed."""
        if not self.evicts:
            return []
        return [(task, "releasing", None) for victim in self.victims for task in victim.tasks]

    def to_dict(self, *, timing: bool = True) -> dict[str, Any]:
        out = super().to_dict(timing=timing)
        document: dict[str, Any] = {"job": None, "queue": self.queue}
        document.update((k, v) for k, v in out.items() if k != "job")
        document["quota"] = {
            "due": None if self.due is None else format_time(self.due),
            "miss": self.miss,
            "resources": {r: q.to_dict() for r, q in sorted(self.resources.items())},
        }
        return document
