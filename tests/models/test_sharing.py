"""GPU sharing in snapshots (docs/snapshot-format.md, "GPU sharing"): shares of a GPU by fraction or by memory, on
``gpu_devices`` devices of one node, running ones naming their devices; the device ledger they must fit. Decisions
are made on shares by fraction of one device (shares by memory or on several devices are refused by name, in one
line)."""

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


def test_shares_by_memory_or_on_several_devices_are_refused_by_name(cli: Any) -> None:
    snapshot = snapshot_from_data(sharing_document())
    with pytest.raises(
        SnapshotError, match=r"job mem takes its share on several devices \(gpu_devices\): the snapshot"
    ):
        decide(snapshot, "infer")
    result = cli("cycle", document=sharing_document())
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "job mem takes its share on several devices (gpu_devices): the snapshot is valid, but decisions count shares "
        "of a GPU by fraction of one device only (jobs[3])"
    )
    document = sharing_document()
    document["jobs"][3]["gpu_devices"] = 1
    document["jobs"][3]["tasks"] = [{"node": "n0", "devices": [1]}]
    with pytest.raises(SnapshotError, match="job mem asks for GPU memory"):
        decide(snapshot_from_data(document), "infer")


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
