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

What a scheduler did can be audited the same way (:func:`audit_preemption`): Kueue's preemptions, read from a
dump of its Workloads on the state before each, are held against the least disruptive decision; a scheduler that
admits by quota alone may also evict workloads whose going makes **no room** on the nodes for the job.

>>> from gpu_preempt.models import load_snapshot
>>> found = audit(load_snapshot("fixtures/kai-probe-keeps-first-victim.yaml"))
>>> [(f.job, f.kind, f.extra_jobs) for f in found.findings]
[('gang', 'over-eviction', 1)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import Snapshot, is_gpu_resource
from gpu_preempt.models.decision import Decision, VictimTasks
from gpu_preempt.state.cluster import ClusterState

from .what_if import with_jobs

__all__ = ["Audit", "Finding", "audit", "audit_preemption", "stray_victims"]


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
    broken: tuple[str, ...] = ()
    """Rules of this snapshot the search's decision breaks, as the independent verifier words them (a scheduler's
    observed decision only: the greedy baseline keeps them by construction)."""
    notes: tuple[str, ...] = ()
    """What the state could not be rebuilt from (an observed decision)."""

    @property
    def kind(self) -> str:
        """``over-eviction``, ``missed``, ``minimal``, ``neither places``, ``no room`` (the search evicts and the job
        still finds no room on the nodes) or ``unknown`` (the exact solver ran out of time)."""
        if self.exact.outcome == "unknown":
            return "unknown"
        if not self.search.placed and self.search.victims:
            return "no room"
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
            "broken": list(self.broken),
            "notes": list(self.notes),
            "search": self.search.to_dict(timing=False),
            "exact": self.exact.to_dict(timing=False),
        }


@dataclass
class Audit:
    """Every finding of one cycle, in the order KAI's search made its decisions."""

    findings: list[Finding] = field(default_factory=list)
    by: str = "KAI's search"
    """Whose decisions are held against the minimum."""
    not_audited: list[str] = field(default_factory=list)
    """Observed decisions the input does not allow to rebuild, and why."""

    def of_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def totals(self) -> dict[str, Any]:
        """How many decisions, of each kind, and the excess in all."""
        kinds = ("over-eviction", "missed", "minimal", "neither places", "no room", "unknown")
        return {
            "decisions": len(self.findings),
            **{kind: len(self.of_kind(kind)) for kind in kinds},
            "extra_jobs": sum(f.extra_jobs for f in self.findings),
            "extra_tasks": sum(f.extra_tasks for f in self.findings),
            "extra_gpu_hours": round(sum(f.extra_gpu_hours for f in self.findings), 4),
            "stray_victims": sum(len(f.stray) for f in self.findings),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "totals": self.totals(),
            "findings": [f.to_dict() for f in self.findings],
            "not_audited": list(self.not_audited),
        }


def audit(snapshot: Snapshot) -> Audit:
    """One cycle of ``snapshot`` with KAI's own search, each of its reclaim and preempt decisions held against the
    exact solver's on the same state."""
    result = run_cycle(snapshot, solver="greedy")
    found = Audit(by="Kueue's search" if snapshot.config.policy == "kueue" else "KAI's search")
    for state, decision in zip(result.states, result.decisions, strict=True):
        if decision.action not in ("reclaim", "preempt") or decision.outcome == "skipped":
            continue
        exact = attempt(state, state.snapshot.job(decision.job), decision.action)  # type: ignore[arg-type]
        if not decision.placed and not exact.placed and exact.outcome != "unknown":
            continue  # nothing to compare: neither could place the job
        found.findings.append(Finding(decision.job, decision.action, decision, exact, stray_victims(state, decision)))
    return found


