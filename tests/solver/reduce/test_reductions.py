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
