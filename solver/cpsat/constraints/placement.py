"""Placement: the chunk within each node's room (what victims free and moved tasks take counted), the gang's
required tasks, and a required topology's single domain (docs/rules.md, "Placement")."""

from __future__ import annotations

from ortools.sat.python import cp_model

from ..variables import Variables

__all__ = ["capacity", "gang", "topology"]


def capacity(variables: Variables) -> None:
    """Per node and resource: placed + moved in <= room (free + releasing) + what victims there free (evicted or
    moved out); and a task moved in uses only free room (every promise kept; docs/snapshot-format.md, "Moves").

    A row that holds even with everything placed and moved in at its bound and nothing freed is left out: the
    variables' domains imply it (amounts are never negative), and on a large node most resources besides GPUs
    have room to spare.
    """
    problem = variables.problem
    moved_in: dict[int, list[tuple[cp_model.IntVar, dict[str, int], int]]] = {}  # variable, requests, bound
    moved_out: dict[int, list[tuple[cp_model.IntVar, dict[str, int]]]] = {}
    for (v, s, n), var in variables.move.items():
        slot = problem.victims[v].slots[s]
        moved_in.setdefault(n, []).append((var, slot.requests, slot.count))
        moved_out.setdefault(slot.node, []).append((var, slot.requests))
    placing: dict[int, list[tuple[int, cp_model.IntVar]]] = {}  # per node, its placement variables in order
    for (t, m), var in variables.place.items():
        placing.setdefault(m, []).append((t, var))
    slots_on: dict[int, list[tuple[int, int]]] = {}  # per node, the victims' slots there in order
    for v, victim in enumerate(problem.victims):
        for s, slot in enumerate(victim.slots):
            slots_on.setdefault(slot.node, []).append((v, s))
    chunk, victims, whole, peel, asked = (
        problem.chunk,
        problem.victims,
        variables.whole,
        variables.peel,
        problem.resources,
    )
    for n in sorted(placing.keys() | moved_in.keys()):
        on_node = slots_on.get(n, [])
        resources = asked if n in placing else ()
        if n in moved_in:
            arrive = {r for _, requests, _ in moved_in[n] for r, a in requests.items() if a > 0}
            resources = tuple(sorted(arrive.union(resources)))
        for resource in resources:
            unit = variables.scale.get(resource, 1)
            # one weighted sum: placed + arriving - freed - leaving <= room (freed: count * whole + peel)
            terms: list[cp_model.IntVar] = []
            weights: list[int] = []
            most = 0  # the left side at its largest
            for t, var in placing.get(n, []):
                amount = chunk[t].requests.get(resource, 0)
                if amount:
                    terms.append(var)
                    weights.append(amount // unit)
                    most += variables.place_bound[t, n] * (amount // unit)
            arriving = [
                (var, requests[resource] // unit, count)
                for var, requests, count in moved_in.get(n, [])
                if requests.get(resource, 0)
            ]
            for var, weight, count in arriving:
                terms.append(var)
                weights.append(weight)
                most += count * weight
            room = problem.nodes[n].room.get(resource, 0) // unit
            if most <= room:
                continue
            for v, s in on_node:
                slot = victims[v].slots[s]
                amount = slot.requests.get(resource, 0) // unit
                if amount:
                    if v in whole:
                        terms.append(whole[v])
                        weights.append(-amount * slot.count)
                    if (v, s) in peel:
                        terms.append(peel[v, s])
                        weights.append(-amount)
            for var, requests in moved_out.get(n, []):
                if requests.get(resource, 0):
                    terms.append(var)
                    weights.append(-(requests[resource] // unit))
            variables.model.add(cp_model.LinearExpr.weighted_sum(terms, weights) <= room)
            if arriving:
                free = problem.nodes[n].free_room().get(resource, 0) // unit
                if sum(weight * count for _, weight, count in arriving) > free:
                    moving = [var for var, _, _ in arriving]
                    variables.model.add(cp_model.LinearExpr.weighted_sum(moving, [w for _, w, _ in arriving]) <= free)


def gang(variables: Variables) -> None:
    """All-or-nothing: every required task of the chunk is placed; optional ones may be."""
    for t, chunk in enumerate(variables.problem.chunk):
        placed = [var for (u, _), var in variables.place.items() if u == t]
        total = cp_model.LinearExpr.sum(placed) if placed else 0
        variables.model.add(total >= chunk.required)
        variables.model.add(total <= len(chunk.tasks))


def topology(variables: Variables) -> None:
    """docs/rules.md, "Placement": a required topology places every task inside one domain of its level; a preferred
    one marks each domain a task goes to (the objective counts them)."""
    model, problem = variables.model, variables.problem
    for (t, n), var in variables.place.items():
        bound = variables.place_bound[t, n]
        if variables.domain:
            model.add(var <= bound * variables.domain[problem.domains[n]])
        if variables.spread and problem.spread[n] in variables.spread:
            model.add(var <= bound * variables.spread[problem.spread[n]])
    if variables.domain:
        model.add(cp_model.LinearExpr.sum(list(variables.domain.values())) <= 1)
