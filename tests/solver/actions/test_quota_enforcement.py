"""Quota enforcement through preemption (docs/rules.md, "Quota enforcement"): the rule, the timer, protections, the
verifier, the CLI."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.quota_enforcement import (
    enforce,
    enforcement_order,
    enforcement_problem,
    over_limit,
)
from gpu_preempt.actions.quota_hint import greedy_hint
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import parse_quantity, snapshot_from_data
from gpu_preempt.models.decision import VictimTasks
from gpu_preempt.models.quota_decision import QuotaDecision
from gpu_preempt.problem.solution import broken_rows
from gpu_preempt.state.cluster import ClusterState

NOW = "2026-01-01T12:00:00Z"


def leaf(limit: dict[str, Any], usage: dict[str, Any], **queue: Any) -> dict[str, Any]:
    """One queue ``q`` holding ``usage`` in one single-task job, with the timer long passed."""
    return {
        "now": NOW,
        "config": {"quota_preemption_enabled": True},
        "nodes": [{"name": "n0", "resources": {"gpu": 8, "cpu": 1000, "memory": "1T"}}],
        "queues": [
            {
                "name": "q",
                "limit": limit,
                "limit_changed_at": "2026-01-01T10:00:00Z",
                "quota_preemption_delay": "1h",
                **queue,
            }
        ],
        "jobs": [{"name": "j", "queue": "q", "priority": 10, "task_resources": usage, "tasks": [{"node": "n0"}]}],
    }


# The quota-enforcement design (docs/rules.md, "Quota enforcement"), "Preemptable Resource calculation": (new max,
# usage) -> preemptable resources. The current (old)
# max of the table does not enter the calculation: only the new max and the usage do.
SEED_TABLE = [
    ({"memory": "50G"}, {"memory": "80G"}, {"memory": "30G"}),
    ({"memory": "50G"}, {"memory": "80G"}, {"memory": "30G"}),  # current max nil
    ({"memory": "50G", "cpu": 50}, {"memory": "80G", "cpu": 80}, {"memory": "30G", "cpu": 30}),
    ({"memory": "200G", "cpu": 50}, {"memory": "100G", "cpu": 80}, {"cpu": 30}),
    ({"memory": "100G", "cpu": 100}, {"memory": "50G", "cpu": 500}, {"cpu": 400}),
    ({"memory": "50G"}, {"memory": "80G", "cpu": 100}, {"memory": "30G"}),
    ({"cpu": 100}, {"memory": "100G", "cpu": 500}, {"cpu": 400}),
]


@pytest.mark.parametrize(("new_max", "usage", "preemptable"), SEED_TABLE, ids=[f"row{i + 1}" for i in range(7)])
def test_seed_preemptable_resource_table(new_max, usage, preemptable):
    cluster = ClusterState.of(snapshot_from_data(leaf(new_max, usage)))
    over = over_limit(cluster, "q")
    assert {r: used - limit for r, (used, limit) in over.items()} == {
        r: parse_quantity(v) for r, v in preemptable.items()
    }
    decision = enforce(cluster, "q")
    assert decision.outcome == "enforced"
    assert [v.job for v in decision.victims] == ["j"]
    assert verify(cluster, decision) == []


def at(document: dict[str, Any], now: str, **queue: Any) -> QuotaDecision:
    data = copy.deepcopy(document)
    data["now"] = now
    data["queues"][0].update(queue)
    return enforce(ClusterState.of(snapshot_from_data(data)), "q")


def test_delay_timer_before_at_after_and_restart():
    document = leaf({"gpu": 0}, {"gpu": 2})
    assert at(document, "2026-01-01T10:59:59Z").outcome == "skipped"
    assert "runs until 2026-01-01T11:00:00Z" in (at(document, "2026-01-01T10:59:59Z").reason or "")
    assert at(document, "2026-01-01T11:00:00Z").outcome == "enforced"
    assert at(document, "2026-01-01T11:00:01Z").outcome == "enforced"
    # a newer change of the limit (or the delay) restarts the timer from that change
    restarted = at(document, "2026-01-01T11:30:00Z", limit_changed_at="2026-01-01T11:00:00Z")
    assert restarted.outcome == "skipped" and "12:00:00Z" in (restarted.reason or "")
    assert at(document, "2026-01-01T12:00:00Z", limit_changed_at="2026-01-01T11:00:00Z").outcome == "enforced"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"config": {"quota_preemption_enabled": False}}, "quota_preemption_enabled is false"),
        ({"delay": 0}, "quota_preemption_delay is 0"),
        ({"changed": None}, "limit_changed_at is not set"),
        ({"limit": {"gpu": 2}}, "within its limit"),
    ],
)
def test_not_enforced(change, words):
    document = leaf({"gpu": 1}, {"gpu": 2})
    if "config" in change:
        document["config"] = change["config"]
    if "delay" in change:
        document["queues"][0]["quota_preemption_delay"] = change["delay"]
    if "changed" in change:
        del document["queues"][0]["limit_changed_at"]
    if "limit" in change:
        document["queues"][0]["limit"] = change["limit"]
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = enforce(cluster, "q")
    assert decision.outcome == "skipped" and not decision.victims
    assert words in (decision.reason or "")
    assert verify(cluster, decision) == []


def two_jobs(**second: Any) -> dict[str, Any]:
    document = leaf({"gpu": 4}, {"gpu": 4})
    document["jobs"].append(
        {"name": "k", "queue": "q", "priority": 5, "task_resources": {"gpu": 2}, "tasks": [{"node": "n0"}], **second}
    )
    return document


def test_non_preemptible_jobs_protect():
    cluster = ClusterState.of(snapshot_from_data(two_jobs(preemptible=False)))
    decision = enforce(cluster, "q")
    assert decision.outcome == "enforced"
    assert [v.job for v in decision.victims] == ["j"]  # k has the lower priority but is not preemptible
    assert [(p.job, p.rule) for p in decision.protected] == [("k", "non-preemptible")]


def test_min_runtime_and_toleration_do_not_protect():
    document = two_jobs(priority_class="tolerant", started_at="2026-01-01T11:59:00Z")
    document["config"]["preempt_min_runtime"] = "1h"
    document["config"]["reclaim_min_runtime"] = "1h"
    document["priority_classes"] = [
        {"name": "tolerant", "value": 5, "preemption_toleration": {"toleration_seconds": -1}}
    ]
    del document["jobs"][1]["priority"]
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = enforce(cluster, "q")
    assert [v.job for v in decision.victims] == ["k"]
    assert verify(cluster, decision) == []


def test_elastic_job_loses_surplus_only_when_that_suffices():
    document = leaf({"gpu": 6}, {"gpu": 1})
    document["jobs"] = [
        {
            "name": "e",
            "queue": "q",
            "priority": 10,
            "min_available": 2,
            "task_resources": {"gpu": 1},
            "tasks": [{"node": "n0"}] * 8,
        }
    ]
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = enforce(cluster, "q")
    assert decision.outcome == "enforced"
    assert decision.victims == [VictimTasks("e", ("e-6", "e-7"), whole_job=False)]
    assert decision.resources["gpu"].after == 6000
    assert verify(cluster, decision) == []


def test_releasing_tasks_no_longer_count():
    document = two_jobs()
    document["jobs"][0]["tasks"] = [{"node": "n0", "status": "releasing"}]
    cluster = ClusterState.of(snapshot_from_data(document))
    assert over_limit(cluster, "q") == {}
    assert enforce(cluster, "q").outcome == "skipped"


def nested() -> dict[str, Any]:
    """dept (limit 6) > team (limit 4) > jobs of 2 GPUs; team holds 6, dept 8 with its sibling."""
    return {
        "now": NOW,
        "config": {"quota_preemption_enabled": True},
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}],
        "queues": [
            {
                "name": "dept",
                "limit": {"gpu": 6},
                "limit_changed_at": "2026-01-01T10:00:00Z",
                "quota_preemption_delay": 60,
            },
            {
                "name": "team",
                "parent": "dept",
                "limit": {"gpu": 4},
                "limit_changed_at": "2026-01-01T10:00:00Z",
                "quota_preemption_delay": 60,
            },
            {"name": "other", "parent": "dept"},
        ],
        "jobs": [
            {
                "name": f"t{i}",
                "queue": "team",
                "priority": 10 * i,
                "task_resources": {"gpu": 2},
                "tasks": [{"node": "n0"}],
            }
            for i in range(1, 4)
        ]
        + [{"name": "o1", "queue": "other", "priority": 5, "task_resources": {"gpu": 2}, "tasks": [{"node": "n0"}]}],
    }


def test_leaves_first_then_parents():
    snapshot = snapshot_from_data(nested())
    assert enforcement_order(ClusterState.of(snapshot)) == ["team", "dept"]
    result = run_cycle(snapshot, ["enforce-quota"])
    team, dept = result.decisions
    assert isinstance(team, QuotaDecision) and isinstance(dept, QuotaDecision)
    assert (team.queue, team.outcome, [v.job for v in team.victims]) == ("team", "enforced", ["t1"])
    # after team gave 2, dept holds 6: within its limit
    assert (dept.queue, dept.outcome, dept.reason) == ("dept", "skipped", "queue dept is within its limit")
    assert result.to_dict()["jobs"]["t1"]["tasks"]["t1-0"]["status"] == "releasing"


def test_verifier_rejects_broken_quota_decisions():
    document = nested()
    document["queues"][1]["deserved"] = {"gpu": 2}
    document["jobs"][3]["preemptible"] = False
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = enforce(cluster, "team")
    assert decision.outcome == "enforced" and verify(cluster, decision) == []

    def broken(**change: Any) -> list[str]:
        return verify(cluster, dataclasses.replace(decision, **change))

    assert any(p.startswith("limit:") for p in broken(victims=[]))
    everyone = [VictimTasks(f"t{i}", (f"t{i}-0",), True) for i in range(1, 4)]
    assert any(p.startswith("guarantee:") for p in broken(victims=everyone))
    assert any("not under team" in p for p in broken(victims=[VictimTasks("o1", ("o1-0",), True)]))
    other = enforce(cluster, "dept")
    assert any(
        "not preemptible" in p
        for p in verify(
            cluster, dataclasses.replace(other, outcome="enforced", victims=[VictimTasks("o1", ("o1-0",), True)])
        )
    )
    assert any(p.startswith("objective:") for p in broken(objective={"jobs": 0}))
    cpu_only = snapshot_from_data(
        {
            **document,
            "nodes": [{"name": "n0", "resources": {"gpu": 8, "cpu": 1}}],
            "jobs": [
                *document["jobs"],
                {"name": "c", "queue": "team", "task_resources": {"cpu": 1}, "tasks": [{"node": "n0"}]},
            ],
        }
    )
    with_cpu = dataclasses.replace(decision, victims=[*decision.victims, VictimTasks("c", ("c-0",), True)])
    assert any("frees nothing" in p for p in verify(ClusterState.of(cpu_only), with_cpu))
    late = snapshot_from_data({**document, "now": "2026-01-01T10:00:30Z"})
    assert any(p.startswith("timer:") for p in verify(ClusterState.of(late), decision))
    assert verify(cluster, dataclasses.replace(decision, outcome="infeasible")) == [
        "enforce-quota: evicts without enforcing"
    ]


def test_cli_enforce_quota_json(cli):
    result = cli("enforce-quota", "--json", "--no-timing", "--verify", document=nested())
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    team, dept = document["decisions"]
    assert team["job"] is None and team["queue"] == "team" and team["action"] == "enforce-quota"
    assert team["outcome"] == "enforced" and team["optimal"] is True
    (victim,) = team["victims"]
    assert {k: victim[k] for k in ("job", "tasks", "whole_job")} == {"job": "t1", "tasks": ["t1-0"], "whole_job": True}
    # docs/rules.md, "Requeue with backoff": the evicted job is requeued with backoff
    assert victim["requeue"]["count"] == 1
    assert team["quota"] == {
        "due": "2026-01-01T10:01:00Z",
        "miss": 0.0,
        "resources": {"gpu": {"usage": 6000, "limit": 4000, "tolerated": 4000, "after": 4000}},
    }
    assert dept["outcome"] == "skipped"
    assert document["jobs"] == {"t1": {"tasks": {"t1-0": {"status": "releasing", "node": "n0"}}}}
    assert "re-checked, all sound" in result.stderr


def test_cli_one_queue_and_errors(cli):
    one = cli("enforce-quota", "--queue", "dept", "--json", document=nested())
    assert one.exit_code == 0
    (decision,) = json.loads(one.stdout)["decisions"]
    assert decision["queue"] == "dept" and decision["outcome"] == "enforced"
    assert cli("enforce-quota", "--queue", "nope", document=nested()).exit_code == 2
    assert cli("cycle", "--actions", "enforce-quota,bogus", document=nested()).exit_code == 2
    human = cli("cycle", "--actions", "enforce-quota", document=nested())
    assert human.exit_code == 0 and "queue team: enforce-quota -> enforced" in human.stdout


def test_cycle_runs_enforce_quota_by_default_only_when_switched_on():
    snapshot = snapshot_from_data(nested())
    assert [d.action for d in run_cycle(snapshot).decisions] == ["enforce-quota", "enforce-quota"]
    off = nested()
    off["config"]["quota_preemption_enabled"] = False
    assert run_cycle(snapshot_from_data(off)).decisions == []
    explicit = run_cycle(snapshot_from_data(off), ["enforce-quota"]).decisions
    assert [d.outcome for d in explicit] == ["skipped", "skipped"]


def test_greedy_hint_keeps_guarantees_and_reaches_the_limit_when_it_can():
    document = nested()
    document["queues"][1]["deserved"] = {"gpu": 2}
    cluster = ClusterState.of(snapshot_from_data(document))
    problem = enforcement_problem(cluster, "dept")
    hint = greedy_hint(problem)
    assert broken_rows(problem, hint) == []
    assert [problem.victims[v].job for v in hint.victims()] == ["o1"]  # lowest priority first


def test_schema_lists_the_quota_fields(cli):
    schema = json.loads(cli("schema").stdout)
    assert {"quota_preemption_enabled", "quota_miss"} <= set(schema["$defs"]["Config"]["properties"])
    assert {"limit_changed_at", "quota_preemption_delay"} <= set(schema["$defs"]["Queue"]["properties"])
