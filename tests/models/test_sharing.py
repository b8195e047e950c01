"""GPU sharing in snapshots (docs/snapshot-format.md, "GPU sharing"): shares of a GPU by fraction or by memory, on
``gpu_devices`` devices of one node, running ones naming their devices; the device ledger they must fit. Decisions
are made device by device, for shares by fraction or by memory, on one device or several."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import base_document

from gpu_preempt import decide
from gpu_preempt.models import SnapshotError, snapshot_from_data
from gpu_preempt.models.sharing import device_ledger

Doc = dict[str, Any]


def sharing_document() -> Doc:
    """Node n0 (8 devices, 80Gi each) holds a 4-GPU task, a half on device 0, 20Gi on devices 0 and 1 (a job of two
    devices), and a quarter on device 5; a 0.5 share waits."""
    document = base_document()
    document["nodes"][0]["gpu_memory"] = "80Gi"
    document["jobs"] += [
        {"name": "half", "queue": "a", "task_resources": {"gpu": "500m"}, "tasks": [{"node": "n0", "devices": [0]}]},
        {
            "name": "mem",
            "queue": "a",
            "task_resources": {"gpu_memory": "20Gi"},
            "gpu_devices": 2,
            "tasks": [{"node": "n0", "devices": [0, 1]}],
        },
        {"name": "quarter", "queue": "b", "task_resources": {"gpu": 0.25}, "tasks": [{"node": "n0", "devices": [5]}]},
        {"name": "infer", "queue": "b", "task_resources": {"gpu": "500m"}, "tasks": [{}]},
    ]
    return document


def test_a_snapshot_with_shares_is_valid_and_its_ledger_adds_them_per_device() -> None:
    snapshot = snapshot_from_data(sharing_document())
    assert [snapshot.jobs[i].name for i in snapshot.shared_jobs()] == ["half", "mem", "quarter", "infer"]
    errors: list[Any] = []
    ledger = device_ledger(snapshot.jobs, {n.name: n for n in snapshot.nodes}, errors)
    assert errors == []
    assert ledger.shares["n0"] == {0: 750, 1: 250, 5: 250}  # 20Gi of 80Gi is a quarter
    assert ledger.whole == {"n0": 4, "n1": 4}
    assert ledger.free_devices(snapshot.nodes[0]) == 8 - 4 - 3


def test_a_pending_share_names_no_device_and_a_share_below_one_gpu_only() -> None:
    document = sharing_document()
    document["jobs"][-1]["tasks"] = [{"devices": [1]}]
    with pytest.raises(SnapshotError, match=r"jobs\[5\]\.tasks\[0\]\.devices: a pending task is on no device"):
        snapshot_from_data(document)
    document = sharing_document()
    document["jobs"][-1]["task_resources"] = {"gpu": 2.5}
    with pytest.raises(SnapshotError, match="more must be whole GPUs"):
        snapshot_from_data(document)


def test_a_queue_may_deserve_a_fraction_of_a_gpu() -> None:
    document = base_document()
    document["queues"][1]["deserved"] = {"gpu": 1.5}
    assert snapshot_from_data(document).queues[1].deserved == {"gpu": 1500}


def test_a_share_on_several_devices_takes_distinct_devices_with_room(cli: Any) -> None:
    """Device 0 holds 0.75 (the half and mem's quarter), devices 1 and 5 a quarter each, four devices the 4-GPU task,
    one is empty. A half goes beside a quarter (device 1); a half on each of three devices takes both devices with
    a quarter and the empty one; a half on each of four goes to n1 (four empty devices), on each of five nowhere."""
    document = sharing_document()
    document["nodes"][1]["gpu_memory"] = "80Gi"
    assert decide(snapshot_from_data(document), "infer").devices == {"infer-0": (1,)}
    document["jobs"][5]["gpu_devices"] = 3
    decision = decide(snapshot_from_data(document), "infer", "allocate")
    assert decision.outcome == "allocated" and decision.devices == {"infer-0": (1, 2, 5)}
    result = cli("cycle", "--json", "--verify", document=document)
    assert result.exit_code == 0, result.stderr
    document["jobs"][5]["gpu_devices"] = 4  # n0 has three devices with room: n1, four empty ones
    decision = decide(snapshot_from_data(document), "infer", "allocate")
    assert decision.placements == {"infer-0": "n1"} and decision.devices == {"infer-0": (0, 1, 2, 3)}
    document["jobs"][5]["gpu_devices"] = 5
    decision = decide(snapshot_from_data(document), "infer", "allocate")
    assert decision.outcome == "infeasible"
    assert "n1 has 4 device(s) with room for 0.5, the most of any node; the job needs 0.5 on each of 5" in str(
        decision.reason
    )


def memory_document() -> Doc:
    """:func:`sharing_document` with ``mem`` on device 1 alone (20Gi of 80Gi) and the waiting job asking 60Gi."""
    document = sharing_document()
    document["jobs"][3]["gpu_devices"] = 1
    document["jobs"][3]["tasks"] = [{"node": "n0", "devices": [1]}]
    document["jobs"][5]["task_resources"] = {"gpu_memory": "60Gi"}
    document["nodes"][1]["gpu_memory"] = "80Gi"
    return document


def test_a_share_by_memory_is_decided_as_its_part_of_a_device(cli: Any) -> None:
    """60Gi of 80Gi is 0.75: it fits beside mem (0.25) on device 1, not beside the half on device 0."""
    snapshot = snapshot_from_data(memory_document())
    decision = decide(snapshot, "infer")
    assert decision.outcome == "allocated" and decision.devices == {"infer-0": (1,)}
    assert snapshot.job("infer").task_resources == {"gpu_memory": 60 * 2**30 * 1000}  # the caller's snapshot as read
    result = cli("cycle", "--json", "--verify", document=memory_document())
    assert result.exit_code == 0, result.stderr
    (placed,) = [d for d in json.loads(result.stdout)["decisions"] if d["job"] == "infer" and d["placements"]]
    assert placed["devices"] == {"infer-0": [1]}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda d: d["nodes"][1].update(gpu_memory="40Gi"),
            "the nodes' devices differ in memory (80Gi on n0, 40Gi on n1)",
        ),
        (lambda d: d["nodes"][1].pop("gpu_memory"), "node n1 does not say its devices' gpu_memory"),
        (
            lambda d: d["jobs"][5].update(task_resources={"gpu_memory": "81Gi"}),
            "more GPU memory than a device has (80Gi)",
        ),
    ],
    ids=["sizes differ", "size unknown", "above a device"],
)
def test_a_share_by_memory_decisions_cannot_count_is_refused_in_one_line(cli: Any, change: Any, words: str) -> None:
    document = memory_document()
    change(document)
    snapshot = snapshot_from_data(document)  # valid: the running shares fit their devices
    with pytest.raises(SnapshotError, match="asks for"):
        decide(snapshot, "infer")
    result = cli("cycle", document=document)
    assert result.exit_code == 2
    assert words in result.stderr and "Traceback" not in result.stderr


def test_a_share_is_placed_on_the_device_that_carries_shares_and_has_room(cli: Any) -> None:
    document = sharing_document()
    del document["jobs"][3]  # mem: a share by memory
    decision = decide(snapshot_from_data(document), "infer")
    assert decision.outcome == "allocated"
    assert decision.placements == {"infer-0": "n0"}
    assert decision.devices == {"infer-0": (0,)}  # beside the half, not on an empty device nor beside the quarter
    result = cli("cycle", "--json", "--verify", document=document)
    assert result.exit_code == 0, result.stderr
    (placed,) = [d for d in json.loads(result.stdout)["decisions"] if d["job"] == "infer" and d["placements"]]
    assert placed["devices"] == {"infer-0": [0]}
    assert "placements: n0: infer-0 (device 0)" in cli("cycle", document=document).stdout
