"""The two full counts of a state: task by task over the job models, or in numpy over a large snapshot's task
columns. Both give the same node loads, running counts, promises, waiting jobs and queue usage, in the same orders
(document order of first appearance); ``tests/solver/state/test_cluster.py`` compares them on every fixture."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass

import numpy as np

from gpu_preempt.models import Job, Snapshot
from gpu_preempt.models.columns import CODES, TaskColumns

from .node_loads import CURRENT, FINAL, PROMISED, NodeLoads, shift
from .queue_tree import QueueTree
from .queue_usage import HOLDING, QueueUsage, roll_up
from .running import Running, only_nodes
from .snapshot_index import SnapshotIndex

__all__ = ["Count", "count_columns", "count_since", "count_tasks", "job_statuses"]


@dataclass
class Count:
    """What a full pass over a state's tasks counts."""

    status: MutableMapping[str, str] | Callable[[], dict[str, str]]
    """Task name -> status (or what makes it when first read: :class:`ClusterState` makes it then)."""
    node_of: MutableMapping[str, str | None] | Callable[[], dict[str, str | None]]
    """Task name -> node (likewise)."""
    running: Running
    loads: NodeLoads
    promised: dict[str, list[str]]
    """Node -> the names of the tasks promised a place there (pipelined or nominated), in the order promised."""
    waiting: list[Job]
    """Jobs with a pending or nominated task, in document order."""
    usage: dict[str, QueueUsage]
    leaf: dict[str, QueueUsage] | None = None
    """Each leaf's own usage before it is rolled up (a count task by task keeps it, for :func:`count_since`)."""
    jobs: list[Job] | None = None
    """The job models counted, when counted from their own statuses (for :func:`count_since`)."""


def count_tasks(
    snapshot: Snapshot,
    tree: QueueTree,
    status: MutableMapping[str, str],
    node_of: MutableMapping[str, str | None],
    *,
    fill: bool,
) -> Count:
    """One pass over every task of the job models, with the statuses and nodes of ``status`` and ``node_of``; with
    ``fill``, those two maps are filled from the snapshot in the same pass."""
    count = _scan(snapshot.jobs, status, node_of, fill=fill)
    count.usage = roll_up(count.leaf, tree)  # type: ignore[arg-type]
    count.jobs = snapshot.jobs if fill else None
    return count


