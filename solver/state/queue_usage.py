"""What each queue holds and asks for, rolled up the tree (KAI proportion plugin inputs, docs/rules.md, "Queue usage
and fair share").

* ``allocated``: resources of tasks that hold capacity for the queue: running,
  and, during a session, allocated or pipelined (releasing tasks are leaving and
  do not count, as in KAI);
* ``allocated_non_preemptible``: the part held by non-preemptible jobs;
* ``requested``: ``allocated`` plus the resources of pending tasks.

Every amount is added to the job's leaf queue and to all its ancestors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_preempt.models import Resources, Snapshot
from gpu_preempt.models.quantity import add

from .queue_tree import QueueTree

__all__ = ["HOLDING", "QueueUsage", "queue_usage", "roll_up"]

HOLDING = ("running", "allocated", "pipelined", "nominated")
"""Statuses whose resources count as the queue's allocation (a nomination holds quota like a pipelined task)."""


@dataclass
class QueueUsage:
    """Usage of one queue (subtree totals, milli-units)."""

    allocated: Resources = field(default_factory=dict)
    allocated_non_preemptible: Resources = field(default_factory=dict)
    requested: Resources = field(default_factory=dict)


def queue_usage(snapshot: Snapshot, tree: QueueTree, status: dict[str, str] | None = None) -> dict[str, QueueUsage]:
    """Usage of every queue, leaves and parents alike; ``status`` overrides the snapshot's task statuses."""
    leaf: dict[str, QueueUsage] = {}
    for job in snapshot.jobs:
        entry = leaf.setdefault(job.queue, QueueUsage())
        shared = job.task_resources
        for task in job.tasks:
            state = task.status if status is None else status[str(task.name)]
            if state not in HOLDING and state != "pending":
                continue
            requests = shared if task.resources is None else task.resources
            targets = [entry.requested]
            if state in HOLDING:
                targets.append(entry.allocated)
                if not job.is_preemptible:
                    targets.append(entry.allocated_non_preemptible)
            for target in targets:
                for r, a in requests.items():
                    target[r] = target.get(r, 0) + a
    return roll_up(leaf, tree)


def roll_up(leaf: dict[str, QueueUsage], tree: QueueTree) -> dict[str, QueueUsage]:
    """Usage of every queue from the usage of its leaves (each leaf's counted in all its ancestors)."""
    usage = {name: QueueUsage() for name in tree.queues()}
    for name, entry in leaf.items():
        for queue in tree.upward(name):
            total = usage[queue]
            total.allocated = add(total.allocated, entry.allocated)
            total.allocated_non_preemptible = add(total.allocated_non_preemptible, entry.allocated_non_preemptible)
            total.requested = add(total.requested, entry.requested)
    return usage
