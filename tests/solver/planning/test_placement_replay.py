"""Placement in a replay (docs/scenario-format.md, "What goes in", "workload"): node groups with labels and taints, a
cluster built from Alibaba PAI's machine table, a GPU model drawn per job, and the waits per GPU model."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES
from helpers import CLUSTER10, write_scenario

from gpu_preempt.models import SnapshotError
from gpu_preempt.planning.run import simulate

PAI = FIXTURES / "traces" / "alibaba-pai-machines" / "pai_machine_spec.csv"
COLUMNS = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus", "queue": "queue"}


def test_a_job_of_one_gpu_model_waits_for_that_model_while_another_idles(tmp_path: Path):
    """One 8-GPU A100 node and one 8-GPU H100 node. Every job draws A100 (the only weight), so X runs at 0 on the
    A100 node for 1000 s and Y, arriving at 10, waits for it although the H100 node is idle: Y starts at 1000 and
    finishes at 1500. Nothing is preempted (one queue, equal priority)."""
    (tmp_path / "trace.csv").write_text("id,submit,duration,gpus,queue\nX,0,1000,8,b\nY,10,500,8,b\n")
    path = write_scenario(
        tmp_path,
        cluster={"nodes": [{"count": 1, "gpu": 8, "gpu_model": "A100"}, {"count": 1, "gpu": 8, "gpu_model": "H100"}]},
        workload={
            "trace": {"format": "csv", "path": "trace.csv", "columns": COLUMNS},
            "assign": {"gpu_model": {"weights": {"A100": 1}}},
        },
    )
    replay = simulate(path, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    assert (sim.jobs["X"].first_start, sim.jobs["X"].finish) == (0.0, 1000.0)
    assert (sim.jobs["Y"].first_start, sim.jobs["Y"].finish) == (1000.0, 1500.0)
    models = replay.summary["gpu_models"]
    assert list(models) == ["A100"] and models["A100"]["jobs"] == 2
    assert models["A100"]["wait"]["p50"] == (0 + 990) / 2
    assert any(line.startswith("gpu_model: drawn per job") for line in replay.summary["synthetic"])


def test_a_tainted_node_group_takes_only_tolerating_work(tmp_path: Path):
    """Two 8-GPU nodes, one tainted dedicated=infer:NoSchedule. The trace's jobs tolerate nothing, so they share
    the untainted node only: the two 8-GPU jobs run one after the other."""
    (tmp_path / "trace.csv").write_text("id,submit,duration,gpus,queue\nX,0,1000,8,b\nY,0,500,8,b\n")
    tainted = {"count": 1, "gpu": 8, "name": "infer", "taints": [{"key": "dedicated", "value": "infer",
                                                                  "effect": "NoSchedule"}]}  # fmt: skip
    path = write_scenario(
        tmp_path,
        cluster={"nodes": [{"count": 1, "gpu": 8, "labels": {"pool": "train"}}, tainted]},
        workload={"trace": {"format": "csv", "path": "trace.csv", "columns": COLUMNS}},
    )
    replay = simulate(path, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    starts = sorted((j.first_start, name) for name, j in sim.jobs.items())
    assert starts == [(0.0, "X"), (1000.0, "Y")]
    document = sim.cluster.document(0.0, [])
    assert document["nodes"][0]["labels"] == {"pool": "train"}
    assert document["nodes"][1]["taints"] == [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]


def test_the_pai_machine_table_becomes_node_groups_per_kind(tmp_path: Path):
    """PAI's 1,897 machines, scaled to a twentieth per kind: P100 x2 (798 -> 40), T4 x2 (497 -> 25), MISC x8
    (280 -> 14), V100M32 x8 (135 -> 7), V100 x8 with 512 GB (59 -> 3) and 384 GB (45 -> 2), and the machines
    without GPUs (83 -> 4), which GPU jobs leave alone."""
    path = write_scenario(
        tmp_path,
        cluster={"machines": {"format": "pai", "path": str(PAI), "scale": 0.05}},
        workload={"trace": {"format": "itp", "path": str(CLUSTER10)}, "window": {"first": 5}},
    )
    replay = simulate(path, tmp_path / "out")
    nodes = replay.simulator.cluster.nodes
    counts: dict[tuple[str | None, int], int] = {}
    for node in nodes:
        key = (node.gpu_model, node.resources["gpu"] // 1000)
        counts[key] = counts.get(key, 0) + 1
    assert counts == {("P100", 2): 40, ("T4", 2): 25, ("MISC", 8): 14, ("V100M32", 8): 7, ("V100", 8): 5, (None, 0): 4}
    assert all(node.labels["nvidia.com/gpu.product"] == node.gpu_model for node in nodes if node.gpu_model)
    assert replay.summary["gpus"] == 40 * 2 + 25 * 2 + (14 + 7 + 5) * 8


def test_a_gpu_model_no_node_has_is_an_input_error(tmp_path: Path):
    path = write_scenario(
        tmp_path,
        cluster={"nodes": [{"count": 1, "gpu": 8, "gpu_model": "A100"}]},
        workload={
            "trace": {"format": "itp", "path": str(CLUSTER10)},
            "assign": {"gpu_model": {"weights": {"B200": 1}}},
        },
    )
    with pytest.raises(SnapshotError) as caught:
        simulate(path, tmp_path / "out")
    error = caught.value.errors[0]
    assert error.path == "workload.assign.gpu_model.weights" and "no node has GPU model B200" in error.message
    assert not (tmp_path / "out").exists()


def test_a_bad_machine_table_row_names_the_line(tmp_path: Path):
    (tmp_path / "machines.csv").write_text("m1,V100,96,512,8\nm2,V100,96,lots,8\n")
    path = write_scenario(
        tmp_path,
        cluster={"machines": {"format": "pai", "path": "machines.csv"}},
        workload={"trace": {"format": "itp", "path": str(CLUSTER10)}},
    )
    with pytest.raises(SnapshotError) as caught:
        simulate(path, tmp_path / "out")
    assert caught.value.errors[0].path == "cluster.machines.path" and ":2: cap_cpu" in caught.value.errors[0].message


def test_the_bundled_heterogeneous_scenario_replays_with_every_job_on_its_model(tmp_path: Path):
    """fixtures/scenarios/pai-heterogeneous.yaml, its first 40 jobs, with every cycle checked: each job runs only on
    nodes of the model it drew, and the summary gives the waits per model."""
    bundled = FIXTURES / "scenarios" / "pai-heterogeneous.yaml"
    document = yaml.safe_load(bundled.read_text())
    document["cluster"]["machines"]["path"] = str(PAI)
    document["workload"]["trace"]["path"] = str(CLUSTER10)
    document["workload"]["window"] = {"first": 40}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document))
    replay = simulate(path, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    model_of = {node.name: node.gpu_model for node in sim.cluster.nodes}
    placed = [
        (sim.jobs[d.job].spec.gpu_model, model_of[node])
        for _, d in sim.log.changing
        if d.job in sim.jobs
        for node in d.placements.values()
    ]
    assert placed and all(wanted == got for wanted, got in placed)
    assert set(replay.summary["gpu_models"]) <= {"P100", "T4", "MISC", "V100M32", "V100"}
