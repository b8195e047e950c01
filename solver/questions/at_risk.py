"""Which running jobs are most at risk of being preempted next: the smallest pending request that makes each a victim.

A *probe* is a pending job the cluster might receive: one leaf queue, one priority (each priority class's value and
the default), and a size in whole GPUs (one task up to the largest node, then gangs of whole nodes). Probes are
decided one by one on the cluster as it is (``solve --action auto``: allocate, then reclaim, then preempt), sizes in
ascending order over every queue and priority; each victim of a probe's decision is at risk from that request. Since
sizes ascend, the first request that takes a job is the smallest that does: the answer is exact for every job it
ranks. The search stops once ``top`` jobs are ranked (or every size was tried): the other running jobs are listed
as not taken by any request up to the last size searched.

Beside each job, what protects it now and until when against a preemptor of the highest priority, of its own queue
(preempt) or of another (reclaim): non-preemptible, min-runtime, toleration. What the queues' quotas and the
reclaim line shield shows in the ranking itself: a request that the rules keep from taking a job does not rank it.

>>> from gpu_preempt.models import load_snapshot
>>> found = risk(load_snapshot("fixtures/example-cluster.yaml"), top=2)
>>> [(r.job, r.request.gpus, r.request.queue, r.action) for r in found.ranked]
[('nlp-finetune', 1, 'serving', 'reclaim'), ('vision-pretrain', 1, 'vision', 'preempt')]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpu_preempt.actions.cycle import final_decision, solve_one
from gpu_preempt.models import MILLI, Job, Snapshot, format_time
from gpu_preempt.rules.protection import protections
from gpu_preempt.state.cluster import ClusterState

from .what_if import with_job

__all__ = ["PROBE", "Probe", "Risk", "RiskReport", "risk"]

PROBE = "gpu-preempt-probe"
"""The name of the probing job (a task name, too, with ``-0`` and on)."""


@dataclass(frozen=True)
class Probe:
    """A request: ``gpus`` in all, in ``tasks`` tasks, from ``queue`` at ``priority``."""

    queue: str
    priority: int
    gpus: int
    tasks: int

    def job(self) -> Job:
        each = self.gpus // self.tasks
        return Job.model_validate(
            {
                "name": PROBE,
                "queue": self.queue,
                "priority": self.priority,
                "task_resources": {"gpu": each},
                "tasks": [{} for _ in range(self.tasks)],
            }
        )

    def to_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "priority": self.priority, "gpus": self.gpus, "tasks": self.tasks}


@dataclass(frozen=True)
class Risk:
    """A running job, what protects it now, and the smallest request that makes it a victim (``None``: none up to
    the largest size searched)."""

    job: str
    queue: str
    priority: int
    protections: tuple[str, ...]
    request: Probe | None = None
    action: str | None = None
    """The action of the decision that takes it."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "queue": self.queue,
            "priority": self.priority,
            "protected_by": list(self.protections),
            "smallest_request": None if self.request is None else self.request.to_dict(),
            "action": self.action,
        }


@dataclass
class RiskReport:
    """The running jobs ranked by the smallest request that takes them, and the others."""

    ranked: list[Risk] = field(default_factory=list)
    unranked: list[Risk] = field(default_factory=list)
    searched_up_to: int = 0
    """The largest request, in GPUs, that was tried: the unranked jobs are taken by no request up to it."""
    decisions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "searched_up_to_gpus": self.searched_up_to,
            "decisions": self.decisions,
            "at_risk": [r.to_dict() for r in self.ranked],
            "not_taken": [r.to_dict() for r in self.unranked],
        }


def risk(snapshot: Snapshot, *, top: int = 20, queue: str | None = None) -> RiskReport:
    """Rank the running jobs (of the leaf queues under ``queue`` when given) by the smallest pending request that
    makes each a victim of the decision it gets, until ``top`` are ranked."""
    cluster = ClusterState.of(snapshot)
    under = None if queue is None else set(cluster.tree.leaves_under(queue))
    running = [j for j in snapshot.jobs if cluster.running_count(j) and (under is None or j.queue in under)]
    watched = {j.name for j in running}
    found: dict[str, tuple[Probe, str]] = {}
    report = RiskReport()
    for size in _sizes(snapshot):
        if len(found) >= min(top, len(watched)):
            break
        report.searched_up_to = size[0].gpus
        for probe in size:
            state = with_job(snapshot, probe.job())
            decision = final_decision(solve_one(ClusterState.of(state), state.job(PROBE), "auto"))
            report.decisions += 1
            for victim in decision.victims:
                if victim.job in watched and victim.job not in found:
                    found[victim.job] = (probe, decision.action)
    probes: dict[str, ClusterState] = {}
    for job in running:
        guarded = _protections(snapshot, job, probes)
        if job.name in found:
            probe, action = found[job.name]
            report.ranked.append(Risk(job.name, job.queue, job.resolved_priority, guarded, probe, action))
        else:
            report.unranked.append(Risk(job.name, job.queue, job.resolved_priority, guarded))
    report.ranked.sort(key=lambda r: (0, 0) if r.request is None else (r.request.gpus, r.request.priority))
    report.ranked = report.ranked[:top]
    return report


def _sizes(snapshot: Snapshot) -> Iterator[list[Probe]]:
    """The requests of each size in turn, smallest first; within a size the lowest priority first (the weakest
    request that takes a job), then the queues in document order."""
    leaves = [q.name for q in snapshot.queues if snapshot.is_leaf(q.name)]
    priorities = sorted({c.value for c in snapshot.priority_classes} | {snapshot.config.default_priority})
    node_gpus = max((n.resources.get("gpu", 0) // MILLI for n in snapshot.nodes), default=0)
    total = sum(n.resources.get("gpu", 0) // MILLI for n in snapshot.nodes)
    sizes = [(g, 1) for g in range(1, node_gpus + 1)]
    sizes += [(node_gpus * k, k) for k in range(2, total // max(1, node_gpus) + 1)]
    for gpus, tasks in sizes:
        yield [Probe(leaf, priority, gpus, tasks) for priority in priorities for leaf in leaves]


def _protections(snapshot: Snapshot, job: Job, probes: dict[str, ClusterState]) -> tuple[str, ...]:
    """What shields ``job`` now: against a preemptor of its own queue and of another, at the highest priority
    (``probes``: per leaf queue, the state with such a preemptor waiting in it, made once for every job)."""
    highest = max([c.value for c in snapshot.priority_classes] + [snapshot.config.default_priority])
    leaves = [q.name for q in snapshot.queues if snapshot.is_leaf(q.name)]
    others = [q for q in leaves if q != job.queue]
    words: list[str] = []
    cases: list[tuple[str, str]] = [(job.queue, "preempt"), *((q, "reclaim") for q in others[:1])]
    for preemptor_queue, action in cases:
        state = probes.get(preemptor_queue)
        if state is None:
            with_probe = with_job(snapshot, Probe(preemptor_queue, highest, 1, 1).job())
            state = probes[preemptor_queue] = ClusterState.of(with_probe)
        for p in protections(state, job, state.snapshot.job(PROBE), action):  # type: ignore[arg-type]
            text = f"{p.rule}" + ("" if p.until is None else f" until {format_time(p.until)}")
            text += f" ({action})" if p.rule == "min-runtime" else ""
            if text not in words:
                words.append(text)
    return tuple(words)
