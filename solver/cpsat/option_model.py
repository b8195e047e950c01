"""The reduced model: how many units of each class to use, and at which level.

Variables ``y[c, t]``: units of class ``c`` that host at least ``t`` tasks with
their ``t``-option (an integer count, never one variable per node). Each class
has ``count`` units: ``sum_t y[c, t] <= count``; together they host the chunk:
``sum t * y[c, t] >= needed``. The cost vector of the options is minimised
lexicographically, one component per stage (components that are zero in every
option are skipped). A last solve, with one worker and no hints, breaks ties by
preferring classes earlier in the document, so the answer does not depend on
the number of workers.
"""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from ..reduce.select import UnitClass


def solve_classes(
    classes: list[UnitClass], needed: int, *, time_limit: float, workers: int, seed: int
) -> tuple[str, dict[tuple[int, int], int]]:
    """Status (``optimal``, ``feasible``, ``infeasible``, ``unknown``) and the count per (class, level)."""
    deadline = time.perf_counter() + time_limit
    model = cp_model.CpModel()
    y: dict[tuple[int, int], cp_model.IntVar] = {}
    for c, unit_class in enumerate(classes):
        for t in unit_class.options:
            y[c, t] = model.new_int_var(0, min(unit_class.count, needed), f"y_{c}_{t}")
        model.add(cp_model.LinearExpr.sum([y[c, t] for t in unit_class.options]) <= unit_class.count)
    model.add(cp_model.LinearExpr.weighted_sum(list(y.values()), [t for (_, t) in y]) >= needed)
    width = len(next(iter(classes[0].options.values())).cost) if classes else 0
    status = "optimal"
    values: dict[tuple[int, int], int] = {}
    for component in range(width):
        weights = [classes[c].options[t].cost[component] for (c, t) in y]
        if not any(weights):
            continue
        expr = cp_model.LinearExpr.weighted_sum(list(y.values()), weights)
        model.minimize(expr)
        result, found, solver = _run(model, deadline, workers, seed)
        if found is None:
            return (result if not values else "feasible"), {key: values.get(key, 0) for key in y} if values else {}
        values = {key: int(solver.value(var)) for key, var in y.items()}
        if result != "optimal":
            return "feasible", values
        model.add(expr == round(solver.objective_value))
        model.clear_hints()
        for key, var in y.items():
            model.add_hint(var, values[key])
    model.clear_hints()
    model.minimize(cp_model.LinearExpr.weighted_sum(list(y.values()), [c + 1 for (c, _) in y]))
    result, found, solver = _run(model, deadline, 1, seed)
    if found is None:
        return (status if values else result), values
    # the stages proved the objective; an unfinished tie-break leaves the answer optimal, only less canonical
    return (status if values or result == "optimal" else "feasible"), {
        key: int(solver.value(var)) for key, var in y.items()
    }


def _run(model: cp_model.CpModel, deadline: float, workers: int, seed: int) -> tuple[str, object, cp_model.CpSolver]:
    solver = cp_model.CpSolver()
    remaining = deadline - time.perf_counter()
    if remaining <= 0:
        return "unknown", None, solver
    solver.parameters.max_time_in_seconds = remaining
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    status = solver.solve(model)
    if status == cp_model.OPTIMAL:
        return "optimal", True, solver
    if status == cp_model.FEASIBLE:
        return "feasible", True, solver
    if status == cp_model.INFEASIBLE:
        return "infeasible", None, solver
    return "unknown", None, solver
