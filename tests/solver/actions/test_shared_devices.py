"""Decisions on shared GPUs (docs/snapshot-format.md, "GPU sharing"): room counted device by device, the devices of
every share placed in the output and carried into the next state and snapshot, for CP-SAT and the greedy baseline."""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import FIXTURES

from gpu_preempt import decide, verify
from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.next_snapshot import next_snapshot
from gpu_preempt.explain.reasons import why_victim
from gpu_preempt.models import load_snapshot, snapshot_from_data
from gpu_preempt.state.cluster import ClusterState

NOW = "2026-01-01T12:00:00Z"


def node_of_halves(*jobs: dict[str, Any], gpus: int = 2) -> dict[str, Any]:
    return {
        "now": NOW,
        "nodes": [{"name": "n0", "resources": {"gpu": gpus}}],
        "queues": [{"name": "q"}],
        "jobs": list(jobs),
    }


def share(name: str, size: str, device: int | None = None, priority: int = 10, **more: Any) -> dict[str, Any]:
    task: dict[str, Any] = {} if device is None else {"node": "n0", "devices": [device]}
    return {"name": name, "queue": "q", "priority": priority, "task_resources": {"gpu": size}, "tasks": [task], **more}


def test_two_halves_on_two_devices_leave_no_room_for_a_whole_gpu() -> None:
    snapshot = snapshot_from_data(node_of_halves(share("a", "500m", 0), share("b", "500m", 1), share("w", "1")))
    decision = decide(snapshot, "w", "allocate")
    assert decision.outcome == "infeasible"
    assert "n0 has 1 GPU free, but in shares of 2 device(s) and 0 empty; the job needs 1 whole" in str(decision.reason)


def test_a_share_that_no_device_has_room_for_is_explained_by_device() -> None:
    snapshot = snapshot_from_data(node_of_halves(share("a", "700m", 0), share("b", "600m", 1), share("s", "500m")))
    decision = decide(snapshot, "s", "allocate")
    assert decision.outcome == "infeasible"
    assert "device 1 of n0 has 0.4 free, the most of any device; the job needs 0.5 on one device" in str(
        decision.reason
    )


def test_a_share_beside_a_releasing_share_waits_for_it() -> None:
    leaving = share("gone", "500m", 0)
    leaving["tasks"][0]["status"] = "releasing"
    snapshot = snapshot_from_data(node_of_halves(leaving, share("stay", "500m", 0), share("s", "500m"), gpus=1))
    decision = decide(snapshot, "s", "allocate")
    assert (decision.outcome, decision.devices) == ("pipelined", {"s-0": (0,)})  # the device frees once gone is
    assert verify(snapshot, decision) == []


def test_shares_pack_onto_devices_that_carry_shares_and_keep_whole_devices_free() -> None:
    jobs = [share("a", "250m", 1), {**share("many", "250m"), "tasks": [{}, {}, {}]}]
    decision = decide(snapshot_from_data(node_of_halves(*jobs)), "many", "allocate")
    assert decision.devices == {"many-0": (1,), "many-1": (1,), "many-2": (1,)}


def test_placed_shares_carry_their_devices_into_the_next_state_and_snapshot() -> None:
    document = node_of_halves(share("a", "500m", 1), share("s", "500m"), share("t", "500m"), share("w", "1"))
    result = run_cycle(snapshot_from_data(document))
    placed = {d.job: d.devices for d in result.decisions if d.placed}
    assert placed == {"s": {"s-0": (1,)}, "t": {"t-0": (0,)}}  # s beside a; t opens device 0; w finds none empty
    assert verify(ClusterState.of(snapshot_from_data(document)), result.decisions[0]) == []
    after = next_snapshot(document, result)
    tasks = {job["name"]: job["tasks"][0] for job in after["jobs"]}
    assert tasks["s"] == {"node": "n0", "status": "running", "devices": [1]}
    assert tasks["t"] == {"node": "n0", "status": "running", "devices": [0]}
    again = run_cycle(snapshot_from_data(after))  # the next snapshot is valid, and its devices are full
    assert not any(d.placed for d in again.decisions)


