"""What ``gpu-preempt validate`` reports about a valid snapshot.

A plain-data overview: nodes and GPUs, the queue tree with deserved quota, fair
share and allocation, job counts, and the running jobs that some rule protects
right now (with the rule and when the protection ends).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gpu_preempt.models import Job, Queue, Toleration, format_duration, is_gpu_resource
from gpu_preempt.models.cohort_quotas import CohortQuotas
from gpu_preempt.models.columns import JobColumns
from gpu_preempt.models.duration import format_end
from gpu_preempt.rules.kueue_preemption import quotas_of
from gpu_preempt.rules.min_runtime import preempt_min_runtime, protected_until, reclaim_min_runtime
from gpu_preempt.state.cluster import ClusterState

__all__ = ["ProtectedJob", "QueueRow", "Summary", "protected_jobs", "summarize"]


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
    kueue: dict[str, dict[str, int]] | None = None
    """Under ``config.policy: kueue``: ``nominal``, ``borrowing_limit``, ``lending_limit`` (as given), and Kueue's
    ``usage`` and ``available`` (docs/rules.md, "Kueue's preemption")."""


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
    policy: str = "kai"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(cluster: ClusterState) -> Summary:
    snap = cluster.snapshot
    gpus_by_model: Counter[str] = Counter()
    capacity: dict[str, int] = {}
    shapes = Counter((tuple(node.resources.items()), node.gpu_model) for node in snap.nodes)  # nodes come in few shapes
    for (resources, model), count in shapes.items():
        for resource, amount in resources:
            capacity[resource] = capacity.get(resource, 0) + amount * count
        gpus = sum(a for r, a in resources if is_gpu_resource(r)) // 1000
        if gpus:
            gpus_by_model[model or "unknown model"] += gpus * count
    quotas = quotas_of(cluster) if snap.config.policy == "kueue" else None
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
            kueue=None if quotas is None else _kueue_row(quotas, cluster.tree.queue(name)),
        )
        for name in cluster.tree.queues()
    ]
    jobs = Counter[str]()
    tasks = Counter[str]()
    for status in ("running", "pending", "releasing"):
        jobs[status], tasks[status] = cluster.status_counts(status)
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
        policy=snap.config.policy,
    )


def _kueue_row(quotas: CohortQuotas, queue: Queue) -> dict[str, dict[str, int]]:
    """A queue's Kueue quotas as given, and its usage and what it has available as Kueue counts them."""
    resources = sorted({r for q in quotas.nominal.values() for r in q})
    return {
        "nominal": dict(queue.nominal),
        "borrowing_limit": dict(queue.borrowing_limit or {}),
        "lending_limit": dict(queue.lending_limit or {}),
        "usage": {r: quotas.usage(queue.name, r) for r in resources},
        "available": {r: max(0, quotas.available(queue.name, r)) for r in resources},
    }


def protected_jobs(cluster: ClusterState) -> list[ProtectedJob]:
    """Running jobs that a rule shields right now, whatever the preemptor (or for some preemptors).

    Read from the job columns: the windows depend on a job's queue (and, for reclaim, the reclaimer's leaf) and
    start, not on the job, so they are resolved once per queue; a job's model is read only for the wording of its
    rows. A cluster of 380,000 running jobs in a few dozen queues costs a pass over columns.
    """
    snap = cluster.snapshot
    columns = snap.job_columns()
    leaves = cluster.tree.leaves()
    rank = {leaf: i for i, leaf in enumerate(leaves)}
    windows = {  # per queue of a job: its preempt-min-runtime, and its reclaim windows by reclaimer leaf
        queue: (preempt_min_runtime(cluster.tree, snap.config, queue), _reclaim_windows(cluster, queue, leaves))
        for queue in columns.queues
    }
    policies = [None if c is None else snap.priority_class(c).toleration for c in columns.classes]
    out: list[ProtectedJob] = []
    elastic_text = _elastic_texts(cluster, columns)
    running = np.flatnonzero(cluster.running_array() > 0)
    running = running[_maybe_protected(cluster, columns, running, windows, policies)]
    for j, queue_at, started, class_at, preemptible in zip(
        running.tolist(),
        columns.queue[running].tolist(),
        columns.started[running].tolist(),
        columns.priority_class[running].tolist(),
        columns.preemptible[running].tolist(),
        strict=True,
    ):
        name, queue, started_at = columns.names[j], columns.queues[queue_at], None if math.isnan(started) else started
        if not preemptible:
            out.append(ProtectedJob(name, queue, "non-preemptible", None, "never a victim"))
        runtime, reclaim = windows[queue]
        until = protected_until(started_at, runtime)
        if until is not None and snap.now < until:
            detail = f"{format_duration(runtime)} against preemption in its own queue{elastic_text(j)}"
            out.append(ProtectedJob(name, queue, "preempt-min-runtime", format_end(until), detail))
        if started_at is not None and reclaim:
            others = len(leaves) - (queue in leaves)
            out.extend(_reclaim_protection(cluster, (name, queue, j), started_at, reclaim, others, rank, elastic_text))
        policy = policies[class_at]
        if policy is not None and policy.toleration_seconds != 0:
            window = None if policy.forever or started_at is None else started_at + policy.toleration_seconds
            if window is None or snap.now < window:
                out.append(
                    ProtectedJob(
                        name,
                        queue,
                        "toleration",
                        None if window is None else format_end(window),
                        f"tolerates preemptors below priority {policy.minimum_preemptable_priority}",
                    )
                )
    return out


