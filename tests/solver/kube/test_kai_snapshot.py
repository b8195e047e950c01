"""KAI-Scheduler's snapshot ZIP (``/get-snapshot``) imports as the dump of the same objects does."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import yaml
from conftest import FIXTURES

GPU_PREEMPT = str(Path(sys.executable).parent / "gpu-preempt")
DUMP = FIXTURES / "kube" / "kai-cluster.json"
LISTS = {"Pod": "pods", "Node": "nodes", "Queue": "queues", "PodGroup": "podGroups", "PriorityClass": "priorityClasses"}


def kai_zip(path: Path, params: dict[str, Any] | None = None) -> Path:
    """The bundled KAI dump as KAI's snapshot plugin writes it: objects listed by kind, without apiVersion or kind
    (a cache's objects carry none), the scheduler's configuration beside them."""
    raw: dict[str, list[Any]] = {key: [] for key in [*LISTS.values(), "bindRequests", "configMaps"]}
    for item in json.loads(DUMP.read_text())["items"]:
        if item["kind"] in LISTS:
            raw[LISTS[item["kind"]]].append({k: v for k, v in item.items() if k not in ("apiVersion", "kind")})
    raw["configMaps"].append({"metadata": {"name": "scheduler-config", "namespace": "kai-scheduler"}})
    snapshot = {
        "config": {
            "actions": "allocate, consolidation, reclaim, preempt",
            "tiers": [{"plugins": [{"name": "gpupack"}]}],
        },
        "schedulerParams": {"schedulerName": "kai-scheduler", **(params or {})},
        "rawObjects": raw,
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("snapshot.json", json.dumps(snapshot))
    return path


def imported(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    result = subprocess.run(
        [GPU_PREEMPT, "import", *args, "--now", "2026-11-23T12:00:00Z"], capture_output=True, text=True, check=False
    )
    return result, yaml.safe_load(result.stdout) if result.returncode == 0 else None


def test_a_kai_snapshot_zip_imports_to_the_same_snapshot_as_the_dump(tmp_path: Path):
    from_zip, document = imported(str(kai_zip(tmp_path / "snapshot.zip")))
    _, expected = imported(str(DUMP))
    assert from_zip.returncode == 0, from_zip.stderr
    assert document == expected
    assert "the scheduler's actions: allocate, consolidation, reclaim, preempt" in from_zip.stderr
    assert "not read: 1 configMaps" in from_zip.stderr


def test_a_node_pool_keeps_its_nodes_and_their_pods(tmp_path: Path):
    nodes = [i for i in json.loads(DUMP.read_text())["items"] if i["kind"] == "Node"]
    first = nodes[0]["metadata"]["name"]
    label = next(iter(nodes[0]["metadata"].get("labels", {}).items()), None)
    assert label is not None and all(n["metadata"].get("labels", {}).get(label[0]) != label[1] for n in nodes[1:])
    pool = {"partitionParams": {"NodePoolLabelKey": label[0], "NodePoolLabelValue": label[1]}}
    result, document = imported(str(kai_zip(tmp_path / "pool.zip", pool)))
    assert result.returncode == 0, result.stderr
    assert document is not None and [n["name"] for n in document["nodes"]] == [first]
    on = {t.get("node") for j in document["jobs"] for t in j["tasks"]}
    assert on <= {first, None}


def test_a_zip_that_is_not_a_kai_snapshot_exits_2(tmp_path: Path):
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("readme.txt", "hello")
    result, _ = imported(str(other))
    assert result.returncode == 2 and "not a KAI scheduler snapshot" in result.stderr
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(kai_zip(tmp_path / "whole.zip").read_bytes()[:200])
    result, _ = imported(str(truncated))
    assert result.returncode == 2 and "Traceback" not in result.stderr
