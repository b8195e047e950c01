"""What KAI's victim queue (:mod:`.victim_queue`) reads of the cluster: a candidate job's entry and its queues' facts
(docs/rules.md, "The greedy baseline")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpu_preempt.models import Job, Task
from gpu_preempt.problem.victim_queue import QueueFacts, VictimEntry, peel_order
from gpu_preempt.state.cluster import ClusterState

__all__ = ["cluster_facts", "entry_of"]


def entry_of(cluster: ClusterState, job: Job, running: Sequence[Task], surplus: int, whole: bool) -> VictimEntry:
    """``job``, running ``running``, as the victim queue sees it."""
    if all(task.resources is None for task in running):  # every task asks for the job's own requests
        held = {r: a * len(running) for r, a in job.task_resources.items()}
        peels = (job.task_resources,) * min(surplus, len(running))
    else:
        held = {}
        asked = [job.requests(task) for task in running]
        for requests in asked:
            for r, a in requests.items():
                held[r] = held.get(r, 0) + a
        order = peel_order([(str(t.name), t.order) for t in running]) if surplus else []
        peels = tuple(asked[i] for i in order[:surplus])
    created = job.created_at if job.created_at is not None else job.started_at
    return VictimEntry(
        job.queue, job.resolved_priority, created if created is not None else -1e300, job.name, held, peels, whole
    )


def cluster_facts(cluster: ClusterState, leaves: Iterable[str]) -> dict[str, QueueFacts]:
    """:class:`QueueFacts` of the queues ``leaves`` and of their ancestors, as ``cluster`` has them."""
    facts: dict[str, QueueFacts] = {}
    tree = cluster.tree
    for name in leaves:
        current: str | None = name
        while current is not None and current not in facts:
            spec = tree.queue(current)
            facts[current] = QueueFacts(
                current,
                tree.parent(current),
                spec.priority,
                cluster.usage[current].allocated,
                cluster.shares[current],
                spec.deserved,
            )
            current = tree.parent(current)
    return facts
