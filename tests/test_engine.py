"""The decision engine as a whole: determinism, CP-SAT against the greedy baseline, honest outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import Snapshot, load_snapshot
from gpu_preempt.models.quota_decision import QuotaDecision
from gpu_preempt.state.cluster import ClusterState

ALL = sorted(FIXTURES.glob("*.yaml"))


def with_workers(snapshot: Snapshot, workers: int) -> Snapshot:
    solver = snapshot.config.solver.model_copy(update={"workers": workers})
    config = snapshot.config.model_copy(update={"solver": solver})
    return snapshot.model_copy(update={"config": config})


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_same_answer_with_1_and_8_workers(path: Path) -> None:
    snapshot = load_snapshot(path)
    one = run_cycle(with_workers(snapshot, 1)).to_dict(timing=False)
    eight = run_cycle(with_workers(snapshot, 8)).to_dict(timing=False)
    assert one == eight


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_cpsat_never_evicts_more_than_greedy(path: Path) -> None:
    """Every decision of the cycle, and the fixture's own decision, compared with the greedy baseline."""
    snapshot = load_snapshot(path)
    result = run_cycle(snapshot)
    cases = [
        (state, d.job, d.action)
        for state, d in zip(result.states, result.decisions, strict=True)
        if not isinstance(d, QuotaDecision)  # a queue's decision: greedy has no counterpart
    ]
    expect = snapshot.expect or {}
    if expect.get("job") and expect.get("action", "auto") != "auto":
        cases.append((ClusterState.of(snapshot), expect["job"], expect["action"]))
    for state, job, action in cases:
        exact = attempt(state, snapshot.job(job), action)
        greedy = attempt(state, snapshot.job(job), action, solver="greedy")
        assert verify(state, greedy) == [], greedy.to_dict()
        if greedy.placed:
            assert exact.placed, (exact.to_dict(), greedy.to_dict())
            order = snapshot.config.objective
            assert exact.objective_key(order) <= greedy.objective_key(order), (exact.to_dict(), greedy.to_dict())
        if exact.outcome == "infeasible":
            assert not greedy.placed


def test_unknown_outcome_is_reported_as_such(monkeypatch):
    snapshot = load_snapshot(FIXTURES / "reclaim-kai-two-of-eight.yaml")
    solver = snapshot.config.solver.model_copy(update={"time_limit": 1e-6})
    rushed = snapshot.model_copy(update={"config": snapshot.config.model_copy(update={"solver": solver})})
    import gpu_preempt.actions.greedy as greedy_module
    from gpu_preempt.problem.solution import Solution

    monkeypatch.setattr(greedy_module, "solve", lambda problem: Solution("unknown"))
    decision = attempt(ClusterState.of(rushed), rushed.job("a"), "reclaim")
    assert decision.outcome == "unknown"
    assert not decision.optimal
    assert "time limit" in (decision.reason or "")
