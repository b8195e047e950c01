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

PLOTTED = (("wait.p95", "wait p95 (hours)", 1 / 3600), ("preemptions", "preemptions", 1.0),
           ("lost_gpu_h", "lost GPU-hours", 1.0), ("utilisation", "utilisation", 1.0))  # fmt: skip
"""Figures drawn against each axis: column, label, scale."""


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
) -> list[dict[str, Any]]:
    """Write the sweep's files into ``folder``; returns the result rows."""
    rows = result_rows(runs, results)
    write_rows(rows, folder / "results.csv")
    with (folder / "runs.jsonl").open("w", encoding="utf-8") as file:
        for i, run in enumerate(runs):
            file.write(json.dumps({"run": i, "axes": dict(run.axes), "key": run.key, "summary": results[run.key]}))
            file.write("\n")
    if searches is not None and target is not None and size is not None:
        write_rows(target_rows(searches, target, size), folder / "target.csv")
    for axis in _axes(runs):
        _plot_axis(folder / f"{_file_name(axis)}.png", axis, rows)
    return rows


def target_rows(searches: list[SizeSearch], target: Target, size: str) -> list[dict[str, Any]]:
    return [
        {
            **dict(s.setting),
            "target": str(target),
            f"smallest {size}": s.smallest if s.met_at_largest else None,
            target.figure: s.worst,
            "met": bool(s.met_at_largest),
            "probes": " ".join(str(p) for p in s.probes),
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


def _plot_axis(path: Path, axis: str, rows: list[dict[str, Any]]) -> None:
    """Each plotted figure against ``axis``: a line per setting of the other axes, averaged over seeds."""
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
    from matplotlib.figure import Figure  # imported when plots are drawn, not by every command

    from .plots import METADATA

    figure = Figure(figsize=(10, 7))
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.08, top=0.93, hspace=0.35, wspace=0.25)
    figure.suptitle(f"against {axis} (mean over seeds)")
    for i, (column, label, scale) in enumerate(PLOTTED):
        axes = figure.add_subplot(2, 2, i + 1)
        for key, by_value in lines.items():
            xs, ys = [], []
            for position, value in enumerate(values):
                found = [r[column] for r in by_value.get(value, []) if r[column] is not None]
                if found:
                    xs.append(value if numeric else position)
                    ys.append(float(np.mean(found)) * scale)
            name = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(others, key, strict=True)) or "all"
            axes.plot(xs, ys, marker="o", label=name)
        if not numeric:
            axes.set_xticks(range(len(values)), [str(v) for v in values])
        axes.set_xlabel(axis)
        axes.set_ylabel(label)
        axes.grid(alpha=0.3)
        if i == 0:
            axes.legend(fontsize="small")
    figure.savefig(path, dpi=100, metadata=METADATA)
