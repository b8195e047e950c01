"""The output folder of a replay (docs/scenario-format.md): summary.json, jobs.parquet, events.jsonl, timeseries.csv,
plots.

The files are written into the staging folder of :class:`~.out_folder.OutFolder`, renamed into place at the end,
so that a failed run leaves nothing half-written. Everything but ``summary.json``'s ``solver.time_ms`` is a function
of the scenario and seed.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gpu_preempt.models import MILLI

from .metrics import fill_up_summary
from .simulator import Simulator

__all__ = ["Plotter", "jobs_table", "plot_data", "write_outputs", "write_rows"]


class Plotter:
    """Draws a replay's plots in a child process, started before the replay so that it imports matplotlib (about
    half a second) on another core meanwhile; the child then draws while this process writes the other files.

    Use it as a context manager: leaving the block kills a child that has not finished (the replay failed). If no
    child can be started, or it fails, the plots are drawn in this process.
    """

    def __init__(self) -> None:
        command = [sys.executable, "-c", "from gpu_preempt.planning.plots import serve; serve()"]
        self.child: subprocess.Popen[bytes] | None
        self.request: tuple[dict[str, Any], Path] | None = None
        try:
            self.child = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        except OSError:
            self.child = None

    def __enter__(self) -> Plotter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self.child is None:
            return
        if self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        for pipe in (self.child.stdin, self.child.stderr):
            if pipe is not None:
                pipe.close()

    def start(self, data: dict[str, Any], folder: Path) -> None:
        """Begin drawing ``data`` (:func:`plot_data`) into ``folder``."""
        self.request = (data, folder)
        if self.child is None:
            _draw_here(data, folder)
            return
        assert self.child.stdin is not None
        try:
            with self.child.stdin:
                self.child.stdin.write(json.dumps({"folder": str(folder), "data": data}).encode())
        except OSError:  # the child is gone (it could not import matplotlib, say): :meth:`finish` draws here
            pass

    def finish(self) -> None:
        """Wait until the plots are written. If the child failed, draw them here (an error then is ours to show)."""
        if self.child is None:
            return
        assert self.child.stderr is not None
        self.child.stderr.read()
        if self.child.wait() != 0 and self.request is not None:
            _draw_here(*self.request)


def _draw_here(data: dict[str, Any], folder: Path) -> None:
    from .plots import plot_all  # matplotlib: imported when plots are drawn, not by every command

    plot_all(data, folder)


def plot_data(sim: Simulator, title: str = "") -> dict[str, Any]:
    """What the plots show, as plain JSON-able figures: waits (all, and per queue) and JCTs (hours), the samples,
    leaf queues, GPUs, the arrival window (hours), and ``title`` (what every plot's title names: the scenario and
    the solver)."""
    traced = [j for j in sim.jobs.values() if not j.spec.starting]
    per_queue: dict[str, list[float]] = {queue: [] for queue in sim.leaves()}
    for j in traced:
        if j.first_start is not None and j.spec.queue in per_queue:
            per_queue[j.spec.queue].append((j.first_start - j.spec.submit) / 3600)
    return {
        "title": title,
        "queue_waits": per_queue,
        "waits": [(j.first_start - j.spec.submit) / 3600 for j in traced if j.first_start is not None],
        "jcts": [(j.finish - j.spec.submit) / 3600 for j in traced if j.finish is not None],
        "samples": sim.samples,
        "queues": sim.leaves(),
        "gpus": sum(sim.capacity.values()) // MILLI,
        "arrivals_h": sim.workload.span / 3600,
        **({"fill_up": _fill_up_curve(sim)} if sim.fill_log is not None else {}),
    }


def _fill_up_curve(sim: Simulator) -> dict[str, Any]:
    """A fill-up's curve: per arrival, the shares of capacity requested and allocated; and the unallocated GPUs by
    cause."""
    assert sim.fill_log is not None
    rows = sim.fill_log.rows(sim.workload.jobs)
    return {
        "requested": [r["requested_share"] for r in rows],
        "allocated": [r["allocated_share"] for r in rows],
        "causes": fill_up_summary(sim)["unallocated_gpus"],
    }


def write_outputs(
    sim: Simulator, staging: Path, figures: dict[str, Any], plotter: Plotter | None = None, title: str = ""
) -> None:
    """Write every output of ``sim`` into ``staging`` (the staging folder of :class:`~.out_folder.OutFolder`), with
    its summary ``figures``.

    The plots are drawn by ``plotter`` (started before the replay), or here. With ``--dump-at``, the snapshot of the
    first cycle at or after that time is ``dump.json`` and that cycle's decisions ``dump-decisions.json``.
    """
    if plotter is None:
        _draw_here(plot_data(sim, title), staging)
    else:
        plotter.start(plot_data(sim, title), staging)
    (staging / "summary.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    pq.write_table(jobs_table(sim), staging / "jobs.parquet")
    with (staging / "events.jsonl").open("w", encoding="utf-8") as file:
        file.writelines(sim.log.lines())
    write_rows(sim.samples, staging / "timeseries.csv")
    if sim.fill_log is not None:
        write_rows(sim.fill_log.rows(sim.workload.jobs), staging / "fill_up.csv")
    if plotter is not None:
        plotter.finish()
    if sim.dump is not None:
        (staging / "dump.json").write_text(json.dumps(sim.dump, indent=2) + "\n", encoding="utf-8")
        decisions = {"time": sim.dump["now"], "decisions": sim.dump_decisions}
        (staging / "dump-decisions.json").write_text(json.dumps(decisions, indent=2) + "\n", encoding="utf-8")


def jobs_table(sim: Simulator) -> pa.Table:
    """One row per job: what it was, when it waited and ran, what it lost."""
    jobs = list(sim.jobs.values())

    def column(values: list[Any], kind: pa.DataType) -> pa.Array:
        return pa.array(values, type=kind)

    def since_submit(values: list[float | None], submits: list[float]) -> list[float | None]:
        return [None if v is None else v - s for v, s in zip(values, submits, strict=True)]

    submits = [j.spec.submit for j in jobs]
    starts = [j.first_start for j in jobs]
    finishes = [j.finish for j in jobs]
    return pa.table(
        {
            "job": column([j.spec.name for j in jobs], pa.string()),
            "queue": column([j.spec.queue for j in jobs], pa.string()),
            "priority_class": column([j.spec.priority_class for j in jobs], pa.string()),
            "gpu_model": column([j.spec.gpu_model for j in jobs], pa.string()),
            "gpus": column([j.spec.gpus for j in jobs], pa.float64()),
            "tasks": column([j.spec.tasks for j in jobs], pa.int32()),
            "min_available": column([j.spec.min_available for j in jobs], pa.int32()),
            "preemptible": column([j.spec.preemptible for j in jobs], pa.bool_()),
            "starting": column([j.spec.starting for j in jobs], pa.bool_()),
            "submit_s": column(submits, pa.float64()),
            "duration_s": column([j.spec.duration for j in jobs], pa.float64()),
            "first_start_s": column(starts, pa.float64()),
            "finish_s": column(finishes, pa.float64()),
            "wait_s": column(since_submit(starts, submits), pa.float64()),
            "jct_s": column(since_submit(finishes, submits), pa.float64()),
            "evictions": column([j.evictions for j in jobs], pa.int32()),
            "moves": column([j.moves for j in jobs], pa.int32()),
            "lost_gpu_h": column([j.lost / 3600.0 for j in jobs], pa.float64()),
            "lost_to_moves_gpu_h": column([j.lost_to_moves / 3600.0 for j in jobs], pa.float64()),
            "held_gpu_h": column([j.held / 3600.0 for j in jobs], pa.float64()),
        }
    )


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """``rows`` as CSV, the columns in the order they first appear."""
    names: list[str] = []
    for row in rows:
        names += [k for k in row if k not in names]
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
