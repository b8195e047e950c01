"""Allocation of one kind of task needs no search.

With no victims, the only choice is where the tasks go, and the only objective
is to place as many of the optional tasks as possible (the required ones must
all fit). With a single task type each node hosts at most ``floor(room / request)``
tasks independently of the others, so placing one task at a time on any node with room
places the most tasks possible; queue limits and the non-preemptible quota cap only the
total. The tasks go where KAI's node order puts them (:mod:`gpu_preempt.problem.node_order`:
the placement strategy, idle room first), as first fit and the canonical answer of the
full model place them.
"""

from __future__ import annotations

import heapq

import numpy as np

from gpu_preempt.formulate.builder import Prepared
from gpu_preempt.formulate.rooms import node_devices
from gpu_preempt.models import MILLI, Resources, format_quantity, format_resources, is_gpu_resource
from gpu_preempt.problem.devices import DeviceFit, assign_devices
from gpu_preempt.problem.node_order import weighed
from gpu_preempt.problem.records import Problem, share_size
from gpu_preempt.problem.solution import Solution
from gpu_preempt.reduce.hosts import free_hosts
from gpu_preempt.state.cluster import ClusterState

__all__ = ["solve_allocation"]


def solve_allocation(prepared: Prepared) -> tuple[Problem, Solution, str | None] | None:
    """Place ``prepared``'s chunk without victims on the nodes it may use; ``None`` when the chunk has several task
    types or a topology's domains are to be chosen or counted."""
    job = prepared.job
    requests = [job.requests(task) for task, _ in prepared.chunk]
    if not requests or any(r != requests[0] for r in requests) or prepared.where.constrained:
        return None
    request = {r: a for r, a in requests[0].items() if a > 0}
    resources = tuple(sorted(request))
    required = sum(1 for _, is_required in prepared.chunk if is_required)
    cluster = prepared.cluster
    nodes, allowed = cluster.snapshot.nodes, prepared.where.mask
    if request:
        hosts = free_hosts(cluster, job.resolved_priority, request, resources, job.gpu_devices)
        hosted = [(n, count) for n, count in hosts if allowed[n]]
    else:
        hosted = [(n, len(prepared.chunk)) for n in range(len(nodes)) if allowed[n]]
    empty = prepared.build(chosen=[], only_nodes=set())
    cap = len(prepared.chunk)
    for row in empty.limits:
        amount = request.get(row.resource, 0)
        if amount:
            cap = min(cap, max(0, row.headroom) // amount)
    room_total = sum(count for _, count in hosted)
    total = min(cap, room_total)
    if total < max(required, 1):
        if cap < max(required, 1) and room_total >= max(required, 1):
            rows = [r for r in empty.limits if request.get(r.resource, 0) and r.headroom // request[r.resource] == cap]
            reason = "; ".join(
                f"queue {row.queue} would exceed its {row.kind} of {format_quantity(row.resource, row.bound)} "
                f"{row.resource} (room left: {format_quantity(row.resource, max(0, row.headroom))})"
                for row in rows
            )
        else:
            need = required or 1
            reason = (
                f"no room without evicting anything: the job needs {need} x {{{format_resources(request)}}} "
                f"and the nodes have room for {room_total}"
            )
        return empty, Solution("infeasible"), reason
    chosen = _in_order(prepared, request, resources, hosted, total)
    problem = prepared.build(chosen=[], only_nodes={name for name, _ in chosen})
    index = {room.name: i for i, room in enumerate(problem.nodes)}
    placed = {(0, index[name]): take for name, take in chosen}
    solution = Solution("optimal", placed=placed)
    if cluster.has_shares():
        devices = assign_devices(problem, solution)
        assert devices is not None  # one kind of task: first fit reaches what the devices take
        solution.devices = devices
    return problem, solution, None


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


def _in_order(
    prepared: Prepared, request: Resources, resources: tuple[str, ...], hosted: list[tuple[int, int]], total: int
) -> list[tuple[str, int]]:
    """``total`` tasks of ``request`` on the ``hosted`` nodes (by index, each with how many tasks it takes) in KAI's
    node order (:mod:`gpu_preempt.problem.node_order`), one task at a time.

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
