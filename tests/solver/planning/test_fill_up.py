"""Fill-up experiments (docs/scenario-format.md, "Fill-up"): shapes drawn from the trace arrive until the GPUs they
ask for reach a multiple of capacity, none departs, and the GPUs left unallocated are counted by cause.
Hand-computed scenarios, under the checks."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import write_scenario

from gpu_preempt.models import SnapshotError
from gpu_preempt.planning.run import simulate

COLUMNS = {c: c for c in ("id", "submit", "duration", "gpus", "queue", "cpu", "memory", "gpu_model")}


def fill(tmp_path: Path, rows: str, nodes: list[dict[str, Any]], **fill_up: Any) -> dict[str, Any]:
    """The fill-up of ``rows`` (id,submit,duration,gpus,queue,cpu,memory,gpu_model) on ``nodes``: its summary's
    ``fill_up`` and fill_up.csv's rows."""
    (tmp_path / "trace.csv").write_text("id,submit,duration,gpus,queue,cpu,memory,gpu_model\n" + rows)
    workload = {
        "trace": {"format": "csv", "path": "trace.csv", "columns": COLUMNS},
        "fill_up": {"target": 1.0, "seed": 0, "interval": "1s", **fill_up},
    }
    path = write_scenario(tmp_path, cluster={"nodes": nodes}, workload=workload)
    replay = simulate(path, tmp_path / "out", check=True)
    assert replay.simulator.problems == []
    with (tmp_path / "out" / "fill_up.csv").open() as file:
        found = list(csv.DictReader(file))
    assert (tmp_path / "out" / "fill_up.png").stat().st_size > 10_000
    return {**replay.summary["fill_up"], "rows": found, "gpus": replay.summary["gpus"]}


def unallocated(found: dict[str, Any]) -> dict[str, float]:
    """The causes that count GPUs, and a check that they add up to what is free."""
    causes = {c: g for c, g in found["unallocated_gpus"].items() if g}
    assert sum(causes.values()) == pytest.approx(found["gpus"] * (1 - found["allocated_share"]))
    return causes


def test_three_gpu_jobs_on_two_four_gpu_nodes_leave_one_gpu_on_each(tmp_path: Path) -> None:
    """8 GPUs; 3-GPU jobs arrive until 9 GPUs are asked: two run, one per node, and the third finds 1 GPU free on
    each node."""
    found = fill(tmp_path, "a,0,60,3,b,,,\n", [{"count": 2, "gpu": 4}])
    assert found["arrivals"] == 3 and found["waiting_jobs"] == 1
    assert [(r["requested_share"], r["allocated_share"]) for r in found["rows"]] == [
        ("0.375", "0.375"),
        ("0.75", "0.75"),
        ("1.125", "0.75"),
    ]
    assert unallocated(found) == {"too few on one node": 2.0}


def test_gpus_a_node_has_no_cpu_left_for_stay_unallocated(tmp_path: Path) -> None:
    """One node of 4 GPUs and 8 cores; each job asks 1 GPU and 4 cores: two run, the other two GPUs lack CPU."""
    found = fill(tmp_path, "a,0,60,1,b,4,1Gi,\n", [{"count": 1, "gpu": 4, "cpu": 8}])
    assert found["arrivals"] == 4 and found["allocated_share"] == 0.5
    assert unallocated(found) == {"no CPU left": 2.0}


def test_gpus_of_a_model_no_waiting_job_asks_for_stay_unallocated(tmp_path: Path) -> None:
    nodes = [{"name": "t4", "count": 1, "gpu": 2, "gpu_model": "T4"}, {"name": "a", "count": 1, "gpu": 2,
             "gpu_model": "A100"}]  # fmt: skip
    found = fill(tmp_path, "a,0,60,1,b,,,A100\n", nodes)
    assert found["arrivals"] == 4 and found["allocated_share"] == 0.5
    assert unallocated(found) == {"no node of the model": 2.0}


def test_the_seed_draws_the_shapes_and_the_same_seed_the_same(tmp_path: Path) -> None:
    rows = "a,0,60,1,b,,,\nb,0,60,2,b,,,\nc,0,60,4,b,,,\nd,0,60,0,b,1,,\n"
    nodes = [{"count": 4, "gpu": 8}]
    names = []
    for run, seed in enumerate((1, 1, 2)):
        (tmp_path / str(run)).mkdir()
        names.append([r["job"] for r in fill(tmp_path / str(run), rows, nodes, seed=seed)["rows"]])
    assert names[0] == names[1] != names[2]
    assert all(re.fullmatch(r"\d{6}-[abcd]", n) for n in names[0])


def test_a_trace_of_jobs_without_gpus_cannot_fill_a_cluster(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match=re.escape("workload.fill_up: the trace's jobs ask for no GPU")):
        fill(tmp_path, "a,0,60,0,b,1,,\n", [{"count": 1, "gpu": 1}])
