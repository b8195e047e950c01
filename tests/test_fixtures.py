"""Every scenario in fixtures/ with an ``expect`` block, run through the engine and the independent verifier.

The ``expect`` block (see fixtures/README.md) says which command to run and
what must come out: the outcome, the exact victims, placements, objective,
words of the reason, protected jobs, or (for a cycle) the final task statuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from conftest import FIXTURES
from pydantic import BaseModel, ConfigDict

from gpu_preempt.actions.cycle import run_cycle, solve_one
from gpu_preempt.actions.quota_enforcement import enforce
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import RequeueState, load_snapshot, parse_quantity
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.quota_decision import QuotaDecision
from gpu_preempt.state.cluster import ClusterState


class RequeueExpectation(BaseModel):
    """A job's next requeue state (docs/rules.md, "Requeue with backoff"): ``delay`` is ``requeue_at - now`` before
    jitter, in seconds."""

    model_config = ConfigDict(extra="forbid")

    count: int
    active: bool = True
    delay: float | None = None


class Expectation(BaseModel):
    """The ``expect`` block of a fixture."""

    model_config = ConfigDict(extra="forbid")

    run: Literal["solve", "cycle", "enforce-quota"] = "solve"
    job: str | None = None
    queue: str | None = None
    action: Literal["auto", "allocate", "reclaim", "preempt"] = "auto"
    actions: list[Literal["enforce-quota", "allocate", "reclaim", "preempt"]] | None = None
    """Default: the cycle's default (enforce-quota first when config.quota_preemption_enabled is true)."""
    outcome: str | None = None
    victims: dict[str, int | Literal["whole"]] | None = None
    victim_tasks: dict[str, list[str]] | None = None
    placements: dict[str, str] | None = None
    objective: dict[str, object] | None = None
    reason: list[str] = []
    protected: list[str] = []
    optimal: bool | None = None
    statuses: dict[str, str] = {}
    outcomes: dict[str, str] = {}
    greedy_tasks: int | None = None
    greedy_victims: dict[str, int | Literal["whole"]] | None = None
    greedy_moves: dict[str, str] | None = None
    """Exactly these tasks are moved by the greedy baseline, each to this node (KAI's re-allocation of victims)."""
    after: dict[str, int | str] = {}
    queue_outcomes: dict[str, str] = {}
    requeue: dict[str, RequeueExpectation] = {}
    """Exactly these jobs get these requeue states (docs/rules.md, "Requeue with backoff")."""
    skipped: dict[str, str] = {}
    """Every decision for the job is skipped, with these words in the reason."""
    overrides: list[str] | None = None
    """Exactly the nominated tasks the decision overrides (docs/rules.md, "Nominations")."""
    moves: dict[str, str] | None = None
    """Exactly these tasks are moved, each to this node (docs/snapshot-format.md, "Moves")."""
    below_line: dict[str, list[str]] | None = None
    """Exactly these queues, in these resources, are taken below their reclaim line (``last_chunk``)."""
    devices: dict[str, list[int]] | None = None
    """Exactly these shares of a GPU placed or moved, each on these devices (docs/snapshot-format.md, "GPU
    sharing")."""


def with_expectations() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.yaml") if load_snapshot(p).expect is not None)


FILES = with_expectations()


def test_enough_scenarios():
    assert len(FILES) >= 30


def victim_counts(decision: Decision) -> dict[str, int | str]:
    return {v.job: "whole" if v.whole_job else len(v.tasks) for v in decision.victims}


