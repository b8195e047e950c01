"""The verifier re-checks placement on its own (docs/rules.md, "Placement"): a task placed or moved where its
job may not run, or a gang split across domains of its required level, is caught, whatever the solver said."""

from __future__ import annotations

import dataclasses

from conftest import FIXTURES

from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import load_snapshot
from gpu_preempt.models.decision import Move, VictimTasks
from gpu_preempt.state.cluster import ClusterState


def solved(name: str, job: str) -> tuple[ClusterState, object]:
    snapshot = load_snapshot(FIXTURES / name)
    cluster = ClusterState.of(snapshot)
    decision = attempt(cluster, snapshot.job(job), "preempt")
    assert decision.placed and verify(cluster, decision) == []
    return cluster, decision


def test_a_placement_on_a_node_the_selector_excludes_is_caught():
    cluster, decision = solved("placement-selector-cheapest-victim-useless.yaml", "train")
    forged = dataclasses.replace(
        decision, victims=[VictimTasks("cheap", ("cheap-0",), whole_job=True)], placements={"train-0": "a100-0"}
    )
    problems = verify(cluster, forged)
    assert "placement: train-0 placed on a100-0: a100-0 does not match the node selector gpu-type=H100" in problems


def test_a_placement_on_a_tainted_node_is_caught():
    cluster, _ = solved("placement-taint-only-preemptor-tolerates.yaml", "guest")
    decision = attempt(cluster, cluster.snapshot.job("guest"), "allocate")
    assert decision.outcome == "infeasible"
    forged = dataclasses.replace(decision, outcome="allocated", placements={"guest-0": "reserved"})
    problems = verify(cluster, forged)
    assert any("reserved has taint dedicated=gpu:NoSchedule, which guest does not tolerate" in p for p in problems)


def test_a_gang_split_across_racks_is_caught():
    cluster, decision = solved("placement-required-rack-across-racks-not-enough.yaml", "gang")
    victims = [VictimTasks("cheap-r1", ("cheap-r1-0",), True), VictimTasks("cheap-r2", ("cheap-r2-0",), True)]
    forged = dataclasses.replace(decision, victims=victims, placements={"gang-0": "n0", "gang-1": "n2"})
    problems = verify(cluster, forged)
    assert "placement: the tasks of gang lie in 2 domains of rack: r1, r2" in problems


def test_a_move_to_a_node_the_moved_job_may_not_use_is_caught():
    cluster, decision = solved("placement-move-to-eligible-node.yaml", "train")
    moves = [Move("pinned", "pinned-0", "h100-0", "a100-0"), Move("flexible", "flexible-0", "h100-0", "h100-1")]
    forged = dataclasses.replace(decision, moves=moves)
    problems = verify(cluster, forged)
    assert "placement: pinned-0 moved to a100-0: a100-0 does not match the node selector gpu-type=H100" in problems


def test_a_move_that_lands_where_kais_node_order_does_not_is_caught():
    for name, kai, other in (("kai-move-binpack-fullest.yaml", "node0", "node1"),
                             ("kai-move-spread-emptiest.yaml", "node1", "node0")):  # fmt: skip
        snapshot = load_snapshot(FIXTURES / name)
        cluster = ClusterState.of(snapshot)
        decision = attempt(cluster, snapshot.job("q1-job0"), "reclaim")
        assert [m.node for m in decision.moves] == [kai] and verify(cluster, decision) == []
        forged = dataclasses.replace(decision, moves=[dataclasses.replace(decision.moves[0], node=other)])
        problems = verify(cluster, forged)
        assert problems == [f"node order: KAI's order moves q0-small's task(s) to {kai} x1; the decision to {other} x1"]
