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

Victims are first recorded lightly (:class:`Victim`); the ways each may lose
tasks (:class:`Item`) are worked out only for the units that are looked at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from gpu_preempt.models import Job, Resources, is_gpu_resource
from gpu_preempt.solver.rules.candidates import Candidate
from gpu_preempt.solver.rules.victim_order import NO_VICTIMS, EvictKey, Keep, evict_key
from gpu_preempt.solver.state.cluster import Cluster

Cost = tuple[Any, ...]
"""An additive cost vector: the criteria of ``config.objective`` (priority levels expanded), then the victims as a
:class:`~gpu_preempt.solver.rules.victim_order.Keep` (the canonical tie-break, compared last)."""


class TooComplex(Exception):
    """The reductions do not apply (a victim's tasks differ, or a unit has too many combinations)."""


@dataclass(frozen=True)
class Choice:
    """One way a victim loses tasks: how many, where (node -> tasks), the room freed there, and the cost."""

    tasks: int
    per_node: tuple[tuple[int, int], ...]
    freed: tuple[tuple[int, tuple[int, ...]], ...]
    cost: Cost
    whole: bool


@dataclass(frozen=True)
class Item:
    """A candidate victim inside a unit, with every way it may lose tasks (not losing any is implicit)."""

    victim: int
    job: str
    choices: tuple[Choice, ...]
    nodes: tuple[int, ...]


Signature = tuple[tuple[int, ...], tuple[int, ...], int, bool, int, int, int]


class Victim(NamedTuple):
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
    whole: bool
    surplus: int

    def signature(self, costs: CostModel) -> Signature:
        """Victims with equal signatures on equal nodes offer the same choices at the same costs."""
        job = self.job
        counts = (self.per_node[0][1],) if len(self.per_node) == 1 else tuple(k for _, k in self.per_node)
        return (counts, self.size, self.gpus, self.whole, self.surplus, job.resolved_priority, costs.elapsed(job))


@dataclass
class Unit:
    """Nodes (indices into the cluster's node list) and the candidate victims on them.

    ``room`` is what new work may use on each schedulable node (allocatable minus
    the final load); nodes missing from it are unschedulable: victims there free
    nothing usable.
    """

    nodes: tuple[int, ...]
    room: dict[int, tuple[int, ...]]
    local: dict[int, list[Victim]] = field(default_factory=dict)
    spanning: list[Victim] = field(default_factory=list)
    _items: dict[int, Item] = field(default_factory=dict)
    hosted: int = -1
    """Upper bound on the tasks this unit could host (see :func:`most_hosted`); -1 until computed."""

    @property
    def first(self) -> int:
        return self.nodes[0]

    def victims(self) -> list[Victim]:
        """Every candidate on the unit's nodes."""
        return [*self.spanning, *(v for vs in self.local.values() for v in vs)]

    def items(self, victims: list[Victim], costs: CostModel) -> list[Item]:
        """:class:`Item` of each victim (worked out once)."""
        out = []
        for victim in victims:
            if victim.candidate not in self._items:
                self._items[victim.candidate] = _item(victim, costs)
            out.append(self._items[victim.candidate])
        return out