def test_a_nominated_share_claims_its_device() -> None:
    leaving = share("gone", "1", None)
    leaving["tasks"] = [{"node": "n0", "status": "releasing"}]
    promised = share("s", "500m", 0)
    promised["tasks"][0]["status"] = "nominated"
    snapshot = snapshot_from_data(node_of_halves(leaving, promised, gpus=1))
    decision = decide(snapshot, "s", "allocate")
    assert (decision.outcome, decision.devices) == ("pipelined", {"s-0": (0,)})  # the whole GPU still releasing
    assert verify(snapshot, decision) == []


def random_shared(seed: int) -> dict[str, Any]:
    """Two nodes of 1 to 4 devices filled at random with quarters, halves and whole GPUs of three queues, and a
    pending job of each kind."""
    rng = random.Random(seed)
    nodes = [{"name": f"n{i}", "resources": {"gpu": rng.randint(1, 4)}} for i in range(2)]
    held = {n["name"]: [0] * n["resources"]["gpu"] for n in nodes}
    jobs = []
    for j in range(rng.randint(3, 8)):
        size = rng.choice([250, 500, 1000])
        spots = [
            (n, d)
            for n, devices in held.items()
            for d, a in enumerate(devices)
            if (a + size <= 1000 if size < 1000 else a == 0)
        ]
        if not spots:
            continue
        node, device = rng.choice(spots)
        held[node][device] += size
        task = {"node": node, **({"devices": [device]} if size < 1000 else {})}
        jobs.append(
            {"name": f"r{j}", "queue": rng.choice("abc"), "priority": rng.choice([10, 20]), "started_at": NOW,
             "task_resources": {"gpu": f"{size}m"}, "tasks": [task]}
        )  # fmt: skip
    for k, size in enumerate(["250m", "750m", "1"]):
        jobs.append({"name": f"p{k}", "queue": "a", "priority": 30, "task_resources": {"gpu": size}, "tasks": [{}]})
    queues = [{"name": q, "deserved": {"gpu": rng.randint(0, 3)}} for q in "abc"]
    return {"now": NOW, "config": {"moves": rng.random() < 0.5}, "nodes": nodes, "queues": queues, "jobs": jobs}


@pytest.mark.parametrize("seed", range(40))
def test_every_decision_of_both_solvers_is_sound_on_random_shared_devices(seed: int) -> None:
    snapshot = snapshot_from_data(random_shared(seed))
    made = {}
    for solver in ("cpsat", "greedy"):
        result = made[solver] = run_cycle(snapshot, solver=solver)
        for state, decision in zip(result.states, result.decisions, strict=True):
            assert verify(state, decision) == [], (solver, decision.to_dict())
    again = run_cycle(snapshot_from_data(random_shared(seed)))  # the same answer, devices included
    assert [d.to_dict(timing=False) for d in again.decisions] == [
        d.to_dict(timing=False) for d in made["cpsat"].decisions
    ]


def test_a_share_placed_on_a_lower_priority_promise_overrides_it_device_by_device() -> None:
    """Device 0 is promised to a half of priority 10 (its room still releasing), device 1 runs a half. A 0.75 share
    of priority 50 sees device 0 as free (a lower promise does not hold against it): the node has room for it, but
    the promised device does not hold both, so the promise gives way."""
    gone = share("gone", "500m", 0, priority=5)
    gone["tasks"][0]["status"] = "releasing"
    promised = share("promised", "500m", 0)
    promised["tasks"][0]["status"] = "nominated"
    snapshot = snapshot_from_data(
        node_of_halves(gone, promised, share("run", "500m", 1), share("high", "750m", priority=50))
    )
    decision = decide(snapshot, "high", "allocate")
    assert decision.devices == {"high-0": (0,)}
    assert [o.task for o in decision.overrides] == ["promised-0"]
    assert verify(snapshot, decision) == []


def test_a_victims_reason_names_the_device_it_frees() -> None:
    """fixtures/device-halves-apart-free-nothing.yaml: x and y go, both from device 0."""
    snapshot = load_snapshot(FIXTURES / "device-halves-apart-free-nothing.yaml")
    decision = decide(snapshot, "whole", "preempt")
    cluster = ClusterState.of(snapshot)
    reasons = {v.job: why_victim(cluster, decision, snapshot.job(v.job)) for v in decision.victims}
    assert reasons == {
        "x": "same queue, priority 10 < 50; frees device 0 of n0",
        "y": "same queue, priority 20 < 50; frees device 0 of n0",
    }
