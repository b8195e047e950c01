"""The reductions keep the optimum and the tie-break: on clusters too big for exhaustive search, the reduced path
and the full CP-SAT model (both proving optimality) must reach the same objective and the same answer: the same
victims, the same tasks, the same nodes for the chunk (spec "Victim choice": one canonical tie-break in every path).

Generated clusters (benchmarks/generate.py) of 20-60 nodes, every pending job, reclaim and preempt; the full model
is run directly on the full problem, bypassing the reductions.
"""

from __future__ import annotations

import pytest
from conftest import generated_cases

from gpu_preempt.solver import cpsat
from gpu_preempt.solver.actions.job_solver import named_victims
from gpu_preempt.solver.cpsat.reduced import solve_reduced
from gpu_preempt.solver.problem.builder import plan
from gpu_preempt.solver.problem.data import Problem, Solution, objective_values
from gpu_preempt.solver.reduce.options import lower_bound, lower_bounds
from gpu_preempt.solver.reduce.units import CostModel, TooComplex, build_units
from gpu_preempt.solver.state.cluster import Cluster


def hosts(problem: Problem, solution: Solution) -> dict[str, int]:
    """Tasks of the chunk per node name."""
    out: dict[str, int] = {}
    for (_, n), count in solution.placed.items():
        out[problem.nodes[n].name] = out.get(problem.nodes[n].name, 0) + count
    return out


def key(values: dict[str, object], order: tuple[str, ...]) -> tuple[object, ...]:
    out: list[object] = []
    for criterion in order:
        value = values[criterion]
        out.extend(value if isinstance(value, list) else [value])
    return tuple(out)


@pytest.mark.parametrize("seed", range(12))
def test_reduced_and_full_models_agree(seed):
    snapshot, cases = generated_cases(20 + 5 * seed, 100 + seed, pending=7)
    cluster = Cluster.of(snapshot)
    order = snapshot.config.objective
    compared = 0
    for job, action in cases:
        planned = plan(cluster, job, action)
        if planned.skip is not None:
            continue
        reduced = solve_reduced(planned)
        if reduced is None:
            continue  # not applicable, or the rows bind: the full model decides anyway
        full_problem = planned.problem
        assert full_problem is not None
        full = cpsat.solve(full_problem)
        problem, solution, _ = reduced
        if solution.status == "infeasible":
            assert full.status == "infeasible"
            continue
        assert solution.status == "optimal" and full.status == "optimal"
        assert key(objective_values(problem, solution), order) == key(objective_values(full_problem, full), order), (
            job.name,
            action,
        )
        assert named_victims(cluster, problem, solution) == named_victims(cluster, full_problem, full), job.name
        assert hosts(problem, solution) == hosts(full_problem, full), job.name
        compared += 1
    assert compared > 0


@pytest.mark.parametrize("seed", range(6))
def test_the_bounds_of_all_units_at_once_are_the_bounds_unit_by_unit(seed):
    """``lower_bounds`` (numpy, every single-node unit at once) gives exactly ``lower_bound``'s vectors."""
    snapshot, cases = generated_cases(30 + 10 * seed, 200 + seed, pending=7)
    cluster = Cluster.of(snapshot)
    compared = 0
    for job, action in cases:
        planned = plan(cluster, job, action)
        if planned.skip is not None or planned.candidates is None or not planned.chunk:
            continue
        request = {r: a for r, a in job.requests(planned.chunk[0][0]).items() if a > 0}
        resources = tuple(sorted(request))
        costs = CostModel(snapshot.config.objective, planned.levels, cluster.now, cluster)
        try:
            units, _ = build_units(cluster, planned.candidates.candidates, request, resources, job.resolved_priority)
        except TooComplex:
            continue
        singles = [u for u in units if len(u.nodes) == 1]
        assert lower_bounds(singles, request, resources, costs) == [
            lower_bound(u, request, resources, costs) for u in singles
        ]
        compared += sum(1 for u in singles if u.local)
    assert compared > 0


def test_bounds_too_large_for_int64_are_computed_exactly():
    """A unit whose amounts could overflow a 64-bit running sum takes the exact path: the same vectors."""
    snapshot, cases = generated_cases(20, 7, pending=3)
    cluster = Cluster.of(snapshot)
    planned = next(p for p in (plan(cluster, j, a) for j, a in cases) if p.candidates and p.candidates.candidates)
    job = planned.job
    assert planned.candidates is not None
    request = {"gpu": 1 << 64}  # beyond int64: numpy could not even hold the need
    costs = CostModel(snapshot.config.objective, planned.levels, cluster.now, cluster)
    units, _ = build_units(cluster, planned.candidates.candidates, {"gpu": 1000}, ("gpu",), job.resolved_priority)
    singles = [u for u in units if len(u.nodes) == 1]
    assert singles
    expected = [lower_bound(u, request, ("gpu",), costs) for u in singles]
    assert lower_bounds(singles, request, ("gpu",), costs) == expected
