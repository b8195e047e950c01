"""Did the scheduler evict more than it had to: KAI's own search against the minimum, decision by decision.

One cycle runs as KAI runs it, with its own victim search (the greedy baseline, docs/rules.md, "The greedy
baseline"; under ``config.policy: kueue``, Kueue's). At the state of each of its reclaim and preempt decisions, the
exact solver decides for the same job and action, so both answer the same question on the same cluster. A
finding says what the search did beyond the minimum:

* **over-eviction**: both place the job, and the search evicts more (jobs, tasks, GPU-hours of work lost since the
  last checkpoint) than the least disruptive decision the rules allow;
* **missed**: the exact solver places the job and the search does not (a reclaim or preemption KAI would not make);
* **stray victims**: victims of the search none of whose tasks ran on a node the job lands on, and without which
  its decision still keeps every rule (the independent verifier accepts it): room freed for no one.

A decision where both agree is minimal. The exact solver out of time says ``unknown`` and the finding says so.

>>> from gpu_preempt.models import load_snapshot
>>> found = audit(load_snapshot("fixtures/kai-probe-keeps-first-victim.yaml"))
>>> [(f.job, f.kind, f.extra_jobs) for f in found.findings]
[('gang', 'over-eviction', 1)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import Snapshot
from gpu_preempt.models.decision import Decision
from gpu_preempt.state.cluster import ClusterState

__all__ = ["Audit", "Finding", "audit", "stray_victims"]


@dataclass(frozen=True)
class Finding:
    """KAI's search and the exact solver on one job, action and state."""

    job: str
    action: str
    search: Decision
    """The decision of KAI's own search."""
    exact: Decision
    """The least disruptive decision the rules allow, on the same state."""
    stray: tuple[str, ...] = ()
    """Victims of the search whose tasks ran on none of the nodes the job lands on."""

    @property
    def kind(self) -> str:
        """``over-eviction``, ``missed``, ``minimal``, ``neither places`` or ``unknown`` (the exact solver ran out
        of time)."""
        if self.exact.outcome == "unknown":
            return "unknown"
        if self.exact.placed and not self.search.placed:
            return "missed"
        if not self.search.placed:
            return "neither places"
        if self.extra_jobs > 0 or self.extra_tasks > 0 or self.extra_gpu_hours > 0 or self.stray:
            return "over-eviction"
        return "minimal"

    @property
    def extra_jobs(self) -> int:
        """Victim jobs of the search beyond the minimum (0 unless both place the job)."""
        return int(_beyond(self, lambda d: len(d.victims)))

    @property
    def extra_tasks(self) -> int:
        """Evicted tasks of the search beyond the minimum."""
        return int(_beyond(self, lambda d: sum(len(v.tasks) for v in d.victims)))

    @property
    def extra_gpu_hours(self) -> float:
        """GPU-hours of work lost (since each victim's last checkpoint) beyond the minimum."""
        lost = _beyond(self, lambda d: float(d.objective.get("lost_work", 0.0)))
        return round(lost / 3600, 4)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "action": self.action,
            "finding": self.kind,
            "extra_jobs": self.extra_jobs,
            "extra_tasks": self.extra_tasks,
            "extra_gpu_hours": self.extra_gpu_hours,
            "stray_victims": list(self.stray),
            "search": self.search.to_dict(timing=False),
            "exact": self.exact.to_dict(timing=False),
        }


@dataclass
class Audit:
    """Every finding of one cycle, in the order KAI's search made its decisions."""

    findings: list[Finding] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def totals(self) -> dict[str, Any]:
        """How many decisions, of each kind, and the excess in all."""
        kinds = ("over-eviction", "missed", "minimal", "neither places", "unknown")
        return {
            "decisions": len(self.findings),
            **{kind: len(self.of_kind(kind)) for kind in kinds},
            "extra_jobs": sum(f.extra_jobs for f in self.findings),
            "extra_tasks": sum(f.extra_tasks for f in self.findings),
            "extra_gpu_hours": round(sum(f.extra_gpu_hours for f in self.findings), 4),
            "stray_victims": sum(len(f.stray) for f in self.findings),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"totals": self.totals(), "findings": [f.to_dict() for f in self.findings]}


def audit(snapshot: Snapshot) -> Audit:
    """One cycle of ``snapshot`` with KAI's own search, each of its reclaim and preempt decisions held against the
    exact solver's on the same state."""
    result = run_cycle(snapshot, solver="greedy")
    found = Audit()
    for state, decision in zip(result.states, result.decisions, strict=True):
        if decision.action not in ("reclaim", "preempt") or decision.outcome == "skipped":
            continue
        exact = attempt(state, state.snapshot.job(decision.job), decision.action)  # type: ignore[arg-type]
        if not decision.placed and not exact.placed and exact.outcome != "unknown":
            continue  # nothing to compare: neither could place the job
        found.findings.append(Finding(decision.job, decision.action, decision, exact, stray_victims(state, decision)))
    return found


def _beyond(finding: Finding, measure: Callable[[Decision], float]) -> float:
    """``measure`` of the search's decision less the exact one's, when both place the job (else 0)."""
    if not (finding.search.placed and finding.exact.placed):
        return 0
    return max(0, measure(finding.search) - measure(finding.exact))


def stray_victims(state: ClusterState, decision: Decision) -> tuple[str, ...]:
    """Victims of ``decision`` none of whose evicted tasks ran on a node its job lands on, and without which the
    decision still keeps every rule (the independent verifier accepts it): room freed for no one."""
    if not decision.placed or not decision.victims:
        return ()
    landing = set(decision.placements.values())
    out = []
    for victim in decision.victims:
        if any(state.node_of.get(t) in landing for t in victim.tasks):
            continue
        without = replace(decision, victims=[v for v in decision.victims if v.job != victim.job])
        if not verify(state, without):
            out.append(victim.job)
    return tuple(sorted(out))