def _scan(
    jobs: list[Job], status: MutableMapping[str, str], node_of: MutableMapping[str, str | None], *, fill: bool
) -> Count:
    """:func:`count_tasks` of ``jobs``, leaf usage not rolled up."""
    final: dict[str, dict[str, int]] = {}
    current: dict[str, dict[str, int]] = {}
    running: dict[str, int] = {}
    running_on: dict[str, dict[str, int]] = {}
    leaf: dict[str, QueueUsage] = {}
    nominated: dict[str, list[str]] = {}
    waiting_jobs: list[Job] = []
    own_waiting: set[str] = set()  # jobs waiting through a task with its own requests, or a nominated one
    # Inlined on purpose: this pass runs over every task of the cluster. Tasks that ask for the job's shared
    # requests are counted, and their queue usage added once per job.
    for job in jobs:
        shared = tuple(job.task_resources.items())
        entry = leaf.get(job.queue)
        if entry is None:
            entry = leaf[job.queue] = QueueUsage()
        np_entry = None if job.is_preemptible else entry.allocated_non_preemptible
        tasks = waiting = held = 0
        hosts: dict[str, int] | None = None
        for task in job.tasks:
            name: str = task.name  # type: ignore[assignment]  # set by validation
            if fill:
                state: str = task.status  # type: ignore[assignment]
                node = task.node
                status[name], node_of[name] = state, node
            else:
                state, node = status[name], node_of[name]
            own = task.resources
            if state == "pending":
                if own is None:
                    waiting += 1
                else:
                    shift(entry.requested, own, 1)
                    own_waiting.add(job.name)
                continue
            if node is None:
                continue
            requests = shared if own is None else tuple(own.items())
            if state == "running":  # the common case: holding, in the final and the current load
                tasks += 1
                if hosts is None:
                    hosts = running_on.setdefault(job.name, {})
                hosts[node] = hosts.get(node, 0) + 1
                at_end = final.get(node)
                if at_end is None:
                    at_end = final[node] = {}
                now = current.get(node)
                if now is None:
                    now = current[node] = {}
                for r, a in requests:
                    at_end[r] = at_end.get(r, 0) + a
                    now[r] = now.get(r, 0) + a
                if own is None:
                    held += 1
                else:
                    for target in (entry.requested, entry.allocated, np_entry):
                        if target is not None:
                            shift(target, own, 1)
                continue
            targets = []
            if state in HOLDING:
                if own is None:
                    held += 1
                else:
                    targets += [entry.requested, entry.allocated]
                    if np_entry is not None:
                        targets.append(np_entry)
            if state in PROMISED:
                nominated.setdefault(node, []).append(name)
                if state == "nominated":
                    own_waiting.add(job.name)
            if state in FINAL:
                targets.append(final.setdefault(node, {}))
            if state in CURRENT:
                targets.append(current.setdefault(node, {}))
            for target in targets:
                for r, a in requests:
                    target[r] = target.get(r, 0) + a
        if waiting or held:
            for target, times in (
                (entry.requested, waiting + held),
                (entry.allocated, held),
                (np_entry, held),
            ):
                if target is not None and times:
                    for r, a in shared:
                        target[r] = target.get(r, 0) + a * times
        running[job.name] = tasks
        if waiting or (own_waiting and job.name in own_waiting):
            waiting_jobs.append(job)
    return Count(
        status=status,
        node_of=node_of,
        running=Running(running, on=running_on),
        loads=NodeLoads(final, current),
        promised=nominated,
        waiting=waiting_jobs,
        usage={},
        leaf=leaf,
    )


def count_columns(snapshot: Snapshot, tree: QueueTree, columns: TaskColumns, index: SnapshotIndex) -> Count:
    """What :func:`count_tasks` with ``fill`` counts, from the snapshot's task columns: per node, job and queue sums
    in numpy, node loads summed when first asked for, each job's nodes when first asked for."""
    jobs, nodes = snapshot.jobs, index.node_names
    job_names = columns.job_names
    is_running = columns.status == CODES["running"]
    counts = np.bincount(columns.job[is_running], minlength=len(jobs)).tolist()
    running = Running(
        dict(zip(job_names, counts, strict=True)),
        hosts_from=(columns.job[is_running], columns.node[is_running]),
        nodes=only_nodes(columns.job[is_running], columns.node[is_running], len(jobs)),
    )
    nominated: dict[str, list[str]] = {}
    for i in np.flatnonzero(columns.status == CODES["nominated"]).tolist():
        nominated.setdefault(nodes[columns.node[i]], []).append(columns.names[i])
    waiting = np.unique(columns.job[columns.chosen(("pending", "nominated"))]).tolist()

    per_job = snapshot.job_columns()
    queues, queue_of = per_job.queues, per_job.queue[columns.job]  # queues in order of first job
    held = columns.chosen(("running", "nominated"))  # HOLDING, as a snapshot's tasks can be
    kept = ~per_job.preemptible[columns.job] & held
    asked = held | (columns.status == CODES["pending"])
    sums = [columns.group_dicts(queue_of[m], columns.row[m], queues) for m in (held, kept, asked)]
    leaf = {q: QueueUsage(sums[0].get(q, {}), sums[1].get(q, {}), sums[2].get(q, {})) for q in queues}
    return Count(  # the maps of every task, made when first read (a summary reads the columns alone)
        status=lambda: dict(zip(columns.names, columns.statuses, strict=True)),
        node_of=lambda: dict(zip(columns.names, columns.nodes, strict=True)),
        running=running,
        loads=NodeLoads.lazy(columns, nodes, index.node_index),
        promised=nominated,
        waiting=[jobs[j] for j in waiting],
        usage=roll_up(leaf, tree),
    )


