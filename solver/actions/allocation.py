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

from gpu_preempt.formulate.builder import Prepared
from gpu_preempt.models import format_quantity, format_resources
from gpu_preempt.problem.devices import assign_devices
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution
from gpu_preempt.reduce.hosts import free_hosts

from .kai_order import place_in_order

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
    chosen = place_in_order(prepared, request, resources, hosted, total)
    problem = prepared.build(chosen=[], only_nodes={name for name, _ in chosen})
    index = {room.name: i for i, room in enumerate(problem.nodes)}
    placed = {(0, index[name]): take for name, take in chosen}
    solution = Solution("optimal", placed=placed)
    if cluster.has_shares():
        devices = assign_devices(problem, solution)
        assert devices is not None  # one kind of task: first fit reaches what the devices take
        solution.devices = devices
    return problem, solution, None
