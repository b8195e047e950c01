"""Units: independent pieces of a decision, and what can be dropped before looking closer.

A *unit* is a set of nodes with the candidate victims running on them, such
that no victim runs both inside and outside the unit: a node with only
single-node victims is a unit of its own; nodes joined by a multi-node victim
(a gang spread over nodes) form one unit, so the gang is evicted or kept as a
whole and the room it frees counts on all its nodes at once.

Dropped here, with why it cannot lose the optimum (of the problem without the
rows that bind units together):

* unschedulable nodes host nothing; a victim whose every node is unschedulable
  frees room nobody can use, and evicting it only adds cost;
* a unit where even evicting every candidate leaves no room for one task of the
  chunk is never part of a placement, so its victims only add cost.

The units of one node each, most units of a large cluster, are kept as columns
(:class:`SingleNodeUnits`, one row per victim): their victims become :class:`CandidateTasks`
tuples only when a unit is looked at (:attr:`Unit.local`), and the ways each may
lose tasks (:class:`Member`) only when its options are enumerated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from itertools import repeat
from operator import add as _ADD
from operator import attrgetter
from typing import Any, NamedTuple

import numpy as np

from gpu_preempt.models import Job, Resources, is_gpu_resource
from gpu_preempt.rules.candidates import Candidate
from gpu_preempt.rules.victim_order import NO_VICTIMS, EvictKey, Keep, evict_key
from gpu_preempt.state.cluster import ClusterState

from .hosts import DeviceView, free_hosts, tasks_fitting
from .losses import Cost, Loss, Member, TooComplex

__all__ = ["CandidateTasks", "CostModel", "SingleNodeUnits", "Unit", "add", "build_units", "most_hosted"]


_JOB, _WHOLE, _SURPLUS, _NODES = attrgetter("job"), attrgetter("whole_job"), attrgetter("surplus"), attrgetter("nodes")


_WIDE = 2**62
"""Amounts from here on are handled in Python integers (sums of them could overflow int64)."""


class CandidateTasks(NamedTuple):
    """A candidate, as the reductions see it: its running tasks per node, all alike.

    A named tuple rather than a dataclass: a large cluster has hundreds of
    thousands of candidates, and tuples are cheap to create.
    """

    candidate: int
    job: Job
    per_node: tuple[tuple[int, int], ...]
    nodes: tuple[int, ...]
    size: tuple[int, ...]
    gpus: int
    """Milli-GPUs of one task."""
    whole: bool
    surplus: int


@dataclass(frozen=True, eq=False)
class SingleNodeUnits:
    """The units of one node each, as columns: victims are rows, grouped by node (ascending), candidates in order.

    Most units of a large cluster are single nodes, and most of those are never looked at closely (see
    :mod:`.select`): their victims become :class:`CandidateTasks` tuples only when a unit is (:meth:`victims`).
    """

    nodes: np.ndarray
    """Each unit's node (int64, ascending)."""
    starts: np.ndarray
    """Where each unit's rows start, then where the last one ends (int64, one longer than :attr:`nodes`)."""
    candidate: np.ndarray
    running: np.ndarray
    size: np.ndarray
    """Per row, one task's requests in the decision's resources (rows x resources, int64)."""
    gpus: np.ndarray
    whole: np.ndarray
    surplus: np.ndarray
    job: np.ndarray
    """Per row, the position of its job in :attr:`everyone`."""
    since: np.ndarray
    """Per row, its job's lost-work clock (:attr:`Job.progress_since`; float, NaN when it never started)."""
    priority: np.ndarray
    """Per row, its job's resolved priority (int64)."""
    everyone: list[Job]
    """The snapshot's jobs."""

    def rows(self, unit: int) -> range:
        return range(int(self.starts[unit]), int(self.starts[unit + 1]))

    def victims(self, unit: int) -> list[CandidateTasks]:
        """The victims of ``unit`` (an index into :attr:`nodes`), in candidate order."""
        a, b = int(self.starts[unit]), int(self.starts[unit + 1])
        n, new = int(self.nodes[unit]), tuple.__new__
        return [
            new(CandidateTasks, (c, job, ((n, k),), (n,), tuple(size), g, w, s))
            for c, job, k, size, g, w, s in zip(
                self.candidate[a:b].tolist(),
                map(self.everyone.__getitem__, self.job[a:b].tolist()),
                self.running[a:b].tolist(),
                self.size[a:b].tolist(),
                self.gpus[a:b].tolist(),
                self.whole[a:b].tolist(),
                self.surplus[a:b].tolist(),
                strict=True,
            )
        ]


