"""`gpu-preempt sweep`: runs over axes, side by side for CP-SAT and greedy, cached by content, the same table
whatever the number of workers or the backend, and the smallest size that meets a target."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import contended_workload, write_scenario
from typer.testing import CliRunner

from gpu_preempt.cli import app
from gpu_preempt.planning.run_sweep import sweep
from gpu_preempt.planning.table import parse_target

RUN = CliRunner()


def small_sweep(folder: Path, **entries: Any) -> Path:
    """A sweep over a small replay (the first 40 jobs of cluster10 on 2 x 8 GPUs) with ``entries``."""
    write_scenario(folder, workload=contended_workload(40))
    document = {"scenario": "scenario.yaml", **entries}
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as file:
        return list(csv.DictReader(file))


def test_every_point_runs_for_both_solvers_with_a_table_and_plots(tmp_path: Path):
    path = small_sweep(tmp_path, grid={"config.preempt_min_runtime": ["0s", "10m"]}, seeds=[1, 2])
    result = RUN.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    found = rows(tmp_path / "out")
    assert len(found) == 2 * 2 * 2
    assert {(r["config.preempt_min_runtime"], r["simulation.seed"], r["simulation.solver"]) for r in found} == {
        (m, s, v) for m in ("0s", "10m") for s in ("1", "2") for v in ("cpsat", "greedy")
    }
    assert {"wait.p95", "preemptions", "lost_gpu_h", "utilisation", "proved_optimal_share"} <= set(found[0])
    assert all(int(r["unfinished"]) == 0 and float(r["utilisation"]) > 0 for r in found)
    assert (tmp_path / "out" / "sweep-config.preempt_min_runtime.png").stat().st_size > 10_000
    assert "8 run(s): 8 replayed, 0 from the cache" in result.stdout


def test_a_second_identical_sweep_replays_nothing(tmp_path: Path):
    path = small_sweep(tmp_path, grid={"workload.time_scale": [50, 100]})
    first = sweep(path, tmp_path / "one", cache=tmp_path / "cache")
    second = sweep(path, tmp_path / "two", cache=tmp_path / "cache")
    assert (first.replayed, second.replayed) == (4, 0)
    assert (tmp_path / "one" / "results.csv").read_bytes() == (tmp_path / "two" / "results.csv").read_bytes()
    changed = small_sweep(tmp_path, grid={"workload.time_scale": [50, 200]})
    assert sweep(changed, tmp_path / "three", cache=tmp_path / "cache").replayed == 2  # only the new point


def test_one_worker_and_two_give_the_same_table(tmp_path: Path):
    path = small_sweep(tmp_path, grid={"simulation.grace_period": ["0s", "60s"]})
    sweep(path, tmp_path / "one", use_cache=False, workers=1)
    sweep(path, tmp_path / "two", use_cache=False, workers=2)
    assert (tmp_path / "one" / "results.csv").read_bytes() == (tmp_path / "two" / "results.csv").read_bytes()


@pytest.mark.slow  # Ray's start-up is most of it: CI's long run checks it
def test_ray_gives_the_table_local_processes_give(tmp_path: Path):
    pytest.importorskip("ray")  # in the dev extra, so CI runs it
    path = small_sweep(tmp_path, grid={"simulation.grace_period": ["0s", "60s"]})
    sweep(path, tmp_path / "local", use_cache=False, workers=2)
    sweep(path, tmp_path / "ray", use_cache=False, backend="ray")
    assert (tmp_path / "local" / "results.csv").read_bytes() == (tmp_path / "ray" / "results.csv").read_bytes()


def test_target_finds_the_smallest_size_that_meets_it(tmp_path: Path):
    """Bisection agrees with trying every size in the range."""
    path = small_sweep(tmp_path, grid={"cluster.nodes.0.count": [1, 6]}, solvers=["cpsat"])
    target = "wait.p95 <= 30m"
    found = sweep(path, tmp_path / "out", cache=tmp_path / "cache", target=target)
    assert found.searches is not None and len(found.searches) == 1
    every = small_sweep(tmp_path, grid={"cluster.nodes.0.count": list(range(1, 7))}, solvers=["cpsat"])
    all_sizes = sweep(every, tmp_path / "all", cache=tmp_path / "cache")
    meets = [r["cluster.nodes.0.count"] for r in all_sizes.rows if parse_target(target).met(_summary(all_sizes, r))]
    assert meets and 1 not in meets  # the range holds a real answer
    assert found.searches[0].smallest == min(meets)
    assert len(found.searches[0].probes) < 6
    with (tmp_path / "out" / "target.csv").open() as file:
        (row,) = csv.DictReader(file)
    assert row["probes"] == " ".join(map(str, found.searches[0].probes))
    if 1 not in found.searches[0].probes:  # listed, not probed: the file says why
        assert row["listed, not run"].startswith("1: below ")


def test_a_target_sweep_estimates_the_runs_left_as_it_searches(tmp_path: Path):
    """With a target the number of runs is not known at the start; before each step the sweep says at most how many
    there will be, never fewer than it then makes, and the bound only shrinks."""
    path = small_sweep(tmp_path, grid={"cluster.nodes.0.count": [1, 6]}, solvers=["cpsat"], seeds=[1, 2])
    told: list[int | None] = []
    found = sweep(path, None, use_cache=False, target="wait.p95 <= 30m", on_plan=told.append)
    assert told[0] is None and len(told) > 2
    bounds = [t for t in told[1:] if t is not None]
    assert bounds == sorted(bounds, reverse=True) and bounds[-1] == len(found.runs)
    assert bounds[0] == 2 * (1 + 3)  # two seeds: the largest size, then at most 3 halvings of 1..6


def _summary(result: Any, row: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = result.results[result.runs[row["run"]].key]
    return summary


@pytest.mark.parametrize(
    ("entries", "args", "message"),
    [
        ({"grid": {"cluster.nodes.3.count": [1, 2]}}, [], "cluster.nodes[3]: no such list item"),
        ({"grid": {"workload.time_scale": [-1]}}, [], "workload.time_scale"),
        ({"grid": {"simulation.seed": [1, 2]}}, [], 'grid["simulation.seed"]: set by seeds or solvers'),
        ({"gird": {}}, [], "gird: unknown field"),
        ({"grid": {"workload.time_scale": [50]}}, ["--target", "wait.p95 <= soon"], "--target"),
        ({"grid": {"workload.time_scale": [50]}}, ["--target", "wait.p95 <= 1h"], "size"),
    ],
)
def test_bad_sweeps_exit_2_naming_the_field(tmp_path: Path, entries: dict[str, Any], args: list[str], message: str):
    path = small_sweep(tmp_path, **entries)
    out = tmp_path / "out"
    result = RUN.invoke(app, ["sweep", str(path), "--out", str(out), "--no-cache", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_progress_says_what_is_left_and_ctrl_c_what_was_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beat_at_once: None
):
    path = small_sweep(tmp_path, grid={"workload.time_scale": [50, 100]}, solvers=["cpsat"])
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["sweep", str(path), "--out", str(out), "--cache", str(cache)]
    result = RUN.invoke(app, args)
    assert result.exit_code == 0, result.output
    beats = [line for line in result.stderr.splitlines() if line.startswith("sweep: ")]
    assert beats and all(" runs done, " in line and " elapsed, about " in line for line in beats)
    from gpu_preempt.planning import run_sweep

    def interrupted(*_: Any, **__: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_sweep, "replay_runs", interrupted)
    stopped = RUN.invoke(app, [*args, "--force"])
    assert stopped.exit_code == 130
    assert f"interrupted: nothing was written to {out} (an earlier output folder there is left as it was); the 0 " in (
        " ".join(stopped.stderr.split())
    )
    assert (out / "results.csv").exists()  # the earlier folder, left as it was


def test_from_python_a_sweep_needs_no_file_and_leaves_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    small_sweep(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    result = sweep({"scenario": "scenario.yaml", "grid": {"workload.time_scale": [50]}}, use_cache=False)
    assert [(r["workload.time_scale"], r["simulation.solver"]) for r in result.rows] == [(50, "cpsat"), (50, "greedy")]
    assert set(tmp_path.iterdir()) == before
