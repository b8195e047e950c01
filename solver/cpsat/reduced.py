"""Solve a decision through the exact reductions: reduce, solve the class model, map the counts back.

The reductions (:mod:`gpu_preempt.solver.reduce`) know nothing of the solver;
this module hands their unit classes to the class model
(:mod:`.option_model`) and their own decoding turns the answer back into victims.
"""

from __future__ import annotations

import time

from gpu_preempt.solver.problem.builder import Plan
from gpu_preempt.solver.problem.data import Problem, Solution
from gpu_preempt.solver.reduce.pipeline import Reduced, reduce_plan

from .option_model import solve_classes


def solve_reduced(plan: Plan) -> tuple[Problem, Solution, Reduced] | None:
    """Solve ``plan`` through the reductions, or ``None`` if they do not apply or the rows bind."""
    reduction = reduce_plan(plan)
    if reduction is None:
        return None
    if not reduction.classes:
        return reduction.result("infeasible", {})
    solver = plan.cluster.snapshot.config.solver
    started = time.perf_counter()
    status, counts = solve_classes(
        reduction.classes, reduction.needed, time_limit=solver.time_limit, workers=solver.workers, seed=solver.seed
    )
    reduction.report.solve_ms = (time.perf_counter() - started) * 1000
    return reduction.result(status, counts)