@dataclass(eq=False, slots=True)
class Unit:
    """Nodes (indices into the cluster's node list) and the candidate victims on them.

    ``room`` is what new work may use on each schedulable node (allocatable minus
    the final load); nodes missing from it are unschedulable: victims there free
    nothing usable.

    Slots, and nothing made before it is needed: a large cluster has about 100,000 units of one node per decision.
    """

    nodes: tuple[int, ...]
    room: dict[int, tuple[int, ...]]
    spanning: list[CandidateTasks] | tuple[()] = ()
    """The victims spanning several of the unit's nodes (a list for a unit that has some)."""
    hosted: int = -1
    """Upper bound on the tasks this unit could host (see :func:`most_hosted`); -1 until computed."""
    source: tuple[SingleNodeUnits, int] | None = None
    """For a unit of :class:`SingleNodeUnits`: the table and its index there (its victims read when first asked for)."""
    _local: dict[int, list[CandidateTasks]] | None = None
    _members: dict[int, Member] | None = None

    @property
    def first(self) -> int:
        return self.nodes[0]

    @property
    def local(self) -> dict[int, list[CandidateTasks]]:
        """Node -> the victims running on that node only (candidate order)."""
        if self._local is None:
            self._local = {}
            if self.source is not None:
                table, u = self.source
                if table.rows(u):
                    self._local[self.first] = table.victims(u)
        return self._local

    def victims(self) -> list[CandidateTasks]:
        """Every candidate on the unit's nodes."""
        return [*self.spanning, *(v for vs in self.local.values() for v in vs)]

    def members(self, victims: Sequence[CandidateTasks], costs: CostModel) -> list[Member]:
        """:class:`Member` of each victim (worked out once)."""
        known = self._members
        if known is None:
            known = self._members = {}
        out = []
        for victim in victims:
            if victim.candidate not in known:
                known[victim.candidate] = _member(victim, costs)
            out.append(known[victim.candidate])
        return out


@dataclass(frozen=True)
class CostModel:
    """How a victim's tasks add to the objective vector (docs/snapshot-format.md, "Victim choice"), ties broken
    canonically."""

    objective: tuple[str, ...]
    levels: tuple[int, ...]
    now: float
    cluster: ClusterState | None = None
    shares: dict[str, Fraction] = field(default_factory=dict, compare=False)
    devices: DeviceView | None = None
    """The devices of the nodes, when the snapshot has shares of a GPU (docs/snapshot-format.md, "GPU sharing")."""

    @cached_property
    def width(self) -> int:
        return sum(len(self.levels) if c == "priority" else 1 for c in self.objective)

    def elapsed(self, job: Job) -> int:
        since = job.progress_since
        return 0 if since is None else max(0, round((self.now - since) * 1000))

    def key(self, job: Job) -> EvictKey:
        assert self.cluster is not None
        return evict_key(self.cluster, job, self.shares)

    def cost(self, job: Job, tasks: int, gpus: int) -> Cost:
        """The cost of ``job`` losing ``tasks`` tasks holding ``gpus`` milli-GPUs in all."""
        out: list[Any] = []
        for criterion in self.objective:
            if criterion == "priority":
                out.extend(int(job.resolved_priority == level) for level in self.levels)
            elif criterion == "jobs":
                out.append(1)
            elif criterion == "tasks":
                out.append(tasks)
            elif criterion == "lost_cpu_work":  # a job without GPUs: its tasks are alike here
                out.append(0 if gpus else tasks * job.requests(job.tasks[0]).get("cpu", 0) * self.elapsed(job))
            else:
                out.append(gpus * self.elapsed(job))
        out.append(Keep([self.key(job)]) if self.cluster is not None else NO_VICTIMS)
        return tuple(out)

    def zero(self) -> Cost:
        return self._zero

    @cached_property
    def _zero(self) -> Cost:
        return (*(0,) * self.width, NO_VICTIMS)

    def position(self, criterion: str) -> int:
        at = 0
        for c in self.objective:
            if c == criterion:
                return at
            at += len(self.levels) if c == "priority" else 1
        raise ValueError(criterion)


