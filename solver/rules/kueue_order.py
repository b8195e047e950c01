"""The order of pending jobs under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption").

Kueue's scheduler takes the head of every ClusterQueue (BestEffortFIFO: the highest priority, then the earliest
queue-order time) and admits those heads in its entry order: first the ones that fit without borrowing, then by
priority, then by queue-order time (Kueue's ``pkg/scheduler/scheduler.go``, ``entryOrdering``;
``pkg/cache/queue/cluster_queue.go``, ``queueOrderingFunc``). Here every waiting job is one entry, so the order
is one sort by those keys, the job's name last; it is judged again after every decision that changes the state.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpu_preempt.models import Job
from gpu_preempt.state.cluster import ClusterState

from .kueue_preemption import quotas_of
from .requeue import queue_order_time

__all__ = ["KueueOrder"]


class KueueOrder:
    """The waiting jobs of one state in Kueue's entry order (:meth:`pop_run` hands them all at once: the keys hold
    while the state lasts)."""

    def __init__(self, cluster: ClusterState, waiting: Iterable[Job]) -> None:
        quotas = quotas_of(cluster)
        snapshot = cluster.snapshot
        borrowing: dict[tuple[str, tuple[tuple[str, int], ...]], bool] = {}  # judged once per queue and request

        def key(job: Job) -> tuple[bool, int, float, str]:
            asked = _asked(cluster, job)
            borrows = borrowing.get((job.queue, asked))
            if borrows is None:
                nominal = quotas.nominal.get(job.queue, {})
                borrows = any(quotas.usage(job.queue, r) + a > nominal.get(r, 0) for r, a in asked if a > 0)
                borrowing[job.queue, asked] = borrows
            when = queue_order_time(snapshot, job)
            return borrows, -job.resolved_priority, float("inf") if when is None else when, job.name

        self.jobs = sorted(waiting, key=key)

    def pop_run(self) -> list[Job]:
        """Every waiting job not yet handed out, in order (empty at the end)."""
        jobs, self.jobs = self.jobs, []
        return jobs


def _asked(cluster: ClusterState, job: Job) -> tuple[tuple[str, int], ...]:
    """What the job's pending tasks ask for in all (kept on the job model while the state has not changed its
    tasks, as :func:`~gpu_preempt.rules.job_order.chunk_request` keeps its chunk)."""
    given = job.name not in cluster.changed_jobs
    if given:
        found: tuple[tuple[str, int], ...] | None = job.__dict__.get("_kueue_asked")
        if found is not None:
            return found
    total: dict[str, int] = {}
    for task in cluster.tasks(job, "pending"):
        for r, a in job.requests(task).items():
            total[r] = total.get(r, 0) + a
    asked = tuple(sorted(total.items()))
    if given:
        job.__dict__["_kueue_asked"] = asked
    return asked