def audit_preemption(
    snapshot: Snapshot,
    preemptor: str,
    victims: Sequence[str],
    *,
    unplaced: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> Finding:
    """A preemption a scheduler made (``victims`` evicted whole for the pending job ``preemptor``) held against the
    least disruptive decision, on ``snapshot``: the state just before it.

    The victims in ``unplaced`` have pending tasks the state no longer places: they are placed first as allocate
    would (in that order), since they ran before they were evicted. The scheduler's decision is then the victims'
    running tasks evicted and the job placed as allocate places it in the room they leave (``no room`` when it is
    not); the verifier names the rules it breaks.
    """
    notes = list(notes)
    for name in unplaced:
        snapshot, placed = _placed_again(snapshot, name)
        if not placed:
            notes.append(f"{name}: no room for its tasks in the state rebuilt: left pending")
    state = ClusterState.of(snapshot)
    job = snapshot.job(preemptor)
    tasks = {name: tuple(str(t.name) for t in state.tasks(snapshot.job(name), "running")) for name in victims}
    evicted = [VictimTasks(name, tasks[name], True) for name in victims if tasks[name]]
    after = state.with_changes([(task, "releasing", None) for v in evicted for task in v.tasks])
    landing = attempt(after, job, "allocate")
    exact = attempt(state, job, "preempt")
    levels = sorted({*exact.priority_levels, *(snapshot.job(v.job).resolved_priority for v in evicted)}, reverse=True)
    searched = Decision(
        job.name,
        "preempt",
        landing.outcome if landing.placed else "infeasible",
        victims=evicted,
        placements=dict(landing.placements) if landing.placed else {},
        objective=_measured(state, evicted, levels),
        solver="observed",
        reason=None if landing.placed else "the victims leave no room on the nodes for the job",
        priority_levels=levels,
    )
    # the objective is our measure of the decision and the requeue state its consequence, not rules it keeps
    ours = ("objective", "requeue")
    broken = tuple(str(v) for v in verify(state, searched) if v.rule not in ours) if searched.placed else ()
    return Finding(job.name, "preempt", searched, exact, stray_victims(state, searched), broken, tuple(notes))


def _placed_again(snapshot: Snapshot, name: str) -> tuple[Snapshot, bool]:
    """``snapshot`` with the pending tasks of the running job ``name`` placed as allocate places them, as running."""
    job = snapshot.job(name)
    state = ClusterState.of(snapshot)
    decision = attempt(state, job, "allocate")
    if not decision.placed:
        return snapshot, False
    tasks = [
        t.model_copy(update={"node": decision.placements[str(t.name)], "status": "running"})
        if str(t.name) in decision.placements
        else t
        for t in job.tasks
    ]
    jobs = [j if j.name != name else job.model_copy(update={"tasks": tasks}) for j in snapshot.jobs]
    return with_jobs(snapshot, jobs), True


def _measured(state: ClusterState, victims: list[VictimTasks], levels: list[int]) -> dict[str, Any]:
    """The objective of evicting ``victims`` as the solver reports it (docs/snapshot-format.md, "Victim choice"):
    victim jobs per priority level of ``levels``, jobs, tasks, and the progress lost since each victim's last
    checkpoint or start (GPU-seconds; CPU-seconds of victims without GPUs)."""
    snapshot, now = state.snapshot, state.now
    lost = lost_cpu = 0
    for victim in victims:
        job = snapshot.job(victim.job)
        since = job.progress_since
        elapsed = 0 if since is None else max(0, round((now - since) * 1000))
        by_name = {str(t.name): t for t in job.tasks}
        for task in victim.tasks:
            requests = job.requests(by_name[task])
            gpus = sum(a for r, a in requests.items() if is_gpu_resource(r))
            lost += gpus * elapsed
            lost_cpu += 0 if gpus else requests.get("cpu", 0) * elapsed
    priorities = [snapshot.job(v.job).resolved_priority for v in victims]
    out: dict[str, Any] = {
        "priority": [priorities.count(p) for p in levels],
        "jobs": len(victims),
        "tasks": sum(len(v.tasks) for v in victims),
        "lost_work": lost / 1_000_000,
    }
    if lost_cpu:
        out["lost_cpu_work"] = lost_cpu / 1_000_000
    return out


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
