"""The two full counts of a state: task by task over the job models, or in numpy over a large snapshot's task
columns. Both give the same node loads, running counts, promises, waiting jobs and queue usage, in the same orders
(document order of first appearance); ``tests/solver/state/test_cluster.py`` compares them on every fixture."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass

import numpy as np

from gpu_preempt.models import Job, Snapshot
from gpu_preempt.models.columns import CODES, TaskColumns

from .node_loads import CURRENT, FINAL, PROMISED, NodeLoads, shift
from .queue_tree import QueueTree
from .queue_usage import HOLDING, QueueUsage, roll_up
from .running import Running, only_nodes
from .snapshot_index import SnapshotIndex


@dataclass
class Count:
    """What a full pass over a state's tasks counts."""

    status: MutableMapping[str, str]
    """Task name -> status."""
    node_of: MutableMapping[str, str | None]
    """Task name -> node."""
    running: Running
    loads: NodeLoads
    promised: dict[str, list[str]]
    """Node -> the names of the tasks promised a place there (pipelined or nominated), in the order promised."""
    waiting: list[Job]
    """Jobs with a pending or nominated task, in document order."""
    usage: dict[str, QueueUsage]


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
    for job in snapshot.jobs:
        shared = tuple(job.task_resources.items())
        entry = leaf.get(job.queue)
        if entry is None:
            entry = leaf[job.queue] = QueueUsage()
        np_entry = None if job.is_preemptible else entry.allocated_non_preemptible
        count = waiting = held = 0
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
                count += 1
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
        running[job.name] = count
        if waiting or (own_waiting and job.name in own_waiting):
            waiting_jobs.append(job)
    return Count(
        status=status,
        node_of=node_of,
        running=Running(running, on=running_on),
        loads=NodeLoads(final, current),
        promised=nominated,
        waiting=waiting_jobs,
        usage=roll_up(leaf, tree),
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
    return Count(
        status=dict(zip(columns.names, columns.statuses, strict=True)),
        node_of=dict(zip(columns.names, columns.nodes, strict=True)),
        running=running,
        loads=NodeLoads.lazy(columns, nodes, index.node_index),
        promised=nominated,
        waiting=[jobs[j] for j in waiting],
        usage=roll_up(leaf, tree),
    )
