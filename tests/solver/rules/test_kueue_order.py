"""Kueue's entry order under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption"): jobs that fit without
borrowing first, then higher priority, then the earlier queue-order time."""

from __future__ import annotations

from typing import Any

from gpu_preempt import run_cycle
from gpu_preempt.models import snapshot_from_data
from gpu_preempt.rules.kueue_order import KueueOrder
from gpu_preempt.state.cluster import ClusterState


def document() -> dict[str, Any]:
    """One 4-GPU node; ClusterQueues a and b of 2 GPUs each; a's job of priority 10 asks for 4 (it would borrow),
    b's of priority 1 for 2 (within b's quota); c's job of priority 5, created later than d's, for 1 each."""
    return {
        "now": "2026-01-01T12:00:00Z",
        "config": {"policy": "kueue"},
        "nodes": [{"name": "n0", "resources": {"gpu": 4}}],
        "queues": [
            {"name": "pool"},
            {"name": "a", "parent": "pool", "nominal": {"gpu": 2}},
            {"name": "b", "parent": "pool", "nominal": {"gpu": 2}},
        ],
        "jobs": [
            {
                "name": "a-big",
                "queue": "a",
                "priority": 10,
                "created_at": "2026-01-01T10:00:00Z",
                "task_resources": {"gpu": 4},
                "tasks": [{}],
            },
            {
                "name": "b-small",
                "queue": "b",
                "priority": 1,
                "created_at": "2026-01-01T11:00:00Z",
                "task_resources": {"gpu": 2},
                "tasks": [{}],
            },
        ],
    }


def test_jobs_within_nominal_quota_come_before_higher_priority_borrowers() -> None:
    snapshot = snapshot_from_data(document())
    order = KueueOrder(ClusterState.of(snapshot), snapshot.jobs)
    assert [j.name for j in order.pop_run()] == ["b-small", "a-big"]
    assert order.pop_run() == []
    result = run_cycle(snapshot)
    first = next(d for d in result.decisions if d.action == "allocate")
    assert first.job == "b-small" and first.outcome == "allocated"
    assert all(d.outcome != "allocated" for d in result.decisions if d.job == "a-big")


def test_then_priority_then_the_earlier_queue_order_time() -> None:
    data = document()
    data["jobs"] = [
        {
            "name": name,
            "queue": "a",
            "priority": priority,
            "created_at": created,
            "task_resources": {"gpu": 1},
            "tasks": [{}],
        }
        for name, priority, created in (
            ("late", 5, "2026-01-01T11:30:00Z"),
            ("early", 5, "2026-01-01T11:00:00Z"),
            ("low", 1, "2026-01-01T09:00:00Z"),
        )
    ]
    snapshot = snapshot_from_data(data)
    order = KueueOrder(ClusterState.of(snapshot), snapshot.jobs)
    assert [j.name for j in order.pop_run()] == ["early", "late", "low"]