def _maybe_protected(
    cluster: ClusterState,
    columns: JobColumns,
    jobs: np.ndarray,
    windows: dict[str, tuple[float, list[tuple[float, list[str]]]]],
    policies: list[Toleration | None],
) -> np.ndarray:
    """Which of ``jobs`` (positions) some rule may shield now, on the columns: those not preemptible, those whose
    longest window of their queue (``windows``) or class has not ended. The loop then words their rows; the other
    jobs have none."""
    now = cluster.now
    longest = []
    for queue in columns.queues:
        preempt, reclaim = windows[queue]
        longest.append(max(preempt, *(runtime for runtime, _ in reclaim), 0.0))
    active = np.array([p is not None and p.toleration_seconds != 0 for p in policies], dtype=bool)
    forever = np.array([p is not None and p.forever for p in policies], dtype=bool)
    tolerated = np.array([0.0 if p is None or p.forever else float(p.toleration_seconds) for p in policies])
    started, classes = columns.started[jobs], columns.priority_class[jobs]
    # NaN (never started) compares false: no min-runtime window, but a toleration without an end
    shielded = ~columns.preemptible[jobs] | (started + np.array(longest)[columns.queue[jobs]] > now)
    shielded |= active[classes] & (forever[classes] | np.isnan(started) | (started + tolerated[classes] > now))
    return np.asarray(shielded, dtype=bool)


def _reclaim_windows(cluster: ClusterState, queue: str, leaves: list[str]) -> list[tuple[float, list[str]]]:
    """Reclaim-min-runtime of a victim in ``queue``: the reclaimer leaves grouped by the window's length (longest
    first; windows of 0 left out)."""
    by_runtime: dict[float, list[str]] = {}
    for leaf in leaves:
        if leaf != queue:
            runtime = reclaim_min_runtime(cluster.tree, cluster.snapshot.config, leaf, queue)
            if runtime > 0:
                by_runtime.setdefault(runtime, []).append(leaf)
    return sorted(by_runtime.items(), key=lambda kv: -kv[0])


def _reclaim_protection(
    cluster: ClusterState,
    job: tuple[str, str, int],
    started_at: float,
    windows: list[tuple[float, list[str]]],
    others: int,
    rank: dict[str, int],
    elastic_text: Callable[[int], str],
) -> list[ProtectedJob]:
    """Reclaim-min-runtime of a job (its name, queue and position) depends on the reclaimer's queue: reclaimer leaves
    grouped by the protection's end."""
    by_until: dict[float, list[str]] = {}
    for runtime, reclaimers in windows:
        until = started_at + runtime
        if cluster.now < until:
            if until in by_until:  # two lengths, one end (rounding): one group, leaves in the tree's order
                by_until[until] = sorted([*by_until[until], *reclaimers], key=rank.__getitem__)
            else:
                by_until[until] = reclaimers
    if not by_until:
        return []
    name, queue, j = job
    elastic = elastic_text(j)
    rows = []
    for until, reclaimers in by_until.items():  # longest first, as the windows are
        scope = "any other queue" if len(reclaimers) == others else "reclaimers in " + ", ".join(reclaimers)
        rows.append(
            ProtectedJob(
                name,
                queue,
                "reclaim-min-runtime",
                format_end(until),
                f"{format_duration(until - started_at)} against {scope}{elastic}",
            )
        )
    return rows


def _elastic_texts(cluster: ClusterState, columns: JobColumns) -> Callable[[int], str]:
    """:func:`_elastic` of the job at a position: on the columns when the snapshot has its task columns (no job
    model made), else from the model."""
    tasks = cluster.snapshot.built_columns()
    if tasks is None:
        return lambda j: _elastic(cluster, cluster.snapshot.jobs[j])
    counts = np.bincount(tasks.job, minlength=len(columns.names)).tolist()
    minimum, running = columns.minimum.tolist(), cluster.running_array().tolist()

    def text(j: int) -> str:
        if minimum[j] >= counts[j]:  # a gang: not elastic
            return ""
        surplus = max(0, running[j] - minimum[j])
        return _ELASTIC.format(surplus) if surplus else ""

    return text


_ELASTIC = " (elastic: its {} task(s) above min_available stay evictable)"


def _elastic(cluster: ClusterState, job: Job) -> str:
    if not job.is_elastic:
        return ""
    surplus = cluster.surplus(job)
    return _ELASTIC.format(surplus) if surplus else ""