@dataclass(frozen=True)
class CostModel:
    """How a victim's tasks add to the objective vector (spec "Victim choice"), ties broken canonically."""

    objective: tuple[str, ...]
    levels: tuple[int, ...]
    now: float
    cluster: Cluster | None = None
    shares: dict[str, Fraction] = field(default_factory=dict, compare=False)

    @property
    def width(self) -> int:
        return sum(len(self.levels) if c == "priority" else 1 for c in self.objective)

    def elapsed(self, job: Job) -> int:
        return 0 if job.started_at is None else max(0, round((self.now - job.started_at) * 1000))

    def key(self, job: Job) -> EvictKey:
        assert self.cluster is not None
        return evict_key(self.cluster, job, self.shares)

    def cost(self, job: Job, tasks: int, gpus: int) -> Cost:
        """The cost of ``job`` losing ``tasks`` tasks holding ``gpus`` GPUs in all."""
        out: list[Any] = []
        for criterion in self.objective:
            if criterion == "priority":
                out.extend(int(job.resolved_priority == level) for level in self.levels)
            elif criterion == "jobs":
                out.append(1)
            elif criterion == "tasks":
                out.append(tasks)
            else:
                out.append(gpus * self.elapsed(job))
        out.append(Keep([self.key(job)]) if self.cluster is not None else NO_VICTIMS)
        return tuple(out)

    def zero(self) -> Cost:
        return (*(0,) * self.width, NO_VICTIMS)

    def position(self, criterion: str) -> int:
        at = 0
        for c in self.objective:
            if c == criterion:
                return at
            at += len(self.levels) if c == "priority" else 1
        raise ValueError(criterion)


def add(a: Cost, b: Cost) -> Cost:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def build_units(
    cluster: Cluster,
    candidates: list[Candidate],
    request: Resources,
    resources: tuple[str, ...],
    priority: int,
) -> tuple[list[Unit], int]:
    """Units of the decision (document order of their first node), and how many candidates were dropped.

    Node rooms are seen by a decision of ``priority``: lower-priority nominations do not hold them (seed 004).
    """
    snapshot = cluster.snapshot
    index = cluster.node_index()
    schedulable = [node.schedulable for node in snapshot.nodes]
    rooms = cluster.rooms(priority, resources)

    light: list[Victim] = []
    shapes: dict[tuple[tuple[str, int], ...], tuple[int, tuple[int, ...]]] = {}
    jobs, running_on, add = snapshot.jobs_by_name(), cluster.running_hosts(), light.append
    for v, candidate in enumerate(candidates):
        job = jobs[candidate.job]
        if not job.uniform:
            raise TooComplex(f"the tasks of {job.name} differ")
        hosts = running_on.get(job.name, {})
        if len(hosts) == 1:  # the common case, kept cheap
            ((name, count),) = hosts.items()
            n = index[name]
            if not schedulable[n]:
                continue
            pairs: tuple[tuple[int, int], ...] = ((n, count),)
            nodes: tuple[int, ...] = (n,)
        else:
            pairs = tuple(sorted((index[name], count) for name, count in hosts.items()))
            if not any(schedulable[n] for n, _ in pairs):
                continue
            nodes = tuple(n for n, _ in pairs)
        shared = job.task_resources
        key = tuple(shared.items())
        shape = shapes.get(key)
        if shape is None:
            gpus = sum(a for r, a in shared.items() if is_gpu_resource(r)) // 1000
            shape = shapes[key] = (gpus, tuple(shared.get(r, 0) for r in resources))
        add(Victim(v, job, pairs, nodes, shape[1], shape[0], candidate.whole_job, candidate.surplus))

    parent: dict[int, int] = {}

    def find(n: int) -> int:
        while parent.setdefault(n, n) != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for victim in light:
        spread = victim.nodes
        for n in spread[1:]:
            parent[find(n)] = find(spread[0])
    groups: dict[int, Unit] = {}
    for victim in light:
        first = victim.nodes[0]
        root = find(first) if first in parent else first
        unit = groups.get(root)
        if unit is None:
            unit = groups[root] = Unit(nodes=(), room={})
        if len(victim.nodes) > 1:
            unit.spanning.append(victim)
        else:
            unit.local.setdefault(first, []).append(victim)
    units = []
    for unit in groups.values():
        members = sorted({*unit.local, *(n for victim in unit.spanning for n in victim.nodes)})
        unit.nodes = tuple(members)
        unit.room = {n: rooms[n] for n in members if schedulable[n]}
        units.append(unit)
    hosting = {n for unit in units for n in unit.nodes}
    for n, _ in free_hosts(cluster, priority, request, resources):
        if n not in hosting:
            units.append(Unit(nodes=(n,), room={n: rooms[n]}))
    for unit in units:
        unit.hosted = most_hosted(unit, request, resources)
    kept = [u for u in units if u.hosted > 0]
    dropped = len(candidates) - sum(len(u.spanning) + sum(len(vs) for vs in u.local.values()) for u in kept)
    kept.sort(key=lambda u: u.first)
    return kept, dropped


