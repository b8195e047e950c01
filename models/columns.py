"""The tasks of a snapshot as columns: what whole-cluster sums are computed from, with numpy.

The capacity check of a snapshot and the state the solver starts from both sum
the requests of every task per node and per queue. A 100,000-node snapshot has
about half a million tasks, too many to sum task by task in Python at every
decision. :class:`TaskColumns` holds, for every task in document order, its
job, node, status and requests (an index into the distinct request maps), so
that each sum is one ``np.add.at``.

Sums are exact: amounts are integers (milli-units). Per-node sums in numpy are
refused (``None``) when they might not fit 64 bits; sums returned as
dictionaries are Python integers.

Examples
--------
>>> from gpu_preempt.models import parse_snapshot
>>> snap = parse_snapshot('''
... now: 0
... nodes: [{name: n1, resources: {gpu: 8}}, {name: n2, resources: {gpu: 8}}]
... queues: [{name: q}]
... jobs: [{name: j, queue: q, task_resources: {gpu: 2},
...         tasks: [{node: n1}, {node: n1}, {node: n2, status: releasing}]}]
... ''')
>>> columns = snap.task_columns()
>>> columns.resources, columns.node_sums(("running",)).tolist()
(('gpu',), [[4000], [0]])
>>> columns.node_dicts(("running", "releasing"), [n.name for n in snap.nodes])
{'n1': {'gpu': 4000}, 'n2': {'gpu': 2000}}
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    from .job import Job
    from .node import Node

__all__ = ["CODES", "JobColumns", "Requests", "TaskColumns", "grouped"]

CODES = {"pending": 0, "running": 1, "releasing": 2, "nominated": 3}
"""Status -> the code in :attr:`TaskColumns.status`."""

_SAFE = 2**61
"""Per-node sums of up to four statuses stay below 2^63 when the largest amount times the most tasks on one node
stays below this."""


class Requests:
    """Distinct request maps, numbered in the order they are first seen.

    A map seen before as the same object is found by identity first: the struct path gives every job of one shape
    one map, so a large snapshot's jobs cost a lookup each. (The maps numbered are kept in :attr:`maps`, so an
    identity is never reused while this lives.)
    """

    def __init__(self) -> None:
        self.maps: list[dict[str, int]] = []
        self._rows: dict[tuple[tuple[str, int], ...], int] = {}
        self._known: dict[int, int] = {}

    def row(self, requests: dict[str, int]) -> int:
        found = self._known.get(id(requests))
        if found is not None:
            return found
        key = tuple(requests.items())
        found = self._rows.get(key)
        if found is None:
            found = self._rows[key] = len(self.maps)
            self.maps.append(requests)
        if self.maps[found] is requests:
            self._known[id(requests)] = found
        return found


@dataclass(frozen=True, eq=False)
class TaskColumns:
    """Every task of a snapshot, job by job in document order, as columns (compared by identity)."""

    names: list[str]
    nodes: list[str | None]
    statuses: list[str]
    job: np.ndarray
    """Index of the task's job (int64)."""
    node: np.ndarray
    """Index of the task's node, -1 when it has none or names an unknown one (int64)."""
    status: np.ndarray
    """:data:`CODES` of the task's status (int8)."""
    row: np.ndarray
    """Row of the task's requests in :attr:`requests` and :attr:`amounts` (int64)."""
    requests: list[dict[str, int]]
    """The distinct request maps, by row."""
    resources: tuple[str, ...]
    """Every resource a node has or a task asks for, sorted: the columns of the matrices."""
    amounts: np.ndarray
    """The distinct requests (rows) per resource, milli-units (int64)."""
    allocatable: np.ndarray
    """What each node (rows, document order) has of each resource (0 where it does not name it)."""
    job_names: list[str]
    """Per job, its name."""
    job_queues: list[str]
    """Per job, its queue."""
    devices: dict[int, list[int]] = field(default_factory=dict)
    """The devices of the tasks that name theirs, by position."""

    @classmethod
    def of(cls, nodes: list[Node], jobs: list[Job]) -> TaskColumns:
        """The columns of ``jobs``' tasks on ``nodes``, read from the models."""
        tasks = list(chain.from_iterable(map(attrgetter("tasks"), jobs)))
        own = [(i, r) for i, r in enumerate(map(attrgetter("resources"), tasks)) if r is not None]
        return cls.assemble(
            nodes,
            job_names=list(map(attrgetter("name"), jobs)),
            job_queues=list(map(attrgetter("queue"), jobs)),
            names=list(map(attrgetter("name"), tasks)),
            node_names=list(map(attrgetter("node"), tasks)),
            statuses=list(map(attrgetter("status"), tasks)),
            shared=list(map(attrgetter("task_resources"), jobs)),
            counts=list(map(len, map(attrgetter("tasks"), jobs))),
            own=own,
            devices={i: t.devices for i, t in enumerate(tasks) if t.devices is not None},
        )

    @classmethod
    def assemble(
        cls,
        nodes: list[Node],
        *,
        job_names: list[str],
        job_queues: list[str],
        names: list[str],
        node_names: list[str | None],
        statuses: list[str],
        shared: list[dict[str, int]],
        counts: list[int],
        own: list[tuple[int, dict[str, int]]],
        devices: dict[int, list[int]] | None = None,
    ) -> TaskColumns:
        """Columns from lists read elsewhere (the struct path reads them while it builds the models): per job its
        name and queue; per task its name, node name and status; per job its ``task_resources`` and number of tasks;
        the tasks that ask for requests of their own (task index, requests), and those that name their devices."""
        index: dict[str | None, int] = {node.name: i for i, node in enumerate(nodes)}
        requests = Requests()
        job = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        # Jobs of one shape share one map (the struct path's maps are shared): numbered once per distinct map.
        ids = np.fromiter(map(id, shared), dtype=np.int64, count=len(shared))
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        distinct = np.empty(len(first), dtype=np.int64)
        for u in np.argsort(first, kind="stable").tolist():  # in order of first appearance
            distinct[u] = requests.row(shared[int(first[u])])
        row = np.repeat(distinct[inverse.reshape(len(shared))], counts)
        for i, mine in own:
            row[i] = requests.row(mine)
        node = np.fromiter(map(index.get, node_names, repeat(-1)), dtype=np.int64, count=len(node_names))
        if statuses.count("running") == len(statuses):  # the common case: one pass in C
            status = np.full(len(statuses), CODES["running"], dtype=np.int8)
        else:
            status = np.fromiter(map(CODES.__getitem__, statuses), dtype=np.int8, count=len(statuses))
        held = [n.resources for n in nodes]
        resources = tuple(sorted({r for m in chain(requests.maps, held) for r in m}))
        width = len(resources)
        amounts = np.array([[m.get(r, 0) for r in resources] for m in requests.maps], dtype=np.int64)
        allocatable = np.array([[m.get(r, 0) for r in resources] for m in held], dtype=np.int64)
        return cls(
            names,
            node_names,
            statuses,
            job,
            node,
            status,
            row,
            requests.maps,
            resources,
            amounts.reshape(len(requests.maps), width),
            allocatable.reshape(len(nodes), width),
            job_names,
            job_queues,
            {} if devices is None else devices,
        )

    @staticmethod
    def count(mask: np.ndarray) -> int:
        """How many entries of ``mask`` are true."""
        return int(np.count_nonzero(mask))

    def chosen(self, statuses: tuple[str, ...]) -> np.ndarray:
        """Which tasks have one of ``statuses``."""
        return np.isin(self.status, [CODES[s] for s in statuses])

    def node_sums(self, statuses: tuple[str, ...]) -> np.ndarray | None:
        """The requests of the tasks of ``statuses`` summed per node (nodes x :attr:`resources`), or ``None`` if a
        sum could overflow 64 bits (then sum in Python)."""
        chosen = self.chosen(statuses) & (self.node >= 0)
        where, rows = self.node[chosen], self.row[chosen]
        crowd = int(np.bincount(where).max(initial=0)) if len(where) else 0
        if int(np.abs(self.amounts).max(initial=0)) * crowd >= _SAFE:
            return None
        total = np.zeros(self.allocatable.shape, dtype=np.int64)
        np.add.at(total, where, self.amounts[rows])
        return total

    def node_dicts(self, statuses: tuple[str, ...], names: list[str]) -> dict[str, dict[str, int]]:
        """Node name -> resource -> amount for the tasks of ``statuses`` on it, as a task-by-task pass builds it (see
        :meth:`group_dicts`)."""
        chosen = self.chosen(statuses) & (self.node >= 0)
        return self.group_dicts(self.node[chosen], self.row[chosen], names)

    def group_dicts(self, groups: np.ndarray, rows: np.ndarray, names: list[str]) -> dict[str, dict[str, int]]:
        """``{names[g]: {resource: amount}}``: the requests of ``rows`` summed per group, exactly (Python integers).

        As a task-by-task pass over ``(group, row)`` pairs builds it: groups and their resources come in the order
        they first appear, a group only if it has a row, and a resource if one of its rows names it (even as 0).
        """
        size = max(len(self.requests), 1)
        keys, first, counts = np.unique(groups * size + rows, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        keys, counts = keys[order], counts[order]
        maps = self.requests
        out: dict[str, dict[str, int]] = {}
        for group, row, count in zip((keys // size).tolist(), (keys % size).tolist(), counts.tolist(), strict=True):
            name = names[group]
            target = out.get(name)
            if target is None:
                target = out[name] = {}
            for r, a in maps[row].items():
                target[r] = target.get(r, 0) + a * count
        return out


H = TypeVar("H", bound=Hashable)


@dataclass(frozen=True, eq=False)
class JobColumns:
    """Every job of a snapshot, in document order, as columns: what rules filter hundreds of thousands of jobs by.

    A 100,000-node snapshot has about 380,000 running jobs: a rule that asks each of them in Python whether it is
    preemptible, in which queue, protected until when, would cost more than the rest of a decision; asked of
    columns, it does not. Reading the values back from the models would cost about as much, so the struct path
    gathers them while it builds the models, and validation adds the resolved priority and preemptibility.

    >>> from gpu_preempt.models import parse_snapshot
    >>> snap = parse_snapshot('''
    ... now: 100
    ... nodes: [{name: n1, resources: {gpu: 8}}]
    ... queues: [{name: a}, {name: b}]
    ... jobs:
    ... - {name: j1, queue: b, priority: 10, task_resources: {gpu: 1}, started_at: 40, tasks: [{node: n1}]}
    ... - {name: j2, queue: a, priority: 200, min_available: 1, task_resources: {gpu: 1}, tasks: [{}, {}]}
    ... ''')
    >>> columns = snap.job_columns()
    >>> columns.queues, columns.queue.tolist(), columns.priority.tolist(), columns.minimum.tolist()
    (['b', 'a'], [0, 1], [10, 200], [1, 1])
    >>> columns.started.tolist()[0], columns.preemptible.tolist()
    (40.0, [True, False])
    """

    names: list[str]
    queues: list[str]
    """The distinct leaf queues, in order of first job."""
    queue: np.ndarray
    """Per job, its queue's position in :attr:`queues` (int64)."""
    classes: list[str | None]
    """The distinct priority classes (``None``: no class), in order of first job."""
    priority_class: np.ndarray
    """Per job, its class's position in :attr:`classes` (int64)."""
    preemptible: np.ndarray
    """Per job, :attr:`Job.is_preemptible` (bool)."""
    marked: np.ndarray
    """Per job, whether it says ``preemptible: false`` (bool; what a rule says of a job that is not preemptible)."""
    priority: np.ndarray
    """Per job, :attr:`Job.resolved_priority` (int64)."""
    started: np.ndarray
    """Per job, ``started_at`` (float; NaN when it never started)."""
    since: np.ndarray
    """Per job, :attr:`Job.progress_since`, the lost-work clock (float; NaN when it never started)."""
    created: np.ndarray
    """Per job, ``created_at`` (float; NaN when not given)."""
    minimum: np.ndarray
    """Per job, :attr:`Job.gang_minimum` (int64)."""
    uniform: np.ndarray
    """Per job, :attr:`Job.uniform` (bool)."""
    shapes: list[dict[str, int]]
    """The distinct ``task_resources`` maps, told apart by identity (the struct path gives every job of one shape the
    same map; equal maps that are not the same object get codes of their own)."""
    shape: np.ndarray
    """Per job, its ``task_resources``' position in :attr:`shapes` (int64)."""

    @classmethod
    def of(cls, jobs: list[Job]) -> JobColumns:
        """The columns of ``jobs``, read from the models (resolved by their snapshot)."""
        if not jobs:
            rows: list[tuple[Any, ...]] = [()] * 10
        else:
            rows = list(zip(*map(_row, jobs), strict=True))
        names, queues, classes, started, created, minimum, priority, preemptible, marked, uniform = rows
        return cls.assemble(
            names=list(names),
            queues=list(queues),
            classes=list(classes),
            started=list(started),
            since=list(map(attrgetter("progress_since"), jobs)),  # a replay moves a model's checkpoint in place
            created=list(created),
            minimum=list(minimum),
            priority=list(priority),
            preemptible=list(preemptible),
            marked=list(marked),
            uniform=list(uniform),
            resources=list(map(attrgetter("task_resources"), jobs)),
        )

    @classmethod
    def assemble(
        cls,
        *,
        names: list[str],
        queues: list[str],
        classes: list[str | None],
        started: list[float | None],
        created: list[float | None],
        minimum: list[int],
        priority: list[int],
        preemptible: list[bool],
        marked: list[bool],
        uniform: list[bool],
        resources: list[dict[str, int]],
        since: list[float | None] | None = None,
    ) -> JobColumns:
        """Columns from lists read elsewhere (per job, in document order; ``resources``: each one's
        ``task_resources``; ``since``: the lost-work clock, when a checkpoint makes it differ from ``started``)."""
        count = len(names)
        queue_names, queue = _codes(queues)
        class_names, priority_class = _codes(classes)
        _, first, shape = np.unique(
            np.fromiter(map(id, resources), dtype=np.int64, count=count), return_index=True, return_inverse=True
        )
        order = np.argsort(first, kind="stable")  # shapes in order of first job
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        return cls(
            names=names,
            queues=queue_names,
            queue=queue,
            classes=class_names,
            priority_class=priority_class,
            preemptible=np.fromiter(preemptible, dtype=bool, count=count),
            marked=np.fromiter(marked, dtype=bool, count=count),
            priority=np.fromiter(priority, dtype=np.int64, count=count),
            started=(begun := np.array(started, dtype=float).reshape(count)),  # None becomes NaN
            since=begun if since is None else np.array(since, dtype=float).reshape(count),
            created=np.array(created, dtype=float).reshape(count),
            minimum=np.fromiter(minimum, dtype=np.int64, count=count),
            uniform=np.fromiter(uniform, dtype=bool, count=count),
            shapes=[resources[i] for i in first[order].tolist()],
            shape=rank[shape.reshape(count)],
        )


def _row(job: Job) -> tuple[Any, ...]:
    """What :meth:`JobColumns.of` reads of a job model but its checkpoint and requests, kept on the model."""
    found: tuple[Any, ...] | None = job.__dict__.get("_columns_row")
    if found is None:
        found = job.__dict__["_columns_row"] = (
            job.name,
            job.queue,
            job.priority_class,
            job.started_at,
            job.created_at,
            job.gang_minimum,
            job.resolved_priority,
            job.is_preemptible,
            job.preemptible is False,
            job.uniform,
        )
    return found


def _codes(values: list[H]) -> tuple[list[H], np.ndarray]:
    """The distinct ``values`` (in order of first appearance) and each value's position among them."""
    position = {value: i for i, value in enumerate(dict.fromkeys(values))}
    codes = np.fromiter(map(position.__getitem__, values), dtype=np.int64, count=len(values))
    return list(position), codes


def grouped(codes: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The positions in ``codes`` grouped by code: codes in order of their first position, positions ascending.

    >>> [(code, at.tolist()) for code, at in grouped(np.array([2, 0, 2, 1, 0]))]
    [(2, [0, 2]), (0, [1, 4]), (1, [3])]
    """
    if not len(codes):
        return []
    small = codes.min(initial=0) >= 0 and codes.max(initial=0) < 2**15
    order = np.argsort(codes.astype(np.int16) if small else codes, kind="stable")  # int16: a radix sort, one pass
    ranked = codes[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    edges = [*starts.tolist(), len(order)]
    groups = [(int(ranked[at]), order[at : edges[k + 1]]) for k, at in enumerate(edges[:-1])]
    return [groups[k] for k in np.argsort(order[starts], kind="stable").tolist()]  # a group's first is its least
