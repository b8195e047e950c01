"""The reduced model: how many units of each class to use, and at which level.

Variables ``y[c, t]``: units of class ``c`` that host at least ``t`` tasks with
their ``t``-option (an integer count, never one variable per node). Each class
has ``count`` units: ``sum_t y[c, t] <= count``; together they host the chunk:
``sum t * y[c, t] >= needed``.

The cost vector of the options is minimised lexicographically, and then a last
criterion breaks ties: prefer classes earlier in the document. Consecutive
criteria are folded into one weighted objective while the weighted sum is sure
to fit in 63 bits (each criterion's weight exceeds the largest total the less
important ones can reach, so the folded optimum is the lexicographic one);
usually one solve does it all. The model is small by construction, so it is
solved with one worker: a single-worker CP-SAT search is deterministic, and the
answer does not depend on the machine's cores.
"""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from gpu_preempt.solver.reduce.select import UnitClass

LIMIT = 2**62


def solve_classes(
    classes: list[UnitClass], needed: int, *, time_limit: float, workers: int, seed: int
) -> tuple[str, dict[tuple[int, int], int]]:
    """Status (``optimal``, ``feasible``, ``infeasible``, ``unknown``) and the count per (class, level).

    ``workers`` is accepted for symmetry with the full model; the reduced model always uses one.
    """
    deadline = time.perf_counter() + time_limit
    model = cp_model.CpModel()
    y: dict[tuple[int, int], cp_model.IntVar] = {}
    bound: dict[tuple[int, int], int] = {}
    for c, unit_class in enumerate(classes):
        for t in unit_class.options:
            bound[c, t] = min(unit_class.count, needed)
            y[c, t] = model.new_int_var(0, bound[c, t], f"y_{c}_{t}")
        model.add(cp_model.LinearExpr.sum([y[c, t] for t in unit_class.options]) <= unit_class.count)
    model.add(cp_model.LinearExpr.weighted_sum(list(y.values()), [t for (_, t) in y]) >= needed)
    keys = list(y)
    width = len(next(iter(classes[0].options.values())).cost) if classes else 0
    criteria = [[classes[c].options[t].cost[i] for (c, t) in keys] for i in range(width)]
    criteria = [weights for weights in criteria if any(weights)]
    criteria.append([c + 1 for (c, _) in keys])  # the tie-break: earlier classes first
    values: dict[tuple[int, int], int] = {}
    proved = True
    for group in _fold(criteria, [bound[k] for k in keys]):
        expr = cp_model.LinearExpr.weighted_sum([y[k] for k in keys], group)
        model.minimize(expr)
        result, found, solver = _run(model, deadline, seed)
        if found is None:
            if not values:
                return result, {}
            return "optimal" if proved else "feasible", values
        values = {key: int(solver.value(var)) for key, var in y.items()}
        if result != "optimal":
            return "feasible", values
        model.add(expr == round(solver.objective_value))
        model.clear_hints()
        for key, var in y.items():
            model.add_hint(var, values[key])
    return ("optimal" if proved else "feasible"), values


def _fold(criteria: list[list[int]], bounds: list[int]) -> list[list[int]]:
    """Fold consecutive criteria into weighted sums that cannot overflow; most important first."""
    groups: list[list[list[int]]] = []
    for weights in criteria:
        if groups and _reach([*groups[-1], weights], bounds) < LIMIT:
            groups[-1].append(weights)
        else:
            groups.append([weights])
    folded = []
    for group in groups:
        total = [0] * len(bounds)
        for weights in group:
            reach = sum(w * b for w, b in zip(weights, bounds, strict=True))
            total = [x * (reach + 1) + w for x, w in zip(total, weights, strict=True)]
        folded.append(total)
    return folded


def _reach(group: list[list[int]], bounds: list[int]) -> int:
    """The largest value the folded sum of ``group`` can take."""
    reach = 0
    for weights in group:
        top = sum(w * b for w, b in zip(weights, bounds, strict=True))
        reach = reach * (top + 1) + top
    return reach


def _run(model: cp_model.CpModel, deadline: float, seed: int) -> tuple[str, object, cp_model.CpSolver]:
    solver = cp_model.CpSolver()
    remaining = deadline - time.perf_counter()
    if remaining <= 0:
        return "unknown", None, solver
    solver.parameters.max_time_in_seconds = remaining
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    status = solver.solve(model)
    if status == cp_model.OPTIMAL:
        return "optimal", True, solver
    if status == cp_model.FEASIBLE:
        return "feasible", True, solver
    if status == cp_model.INFEASIBLE:
        return "infeasible", None, solver
    return "unknown", None, solver
