"""A state derived from another by changing some tasks' status and node: only what the changes touch is recomputed.

The derived state shares its predecessor's snapshot, queue tree, fair shares and index; its task maps and running
counts are layered over the predecessor's (:mod:`.layered`), its node loads copy or overlay the predecessor's
(:mod:`.node_loads`), and its per-node results start from the predecessor's for the nodes that did not change
(:mod:`.node_cache`). ``tests/solver/state/test_cluster.py`` checks that a derived state equals a fresh count of the
same statuses.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from gpu_preempt.models import Resources

from .caches import Caches
from .layered import Layered
from .node_loads import CURRENT, FINAL, PROMISED, NodeLoads, shift
from .queue_usage import HOLDING, QueueUsage
from .running import Running, patched

if TYPE_CHECKING:
    from .cluster import ClusterState

__all__ = ["changed_nodes", "derived", "landed"]


def derived(
    parent: ClusterState, changes: Iterable[tuple[str, str, str | None]], devices: Mapping[str, tuple[int, ...]]
) -> ClusterState:
    """``parent`` with each ``(task, status, node)`` applied (``node`` None: keep it), shares placed on their
    ``devices``; fair shares stay."""
    new = copy.copy(parent)
    new._kept = Caches()
    new._waiting = None
    new._devices = None
    if devices:
        new.task_devices = {**parent.task_devices, **devices}
    changes = list(changes)
    new.devices_from = None
    if parent._devices is not None:  # its ledger is moved by the changed tasks, not counted anew
        new.devices_from = (parent._devices, parent, frozenset(task for task, _, _ in changes))
    # the task and job maps are layered over the parent's (a few changes of hundreds of thousands of entries)
    new.status, new.node_of = Layered(parent.status), Layered(parent.node_of)
    before_running = parent.running
    running = new.running = Running(
        Layered(before_running.counts), on=None if before_running.on is None else dict(before_running.on)
    )
    loads = new.loads = parent.loads.derived()
    new.leaving = dict(parent.leaving)
    new.usage = dict(parent.usage)
    new.promised = dict(parent.promised)
    changed_nodes: set[str] = set()
    moved_jobs: set[str] = set()
    changed_jobs: set[str] = set()
    owner = parent.index.owners
    touched_nodes: set[tuple[int, str]] = set()
    touched_queues: set[str] = set()
    for task, state, node in changes:
        job, spec = owner[task]
        before, where = parent.status[task], parent.node_of[task]
        after = state
        there = landed(after, where, node)
        changed_nodes.update(n for n in (where, there) if n is not None)
        requests = job.requests(spec)
        _move(loads, 0, FINAL, touched_nodes, requests, before, where, after, there)
        _move(loads, 1, CURRENT, touched_nodes, requests, before, where, after, there)
        if before == "running" and after in PROMISED and where is not None:
            # moved (to another node, or a share to another device of its own): the old pod is still there now
            new.leaving[where] = dict(new.leaving.get(where, {}))
            shift(new.leaving[where], requests, 1)
        changed_jobs.add(job.name)
        running.counts[job.name] += (after == "running") - (before == "running")
        if "running" in (before, after):
            moved_jobs.add(job.name)
        holds_before, holds_after = before in HOLDING, after in HOLDING
        if holds_before != holds_after:
            sign = 1 if holds_after else -1
            for queue in parent.tree.upward(job.queue):
                if queue not in touched_queues:
                    old = new.usage[queue]
                    new.usage[queue] = QueueUsage(
                        dict(old.allocated), dict(old.allocated_non_preemptible), dict(old.requested)
                    )
                    touched_queues.add(queue)
                entry = new.usage[queue]
                shift(entry.allocated, requests, sign)
                if not job.is_preemptible:
                    shift(entry.allocated_non_preemptible, requests, sign)
        if before in PROMISED or after in PROMISED:
            _renominate(new.promised, task, where if before in PROMISED else None, there if after in PROMISED else None)
        new.status[task] = after
        new.node_of[task] = there
    new.job_counts = {name: counts for name, counts in parent.job_counts.items() if name not in changed_jobs}
    new.changed_jobs = parent.changed_jobs | changed_jobs
    _update_running(parent, new, moved_jobs)
    new.node_cache = parent.node_cache.passed_on(frozenset(changed_nodes))
    return new


def landed(status: str, where: str | None, node: str | None) -> str | None:
    """Where a task is once changed to ``status``: on ``node``, or where it was (``node`` None); a pending task is
    on none."""
    return None if status == "pending" else where if node is None else node


def _update_running(parent: ClusterState, new: ClusterState, moved_jobs: set[str]) -> None:
    """Bring the running views of ``new`` up to date for the jobs whose running tasks changed, from ``parent``'s."""
    before, running = parent.running, new.running
    if running.on is not None:  # else built when first asked for
        for name in moved_jobs:
            hosts = new.count_hosts(parent.snapshot.job(name))
            if hosts:
                running.on[name] = hosts
            else:
                running.on.pop(name, None)
    if before.array is not None:  # the parent's array, patched for these jobs
        running.array = patched(before.array, running.counts, moved_jobs, new.job_positions)
    if before.nodes is not None:  # running_nodes() updates these jobs only
        running.moved = (before.nodes, moved_jobs)
    elif before.moved is not None:
        running.moved = (before.moved[0], before.moved[1] | moved_jobs)
    flipped = [n for n in moved_jobs if (before.counts[n] > 0) != (running.counts[n] > 0)]
    if not flipped:  # no job started or stopped running: the same lists
        running.jobs, running.by_queue = before.jobs, before.by_queue
    elif before.by_queue is not None and all(running.counts[n] == 0 for n in flipped):  # jobs only stopped
        changed = {parent.snapshot.job(n).queue for n in flipped}
        lists = {
            q: [j for j in jobs if running.counts[j.name]] if q in changed else jobs
            for q, jobs in before.by_queue.items()
        }
        running.by_queue = {q: jobs for q, jobs in lists.items() if jobs}


def _move(
    loads: NodeLoads,
    which: int,
    counted: tuple[str, ...],
    touched: set[tuple[int, str]],
    requests: Resources,
    before: str,
    where: str | None,
    after: str,
    there: str | None,
) -> None:
    """Take ``requests`` off ``where`` and add them to ``there`` in one of the loads, for the statuses it counts."""
    for state, node, sign in ((before, where, -1), (after, there, 1)):
        if node is not None and state in counted:
            loads.shift(which, node, requests, sign, touched)


def _renominate(promised: dict[str, list[str]], task: str, left: str | None, joined: str | None) -> None:
    if left is not None:
        promised[left] = [t for t in promised[left] if t != task]
    if joined is not None:
        promised[joined] = [*promised.get(joined, []), task]


def changed_nodes(new: ClusterState, old: ClusterState) -> frozenset[str]:
    """Nodes whose loads or promises differ between two states of the same nodes."""
    changed: set[str] = set()
    for mine, theirs in (
        (new.loads.final, old.loads.final),
        (new.loads.current, old.loads.current),
        (new.leaving, old.leaving),
        (new.promised, old.promised),
    ):
        if mine != theirs:  # compared whole first: often equal, always cheap
            changed.update(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))
    return frozenset(changed)