def add(a: Cost, b: Cost) -> Cost:
    """The sum of two costs of the same width, component by component."""
    return tuple(map(_ADD, a, b))


def build_units(
    cluster: ClusterState,
    candidates: list[Candidate],
    request: Resources,
    resources: tuple[str, ...],
    priority: int,
    rows: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    spread: int = 1,
) -> tuple[list[Unit], int]:
    """Units of the decision (document order of their first node), and how many candidates were dropped.

    ``rows`` are the candidates' jobs' positions in the snapshot, if known (:attr:`.CandidateSet.rows`). Node rooms
    are seen by a decision of ``priority``: lower-priority nominations do not hold them (docs/rules.md, "Nominations").
    ``allowed``: the nodes the job may use (default: the schedulable ones; docs/rules.md, "Placement").
    """
    snapshot = cluster.snapshot
    index = cluster.node_index()
    mask = cluster.index.schedulable if allowed is None else allowed
    schedulable = mask.tolist()
    rooms = cluster.rooms(priority, resources)

    # Column by column, each pass in C: a large cluster has hundreds of thousands of candidates.
    if rows is None:
        rows = np.array(cluster.job_positions(map(_JOB, candidates)), dtype=np.int64).reshape(len(candidates))
    columns, jobs = cluster.job_columns(), snapshot.jobs
    uniform = columns.uniform[rows]
    if not uniform.all():
        raise TooComplex(f"the tasks of {jobs[int(rows[np.argmin(uniform)])].name} differ")
    present, shape = np.unique(columns.shape[rows], return_inverse=True)
    sizes, gpus = _shapes([columns.shapes[i] for i in present.tolist()], resources)
    victims = _Candidates(
        node=cluster.running_nodes()[rows],
        running=cluster.running_array()[rows],
        job=rows,
        shape=shape.reshape(len(rows)),
        whole=np.fromiter(map(_WHOLE, candidates), dtype=bool, count=len(candidates)),
        surplus=np.fromiter(map(_SURPLUS, candidates), dtype=np.int64, count=len(candidates)),
        since=columns.since[rows],
        priority=columns.priority[rows],
    )
    new = tuple.__new__

    spanning: list[CandidateTasks] = []
    several = np.flatnonzero(victims.node == -2).tolist()
    found = cluster.running_pairs(rows[several].tolist())  # at once, where the state can tell
    for v, known in zip(several, found or repeat(None), strict=False):
        job = jobs[int(rows[v])]
        pairs = known or tuple(sorted((index[name], count) for name, count in cluster.running_on(job).items()))
        if not any(schedulable[n] for n, _ in pairs):
            continue
        k, whole, surplus = int(victims.shape[v]), bool(victims.whole[v]), int(victims.surplus[v])
        nodes = tuple(n for n, _ in pairs)
        spanning.append(new(CandidateTasks, (v, job, pairs, nodes, sizes[k], gpus[k], whole, surplus)))

    parent: dict[int, int] = {}

    def find(n: int) -> int:
        while parent.setdefault(n, n) != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for victim in spanning:
        for n in victim.nodes[1:]:
            parent[find(n)] = find(victim.nodes[0])
    groups: dict[int, Unit] = {}
    for victim in spanning:
        root = find(victim.nodes[0])
        unit = groups.get(root)
        if unit is None:
            unit = groups[root] = Unit(nodes=(), room={}, spanning=[], _local={})
        unit.spanning.append(victim)  # type: ignore[union-attr]

    free = [n for n, _ in free_hosts(cluster, priority, request, resources, spread) if mask[n]]
    table, joined = _singles(victims, jobs, (sizes, gpus), len(resources), mask, set(parent), free)
    for n, here in joined.items():
        groups[find(n)].local[n] = here
    units = []
    for unit in groups.values():
        members = sorted({*unit.local, *(n for victim in unit.spanning for n in victim.nodes)})
        unit.nodes = tuple(members)
        unit.room = {n: rooms[n] for n in members if schedulable[n]}
        unit.hosted = most_hosted(unit, request, resources)
        units.append(unit)
    hosted = _most_hosted(table, rooms, request, resources)
    hosting = np.flatnonzero(hosted > 0)
    for u, n, most in zip(hosting.tolist(), table.nodes[hosting].tolist(), hosted[hosting].tolist(), strict=True):
        units.append(Unit((n,), {n: rooms[n]}, hosted=most, source=(table, u)))
    kept = [u for u in units if u.hosted > 0]
    kept.sort(key=_NODES)  # units are disjoint: their first nodes decide
    in_table = np.diff(table.starts)
    used = sum(len(u.victims()) for u in kept if u.source is None) + int(in_table[hosted > 0].sum())
    return kept, len(candidates) - used


