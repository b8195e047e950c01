"""Nominations (docs/rules.md, "Nominations"): reservations, overrides, claims, and the round trip through the next
snapshot."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES

from gpu_preempt.actions.cycle import CycleResult, run_cycle
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.actions.next_snapshot import next_snapshot
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import read_document, snapshot_from_data
from gpu_preempt.models.decision import Override
from gpu_preempt.state.cluster import ClusterState

RACE_2 = FIXTURES / "nomination-race-2-higher-priority-takes-the-place.yaml"
RACE_3 = FIXTURES / "nomination-race-3-equal-priority-preemption-makes-room-for-both.yaml"
CYCLES = sorted(p for p in FIXTURES.glob("*.yaml") if "cycle" in p.stem or "example" in p.stem)


def cycle_of(document: dict[str, Any]) -> CycleResult:
    result = run_cycle(snapshot_from_data(document))
    for state, decision in zip(result.states, result.decisions, strict=True):
        assert verify(state, decision) == [], decision.to_dict()
    return result


def statuses(result: CycleResult) -> dict[str, dict[str, Any]]:
    return {task: entry for job in result.to_dict()["jobs"].values() for task, entry in job["tasks"].items()}


@pytest.mark.parametrize("path", CYCLES, ids=[p.stem for p in CYCLES])
def test_round_trip_through_the_next_snapshot_neither_evicts_more_nor_double_books(path: Path) -> None:
    document = read_document(path)
    first = cycle_of(document)
    second_document = next_snapshot(document, first)
    second = cycle_of(second_document)  # loading it checks that no node is promised twice
    nominated = {str(t.name): t.node for j in second.start.snapshot.jobs for t in j.tasks if t.status == "nominated"}
    assert nominated == {t: e["node"] for t, e in statuses(first).items() if e["status"] == "pipelined"}
    for decision in second.decisions:
        if set(decision.placements) & set(nominated):  # a nominated job claims its place, evicting nothing
            assert decision.placements == {t: nominated[t] for t in decision.placements}
            assert not decision.victims and not decision.overrides
    before = {t for t, e in statuses(first).items() if e["status"] == "releasing"}
    evicted_again = {t for d in second.decisions for v in d.victims for t in v.tasks}
    assert not evicted_again & before
    # nothing has changed in the cluster: feeding the result back again changes nothing for the nominated jobs
    third = cycle_of(next_snapshot(second_document, second))
    for task in nominated:
        assert statuses(third)[task] == statuses(second)[task] == statuses(first)[task]


def test_the_cycle_output_names_the_nominated_node_of_pipelined_tasks() -> None:
    result = cycle_of(read_document(FIXTURES / "cycle-no-double-booking.yaml"))
    entry = statuses(result)["p1-0"]
    assert entry == {"status": "pipelined", "node": "n0", "nominated_node": "n0"}
    assert "nominated_node" not in statuses(result)["low-a-0"]


def test_next_snapshot_binds_nominates_releases_and_requeues() -> None:
    document = read_document(FIXTURES / "cycle-allocate-then-reclaim.yaml")
    result = cycle_of(document)
    written = next_snapshot(document, result)
    assert "expect" not in written and "expect" in document  # the input is not changed
    tasks = {
        str(t["name"]) if "name" in t else f"{j['name']}-{i}": (j, t)
        for j in written["jobs"]
        for i, t in enumerate(j["tasks"])
    }
    for name, entry in statuses(result).items():
        job, task = tasks[name]
        wanted = {"allocated": "running", "pipelined": "nominated"}.get(entry["status"], entry["status"])
        assert task.get("status", "running" if task.get("node") else "pending") == wanted
        if entry["status"] == "allocated":
            assert job.get("started_at") is not None
    for name in result.requeue():
        assert next(j for j in written["jobs"] if j["name"] == name)["requeue"]["count"] >= 1


def test_an_overridden_nomination_goes_back_to_pending_and_is_retried() -> None:
    result = cycle_of(read_document(RACE_2))
    (taking,) = [d for d in result.decisions if d.job == "pod2" and d.placed]
    assert taking.overrides == [Override("pod1", "pod1-0", "n0")]
    assert taking.to_dict()["overrides"] == [{"job": "pod1", "task": "pod1-0", "node": "n0"}]
    assert statuses(result)["pod1-0"] == {"status": "pending", "node": None}
    retried = [d for d in result.decisions if d.job == "pod1" and d.outcome != "skipped"]
    assert retried and all(not d.placed for d in retried)  # no room left for it in this cycle


def test_a_claim_is_allocated_once_the_victims_are_gone() -> None:
    document = read_document(RACE_2)
    document["jobs"] = [j for j in document["jobs"] if j["name"] not in ("old", "pod2")]
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = attempt(cluster, cluster.snapshot.job("pod1"), "allocate")
    assert (decision.outcome, decision.placements, decision.victims) == ("allocated", {"pod1-0": "n0"}, [])
    assert verify(cluster, decision) == []


def race(path: Path) -> tuple[ClusterState, Any]:
    cluster = ClusterState.of(snapshot_from_data(read_document(path)))
    return cluster, attempt(cluster, cluster.snapshot.job("pod2"), "preempt" if path == RACE_3 else "allocate")


def test_the_verifier_rejects_taking_a_reserved_place_without_overriding_it() -> None:
    cluster, decision = race(RACE_2)
    assert verify(cluster, decision) == []
    decision.overrides = []
    assert any("capacity: node n0" in p for p in verify(cluster, decision))


def test_the_verifier_rejects_overriding_an_equal_priority_nomination() -> None:
    document = read_document(RACE_2)
    document["jobs"][2]["priority"] = 50
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = attempt(cluster, cluster.snapshot.job("pod2"), "allocate")
    assert not decision.placed  # equal priority: the nomination holds
    decision = copy.deepcopy(race(RACE_2)[1])
    problems = verify(cluster, decision)
    assert any("may not give way" in p for p in problems), problems


def test_the_verifier_rejects_a_claim_on_another_node() -> None:
    document = read_document(RACE_2)
    document["nodes"].append({"name": "n1", "resources": {"gpu": 8}})
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = attempt(cluster, cluster.snapshot.job("pod1"), "allocate")
    assert decision.placements == {"pod1-0": "n0"} and verify(cluster, decision) == []
    decision.placements = {"pod1-0": "n1"}
    assert any("was nominated for n0" in p for p in verify(cluster, decision))


def test_cli_writes_the_next_snapshot(cli, tmp_path: Path) -> None:
    target = tmp_path / "next.yaml"
    document = read_document(FIXTURES / "cycle-no-double-booking.yaml")
    result = cli("cycle", "--next-snapshot", str(target), document=document)
    assert result.exit_code == 0, result.output
    written = yaml.safe_load(target.read_text())
    statuses_written = {f"{j['name']}-{i}": t.get("status") for j in written["jobs"] for i, t in enumerate(j["tasks"])}
    assert statuses_written["p1-0"] == "nominated" and statuses_written["low-b-0"] == "releasing"
    again = cli("validate", document=written)
    assert again.exit_code == 0, again.output


def test_round_trip_on_a_generated_cluster() -> None:
    """A 60-node generated cluster with 12 pending jobs: the second cycle keeps every promise of the first."""
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    document = generate(60, seed=3, pending=12)
    first = cycle_of(document)
    second = cycle_of(next_snapshot(document, first))
    promised = {t: e["node"] for t, e in statuses(first).items() if e["status"] == "pipelined"}
    assert promised, "the generated cycle pipelines some job"
    for task, node in promised.items():
        assert statuses(second)[task] == {"status": "pipelined", "node": node, "nominated_node": node}


def test_an_infeasible_reason_names_the_promises_that_hold() -> None:
    document = read_document(RACE_2)
    document["jobs"][2]["priority"] = 50  # equal priority: pod1's nomination holds n0
    cluster = ClusterState.of(snapshot_from_data(document))
    decision = attempt(cluster, cluster.snapshot.job("pod2"), "allocate")
    assert decision.outcome == "infeasible"
    assert "promised to jobs of equal or higher priority hold: pod1 on n0" in (decision.reason or "")
