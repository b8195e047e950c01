"""GPU sharing in snapshots (docs/snapshot-format.md, "GPU sharing"): shares of a GPU by fraction or by memory, on
``gpu_devices`` devices of one node, running ones naming their devices; the device ledger they must fit. Decisions
are made on whole GPUs only: a valid snapshot with a share is refused by the engine, in one line."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import base_document

from gpu_preempt import decide
from gpu_preempt.models import Snapshot, SnapshotError, snapshot_from_data
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


def test_decisions_on_shares_are_refused_by_name_and_whole_gpus_decide_as_before(cli: Any) -> None:
    snapshot = snapshot_from_data(sharing_document())
    with pytest.raises(SnapshotError, match=r"job half asks for a share of a GPU: the snapshot is valid, but"):
        decide(snapshot, "wait")
    result = cli("cycle", document=sharing_document())
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "job half asks for a share of a GPU: the snapshot is valid, but decisions are made on whole GPUs only (jobs[2])"
    )
    assert isinstance(snapshot_from_data(base_document()), Snapshot)
    assert cli("cycle", document=base_document()).exit_code == 0
