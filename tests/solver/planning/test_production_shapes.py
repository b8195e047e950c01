"""Production shapes in a trace (docs/scenario-format.md, "workload"): per-task CPU and memory, jobs without GPUs,
gangs of a given number of tasks, GPU models, and the units of plain numbers. Hand-computed replays under the checks
(every cycle's invariants, CPU and memory ledgers included)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import write_scenario

from gpu_preempt.models import SnapshotError
from gpu_preempt.planning.run import simulate

COLUMNS = {
    "id": "id",
    "submit": "submit",
    "duration": "duration",
    "gpus": "gpus",
    "queue": "queue",
    "cpu": "cpu",
    "memory": "memory",
    "gpu_model": "model",
    "tasks": "tasks",
}
HEADER = "id,submit,duration,gpus,queue,cpu,memory,model,tasks\n"


def scenario(tmp_path: Path, rows: str, nodes: list[dict[str, Any]], **trace: Any) -> Path:
    """The trace ``rows`` (columns of :data:`HEADER`) on ``nodes``, queue b deserving everything."""
    (tmp_path / "trace.csv").write_text(HEADER + rows)
    return write_scenario(
        tmp_path,
        cluster={"nodes": nodes},
        workload={"trace": {"format": "csv", "path": "trace.csv", "columns": COLUMNS, **trace}},
    )


def runs(tmp_path: Path, path: Path) -> dict[str, tuple[float | None, float | None]]:
    replay = simulate(path, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    return {name: (job.first_start, job.finish) for name, job in sim.jobs.items()}


def test_a_gpu_node_whose_cpu_is_taken_leaves_its_gpus_idle_until_cpu_frees(tmp_path: Path) -> None:
    """One 2-GPU node with 8 cores. Two CPU-only jobs of 4 cores each arrive at 0 for 100 s (and 200 s) and take
    every core; a 1-GPU job asking 2 cores arrives at 5: the GPUs are free but the CPU is not, so it starts when the
    first CPU job ends, at 100, and runs its 50 s."""
    rows = "etl1,0,100,0,b,4,1Gi,,\netl2,0,200,0,b,4,1Gi,,\ntrain,5,50,1,b,2,1Gi,,\n"
    found = runs(tmp_path, scenario(tmp_path, rows, [{"count": 1, "gpu": 2, "cpu": 8, "memory": "64Gi"}]))
    assert found == {"etl1": (0.0, 100.0), "etl2": (0.0, 200.0), "train": (100.0, 150.0)}


def test_a_job_without_gpus_runs_on_a_node_without_gpus(tmp_path: Path) -> None:
    """A node without GPUs takes the CPU job; the GPU job, the GPU node: both run at once."""
    nodes = [{"name": "cpu", "count": 1, "gpu": 0, "cpu": 16, "memory": "64Gi"}, {"count": 1, "gpu": 1, "cpu": 2}]
    rows = "etl,0,100,0,b,16,8Gi,,\ntrain,0,50,1,b,2,1Gi,,\n"
    assert runs(tmp_path, scenario(tmp_path, rows, nodes)) == {"etl": (0.0, 100.0), "train": (0.0, 50.0)}


def test_a_gang_of_given_tasks_with_gpu_models_runs_only_on_those_models(tmp_path: Path) -> None:
    """A gang of 2 tasks of 1 GPU each that may run on A100 or H100: the T4 node (listed first) cannot take it, so
    it waits for the A100 node, held until 60 by a job that may run there only."""
    nodes = [
        {"name": "t4", "count": 1, "gpu": 2, "gpu_model": "T4"},
        {"name": "a100", "count": 1, "gpu": 2, "gpu_model": "A100"},
    ]
    rows = "hold,0,60,2,b,,,A100,\ngang,1,30,2,b,,,A100|H100,2\n"
    assert runs(tmp_path, scenario(tmp_path, rows, nodes)) == {"hold": (0.0, 60.0), "gang": (60.0, 90.0)}


def test_plain_numbers_take_the_unit_the_scenario_gives(tmp_path: Path) -> None:
    """``units: {cpu: m, memory: Mi}`` reads 4000 as 4 cores and 2048 as 2 GiB: two such jobs fill an 8-core node,
    a third waits."""
    rows = "a,0,100,0,b,4000,2048,,\nb,0,100,0,b,4000,2048,,\nc,0,10,0,b,4000,2048,,\n"
    path = scenario(tmp_path, rows, [{"count": 1, "gpu": 0, "cpu": 8}], units={"cpu": "m", "memory": "Mi"})
    assert runs(tmp_path, path) == {"a": (0.0, 100.0), "b": (0.0, 100.0), "c": (100.0, 110.0)}


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("x,0,10,0,b,,,,", "line 2: gpus: 0 GPUs and no cpu or memory: the job asks for nothing"),
        ("x,0,10,3,b,,,,2", "line 2: tasks: 3 GPUs do not split over 2 tasks"),
        ("x,0,10,1,b,lots,,,", "line 2: cpu: 'lots' is not a quantity"),
        ("x,0,10,0,b,1,,T4,", "line 2: model: a GPU model for a job of 0 GPUs"),
        ("x,0,10,1,b,,,V100,", "workload (job x): no node has GPU model V100 (the cluster's: T4)"),
    ],
)
def test_a_bad_production_row_is_refused_naming_its_line(tmp_path: Path, row: str, words: str) -> None:
    path = scenario(tmp_path, row + "\n", [{"count": 1, "gpu": 1, "gpu_model": "T4"}])
    with pytest.raises(SnapshotError, match=re.escape(words)):
        simulate(path, tmp_path / "out")


def test_a_unit_for_an_unmapped_column_is_refused(tmp_path: Path) -> None:
    (tmp_path / "trace.csv").write_text("id,submit,duration,gpus\nx,0,10,1\n")
    trace = {"format": "csv", "path": "trace.csv", "columns": {c: c for c in ("id", "submit", "duration", "gpus")}}
    path = write_scenario(tmp_path, workload={"trace": {**trace, "units": {"cpu": "m"}}})
    with pytest.raises(SnapshotError, match=re.escape("workload.trace.units.cpu")):
        simulate(path, tmp_path / "out")
