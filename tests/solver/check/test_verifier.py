"""The verifier's teeth: tampered and forged decisions are caught, each with the rule they break."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import FIXTURES

from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import load_snapshot
from gpu_preempt.models.decision import BelowLine, Decision, VictimTasks
from gpu_preempt.state.cluster import ClusterState


def example() -> tuple[ClusterState, Decision]:
    snapshot = load_snapshot(FIXTURES / "example-cluster.yaml")
    cluster = ClusterState.of(snapshot)
    decision = attempt(cluster, snapshot.job("serving-new"), "reclaim")
    assert verify(cluster, decision) == []
    return cluster, decision


@pytest.mark.parametrize(
    ("tamper", "complaint"),
    [
        (lambda d: dataclasses.replace(d, victims=d.victims[:1]), "capacity: node node-2 would hold 14 gpu (has 8)"),
        (lambda d: dataclasses.replace(d, placements={"serving-new-0": "node-0"}), "capacity: node node-0"),
        (
            lambda d: dataclasses.replace(
                d, victims=[*d.victims, VictimTasks("vision-pretrain", ("vision-pretrain-0",), False)]
            ),
            "gang: vision-pretrain would keep 1 tasks",
        ),
        (
            lambda d: dataclasses.replace(
                d,
                victims=[VictimTasks("vision-pretrain", ("vision-pretrain-0", "vision-pretrain-1"), True)],
                placements={"serving-new-0": "node-0"},
            ),
            "min-runtime: vision-pretrain is protected",
        ),
        (
            lambda d: dataclasses.replace(
                d, victims=[*d.victims, VictimTasks("serving-api", ("serving-api-0",), False)]
            ),
            "reclaim: serving-api is in the reclaimer's own queue",
        ),
        (lambda d: dataclasses.replace(d, outcome="allocated"), "capacity: 'allocated' on node-2"),
        (lambda d: dataclasses.replace(d, objective={**d.objective, "jobs": 1}), "objective: reported"),
        (lambda d: dataclasses.replace(d, placements={}), "gang: 0 task(s) placed"),
    ],
)
def test_the_verifier_catches_broken_decisions(tamper, complaint):
    cluster, decision = example()
    problems = verify(cluster, tamper(decision))
    assert any(complaint in p for p in problems), problems


def test_verifier_catches_protected_victims():
    snapshot = load_snapshot(FIXTURES / "preempt-min-runtime-protects.yaml")
    cluster = ClusterState.of(snapshot)
    forged = Decision("boss", "preempt", "pipelined", [VictimTasks("young", ("young-0",), True)], {"boss-0": "n0"})
    assert any(p.startswith("min-runtime: young is protected") for p in verify(cluster, forged))


def test_the_verifier_reads_the_line_as_configured():
    snapshot = load_snapshot(FIXTURES / "reclaim-last-chunk-gang-crosses-the-line.yaml")
    taken = Decision("a", "reclaim", "pipelined", [VictimTasks("big", ("big-0",), True)], {"a-0": "n0"})
    noted = dataclasses.replace(taken, below_line=[BelowLine("QB", "gpu", 4000, "deserved", 0, "last_chunk", "gpu")])
    last_chunk = ClusterState.of(snapshot)
    assert [p for p in verify(last_chunk, noted) if not p.startswith(("objective", "requeue"))] == []
    assert any(p.startswith("below-line notes") for p in verify(last_chunk, taken))
    strict = snapshot.model_copy(update={"config": snapshot.config.model_copy(update={"reclaim_guarantee": "strict"})})
    problems = verify(ClusterState.of(strict), taken)
    assert "guarantee: queue QB would keep 0 gpu, below its deserved" in problems


def test_the_verifier_refuses_a_queue_at_its_line_under_last_chunk():
    """reclaim-guarantee-blocks: b holds exactly its deserved 8; taking any of it breaks the line."""
    snapshot = load_snapshot(FIXTURES / "reclaim-guarantee-blocks.yaml")
    forged = Decision("a-job", "reclaim", "pipelined", [VictimTasks("b-work", ("b-work-7", "b-work-6"), False)])
    forged.placements["a-job-0"] = "n0"
    problems = verify(ClusterState.of(snapshot), forged)
    assert any(p.startswith("guarantee: queue b is at or below its line in every resource") for p in problems)


def test_the_verifier_refuses_evictions_by_a_never_preempting_class():
    snapshot = load_snapshot(FIXTURES / "preemption-policy-never.yaml")
    forged = Decision("urgent", "preempt", "pipelined", [VictimTasks("low", ("low-0",), True)], {"urgent-0": "n0"})
    problems = verify(ClusterState.of(snapshot), forged)
    assert "preemption policy: urgent's priority class says Never, yet the decision evicts or moves" in problems


def test_each_violation_names_its_rule_and_job_and_reads_as_its_words():
    import pickle

    from gpu_preempt.check.violation import Violation

    snapshot = load_snapshot(FIXTURES / "preempt-lower-priority.yaml")
    cluster = ClusterState.of(snapshot)
    decision = attempt(cluster, snapshot.job("urgent"), "preempt")
    assert verify(cluster, decision) == []
    decision.victims = []  # the victim is no longer evicted: its node is now over capacity
    found = verify(cluster, decision)
    assert found and all(isinstance(v, Violation) and v.job == "urgent" for v in found)
    assert {v.rule for v in found} >= {"capacity"}
    assert [str(v) for v in found] == [v for v in found]  # the words, as a list of strings compares
    assert pickle.loads(pickle.dumps(found)) == found and pickle.loads(pickle.dumps(found[0])).rule == found[0].rule