def count_since(snapshot: Snapshot, tree: QueueTree, before: Count) -> Count | None:
    """What :func:`count_tasks` with ``fill`` counts, from ``before`` (a count of an earlier snapshot) and the job
    models that left or came since: a replay's next cycle shares nearly every job model with the last. Amounts that
    fall to zero are dropped (a derived state keeps them: both mean nothing held). ``None`` when ``before`` cannot
    serve or most jobs changed."""
    if before.jobs is None or before.leaf is None or type(before.running.counts) is not dict:
        return None
    if callable(before.status) or callable(before.node_of):  # counted on columns (no job models): not here
        return None
    jobs = snapshot.jobs
    now, then = set(map(id, jobs)), set(map(id, before.jobs))
    gone = [job for job in before.jobs if id(job) not in now]
    came = [job for job in jobs if id(job) not in then]
    if 4 * (len(gone) + len(came)) > len(jobs):
        return None
    status, node_of = dict(before.status), dict(before.node_of)
    for job in gone:
        for task in job.tasks:
            name: str = task.name  # type: ignore[assignment]  # set by validation
            del status[name], node_of[name]
    left = _scan(gone, {}, {}, fill=True)
    added = _scan(came, status, node_of, fill=True)
    final, current = dict(before.loads.final), dict(before.loads.current)
    for loads, minus, plus in (
        (final, left.loads.final, added.loads.final),
        (current, left.loads.current, added.loads.current),
    ):
        for node, amounts in minus.items():
            loads[node] = _sum(loads[node], amounts, -1)
            if not loads[node]:
                del loads[node]
        for node, amounts in plus.items():
            loads[node] = _sum(loads.get(node, {}), amounts, 1)
    leaf = dict(before.leaf)
    for queue, entry in left.leaf.items():  # type: ignore[union-attr]
        leaf[queue] = _usage_sum(leaf[queue], entry, -1)
    for queue, entry in added.leaf.items():  # type: ignore[union-attr]
        leaf[queue] = _usage_sum(leaf.get(queue, QueueUsage()), entry, 1)
    counts = dict(before.running.counts)
    hosts = dict(before.running.on or {})
    for job in gone:
        del counts[job.name]
        hosts.pop(job.name, None)
    counts.update(added.running.counts)
    hosts.update(added.running.on or {})
    promised: dict[str, list[str]] = {}
    waiting: list[Job] = []
    for job in jobs:  # document order, as a full count gives them
        statuses = job_statuses(job)
        if statuses.get("nominated"):
            for task in job.tasks:
                if task.status == "nominated":
                    promised.setdefault(task.node, []).append(task.name)  # type: ignore[arg-type]
        if statuses.get("pending") or statuses.get("nominated"):
            waiting.append(job)
    names = [job.name for job in jobs]
    return Count(
        status=status,
        node_of=node_of,
        running=Running({n: counts[n] for n in names}, on={n: hosts[n] for n in names if n in hosts}),
        loads=NodeLoads(final, current),
        promised=promised,
        waiting=waiting,
        usage=roll_up(leaf, tree),
        leaf=leaf,
        jobs=jobs,
    )


def job_statuses(job: Job) -> dict[str, int]:
    """The job model's tasks per status, as given (kept on the model)."""
    counts: dict[str, int] | None = job.__dict__.get("_status_counts")
    if counts is None:
        counts = job.__dict__["_status_counts"] = {}
        for task in job.tasks:
            state: str = task.status  # type: ignore[assignment]
            counts[state] = counts.get(state, 0) + 1
    return counts


def _sum(amounts: dict[str, int], change: dict[str, int], sign: int) -> dict[str, int]:
    """A copy of ``amounts`` with ``change`` times ``sign`` added, zeros dropped."""
    out = dict(amounts)
    for r, a in change.items():
        total = out.get(r, 0) + sign * a
        if total:
            out[r] = total
        else:
            out.pop(r, None)
    return out


def _usage_sum(usage: QueueUsage, change: QueueUsage, sign: int) -> QueueUsage:
    return QueueUsage(
        _sum(usage.allocated, change.allocated, sign),
        _sum(usage.allocated_non_preemptible, change.allocated_non_preemptible, sign),
        _sum(usage.requested, change.requested, sign),
    )
