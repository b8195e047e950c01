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


def kai_zip(path: Path, params: dict[str, Any] | None = None, config: dict[str, Any] | None = None) -> Path:
    """The bundled KAI dump as KAI's snapshot plugin writes it: objects listed by kind, without apiVersion or kind
    (a cache's objects carry none), the scheduler's configuration beside them."""
    raw: dict[str, list[Any]] = {key: [] for key in [*LISTS.values(), "bindRequests", "configMaps"]}
    for item in json.loads(DUMP.read_text())["items"]:
        if item["kind"] in LISTS:
            raw[LISTS[item["kind"]]].append({k: v for k, v in item.items() if k not in ("apiVersion", "kind")})
    raw["configMaps"].append({"metadata": {"name": "scheduler-config", "namespace": "kai-scheduler"}})
    snapshot = {
        "config": config
        or {
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
    assert document == expected  # KAI's default configuration is the snapshot's: nothing to write
    assert "actions allocate, consolidation, reclaim, preempt: config.actions allocate, reclaim, preempt" in (
        from_zip.stderr
    )
    assert "not read: 1 configMaps" in from_zip.stderr


SPREAD = {
    "actions": "allocate, reclaim, stalegangeviction",
    "tiers": [
        {
            "plugins": [
                {"name": "proportion", "arguments": {"relcaimerSaturationMultiplier": "1.5", "kValue": "2"}},
                {
                    "name": "minruntime",
                    "arguments": {"defaultPreemptMinRuntime": "10m", "reclaimResolveMethod": "queue"},
                },
                {"name": "gpuspread"},
                {"name": "nodeplacement", "arguments": {"gpu": "spread", "cpu": "binpack"}},
            ]
        }
    ],
}


def test_the_scheduler_configuration_that_decides_becomes_the_snapshot_config(tmp_path: Path):
    """KAI's actions without preempt and consolidation, the proportion plugin's saturation multiplier, minruntime's
    defaults and nodeplacement's strategies are the snapshot's; what is not modelled is said."""
    result, document = imported(str(kai_zip(tmp_path / "spread.zip", config=SPREAD)))
    assert result.returncode == 0, result.stderr
    assert document is not None
    config = document["config"]
    assert config["actions"] == ["allocate", "reclaim"] and config["moves"] is False
    assert config["placement_strategy"] == {"gpu": "spread", "cpu": "binpack"}
    assert config["reclaimer_saturation_multiplier"] == 1.5
    assert (config["preempt_min_runtime"], config["min_runtime_resolve"]) == ("10m", "queue")
    assert "not modelled: stalegangeviction" in result.stderr
    assert "kValue 2 without a usage database" in result.stderr and "fair_share_usage" not in config


def test_the_usage_database_turns_time_based_fair_share_on(tmp_path: Path):
    """KAI's ``usageDBConfig`` with the proportion plugin's ``kValue``: ``config.fair_share_usage``; the usage
    itself is in KAI's database, which the note says."""
    config = {
        **SPREAD,
        "usageDBConfig": {
            "clientType": "prometheus",
            "usageParams": {"windowSize": "168h", "windowType": "tumbling", "halfLifePeriod": "24h"},
        },
    }
    result, document = imported(str(kai_zip(tmp_path / "usage.zip", config=config)))
    assert result.returncode == 0, result.stderr
    assert document is not None
    assert document["config"]["fair_share_usage"] == {
        "k_value": 2.0,
        "window": "168h",
        "half_life": "24h",
        "window_type": "tumbling",
    }
    assert "give it as the queue's usage" in result.stderr


def test_a_value_kai_would_not_parse_is_a_guess_and_strict_refuses_it(tmp_path: Path):
    bad = {
        "actions": "allocate, reclaim, preempt",
        "tiers": [{"plugins": [{"name": "nodeplacement", "arguments": {"gpu": "tight"}}]}],
    }
    path = kai_zip(tmp_path / "bad.zip", config=bad)
    result, document = imported(str(path))
    assert result.returncode == 0 and document is not None
    assert "placement_strategy" not in document["config"]
    assert "nodeplacement" in result.stderr and "'tight' is not binpack or spread: binpack" in result.stderr
    strict, _ = imported(str(path), "--strict")
    assert strict.returncode == 2


def test_a_scheduling_shard_in_a_dump_gives_its_config(tmp_path: Path):
    """KAI's SchedulingShard: spread turns consolidation off, as KAI's defaults do; minRuntime and the actions'
    overrides are read."""
    data = json.loads(DUMP.read_text())
    data["items"].append(
        {
            "apiVersion": "kai.scheduler/v1",
            "kind": "SchedulingShard",
            "metadata": {"name": "default"},
            "spec": {
                "placementStrategy": {"gpu": "spread"},
                "minRuntime": {"reclaimMinRuntime": "5m"},
                "actions": {"preempt": {"enabled": False}},
            },
        }
    )
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps(data))
    result, document = imported(str(dump))
    assert result.returncode == 0, result.stderr
    assert document is not None
    config = document["config"]
    assert config["placement_strategy"] == {"gpu": "spread", "cpu": "binpack"}
    assert config["actions"] == ["allocate", "reclaim"] and config["moves"] is False
    assert config["reclaim_min_runtime"] == "5m"


def test_a_node_pool_without_a_value_keeps_the_nodes_without_the_label(tmp_path: Path):
    """KAI's ``SchedulingNodePoolParams.GetLabelSelector``: an empty value selects ``DoesNotExist``."""
    nodes = [i for i in json.loads(DUMP.read_text())["items"] if i["kind"] == "Node"]
    key = next(iter(nodes[0]["metadata"].get("labels", {})))
    without = sorted(n["metadata"]["name"] for n in nodes if key not in n["metadata"].get("labels", {}))
    pool = {"partitionParams": {"NodePoolLabelKey": key, "NodePoolLabelValue": ""}}
    result, document = imported(str(kai_zip(tmp_path / "pool.zip", pool)))
    assert result.returncode == 0, result.stderr
    assert document is not None and sorted(n["name"] for n in document["nodes"]) == without
    assert f"without label {key}" in result.stderr


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
