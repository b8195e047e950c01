"""Plots of a replay (PNG, matplotlib, no display needed): wait and JCT CDFs, allocation against fair share per
queue over time, utilisation and preemptions over time.

They are drawn from plain figures (:func:`gpu_preempt.planning.output.plot_data`), usually in a child
process (:func:`serve`) that imports matplotlib while the replay runs: this module imports nothing of the engine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

__all__ = ["METADATA", "plot_all", "serve"]

METADATA = {"Software": None}
"""No version string in the files: same inputs, same bytes."""


def plot_all(data: dict[str, Any], folder: Path) -> None:
    """The four PNG files of a replay in ``folder``, from its ``data`` (waits and JCTs in hours, per queue too,
    samples, queues, the title: scenario and solver)."""
    title = data.get("title", "")
    _waits(data, folder / "wait_cdf.png", f"Wait from submission to first start: {title}")
    _cdf(
        {"all jobs": data["jcts"]},
        "job completion time (hours)",
        folder / "jct_cdf.png",
        f"Job completion time: {title}",
    )
    _allocation(data, folder / "allocation.png", f"GPUs allocated and fair share per queue: {title}")
    _utilisation(data, folder / "utilisation.png", f"Utilisation and preemptions: {title}")


def serve() -> None:
    """The plotting child: read ``{"folder": ..., "data": ...}`` as JSON from stdin, draw, exit."""
    request = json.load(sys.stdin)
    plot_all(request["data"], Path(request["folder"]))


def _waits(data: dict[str, Any], path: Path, title: str) -> None:
    """The wait CDF of every job and of each queue's, each with its p95 marked."""
    series = {"all jobs": data["waits"], **data.get("queue_waits", {})}
    _cdf(series, "wait (hours)", path, title, mark=95)


def _cdf(series: dict[str, list[float]], label: str, path: Path, title: str, mark: int | None = None) -> None:
    """One step CDF per series (the first drawn thick), each with its ``mark`` percentile as a dot."""
    figure, axes = _figure(8, 4.5, title)
    for i, (name, values) in enumerate(series.items()):
        if not values:
            continue
        ordered = np.sort(values)
        color = "black" if i == 0 else f"C{(i - 1) % 10}"
        width = 2.2 if i == 0 else 1.2
        text = f"{name} ({len(values):,})"
        if mark is not None:
            at = float(np.percentile(ordered, mark))
            axes.plot([at], [mark / 100], "o", color=color, markersize=5)
            text += f", p{mark} " + (f"{at * 60:.0f} min" if at < 1 else f"{at:.1f} h")
        axes.step(ordered, np.arange(1, len(ordered) + 1) / len(ordered), where="post", color=color, lw=width,
                  label=text)  # fmt: skip
    if mark is not None:
        axes.axhline(mark / 100, color="grey", linestyle=":", linewidth=1)
    axes.set_xlabel(label)
    axes.set_ylabel("share of jobs")
    axes.set_ylim(0, 1.02)
    axes.set_xlim(left=0)
    axes.grid(alpha=0.3)
    _legend_right(axes)
    _save(figure, path)


def _allocation(data: dict[str, Any], path: Path, title: str) -> None:
    rows = data["samples"]
    queues = data["queues"]
    figure, axes = _figure(8, 4.5, title)
    hours = [r["time"] / 3600 for r in rows]
    for i, queue in enumerate(queues):
        color = f"C{i % 10}"
        allocated = [r.get(f"{queue}.allocated", 0) for r in rows]
        axes.fill_between(hours, allocated, step="post", color=color, alpha=0.2, linewidth=0)
        axes.step(hours, allocated, where="post", color=color, linewidth=1.0, label=f"{queue} allocated")
        # dashed, darker and on top: often equal to the allocation (every demand met), still seen there
        dark = tuple(0.55 * c for c in to_rgb(color))
        fair = [r.get(f"{queue}.fair_share", 0) for r in rows]
        axes.step(hours, fair, where="post", color=dark, linestyle=(0, (3, 3)), linewidth=1.6, zorder=4,
                  label=f"{queue} fair share")  # fmt: skip
    axes.set_xlabel("simulated time (hours)")
    axes.set_ylabel("GPUs")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    _legend_right(axes)
    _save(figure, path)


def _utilisation(data: dict[str, Any], path: Path, title: str) -> None:
    rows = data["samples"]
    total = data["gpus"] or 1
    hours = [r["time"] / 3600 for r in rows]
    figure, axes = _figure(8, 4.5, title, right=0.9)
    axes.step(hours, [1 - r["free_gpus"] / total for r in rows], where="post", label="utilisation (GPUs in use)")
    if any(r.get("fragmented_gpus") for r in rows):  # docs/snapshot-format.md, "GPU sharing"
        partly = [r.get("fragmented_gpus", 0) / total for r in rows]
        axes.step(hours, partly, where="post", color="C2", linestyle="--", label="GPUs partly used by shares")
    axes.set_xlabel("simulated time (hours)")
    axes.set_ylabel("utilisation (share of GPUs)")
    axes.set_ylim(0, 1.02)
    twin = axes.twinx()
    twin.step(hours, [r["preemptions"] for r in rows], where="post", color="C3", label="preemptions (cumulative)")
    twin.set_ylabel("preemptions (cumulative)")
    twin.set_ylim(bottom=0)
    lines = axes.get_lines() + twin.get_lines()
    axes.legend(lines, [str(line.get_label()) for line in lines], loc="upper left", bbox_to_anchor=(0, -0.16), ncol=2,
                fontsize="small", frameon=False)  # fmt: skip
    axes.grid(alpha=0.3)
    _save(figure, path)


def _legend_right(axes: Axes) -> None:
    """The legend beside the plot, off the data."""
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)


def _figure(width: float, height: float, title: str, right: float = 0.7) -> tuple[Figure, Axes]:
    """A figure outside pyplot (no global state, nothing to close) with fixed margins (no layout pass): room on
    the right for a legend, unless ``right`` says otherwise."""
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=0.09, right=right, bottom=0.14 if right < 0.8 else 0.24, top=0.9)
    figure.suptitle(title, fontsize="medium")
    return figure, figure.add_subplot()


def _save(figure: Figure, path: Path) -> None:
    figure.savefig(path, dpi=100, metadata=METADATA)
