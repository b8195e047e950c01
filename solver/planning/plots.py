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
from matplotlib.figure import Figure

METADATA = {"Software": None}
"""No version string in the files: same inputs, same bytes."""


def plot_all(data: dict[str, Any], folder: Path) -> None:
    """The four PNG files of a replay in ``folder``, from its ``data`` (waits and JCTs in hours, samples, queues)."""
    _cdf(data["waits"], "wait (hours)", folder / "wait_cdf.png")
    _cdf(data["jcts"], "job completion time (hours)", folder / "jct_cdf.png")
    _allocation(data, folder / "allocation.png")
    _utilisation(data, folder / "utilisation.png")


def serve() -> None:
    """The plotting child: read ``{"folder": ..., "data": ...}`` as JSON from stdin, draw, exit."""
    request = json.load(sys.stdin)
    plot_all(request["data"], Path(request["folder"]))


def _cdf(values: list[float], label: str, path: Path) -> None:
    figure, axes = _figure(6, 4)
    if values:
        ordered = np.sort(values)
        axes.step(ordered, np.arange(1, len(ordered) + 1) / len(ordered), where="post")
    axes.set_xlabel(label)
    axes.set_ylabel("share of jobs")
    axes.grid(alpha=0.3)
    _save(figure, path)


def _allocation(data: dict[str, Any], path: Path) -> None:
    rows = data["samples"]
    queues = data["queues"]
    figure, axes = _figure(8, 4)
    hours = [r["time"] / 3600 for r in rows]
    for i, queue in enumerate(queues):
        color = f"C{i % 10}"
        allocated = [r.get(f"{queue}.allocated", 0) for r in rows]
        axes.plot(hours, allocated, color=color, linewidth=3, alpha=0.45, label=f"{queue} allocated")
        # thin and on top: the fair share often equals the allocation (every demand met)
        fair = [r.get(f"{queue}.fair_share", 0) for r in rows]
        axes.plot(hours, fair, color=color, linestyle="--", linewidth=1.2, zorder=3)
    axes.set_xlabel("simulated time (hours)")
    axes.set_ylabel("GPUs (dashed: fair share)")
    axes.legend(fontsize="small", ncol=2)
    axes.grid(alpha=0.3)
    _save(figure, path)


def _utilisation(data: dict[str, Any], path: Path) -> None:
    rows = data["samples"]
    total = data["gpus"] or 1
    hours = [r["time"] / 3600 for r in rows]
    figure, axes = _figure(8, 4)
    axes.plot(hours, [1 - r["free_gpus"] / total for r in rows], label="GPUs in use (share)")
    axes.set_xlabel("simulated time (hours)")
    axes.set_ylabel("share of GPUs")
    axes.set_ylim(0, 1.05)
    twin = axes.twinx()
    twin.plot(hours, [r["preemptions"] for r in rows], color="C3", label="preemptions (cumulative)")
    twin.set_ylabel("preemptions")
    figure.legend(loc="upper right", bbox_to_anchor=(0.88, 0.94), fontsize="small")
    axes.grid(alpha=0.3)
    _save(figure, path)


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure outside pyplot (no global state, nothing to close) with fixed margins (no layout pass)."""
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=0.1, right=0.9, bottom=0.13, top=0.95)
    return figure, figure.add_subplot()


def _save(figure: Figure, path: Path) -> None:
    figure.savefig(path, dpi=100, metadata=METADATA)
