"""What ``gpu-preempt validate`` reports about a valid snapshot.

A plain-data overview: nodes and GPUs, the queue tree with deserved quota, fair
share and allocation, job counts, and the running jobs that some rule protects
right now (with the rule and when the protection ends).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from gpu_preempt.models import Job, format_duration, is_gpu_resource
from gpu_preempt.models.duration import format_end
from gpu_preempt.solver.rules.min_runtime import preempt_min_runtime, protected_until, reclaim_min_runtime
from gpu_preempt.solver.state.cluster import Cluster


@dataclass(frozen=True)
class QueueRow:
    name: str
    depth: int
    leaf: bool
    deserved: dict[str, int]
    limit: dict[str, int]
    fair_share: dict[str, int]
    allocated: dict[str, int]
    requested: dict[str, int]


@dataclass(frozen=True)
class ProtectedJob:
    job: str
    queue: str
    rule: str
    until: str | None
    detail: str


@dataclass(frozen=True)
class Summary:
    nodes: int
    schedulable_nodes: int
    gpus: int
    gpus_by_model: dict[str, int]
    capacity: dict[str, int]
    queues: list[QueueRow]
    jobs: dict[str, int]
    tasks: dict[str, int]
    protected: list[ProtectedJob] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(cluster: Cluster) -> Summary:
    snap = cluster.snapshot
    gpus_by_model: Counter[str] = Counter()
    capacity: dict[str, int] = {}
    for node in snap.nodes:
        for resource, amount in node.resources.items():
            capacity[resource] = capacity.get(resource, 0) + amount
        gpus = sum(a for r, a in node.resources.items() if is_gpu_resource(r)) // 1000
        if gpus:
            gpus_by_model[node.gpu_model or "unknown model"] += gpus
    rows = [
        QueueRow(
            name=name,
            depth=len(cluster.tree.upward(name)) - 1,
            leaf=cluster.tree.is_leaf(name),
            deserved=dict(cluster.tree.queue(name).deserved),
            limit=dict(cluster.tree.queue(name).limit),
            fair_share=dict(cluster.shares[name]),
            allocated={r: cluster.usage[name].allocated.get(r, 0) for r in cluster.shares[name]},
            requested={r: cluster.usage[name].requested.get(r, 0) for r in cluster.shares[name]},
        )
        for name in cluster.tree.queues()
    ]
    jobs = Counter[str]()
    tasks = Counter[str]()
    for job in snap.jobs:
        for status in ("running", "pending", "releasing"):
            count = cluster.count(job, status)
            tasks[status] += count
            jobs[status] += count > 0
    return Summary(
        nodes=len(snap.nodes),
        schedulable_nodes=sum(n.schedulable for n in snap.nodes),
        gpus=sum(gpus_by_model.values()),
        gpus_by_model=dict(gpus_by_model),
        capacity=capacity,
        queues=rows,
        jobs={s: jobs[s] for s in ("running", "pending", "releasing")},
        tasks={s: tasks[s] for s in ("running", "pending", "releasing")},
        protected=protected_jobs(cluster),
    )


def protected_jobs(cluster: Cluster) -> list[ProtectedJob]:
    """Running jobs that a rule shields right now, whatever the preemptor (or for some preemptors)."""
    snap = cluster.snapshot
    leaves = cluster.tree.leaves()
    out: list[ProtectedJob] = []
    for job in snap.jobs:
        if cluster.running_count(job) == 0:
            continue
        if not job.is_preemptible:
            out.append(ProtectedJob(job.name, job.queue, "non-preemptible", None, "never a victim"))
        elastic = _elastic(cluster, job)
        runtime = preempt_min_runtime(cluster.tree, snap.config, job.queue)
        until = protected_until(job.started_at, runtime)
        if until is not None and snap.now < until:
            out.append(
                ProtectedJob(
                    job.name,
                    job.queue,
                    "preempt-min-runtime",
                    format_end(until),
                    f"{format_duration(runtime)} against preemption in its own queue{elastic}",
                )
            )
        out.extend(_reclaim_protection(cluster, job, leaves, elastic))
        policy = snap.toleration_of(job)
        if policy is not None and policy.toleration_seconds != 0:
            window = None if policy.forever or job.started_at is None else job.started_at + policy.toleration_seconds
            if window is None or snap.now < window:
                out.append(
                    ProtectedJob(
                        job.name,
                        job.queue,
                        "toleration",
                        None if window is None else format_end(window),
                        f"tolerates preemptors below priority {policy.minimum_preemptable_priority}",
                    )
                )
    return out


def _reclaim_protection(cluster: Cluster, job: Job, leaves: list[str], elastic: str) -> list[ProtectedJob]:
    """Reclaim-min-runtime depends on the reclaimer's queue: group reclaimer leaves by the protection's end."""
    by_until: dict[float, list[str]] = {}
    for leaf in leaves:
        if leaf == job.queue:
            continue
        runtime = reclaim_min_runtime(cluster.tree, cluster.snapshot.config, leaf, job.queue)
        until = protected_until(job.started_at, runtime)
        if until is not None and cluster.now < until:
            by_until.setdefault(until, []).append(leaf)
    others = len(leaves) - (job.queue in leaves)
    rows = []
    for until, reclaimers in sorted(by_until.items(), key=lambda kv: -kv[0]):
        scope = "any other queue" if len(reclaimers) == others else "reclaimers in " + ", ".join(reclaimers)
        rows.append(
            ProtectedJob(
                job.name,
                job.queue,
                "reclaim-min-runtime",
                format_end(until),
                f"{format_duration(until - (job.started_at or 0))} against {scope}{elastic}",
            )
        )
    return rows


def _elastic(cluster: Cluster, job: Job) -> str:
    if not job.is_elastic:
        return ""
    surplus = cluster.surplus(job)
    return f" (elastic: its {surplus} task(s) above min_available stay evictable)" if surplus else ""
