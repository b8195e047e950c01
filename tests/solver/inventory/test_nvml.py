"""GPU inventory through NVML: the real adapter code against a recorded device list, and the no-driver path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from conftest import ROOT, build

from gpu_preempt.inventory.nvml import (
    DRIVER_NOT_LOADED,
    LIB_RM_VERSION_MISMATCH,
    LIBRARY_NOT_FOUND,
    Inventory,
    RecordedNVML,
    inventory_as_node,
    read_inventory,
)

RECORDING = Path(__file__).parent / "data" / "nvml-dgx.json"


def recorded(**changes) -> RecordedNVML:
    data = json.loads(RECORDING.read_text())
    data.update(changes)
    return RecordedNVML(data)


def test_lists_gpus_with_mig_devices_and_skips_empty_slots():
    nvml = recorded()
    inventory = read_inventory(nvml)
    assert inventory.reason is None
    assert inventory.driver_version == "550.54.15"
    assert [d.name for d in inventory.devices] == ["NVIDIA H100 80GB HBM3"] * 3 + ["NVIDIA A100-SXM4-40GB"]
    assert [d.mig_mode for d in inventory.devices] == ["disabled", "disabled", "enabled", "unsupported"]
    mig = inventory.devices[2].mig_devices
    assert [m.slot for m in mig] == [0, 5]  # slots 1-4 and 6 raise NVML_ERROR_NOT_FOUND and are skipped
    assert mig[0].name.endswith("3g.40gb")
    assert nvml.initialized == 0  # nvmlShutdown was called


def test_as_node_counts_whole_gpus_only():
    node = inventory_as_node(read_inventory(recorded()), "gpu-host-1")
    assert node["resources"] == {"gpu": 3}
    assert node["gpu_model"] == "NVIDIA H100 80GB HBM3"
    assert node["labels"]["gpu-preempt/mig-gpus-not-counted"] == "2"
    assert "gpu-preempt/mixed-gpu-models" in node["labels"]


def test_the_node_entry_is_valid_snapshot_input():
    node = inventory_as_node(read_inventory(recorded()), "gpu-host-1")
    snapshot = build(nodes=[node], queues=[{"name": "q"}], jobs=[], priority_classes=[])
    assert snapshot.node("gpu-host-1").resources["gpu"] == 3000


def test_a_lost_gpu_is_skipped_with_a_note():
    data = json.loads(RECORDING.read_text())
    data["devices"][1]["lost"] = True
    inventory = read_inventory(RecordedNVML(data))
    assert len(inventory.devices) == 3
    assert inventory.notes == ("GPU 1 skipped: GPU is lost",)


def test_driver_problems_give_an_empty_inventory_with_the_reason():
    cases = {
        LIBRARY_NOT_FOUND: "no NVIDIA driver is installed",
        DRIVER_NOT_LOADED: "driver not loaded",
        LIB_RM_VERSION_MISMATCH: "versions differ",
    }
    for code, reason in cases.items():
        inventory = read_inventory(recorded(init_error=code))
        assert inventory.devices == ()
        assert reason in inventory.reason


def test_this_machine_without_a_driver_goes_through_real_pynvml():
    """No GPU here: the real pynvml raises NVMLError_LibraryNotFound, which becomes a reason, not a traceback."""
    inventory = read_inventory()
    if inventory.devices:  # pragma: no cover - only on a GPU machine
        assert inventory.reason is None
    else:
        assert inventory.reason


def test_round_trip_of_the_recording_format():
    inventory = read_inventory(recorded())
    assert Inventory.from_dict(json.loads(json.dumps(inventory.to_dict()))) == inventory


def test_cli_inventory_from_a_recording(cli):
    result = cli("inventory", "--recording", str(RECORDING))
    assert result.exit_code == 0
    assert "driver 550.54.15; 4 GPU(s)" in result.stdout
    assert "MIG 1g.10gb" in result.stdout


def test_cli_inventory_json_is_a_recording(cli):
    result = cli("inventory", "--json", "--recording", str(RECORDING))
    assert result.exit_code == 0
    again = read_inventory(RecordedNVML(json.loads(result.stdout)))
    assert again == read_inventory(recorded())


def test_cli_as_node_prints_a_nodes_entry(cli):
    result = cli("inventory", "--as-node", "host-7", "--recording", str(RECORDING))
    assert result.exit_code == 0
    document = yaml.safe_load(result.stdout)
    assert document["nodes"][0]["name"] == "host-7"
    assert document["nodes"][0]["resources"] == {"gpu": 3}


def test_cli_without_gpus(cli, tmp_path):
    path = tmp_path / "none.json"
    path.write_text(json.dumps({"init_error": LIBRARY_NOT_FOUND}))
    listed = cli("inventory", "--recording", str(path))
    assert listed.exit_code == 0 and "no GPUs: NVML library not found" in listed.stdout
    as_node = cli("inventory", "--as-node", "x", "--recording", str(path))
    assert as_node.exit_code == 1 and "no GPUs to describe" in as_node.stderr


def test_cli_bad_recording(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    result = cli("inventory", "--recording", str(path))
    assert result.exit_code == 2 and "cannot read recording" in result.stderr


def test_only_the_adapter_imports_pynvml():
    importers = [
        str(path.relative_to(ROOT))
        for folder in ("models", "solver")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"^\s*(import pynvml|from pynvml)", path.read_text(), re.MULTILINE)
    ]
    assert importers == ["solver/inventory/nvml.py"]
