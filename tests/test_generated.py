"""CP-SAT against the greedy baseline on generated clusters (benchmarks/generate.py), small enough for a test.

Every pending job of each generated cluster is decided by both solvers in the
same state, for reclaim and for preempt; CP-SAT must never be worse under the
objective, and both answers must pass the verifier.
"""

from __future__ import annotations

import pytest
from conftest import generated_cases

from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.state.cluster import ClusterState


@pytest.mark.parametrize(
    ("seed", "shared"), [*((s, False) for s in range(6)), *((s, True) for s in range(4)), (0, "spread"), (1, "spread")]
)
def test_never_worse_than_greedy_on_generated_clusters(seed, shared):
    """Also with shares of a GPU (benchmarks/sharing.py's twin: docs/snapshot-format.md, "GPU sharing")."""
    snapshot, cases = generated_cases(60 + 20 * seed, seed, pending=5, shared=shared)
    cluster = ClusterState.of(snapshot)
    order = snapshot.config.objective
    compared = 0
    for job, action in cases:
        exact = attempt(cluster, job, action)
        greedy = attempt(cluster, job, action, solver="greedy")
        assert verify(cluster, exact) == [], exact.to_dict()
        assert verify(cluster, greedy) == [], greedy.to_dict()
        if greedy.placed:
            assert exact.placed and exact.optimal
            assert exact.objective_key(order) <= greedy.objective_key(order)
            compared += 1
    assert compared > 0
