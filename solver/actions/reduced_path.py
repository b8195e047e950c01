"""The reduced path of the job solver: the full model over the units that can matter.

The reductions (:mod:`gpu_preempt.reduce`) know nothing of the solver or the
formulation, and the CP-SAT backend (:mod:`gpu_preempt.cpsat`) nothing of the
reductions; the job solver chooses this path for reclaim and preempt. The
prepared decision becomes a :class:`~gpu_preempt.reduce.pipeline.Demand`, the
reductions answer with a :class:`~gpu_preempt.reduce.pipeline.Restriction`, the
formulation writes the problem over it, and CP-SAT solves that without the rows
that bind units together; those rows are checked on the answer.
The same model and the same canonical tie-break as the full path decide, so both
paths give the same answer.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from gpu_preempt.cpsat.constraints import FAMILIES
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.cpsat.search import FOLD_VICTIMS, solve
from gpu_preempt.formulate.builder import Prepared
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution, broken_rows
from gpu_preempt.reduce.pipeline import Demand, Reduced, restrict

__all__ = ["demand_of", "keeps_task_order", "solve_reduced", "without_task_order"]


def solve_reduced(prepared: Prepared, params: SolveParams) -> tuple[Problem, Solution, Reduced] | None:
    """Solve ``prepared`` through the reductions with ``params``, or ``None`` if they do not apply or the rows bind."""
    restriction = restrict(demand_of(prepared))
    if restriction is None:
        return None
    report = restriction.report
    problem = prepared.build(chosen=restriction.candidates, only_nodes=restriction.nodes)
    if not report.kept:
        return problem, Solution("infeasible"), report
    started = time.perf_counter()
    # a few dozen victims: one worker is quicker than a portfolio, and the canonical tie-break makes the answer
    # the same whatever the number of workers. On such small models the full linearization proves the folded
    # objective sooner, and one light presolve pass costs less than CP-SAT's default presolve saves
    # (benchmarks/small_models.py; docs/performance.md).
    small = len(problem.victims) <= FOLD_VICTIMS
    light = dataclasses.replace(params, workers=1, full_linearization=small, light_presolve=small)
    solution = solve(without_task_order(problem) if restriction.ordered else problem, light, skip=FAMILIES)
    report.solve_ms = (time.perf_counter() - started) * 1000
    if solution.feasible and broken_rows(problem, solution):
        return None
    if restriction.ordered and solution.feasible and not keeps_task_order(problem, solution):
        return None  # the order binds: the full model decides
    if solution.feasible:
        solution.stages.insert(0, f"reduced: {report.units} units, {report.kept} kept, {report.victims} victims")
    return problem, solution, report


def without_task_order(problem: Problem) -> Problem:
    """``problem`` with no task order on its victims' slots: what the reductions are exact for."""
    victims = tuple(
        dataclasses.replace(v, slots=tuple(dataclasses.replace(s, order=None) for s in v.slots))
        if any(s.order is not None for s in v.slots)
        else v
        for v in problem.victims
    )
    return dataclasses.replace(problem, victims=victims)


def keeps_task_order(problem: Problem, solution: Solution) -> bool:
    """Whether every victim that loses part of its tasks in ``solution`` loses them in its task order (docs/rules.md,
    "Task order"): a slot of order ``o`` gives a task only when every slot without an order or of a lower one has
    given all of its tasks."""
    for v, victim in enumerate(problem.victims):
        if not any(slot.order is not None for slot in victim.slots):
            continue
        lost = [solution.evicted.get((v, s), 0) for s in range(len(victim.slots))]
        if sum(lost) in (0, victim.running):
            continue
        for s, slot in enumerate(victim.slots):
            if lost[s] and slot.order is not None:
                before = [t for t, other in enumerate(victim.slots) if other.order is None or other.order < slot.order]
                if any(lost[t] < victim.slots[t].count for t in before):
                    return False
    return True


def demand_of(prepared: Prepared) -> Demand:
    """What the reductions read of ``prepared``."""
    job = prepared.job
    requests = tuple((job.requests(task), required) for task, required in prepared.chunk)
    if prepared.candidates is None or not requests or not all(required for _, required in requests):
        return Demand(prepared.cluster, job, prepared.candidates, requests, np.zeros(0, bool), False, False, ())
    where = prepared.where
    return Demand(
        prepared.cluster,
        job,
        prepared.candidates,
        requests,
        where.mask,
        where.constrained,
        prepared.moves_possible,
        prepared.levels,
    )
