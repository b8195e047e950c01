"""The reductions keep the optimum: on clusters too big for exhaustive search, the reduced path and the full
CP-SAT model (both proving optimality) must reach the same objective.

Generated clusters (benchmarks/generate.py) of 20-60 nodes, every pending job, reclaim and preempt; the full model
is run directly on the full problem, bypassing the reductions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import snapshot_from_data
from solver import cpsat
from solver.cluster import Cluster
from solver.problem import objective_values
from solver.problem_builder import plan
from solver.reduce.pipeline import solve_reduced

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import generate


def key(values: dict[str, object], order: tuple[str, ...]) -> tuple[object, ...]:
    out: list[object] = []
    for criterion in order:
        value = values[criterion]
        out.extend(value if isinstance(value, list) else [value])
    return tuple(out)


@pytest.mark.parametrize("seed", range(12))
def test_reduced_and_full_models_agree(seed):
    snapshot = snapshot_from_data(generate(20 + 5 * seed, seed=100 + seed, pending=7))
    cluster = Cluster.of(snapshot)
    order = snapshot.config.objective
    compared = 0
    for job in snapshot.jobs:
        if not job.name.startswith("pending-"):
            continue
        for action in ("reclaim", "preempt"):
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
            assert key(objective_values(problem, solution), order) == key(
                objective_values(full_problem, full), order
            ), (job.name, action)
            compared += 1
    assert compared > 0