class _Candidates(NamedTuple):
    """Per candidate, as columns: the one node its running tasks are on (see :meth:`ClusterState.running_nodes`), its
    running tasks, its job's position, its shape (a row of :func:`_shapes`), whether it may lose the whole job, its
    surplus, and its job's start and priority."""

    node: np.ndarray
    running: np.ndarray
    job: np.ndarray
    shape: np.ndarray
    whole: np.ndarray
    surplus: np.ndarray
    since: np.ndarray
    priority: np.ndarray


def _shapes(maps: list[dict[str, int]], resources: tuple[str, ...]) -> tuple[list[tuple[int, ...]], list[int]]:
    """Per ``task_resources`` map, one task's requests in ``resources`` and its milli-GPUs (a share its part: lost
    work counts it, as the objective does)."""
    sizes = [tuple(m.get(r, 0) for r in resources) for m in maps]
    gpus = [sum(a for r, a in m.items() if is_gpu_resource(r)) for m in maps]
    return sizes, gpus


def _singles(
    victims: _Candidates,
    everyone: list[Job],
    shapes: tuple[list[tuple[int, ...]], list[int]],
    width: int,
    schedulable: np.ndarray,
    joined: set[int],
    free: list[int],
) -> tuple[SingleNodeUnits, dict[int, list[CandidateTasks]]]:
    """The candidates running on one schedulable node: a :class:`SingleNodeUnits` table with a unit for each such
    node that no victim spanning nodes reaches and for each node of ``free`` that hosts no victim; and, for each node
    one reaches (``joined``), its victims."""
    one = np.flatnonzero(victims.node >= 0)
    node = victims.node[one]
    sizes, gpus = shapes
    shape = victims.shape[one]
    size = np.array(sizes, dtype=np.int64).reshape(len(sizes), width)[shape]
    gpu = np.array(gpus, dtype=np.int64)[shape]
    per_row = (victims.running, victims.whole, victims.surplus, victims.job, victims.since, victims.priority)
    running, whole, surplus, job, since, priority = (column[one] for column in per_row)
    reached = np.zeros(len(schedulable), dtype=bool)
    reached[list(joined)] = True

    def table(rows: np.ndarray, units: np.ndarray) -> SingleNodeUnits:
        rows = rows[np.argsort(node[rows], kind="stable")]
        at = node[rows]
        starts = np.r_[np.searchsorted(at, units, side="left"), len(rows)].astype(np.int64)
        columns = (one[rows], running[rows], size[rows], gpu[rows], whole[rows], surplus[rows], job[rows])
        return SingleNodeUnits(units, starts, *columns, since[rows], priority[rows], everyone)

    usable = schedulable[node]
    inside = np.flatnonzero(usable & reached[node])
    out: dict[int, list[CandidateTasks]] = {}
    if len(inside):
        part = table(inside, np.unique(node[inside]))
        out = {int(n): part.victims(u) for u, n in enumerate(part.nodes.tolist())}
    alone = np.flatnonzero(usable & ~reached[node])
    reached[node[alone]] = True
    extra = np.array([n for n in free if not reached[n]], dtype=np.int64)
    return table(alone, np.union1d(node[alone], extra)), out


