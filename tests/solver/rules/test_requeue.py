"""Requeue with backoff after eviction (docs/rules.md, "Requeue with backoff"): the schedule, the limit, the jitter,
eligibility and order."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import NOW, base_document, build

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import RequeueConfig, RequeueState
from gpu_preempt.rules.job_order import next_job
from gpu_preempt.rules.requeue import backoff_delay, backoff_reason, jitter_draw, next_state
from gpu_preempt.state.cluster import ClusterState

MINUTE = 60.0


def evicted(count: int, *, limit: int | None = None, **policy: Any) -> RequeueState:
    """The next state of job ``run`` (in the base document) after ``count`` earlier evictions."""
    document = base_document()
    document["config"] = {"requeue": {"backoff_limit_count": limit, **policy}}
    if count:
        document["jobs"][0]["requeue"] = {"count": count, "evicted_at": "2026-01-01T11:00:00Z"}
    snapshot = build(document)
    return next_state(snapshot, snapshot.job("run"))


# -- the schedule (Kueue's WaitTime(n), docs/rules.md, "Requeue with backoff")
# --------------------------------------------


@pytest.mark.parametrize(
    ("count", "delay"),
    [(0, 60), (1, 120), (2, 240), (3, 480), (4, 960), (5, 1920), (6, 3600), (7, 3600), (20, 3600), (100, 3600)],
)
def test_default_schedule_doubles_from_60s_up_to_one_hour(count, delay):
    assert backoff_delay(RequeueConfig(), count) == delay
    state = evicted(count)
    assert state.count == count + 1 and state.active
    assert state.evicted_at == build().now
    assert state.requeue_at is not None
    assert delay <= state.requeue_at - state.evicted_at <= delay * 1.0001 + 0.001  # jitter at most 0.01%


def test_schedule_follows_the_configured_base_and_cap():
    policy = RequeueConfig(backoff_base=10, backoff_max=25)
    assert [backoff_delay(policy, n) for n in range(4)] == [10, 20, 25, 25]
    assert [backoff_delay(RequeueConfig(backoff_base=0, backoff_max=0), n) for n in range(3)] == [0, 0, 0]


def test_jitter_is_reproducible_and_differs_between_jobs():
    snapshot = build()
    draws = {jitter_draw(snapshot, job, count) for job in ("a", "b", "c") for count in range(3)}
    assert all(0 <= u < 1 for u in draws) and len(draws) == 9
    assert jitter_draw(snapshot, "a", 1) == jitter_draw(build(), "a", 1)
    assert evicted(3) == evicted(3)
    other_seed = build(config={"solver": {"seed": 7}})
    assert jitter_draw(other_seed, "a", 1) != jitter_draw(snapshot, "a", 1)


# -- the limit ------------------------------------------------------------------------------------------------


def test_limit_two_allows_two_requeues_then_deactivates():
    assert (evicted(0, limit=2).count, evicted(0, limit=2).active) == (1, True)
    assert (evicted(1, limit=2).count, evicted(1, limit=2).active) == (2, True)
    third = evicted(2, limit=2)
    assert (third.count, third.active, third.requeue_at) == (2, False, None)


def test_limit_zero_deactivates_at_the_first_eviction():
    first = evicted(0, limit=0)
    assert (first.count, first.active, first.requeue_at) == (0, False, None)


def test_no_limit_requeues_forever():
    assert evicted(1000).active


# -- eligibility ----------------------------------------------------------------------------------------------


def with_state(**state: Any) -> Any:
    document = base_document()
    document["jobs"][1]["requeue"] = state
    return build(document)


@pytest.mark.parametrize(
    ("requeue_at", "eligible"),
    [("2026-01-01T12:00:01Z", False), (NOW, True), ("2026-01-01T11:59:59Z", True)],
)
def test_a_job_waits_until_its_requeue_time(requeue_at, eligible):
    snapshot = with_state(count=1, evicted_at="2026-01-01T11:59:00Z", requeue_at=requeue_at)
    decision = attempt(ClusterState.of(snapshot), snapshot.job("wait"), "allocate")
    if eligible:
        assert decision.outcome == "allocated"
    else:
        assert decision.outcome == "skipped"
        assert decision.reason is not None and decision.reason.startswith("backoff")
        assert "2026-01-01T12:00:01Z" in decision.reason


def test_a_deactivated_job_is_never_scheduled():
    snapshot = with_state(count=3, active=False)
    assert backoff_reason(snapshot.job("wait"), snapshot.now) is not None
    for action in ("allocate", "reclaim", "preempt"):
        decision = attempt(ClusterState.of(snapshot), snapshot.job("wait"), action)
        assert decision.outcome == "skipped" and "deactivated" in (decision.reason or "")


# -- order ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("timestamp", "first"), [("eviction", "fresh"), ("creation", "requeued")])
def test_queue_order_time_follows_the_configured_timestamp(timestamp, first):
    document = base_document()
    document["config"] = {"requeue": {"timestamp": timestamp}}
    document["jobs"][1:] = [
        {
            "name": "requeued",
            "queue": "b",
            "task_resources": {"gpu": 2},
            "created_at": "2026-01-01T09:00:00Z",
            "requeue": {"count": 1, "evicted_at": "2026-01-01T11:00:00Z"},
            "tasks": [{}],
        },
        {
            "name": "fresh",
            "queue": "b",
            "task_resources": {"gpu": 2},
            "created_at": "2026-01-01T10:00:00Z",
            "tasks": [{}],
        },
    ]
    cluster = ClusterState.of(build(document))
    jobs = [cluster.snapshot.job("requeued"), cluster.snapshot.job("fresh")]
    assert next_job(cluster, jobs, "reclaim").name == first


# -- output and verification ----------------------------------------------------------------------------------


def preemption() -> tuple[ClusterState, Any]:
    document = base_document()
    document["jobs"][0].update(priority=10, priority_class=None)
    document["jobs"][1].update(priority=90, task_resources={"gpu": 8})
    document["queues"][2]["name"] = "b"
    document["jobs"][1]["queue"] = "a"
    cluster = ClusterState.of(build(document))
    return cluster, attempt(cluster, cluster.snapshot.job("wait"), "preempt")


def test_a_job_evicted_whole_carries_its_next_state_in_the_output():
    cluster, decision = preemption()
    assert [v.job for v in decision.victims if v.whole_job] == ["run"]
    (victim,) = decision.to_dict()["victims"]
    assert victim["requeue"]["count"] == 1 and victim["requeue"]["active"] is True
    assert victim["requeue"]["evicted_at"] == NOW
    assert verify(cluster, decision) == []
    result = run_cycle(cluster.snapshot, ["preempt"])
    assert result.to_dict()["jobs"]["run"]["requeue"] == victim["requeue"]


@pytest.mark.parametrize(
    ("tamper", "complaint"),
    [
        (lambda d: {}, "gets no requeue state"),
        (lambda d: {"run": d.requeue["run"].model_copy(update={"count": 5})}, "count 1"),
        (lambda d: {"run": d.requeue["run"].model_copy(update={"requeue_at": d.requeue["run"].evicted_at})}, "60s"),
        (lambda d: {**d.requeue, "wait": d.requeue["run"]}, "not evicted whole"),
    ],
)
def test_the_verifier_recomputes_requeue_states(tamper, complaint):
    cluster, decision = preemption()
    decision.requeue = tamper(decision)
    problems = verify(cluster, decision)
    assert any(complaint in p for p in problems), problems