def free_hosts(
    cluster: Cluster, priority: int, request: Resources, resources: tuple[str, ...]
) -> list[tuple[int, int]]:
    """Schedulable nodes (by index) with room for tasks of ``request`` now, as ``priority`` sees them, and how many
    each takes; kept while the state lasts."""
    shape = tuple(sorted(request.items()))
    key = ("free-hosts", priority, shape, resources)
    found = cluster.scratch.get(key)
    if isinstance(found, list):
        return found
    rooms = cluster.rooms(priority, resources)
    counts: np.ndarray | None = None
    for i, r in enumerate(resources):  # fits(), on every node at once
        amount = request.get(r, 0)
        if amount > 0:
            column = np.fromiter((room[i] for room in rooms), dtype=np.int64, count=len(rooms)) // amount
            counts = column if counts is None else np.minimum(counts, column)
    if counts is None:
        hosts: list[tuple[int, int]] = []
    else:
        counts[~_schedulable(cluster)] = 0
        hosts = [(int(n), int(counts[n])) for n in np.flatnonzero(counts > 0)]
    cluster.scratch[key] = hosts
    return hosts


def _schedulable(cluster: Cluster) -> np.ndarray:
    """Which nodes are schedulable (document order), as a mask built once per snapshot."""
    found = cluster.memo.get("schedulable mask")
    if not isinstance(found, np.ndarray):
        nodes = cluster.snapshot.nodes
        found = cluster.memo["schedulable mask"] = np.fromiter(
            (node.schedulable for node in nodes), dtype=bool, count=len(nodes)
        )
    return found


def _item(victim: Victim, costs: CostModel) -> Item:
    counts = dict(victim.per_node)
    choices: list[Choice] = []
    running = sum(counts.values())
    if victim.whole:
        choices.append(_choice(victim, counts, costs, whole=True))
    if victim.surplus > 0:
        for split in _splits(victim.nodes, counts, victim.surplus):
            if sum(split.values()) == running and victim.whole:
                continue  # the same as the whole job
            choices.append(_choice(victim, split, costs, whole=False))
    return Item(victim.candidate, victim.job.name, tuple(choices), victim.nodes)


def _splits(nodes: tuple[int, ...], counts: dict[int, int], most: int) -> list[dict[int, int]]:
    """Every way to take 1..``most`` tasks from the nodes (bounded by what runs on each)."""
    out: list[dict[int, int]] = [{}]
    for n in nodes:
        out = [{**s, n: k} for s in out for k in range(0, counts[n] + 1) if sum(s.values()) + k <= most]
    return [{n: k for n, k in s.items() if k} for s in out if sum(s.values()) > 0]


def _choice(victim: Victim, split: dict[int, int], costs: CostModel, *, whole: bool) -> Choice:
    freed = tuple((n, tuple(k * x for x in victim.size)) for n, k in sorted(split.items()))
    tasks = sum(split.values())
    return Choice(tasks, tuple(sorted(split.items())), freed, costs.cost(victim.job, tasks, tasks * victim.gpus), whole)


def fits(room: tuple[int, ...], request: Resources, resources: tuple[str, ...]) -> int:
    """Tasks of ``request`` that fit in ``room``."""
    counts = [room[i] // request[r] for i, r in enumerate(resources) if request.get(r, 0) > 0]
    return max(0, min(counts)) if counts else 0


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
        return fits(tuple(free), request, resources)
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
        total += fits(
            room if bonus is None else tuple(a + b for a, b in zip(room, bonus, strict=True)), request, resources
        )
    return total
