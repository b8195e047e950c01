"""What each queue holds and asks for, rolled up the tree (KAI proportion plugin inputs, reference/kai.md §3.1).

* ``allocated``: resources of running tasks (releasing tasks are leaving and do
  not count, as in KAI);
* ``allocated_non_preemptible``: the part held by non-preemptible jobs;
* ``requested``: ``allocated`` plus the resources of pending tasks.

Every amount is added to the job's leaf queue and to all its ancestors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models import Resources, Snapshot
from models.quantity import add

from .queue_tree import QueueTree


@dataclass
class QueueUsage:
    """Usage of one queue (subtree totals, milli-units)."""

    allocated: Resources = field(default_factory=dict)
    allocated_non_preemptible: Resources = field(default_factory=dict)
    requested: Resources = field(default_factory=dict)


def queue_usage(snapshot: Snapshot, tree: QueueTree) -> dict[str, QueueUsage]:
    """Usage of every queue, leaves and parents alike."""
    usage = {name: QueueUsage() for name in tree.queues()}
    for job in snapshot.jobs:
        running: Resources = {}
        pending: Resources = {}
        for task in job.tasks:
            if task.status == "running":
                running = add(running, job.requests(task))
            elif task.status == "pending":
                pending = add(pending, job.requests(task))
        for name in tree.upward(job.queue):
            entry = usage[name]
            entry.allocated = add(entry.allocated, running)
            entry.requested = add(add(entry.requested, running), pending)
            if not job.is_preemptible:
                entry.allocated_non_preemptible = add(entry.allocated_non_preemptible, running)
    return usage
