"""KAI's node order over the whole cluster (docs/rules.md, "Node order"): where allocate puts a job's tasks, and
where a reclaim or preempt places them once its victims are chosen.

The victim search (exact or greedy) works on the nodes that matter to it, which the reductions narrow down; which of
the nodes with room then takes the tasks is KAI's order, found here over every eligible node with numpy and
visited lazily, so that a decision on a large cluster does not score every node.
"""

from __future__ import annotations

import heapq
from dataclasses import replace

import numpy as np

from gpu_preempt.formulate.builder import Prepared
from gpu_preempt.formulate.rooms import node_devices
from gpu_preempt.models import MILLI, Resources, is_gpu_resource
from gpu_preempt.problem.devices import DeviceFit
from gpu_preempt.problem.node_order import best, strategy_of, weighed
from gpu_preempt.problem.records import ChunkType, Problem, share_size
from gpu_preempt.problem.solution import Solution
from gpu_preempt.reduce.hosts import free_hosts, tasks_fitting
from gpu_preempt.state.cluster import ClusterState

__all__ = ["in_kai_order", "moves_in_kai_order", "place_in_order"]


class _NodeFacts:
    """Per node of the snapshot's node models, what KAI's node order weighs that never changes: for each weighed
    resource, the allocatable amount and the count a spread divides by (GPU devices, or CPU), whether the node has
    no GPU, and the rank of its name."""

    def __init__(self) -> None:
        self.arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.cpu_only: np.ndarray | None = None
        self.rank: np.ndarray | None = None

    def of(self, cluster: ClusterState, resource: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        nodes = cluster.snapshot.nodes
        if self.rank is None:
            names = [node.name for node in nodes]
            self.rank = np.empty(len(names), np.int64)
            self.rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
            self.cpu_only = np.array(
                [not any(a > 0 and is_gpu_resource(r) for r, a in n.resources.items()) for n in nodes]
            )
        found = self.arrays.get(resource)
        if found is None:
            have = np.array([node.resources.get(resource, 0) for node in nodes], np.float64)
            count = have // MILLI if resource != "cpu" else have
            found = self.arrays[resource] = (have, np.maximum(count, 1))
        assert self.cpu_only is not None
        return found[0], found[1], self.cpu_only, self.rank


def place_in_order(
    prepared: Prepared,
    request: Resources,
    resources: tuple[str, ...],
    hosted: list[tuple[int, int]],
    total: int,
    freed: dict[int, Resources] | None = None,
) -> list[tuple[str, int]]:
    """``total`` tasks of ``request`` on the ``hosted`` nodes (by index, each with how many tasks it takes) in KAI's
    node order (:mod:`gpu_preempt.problem.node_order`), one task at a time; ``freed``: per node, the room a
    decision's victims free there (releasing, so not idle).

    The order is found for every node at once as if every task fitted in idle room; whether one does (room less
    what releasing tasks still hold), and for a share of a GPU what the node's devices hold, is looked up only for
    the nodes that could come first.
    """
    cluster, job = prepared.cluster, prepared.job
    snapshot = cluster.snapshot
    order = snapshot.config.placement_strategy
    weigh = weighed(request)
    strategy = order.gpu if weigh != "cpu" else order.cpu
    share = share_size(request, job.gpu_devices) if cluster.has_shares() else 0
    sharing = bool(share) and order.gpu == "binpack"  # KAI's gpusharingorder
    have, count, cpu_only, rank = cluster.for_nodes(_NodeFacts).of(cluster, weigh)
    at = np.fromiter((n for n, _ in hosted), np.int64, len(hosted))
    left = dict(hosted)
    rooms = cluster.rooms(job.resolved_priority, resources)
    w = resources.index(weigh) if weigh in resources else None
    free = np.fromiter((rooms[n][w] if w is not None else 0 for n in at.tolist()), np.float64, len(at))
    if freed:
        for k, n in enumerate(at.tolist()):
            free[k] += freed.get(n, {}).get(weigh, 0)
    cpu_node = cpu_only[at] & (weigh == "cpu")
    fill = free / count[at] if strategy == "spread" else -free
    fill = np.where(have[at] > 0, fill, -np.inf)
    nodes = snapshot.nodes
    shared = np.zeros(len(at), bool)
    if sharing:
        loads = cluster.device_loads()
        index = cluster.node_index()
        with_shares = {index[name] for name in loads.final if name in index}
        for k, n in enumerate(at.tolist()):
            if n in with_shares:
                carried = loads.shares(nodes[n].name, job.resolved_priority).values()
                shared[k] = any(a > 0 and a + share <= MILLI for a in carried)
    ranked = np.lexsort((rank[at], -fill, -cpu_node.astype(np.int64), -shared.astype(np.int64)))
    asked = [(r, a) for r, a in request.items() if a > 0]
    state: dict[int, tuple[float, dict[str, int], DeviceFit | None]] = {}

    def key(n: int) -> tuple[int, int, int, float, int]:
        room, idle, fit = state[n]
        on_shared = int(sharing and fit is not None and fit.shared_room(share))
        fits_idle = all(idle.get(r, 0) >= a for r, a in asked)
        value = (room / count[n] if strategy == "spread" else -room) if have[n] > 0 else -np.inf
        return (-on_shared, -int(fits_idle), -int(cpu_only[n] and weigh == "cpu"), -value, int(rank[n]))

    def opened(n: int, k: int) -> None:
        node = nodes[n]
        now, own = cluster.current_load(node.name), node.resources
        fit = None
        if share:
            devices = node_devices(cluster, node, job.resolved_priority)
            fit = None if devices is None else DeviceFit(devices, spread=order.gpu == "spread")
        state[n] = (float(free[k]), {r: own.get(r, 0) - now.get(r, 0) for r, _ in asked}, fit)

    heap: list[tuple[int, int, int, float, int, int]] = []
    taken: dict[int, int] = {}
    position = 0
    while total > 0:
        while position < len(ranked):
            k = int(ranked[position])
            n = int(at[k])
            bound = (-int(shared[k]), -1, -int(cpu_node[k]), -float(fill[k]), int(rank[n]))
            if heap and heap[0][:5] < bound:
                break
            opened(n, k)
            heapq.heappush(heap, (*key(n), n))
            position += 1
        if not heap:
            break
        n = heapq.heappop(heap)[-1]
        taken[n] = taken.get(n, 0) + 1
        total -= 1
        left[n] -= 1
        room, idle, fit = state[n]
        for r, a in asked:
            idle[r] = idle.get(r, 0) - a
        if fit is not None:
            fit.take_share(share, job.gpu_devices)
        state[n] = (room - request.get(weigh, 0), idle, fit)
        if left[n] > 0:
            heapq.heappush(heap, (*key(n), n))
    return [(nodes[n].name, c) for n, c in taken.items()]


def in_kai_order(prepared: Prepared, problem: Problem, solution: Solution) -> tuple[Problem, Solution]:
    """``solution`` (of ``problem``) with its chunk placed in KAI's node order over every eligible node, the same
    victims gone: among equally good answers the one KAI's placement gives. The problem is built again over its own
    nodes and those the order chooses when they differ. Unchanged when it moves tasks, counts a preferred level's
    domains or places shares of a GPU (where the placement is part of the answer), has tasks of several shapes, or
    when the order cannot place every task."""
    cluster, job = prepared.cluster, prepared.job
    if not solution.feasible or not solution.placed or solution.moved or problem.spread or len(problem.chunk) != 1:
        return problem, solution
    if cluster.has_shares():
        return problem, solution
    request = {r: a for r, a in problem.chunk[0].requests.items() if a > 0}
    if not request:
        return problem, solution
    resources = tuple(sorted(request))
    index = cluster.node_index()
    freed: dict[int, Resources] = {}
    for (v, s), count in solution.evicted.items():
        slot = problem.victims[v].slots[s]
        n = index[problem.nodes[slot.node].name]
        here = freed.setdefault(n, {})
        for r, a in slot.requests.items():
            here[r] = here.get(r, 0) + a * count
    mask = prepared.where.mask
    if problem.domains:  # the required topology's domain the solution chose
        required = prepared.where.required
        assert required is not None
        domain = required[index[problem.nodes[next(iter(solution.placed))[1]].name]]
        mask = mask & (required == domain)
    hosts = dict(free_hosts(cluster, job.resolved_priority, request, resources, job.gpu_devices))
    rooms = cluster.rooms(job.resolved_priority, resources)
    for n, more in freed.items():
        room = tuple(rooms[n][i] + more.get(r, 0) for i, r in enumerate(resources))
        hosts[n] = tasks_fitting(room, request, resources) if cluster.snapshot.nodes[n].schedulable else 0
    hosted = [(n, count) for n, count in sorted(hosts.items()) if count > 0 and mask[n]]
    total = sum(solution.placed.values())
    chosen = place_in_order(prepared, request, resources, hosted, total, freed)
    if sum(count for _, count in chosen) != total:
        return problem, solution
    at = {node.name: n for n, node in enumerate(problem.nodes)}
    if any(name not in at for name, _ in chosen):
        problem, solution = _over(prepared, problem, solution, {name for name, _ in chosen})
        at = {node.name: n for n, node in enumerate(problem.nodes)}
    return problem, replace(solution, placed={(0, at[name]): count for name, count in chosen})


def _over(prepared: Prepared, problem: Problem, solution: Solution, names: set[str]) -> tuple[Problem, Solution]:
    """``problem`` built again over its nodes and ``names``, with ``solution``'s evictions carried over."""
    victims = {victim.job for victim in problem.victims}
    assert prepared.candidates is not None
    chosen = [c for c in prepared.candidates.candidates if c.job in victims]
    wider = prepared.build(chosen=chosen, only_nodes={node.name for node in problem.nodes} | names)
    slots = {(v.job, slot.tasks): (i, s) for i, v in enumerate(wider.victims) for s, slot in enumerate(v.slots)}
    evicted = {}
    for (v, s), count in solution.evicted.items():
        victim = problem.victims[v]
        evicted[slots[victim.job, victim.slots[s].tasks]] = count
    return wider, replace(solution, evicted=evicted)


def moves_in_kai_order(problem: Problem, solution: Solution) -> Solution:
    """``solution`` with its moved tasks landing where KAI's node order puts them (docs/rules.md, "Node order"), the
    same tasks moved and the chunk where it is: each moved task, in the order KAI gives its victims back their
    places, on the node of its slot's ``moves_to`` that the placement strategy puts first among those whose room
    (with everything else the decision does) and free room before the decision take it. The destination changes no
    objective, so the answer stays as good. Unchanged without moves, where a node counts devices or shares move (the
    device ledger decides those), or when the order cannot land every task."""
    if not solution.feasible or not solution.moved or solution.moved_devices:
        return solution
    victims, nodes = problem.victims, problem.nodes
    landing: dict[tuple[int, int], int] = {}
    for (v, s, _), n in solution.moved.items():
        landing[v, s] = landing.get((v, s), 0) + n
    if any(nodes[m].devices is not None for v, s in landing for m in victims[v].slots[s].moves_to):
        return solution
    room: dict[int, dict[str, int]] = {}
    free: dict[int, dict[str, int]] = {}

    def touch(n: int) -> None:
        if n not in room:
            room[n], free[n] = dict(nodes[n].room), dict(nodes[n].free_room())

    def add(n: int, requests: Resources, times: int) -> None:
        touch(n)
        for r, a in requests.items():
            room[n][r] = room[n].get(r, 0) + a * times

    for (v, s), count in solution.evicted.items():
        add(victims[v].slots[s].node, victims[v].slots[s].requests, count)
    for (v, s), count in landing.items():
        add(victims[v].slots[s].node, victims[v].slots[s].requests, count)
    for (t, n), count in solution.placed.items():
        add(n, problem.chunk[t].requests, -count)
    rank = {v: k for k, v in enumerate(problem.keep_order)}
    sharing = problem.placement[0] == "binpack"
    moved: dict[tuple[int, int, int], int] = {}
    for v, s in sorted(landing, key=lambda key: (rank.get(key[0], len(rank)), key)):
        slot = victims[v].slots[s]
        asked = [(r, a) for r, a in slot.requests.items() if a > 0]
        task = ChunkType(slot.requests, slot.tasks[:1], 1)
        strategy = strategy_of(problem, task)
        for m in slot.moves_to:
            touch(m)
        for _ in range(landing[v, s]):
            fitting = [
                m for m in slot.moves_to if all(room[m].get(r, 0) >= a and free[m].get(r, 0) >= a for r, a in asked)
            ]
            chosen = best(fitting, nodes, task, strategy, room, free, sharing=sharing)
            if chosen is None:
                return solution
            for r, a in asked:
                room[chosen][r] -= a
                free[chosen][r] -= a
            moved[v, s, chosen] = moved.get((v, s, chosen), 0) + 1
    return replace(solution, moved=moved)
