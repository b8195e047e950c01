"""Once every stage is proved, where the tie-break stops depends on the input alone: a machine that stalls (a loaded
machine, a slow one) gives the same answer (docs/performance.md, "Planning": a replay's trajectory must not depend on
the machine's load)."""

from __future__ import annotations

import time

import pytest
from conftest import FIXTURES

import gpu_preempt.cpsat.search as search
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.models import load_snapshot, read_document, snapshot_from_data
from gpu_preempt.state.cluster import ClusterState


@pytest.mark.parametrize("name", ["tie-break-canonical-order", "volcano-5984-one-pod-not-ten"])
def test_a_stall_after_the_stages_does_not_change_the_answer(name: str, monkeypatch: pytest.MonkeyPatch):
    snapshot = load_snapshot(FIXTURES / f"{name}.yaml")
    job, action = snapshot.job(snapshot.expect["job"]), snapshot.expect["action"]
    calm = attempt(ClusterState.of(snapshot), job, action).to_dict(timing=False)

    stalled = {"now": False}

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return time.perf_counter() + (3600.0 if stalled["now"] else 0.0)

    canonical = search._canonical

    def stall_then_break_ties(runner, current):  # type: ignore[no-untyped-def]
        stalled["now"] = True  # an hour passes on the wall clock as the tie-break starts
        return canonical(runner, current)

    monkeypatch.setattr(search, "time", Clock)
    monkeypatch.setattr(search, "_canonical", stall_then_break_ties)
    loaded = attempt(ClusterState.of(snapshot), job, action).to_dict(timing=False)
    assert stalled["now"]
    assert loaded == calm
    assert calm["optimal"]


@pytest.mark.parametrize("name", ["tie-break-canonical-order", "volcano-5984-one-pod-not-ten"])
def test_on_the_work_clock_a_stall_before_the_stages_does_not_change_the_answer(
    name: str, monkeypatch: pytest.MonkeyPatch
):
    """config.solver.clock ``work`` (what replays use): the stages' budget counts CP-SAT's work, so a machine that
    stalls for an hour as the search starts gives the same answer; on the wall clock it gives none."""
    document = read_document(FIXTURES / f"{name}.yaml")
    assert isinstance(document, dict)
    config = document.get("config") or {}

    def decide(clock: str) -> dict[str, object]:
        snapshot = snapshot_from_data({**document, "config": {**config, "solver": {"clock": clock}}})
        job, action = snapshot.job(snapshot.expect["job"]), snapshot.expect["action"]
        return attempt(ClusterState.of(snapshot), job, action).to_dict(timing=False)

    calm = decide("work")

    class Clock:
        stalled = False

        @staticmethod
        def perf_counter() -> float:
            return time.perf_counter() + (3600.0 if Clock.stalled else 0.0)

    made = search._Runner.__init__

    def make_then_stall(self, problem, params, skip):  # type: ignore[no-untyped-def]
        made(self, problem, params, skip)
        Clock.stalled = True  # an hour passes on the wall clock once the budget is set

    monkeypatch.setattr(search, "time", Clock)
    monkeypatch.setattr(search._Runner, "__init__", make_then_stall)
    assert decide("work") == calm
    assert calm["optimal"]
    Clock.stalled = False
    assert decide("wall")["outcome"] == "unknown"
