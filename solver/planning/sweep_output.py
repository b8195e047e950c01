"""The output folder of a sweep: results.csv (one row per run: its axes, then every figure of
:mod:`~gpu_preempt.planning.table`), runs.jsonl (each run's key and whole summary), target.csv with
``--target``, and one comparison plot per axis that takes more than one value (figures against the axis, a line
per solver, the mean over seeds)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from .output import write_rows
from .size_search import SizeSearch
from .sweep import Run
from .table import FIGURES, Target, figures

__all__ = ["COUNTS", "PLOTTED", "SHARES", "axis_label", "figure_label", "result_rows", "target_rows", "write_sweep"]

PLOTTED = ("wait.p95", "preemptions", "lost_gpu_h", "utilisation")
"""Figures drawn against each axis (and the target's figure, when it is another)."""
SHARES = ("utilisation", "jain_index", "jobs_preempted_share", "proved_optimal_share")
"""Figures that are shares of a whole (0 to 1), drawn on that whole range."""
COUNTS = ("preemptions", "moves", "jobs_preempted_repeatedly", "unfinished")
"""Figures that count things, drawn with whole-number ticks."""


def figure_label(figure: str) -> str:
    """A figure's axis label: ``wait.p95`` -> ``wait p95 (hours)``.

    >>> figure_label("lost_gpu_h"), figure_label("utilisation")
    ('lost GPU-hours', 'utilisation (share of GPU-time)')
    """
    if figure.startswith(("wait.", "jct.")):
        return figure.replace(".", " ") + " (hours)"
    named = {"lost_gpu_h": "lost GPU-hours", "lost_to_moves_gpu_h": "GPU-hours lost to moves",
             "goodput_gpu_h": "goodput GPU-hours", "utilisation": "utilisation (share of GPU-time)"}  # fmt: skip
    return named.get(figure, figure.replace("_", " "))


def axis_label(path: str) -> str:
    """A sweep axis as a reader names it.

    >>> axis_label("cluster.nodes.0.count"), axis_label("config.reclaim_min_runtime")
    ('nodes', 'reclaim min-runtime')
    >>> axis_label("queues.1.deserved.gpu"), axis_label("workload.time_scale")
    ('queue 1 deserved GPUs', 'time scale')
    """
    parts = path.split(".")
    if parts[:2] == ["cluster", "nodes"] and len(parts) == 4:
        group = "" if parts[2] == "0" else f" (group {parts[2]})"
        return {"count": "nodes", "gpu": "GPUs per node"}.get(parts[3], parts[3].replace("_", " ")) + group
    if parts[0] == "queues" and len(parts) >= 3:
        what = " ".join(p.replace("_", " ") for p in parts[2:]).replace(" gpu", " GPUs")
        return f"queue {parts[1]} {what}"
    return parts[-1].replace("min_runtime", "min-runtime").replace("_", " ")


def _scale(figure: str) -> float:
    return 1 / 3600 if figure.startswith(("wait.", "jct.")) else 1.0


def result_rows(runs: list[Run], results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run: ``run``, the axes, every figure."""
    return [{"run": i, **dict(run.axes), **figures(results[run.key])} for i, run in enumerate(runs)]


def write_sweep(
    folder: Path,
    runs: list[Run],
    results: dict[str, dict[str, Any]],
    searches: list[SizeSearch] | None = None,
    target: Target | None = None,
    size: str | None = None,
    name: str = "",
    listed: list[int] | None = None,
) -> list[dict[str, Any]]:
    """Write the sweep's files into ``folder`` (``name``: the sweep's, in the plots' titles; ``listed``: the sizes
    the sweep file lists, each run or said why not in target.csv); returns the result rows."""
    rows = result_rows(runs, results)
    write_rows(rows, folder / "results.csv")
    with (folder / "runs.jsonl").open("w", encoding="utf-8") as file:
        for i, run in enumerate(runs):
            file.write(json.dumps({"run": i, "axes": dict(run.axes), "key": run.key, "summary": results[run.key]}))
            file.write("\n")
    if searches is not None and target is not None and size is not None:
        write_rows(target_rows(searches, target, size, listed or []), folder / "target.csv")
    for axis in _axes(runs):
        chosen = [s.smallest for s in searches or [] if s.met_at_largest] if axis == size else []
        _plot_axis(folder / f"{_file_name(axis)}.png", axis, rows, name, target, chosen)
    return rows


def target_rows(searches: list[SizeSearch], target: Target, size: str, listed: list[int]) -> list[dict[str, Any]]:
    """One row per setting of the other axes: the smallest size meeting ``target``, the sizes probed, and why each
    listed size that was not probed was not."""
    return [
        {
            **dict(s.setting),
            "target": str(target),
            f"smallest {size}": s.smallest if s.met_at_largest else None,
            target.figure: s.worst,
            "met": bool(s.met_at_largest),
            "probes": " ".join(str(p) for p in s.probes),
            "listed, not run": "; ".join(s.not_run(listed)),
        }
        for s in searches
    ]


def _axes(runs: list[Run]) -> list[str]:
    """Axes (not seed or solver) that take more than one value."""
    paths: list[str] = []
    for run in runs:
        paths += [p for p, _ in run.axes if p not in paths and p not in ("simulation.seed", "simulation.solver")]
    return [p for p in paths if len({repr(run.value(p)) for run in runs if p in dict(run.axes)}) > 1]


def _file_name(axis: str) -> str:
    return "sweep-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", axis)


def _plot_axis(
    path: Path, axis: str, rows: list[dict[str, Any]], name: str, target: Target | None, chosen: list[int | None]
) -> None:
    """Each plotted figure against ``axis``: a line per setting of the other axes, the mean over seeds with their
    range shaded when there are several, the target on its figure, and the ``chosen`` sizes (the smallest meeting
    it, per setting) on every panel; whole-number axes get whole-number ticks."""
    values: list[Any] = []
    for row in rows:
        if row[axis] not in values:
            values.append(row[axis])
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if numeric:
        values.sort()
    others = [k for k in rows[0] if k not in ("run", axis, "simulation.seed") and k not in FIGURES]
    lines: dict[tuple[Any, ...], dict[Any, list[dict[str, Any]]]] = {}
    for row in rows:
        lines.setdefault(tuple(row.get(k) for k in others), {}).setdefault(row[axis], []).append(row)
    seeds = len({row.get("simulation.seed") for row in rows})
    plotted = [*PLOTTED, *([target.figure] if target is not None and target.figure not in PLOTTED else [])]
    from matplotlib.figure import Figure  # imported when plots are drawn, not by every command
    from matplotlib.ticker import MaxNLocator

    from .plots import METADATA

    figure = Figure(figsize=(10, 3.6 * ((len(plotted) + 1) // 2) + 0.8))
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.08, top=0.9, hspace=0.45, wspace=0.25)
    over = f"the mean of {seeds} seeds, their range shaded" if seeds > 1 else "one seed"
    figure.suptitle(f"{name}: against {axis_label(axis)} ({over})")
    for i, column in enumerate(plotted):
        axes = figure.add_subplot((len(plotted) + 1) // 2, 2, i + 1)
        scale = _scale(column)
        for key, by_value in lines.items():
            xs, means, lows, highs = [], [], [], []
            for position, value in enumerate(values):
                found = [r[column] * scale for r in by_value.get(value, []) if r[column] is not None]
                if found:
                    xs.append(value if numeric else position)
                    means.append(float(np.mean(found)))
                    lows.append(min(found))
                    highs.append(max(found))
            label = ", ".join(f"{axis_label(k)} {v}" for k, v in zip(others, key, strict=True)) or "all runs"
            drawn = axes.plot(xs, means, marker="o", label=label)
            if seeds > 1:
                axes.fill_between(xs, lows, highs, color=drawn[0].get_color(), alpha=0.15, linewidth=0)
        if target is not None and column == target.figure:
            axes.axhline(target.value * _scale(column), color="red", linestyle="--", linewidth=1.2,
                         label=f"target: {target}")  # fmt: skip
        for k, size in enumerate(sorted({c for c in chosen if c is not None})):
            axes.axvline(size, color="green", linestyle=":", linewidth=1.4,
                         label=f"smallest meeting the target: {size}" if k == 0 else None)  # fmt: skip
        if not numeric:
            axes.set_xticks(range(len(values)), [str(v) for v in values])
        elif all(isinstance(v, int) for v in values):
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        if column in COUNTS:
            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel(axis_label(axis))
        axes.set_ylabel(figure_label(column))
        if column in SHARES:
            axes.set_ylim(0, 1.02)
        else:
            axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        if i == 0 or (target is not None and column == target.figure):
            axes.legend(fontsize="small")
    figure.savefig(path, dpi=100, metadata=METADATA)
