"""What each queue holds and asks for, rolled up the tree (KAI proportion plugin inputs, reference/kai.md §3.1).

* ``allocated``: resources of tasks that hold capacity for the queue: running,
  and, during a session, allocated or pipelined (releasing tasks are leaving and
  do not count, as in KAI);
* ``allocated_non_preemptible``: the part held by non-preemptible jobs;
* ``requested``: ``allocated`` plus the resources of pending tasks.

Every amount is added to the job's leaf queue and to all its ancestors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models import Resources, Snapshot
from models.quantity import add

from .queue_tree import QueueTree

HOLDING = ("running", "allocated", "pipelined")
"""Statuses whose resources count as the queue's allocation."""


@dataclass
class QueueUsage:
    """Usage of one queue (subtree totals, milli-units)."""

    allocated: Resources = field(default_factory=dict)
    allocated_non_preemptible: Resources = field(default_factory=dict)
    requested: Resources = field(default_factory=dict)


def queue_usage(snapshot: Snapshot, tree: QueueTree, status: dict[str, str] | None = None) -> dict[str, QueueUsage]:
    """Usage of every queue, leaves and parents alike; ``status`` overrides the snapshot's task statuses."""
    usage = {name: QueueUsage() for name in tree.queues()}
    for job in snapshot.jobs:
        holding: Resources = {}
        pending: Resources = {}
        for task in job.tasks:
            state = task.status if status is None else status[str(task.name)]
            if state in HOLDING:
                holding = add(holding, job.requests(task))
            elif state == "pending":
                pending = add(pending, job.requests(task))
        for name in tree.upward(job.queue):
            entry = usage[name]
            entry.allocated = add(entry.allocated, holding)
            entry.requested = add(add(entry.requested, holding), pending)
            if not job.is_preemptible:
                entry.allocated_non_preemptible = add(entry.allocated_non_preemptible, holding)
    return usage
