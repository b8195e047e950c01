"""KAI's task order (docs/rules.md, "Task order"): an elastic victim's surplus goes from its tasks without an order
first, then the lowest order up, for CP-SAT, the greedy baseline and quota enforcement; the verifier refuses any
other; only an elastic job orders its tasks."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from conftest import FIXTURES

from gpu_preempt import decide, verify
from gpu_preempt.actions.quota_enforcement import enforce
from gpu_preempt.models import SnapshotError, snapshot_from_data
from gpu_preempt.models.decision import Decision, VictimTasks
from gpu_preempt.state.cluster import ClusterState

DOCUMENT: dict[str, Any] = yaml.safe_load((FIXTURES / "kai-task-order-surplus.yaml").read_text())
DOCUMENT.pop("expect")


@pytest.mark.parametrize("solver", ["cpsat", "greedy"])
def test_the_surplus_goes_in_task_order(solver: str) -> None:
    decision = decide(snapshot_from_data(copy.deepcopy(DOCUMENT)), "big", "preempt", solver=solver)  # type: ignore[arg-type]
    assert [(v.job, v.tasks) for v in decision.victims] == [("e", ("e-1", "e-2", "e-3"))]
    assert decision.placements == {"big-0": "n1"}


def test_without_an_order_two_tasks_of_one_node_suffice() -> None:
    document = copy.deepcopy(DOCUMENT)
    for task in document["jobs"][0]["tasks"]:
        task.pop("order", None)
    decision = decide(snapshot_from_data(document), "big", "preempt")
    assert len(decision.victims[0].tasks) == 2


def test_the_verifier_refuses_a_surplus_out_of_order() -> None:
    snapshot = snapshot_from_data(copy.deepcopy(DOCUMENT))
    decision = Decision("big", "preempt", "pipelined", [VictimTasks("e", ("e-2", "e-3"), False)], {"big-0": "n1"})
    assert "task order: e loses e-3 (order 2) and keeps e-1, which goes first" in verify(snapshot, decision)


def test_quota_enforcement_takes_the_surplus_in_task_order() -> None:
    """The queue's limit falls to 2 GPUs: e keeps one task, and with e-0 of order 1 and e-1 of order 3 it is e-1, of
    the highest order (not e-0, its oldest)."""
    document = copy.deepcopy(DOCUMENT)
    document["jobs"][0]["tasks"][0]["order"], document["jobs"][0]["tasks"][1]["order"] = 1, 3
    document["config"] = {"quota_preemption_enabled": True}
    document["queues"][0].update(
        deserved={"gpu": 0}, limit={"gpu": 2}, limit_changed_at="2026-01-01T10:00:00Z", quota_preemption_delay="1h"
    )
    document["jobs"] = document["jobs"][:1]
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = enforce(cluster, "q")
    assert decision.outcome == "enforced" and [v.tasks for v in decision.victims] == [("e-0", "e-2", "e-3")]
    assert verify(cluster, decision) == []


def test_only_an_elastic_job_orders_its_tasks() -> None:
    document = copy.deepcopy(DOCUMENT)
    del document["jobs"][0]["min_available"]
    with pytest.raises(SnapshotError, match=r"jobs\[0\]\.tasks\[0\]\.order: only an elastic job"):
        snapshot_from_data(document)
