"""CP-SAT against the greedy baseline on generated clusters (benchmarks/generate.py), small enough for a test.

Every pending job of each generated cluster is decided by both solvers in the
same state, for reclaim and for preempt; CP-SAT must never be worse under the
objective, and both answers must pass the verifier.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import snapshot_from_data
from solver.cluster import Cluster
from solver.job_solver import attempt
from solver.verifier import verify

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from generate import generate


@pytest.mark.parametrize("seed", range(6))
def test_never_worse_than_greedy_on_generated_clusters(seed):
    snapshot = snapshot_from_data(generate(60 + 20 * seed, seed=seed, pending=5))
    cluster = Cluster.of(snapshot)
    order = snapshot.config.objective
    compared = 0
    for job in snapshot.jobs:
        if not job.name.startswith("pending-"):
            continue
        for action in ("reclaim", "preempt"):
            exact = attempt(cluster, job, action)
            greedy = attempt(cluster, job, action, solver="greedy")
            assert verify(cluster, exact) == [], exact.to_dict()
            assert verify(cluster, greedy) == [], greedy.to_dict()
            if greedy.placed:
                assert exact.placed and exact.optimal
                assert exact.objective_key(order) <= greedy.objective_key(order)
                compared += 1
    assert compared > 0