def check_decision(decision: Decision, expect: Expectation) -> None:
    if expect.outcome is not None:
        assert decision.outcome == expect.outcome, decision.to_dict()
    if expect.victims is not None:
        assert victim_counts(decision) == expect.victims, decision.to_dict()
    if expect.victim_tasks is not None:
        assert {v.job: list(v.tasks) for v in decision.victims} == expect.victim_tasks
    if expect.placements is not None:
        assert decision.placements == expect.placements
    if expect.objective is not None:
        for key, value in expect.objective.items():
            assert decision.objective[key] == value, (key, decision.objective)
    for words in expect.reason:
        assert words in (decision.reason or ""), decision.reason
    protected = {p.job for p in decision.protected}
    for job in expect.protected:
        assert job in protected, decision.protected
    if expect.optimal is not None:
        assert decision.optimal is expect.optimal
    if expect.overrides is not None:
        assert [o.task for o in decision.overrides] == expect.overrides, decision.to_dict()
    if expect.moves is not None:
        assert {m.task: m.node for m in decision.moves} == expect.moves, decision.to_dict()
    if expect.devices is not None:
        assert {task: list(found) for task, found in decision.devices.items()} == expect.devices, decision.to_dict()
    if expect.below_line is not None:
        noted: dict[str, list[str]] = {}
        for note in decision.below_line:
            noted.setdefault(note.queue, []).append(note.resource)
        assert noted == expect.below_line, decision.to_dict()
    if expect.after:
        assert isinstance(decision, QuotaDecision)
        after = {r: q.after for r, q in decision.resources.items()}
        assert after == {r: parse_quantity(v) for r, v in expect.after.items()}, decision.to_dict()


def check_requeue(states: dict[str, RequeueState], now: float, expect: Expectation) -> None:
    assert set(states) == set(expect.requeue), states
    for job, wanted in expect.requeue.items():
        state = states[job]
        assert (state.count, state.active) == (wanted.count, wanted.active), (job, state)
        if wanted.delay is None:
            assert state.requeue_at is None, (job, state)
        else:
            assert state.requeue_at is not None, (job, state)
            assert wanted.delay <= state.requeue_at - now <= wanted.delay * 1.0001 + 0.001, (job, state)


def check_skipped(decisions: list[Decision], expect: Expectation) -> None:
    for job, words in expect.skipped.items():
        made = [d for d in decisions if d.job == job]
        assert made and all(d.outcome == "skipped" and words in (d.reason or "") for d in made), [
            d.to_dict() for d in made
        ]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fixture(path: Path) -> None:
    snapshot = load_snapshot(path)
    expect = Expectation.model_validate(snapshot.expect)
    if expect.run == "enforce-quota":
        assert expect.queue is not None, "an enforce-quota fixture names its queue"
        cluster = ClusterState.of(snapshot)
        decision = enforce(cluster, expect.queue)
        assert verify(cluster, decision) == [], decision.to_dict()
        check_decision(decision, expect)
    elif expect.run == "solve":
        assert expect.job is not None, "a solve fixture names its job"
        cluster = ClusterState.of(snapshot)
        tried = solve_one(cluster, snapshot.job(expect.job), expect.action)
        for decision in tried:
            assert verify(cluster, decision) == [], decision.to_dict()
        decision = tried[-1]
        check_decision(decision, expect)
        check_skipped(tried, expect)
        if expect.requeue:
            check_requeue(decision.requeue, snapshot.now, expect)
        if expect.greedy_tasks is not None or expect.greedy_victims is not None or expect.greedy_moves is not None:
            (greedy,) = solve_one(cluster, snapshot.job(expect.job), decision.action, solver="greedy")
            assert verify(cluster, greedy) == []
            if expect.greedy_tasks is not None:
                assert sum(len(v.tasks) for v in greedy.victims) == expect.greedy_tasks
            if expect.greedy_victims is not None:
                assert victim_counts(greedy) == expect.greedy_victims
            if expect.greedy_moves is not None:
                assert {m.task: m.node for m in greedy.moves} == expect.greedy_moves, greedy.to_dict()
    else:
        result = run_cycle(snapshot, expect.actions)
        for state, decision in zip(result.states, result.decisions, strict=True):
            assert verify(state, decision) == [], decision.to_dict()
        final = result.to_dict()["jobs"]
        statuses = {task: entry["status"] for job in final.values() for task, entry in job["tasks"].items()}
        for task, status in expect.statuses.items():
            assert statuses[task] == status, (task, statuses)
        for queue, outcome in expect.queue_outcomes.items():
            made = [d for d in result.decisions if isinstance(d, QuotaDecision) and d.queue == queue]
            assert made and made[-1].outcome == outcome, [d.to_dict() for d in made]
        for job, outcome in expect.outcomes.items():
            last = [d for d in result.decisions if d.job == job and d.outcome != "skipped"]
            assert last and last[-1].outcome == outcome, [d.to_dict() for d in result.decisions if d.job == job]
        check_skipped(result.decisions, expect)
        if expect.requeue:
            check_requeue(result.requeue(), snapshot.now, expect)