def _most_hosted(
    table: SingleNodeUnits, rooms: list[tuple[int, ...]], request: Resources, resources: tuple[str, ...]
) -> np.ndarray:
    """:func:`most_hosted` of every unit of ``table``, at once."""
    wanted = [(i, request[r]) for i, r in enumerate(resources) if request.get(r, 0) > 0]
    count = len(table.nodes)
    if not wanted or not count:
        return np.zeros(count, dtype=np.int64)
    if max(a for _, a in wanted) < _WIDE:  # else sums could overflow int64: in Python below
        take = np.where(table.whole, table.running, np.minimum(table.running, table.surplus))
        freed = np.zeros((count, len(resources)), dtype=np.int64)
        np.add.at(freed, np.repeat(np.arange(count), np.diff(table.starts)), take[:, None] * table.size)
        with contextlib.suppress(OverflowError):
            room = np.array([rooms[n] for n in table.nodes.tolist()], dtype=np.int64).reshape(count, len(resources))
            hosted: np.ndarray = np.maximum(np.min(np.stack([(room + freed)[:, i] // a for i, a in wanted]), axis=0), 0)
            return hosted
    units = [Unit((int(n),), {int(n): rooms[int(n)]}, source=(table, u)) for u, n in enumerate(table.nodes)]
    return np.array([most_hosted(u, request, resources) for u in units], dtype=np.int64)


def _member(victim: CandidateTasks, costs: CostModel) -> Member:
    counts = dict(victim.per_node)
    choices: list[Loss] = []
    running = sum(counts.values())
    if victim.whole:
        choices.append(_loss(victim, counts, costs, whole=True))
    if victim.surplus > 0:
        for split in _splits(victim.nodes, counts, victim.surplus):
            if sum(split.values()) == running and victim.whole:
                continue  # the same as the whole job
            choices.append(_loss(victim, split, costs, whole=False))
    return Member(victim.candidate, victim.job.name, tuple(choices), victim.nodes)


def _splits(nodes: tuple[int, ...], counts: dict[int, int], most: int) -> list[dict[int, int]]:
    """Every way to take 1..``most`` tasks from the nodes (bounded by what runs on each)."""
    out: list[dict[int, int]] = [{}]
    for n in nodes:
        out = [{**s, n: k} for s in out for k in range(0, counts[n] + 1) if sum(s.values()) + k <= most]
    return [{n: k for n, k in s.items() if k} for s in out if sum(s.values()) > 0]


def _loss(victim: CandidateTasks, split: dict[int, int], costs: CostModel, *, whole: bool) -> Loss:
    freed = tuple((n, tuple(k * x for x in victim.size)) for n, k in sorted(split.items()))
    tasks = sum(split.values())
    devices = () if costs.devices is None else costs.devices.freed(victim.job, split)
    cost = costs.cost(victim.job, tasks, tasks * victim.gpus)
    return Loss(tasks, tuple(sorted(split.items())), freed, cost, whole, devices)


def most_hosted(unit: Unit, request: Resources, resources: tuple[str, ...]) -> int:
    """Tasks the unit could host if every candidate on it lost all it may lose (an upper bound)."""
    if not unit.spanning and len(unit.nodes) == 1:
        (n,) = unit.nodes
        room = unit.room.get(n)
        if room is None:
            return 0
        free = list(room)
        for victim in unit.local.get(n, ()):
            take = victim.per_node[0][1] if victim.whole else min(victim.per_node[0][1], victim.surplus)
            for i, x in enumerate(victim.size):
                free[i] += take * x
        return tasks_fitting(tuple(free), request, resources)
    extra: dict[int, list[int]] = {}
    for victim in [*unit.spanning, *(v for vs in unit.local.values() for v in vs)]:
        most = sum(k for _, k in victim.per_node) if victim.whole else victim.surplus
        for n, k in victim.per_node:
            take = min(k, most)
            vector = extra.setdefault(n, [0] * len(resources))
            for i, x in enumerate(victim.size):
                vector[i] += take * x
    total = 0
    for n, room in unit.room.items():
        bonus = extra.get(n)
        total += tasks_fitting(
            room if bonus is None else tuple(a + b for a, b in zip(room, bonus, strict=True)), request, resources
        )
    return total
