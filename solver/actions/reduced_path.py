"""The reduced path of the job solver: the full model over the units that can matter.

The reductions (:mod:`gpu_preempt.reduce`) know nothing of the solver, and the
CP-SAT backend (:mod:`gpu_preempt.cpsat`) nothing of the reductions; the job
solver chooses this path for reclaim and preempt. It solves the problem the
reductions restrict, without the rows that bind units together, and checks those
rows on the answer (:mod:`gpu_preempt.reduce.pipeline`).
The same model and the same canonical tie-break as the full path decide, so both
paths give the same answer.
"""

from __future__ import annotations

import dataclasses
import time

from gpu_preempt.cpsat.constraints import FAMILIES
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.cpsat.search import FOLD_VICTIMS, solve
from gpu_preempt.formulate.builder import Prepared
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution, broken_rows
from gpu_preempt.reduce.pipeline import Reduced, reduce_prepared

__all__ = ["solve_reduced"]


def solve_reduced(prepared: Prepared, params: SolveParams) -> tuple[Problem, Solution, Reduced] | None:
    """Solve ``prepared`` through the reductions with ``params``, or ``None`` if they do not apply or the rows bind."""
    reduction = reduce_prepared(prepared)
    if reduction is None:
        return None
    if not reduction.units:
        return prepared.build(chosen=[], only_nodes=set()), Solution("infeasible"), reduction.report
    problem = reduction.problem()
    started = time.perf_counter()
    # a few dozen victims: one worker is quicker than a portfolio, and the canonical tie-break makes the answer
    # the same whatever the number of workers. On such small models the full linearization proves the folded
    # objective sooner, and one light presolve pass costs less than CP-SAT's default presolve saves
    # (benchmarks/small_models.py; docs/performance.md).
    small = len(problem.victims) <= FOLD_VICTIMS
    light = dataclasses.replace(params, workers=1, full_linearization=small, light_presolve=small)
    solution = solve(problem, light, skip=FAMILIES)
    reduction.report.solve_ms = (time.perf_counter() - started) * 1000
    if solution.feasible and broken_rows(problem, solution):
        return None
    if solution.feasible:
        report = reduction.report
        solution.stages.insert(0, f"reduced: {report.units} units, {report.kept} kept, {report.victims} victims")
    return problem, solution, reduction.report
