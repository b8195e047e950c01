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
from matplotlib.ticker import MaxNLocator

__all__ = ["FLOOR", "METADATA", "TIME_TICKS", "duration_text", "plot_all", "serve"]

METADATA = {"Software": None}
"""No version string in the files: same inputs, same bytes."""


def plot_all(data: dict[str, Any], folder: Path) -> None:
    """The four PNG files of a replay in ``folder``, from its ``data`` (waits and JCTs in hours, per queue too,
    samples, queues, the title: scenario and solver)."""
    title = data.get("title", "")
    _waits(data, folder / "wait_cdf.png", f"Wait from submission to first start: {title}")
    _cdf(
        {"all jobs": data["jcts"]},
        "job completion time (log scale)",
        folder / "jct_cdf.png",
        f"Job completion time: {title}",
        mark=95,
    )
    _allocation(data, folder / "allocation.png", f"GPUs allocated and fair share per queue: {title}")
    _utilisation(data, folder / "utilisation.png", f"Utilisation and preemptions: {title}")
    if "fill_up" in data:
        _fill_up(data["fill_up"], folder / "fill_up.png", f"Fill-up: {title}")


def serve() -> None:
    """The plotting child: read ``{"folder": ..., "data": ...}`` as JSON from stdin, draw, exit."""
    request = json.load(sys.stdin)
    plot_all(request["data"], Path(request["folder"]))


def _waits(data: dict[str, Any], path: Path, title: str) -> None:
    """The wait CDF of every job and of each queue's, each with its p95 marked."""
    series = {"all jobs": data["waits"], **data.get("queue_waits", {})}
    _cdf(series, "wait (log scale; up to 1 s drawn at 1 s)", path, title, mark=95)


FLOOR = 1.0
"""Seconds: the left edge of a time axis on a log scale; shorter times (a wait of 0) are drawn there."""
TIME_TICKS = ((1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (86400, "1 d"),
              (864000, "10 d"), (8640000, "100 d"), (86400000, "1000 d"))  # fmt: skip
"""Ticks of a time axis on a log scale, in seconds, with their labels."""


def duration_text(seconds: float) -> str:
    """A duration in the unit a reader expects.

    >>> duration_text(6), duration_text(754), duration_text(9000), duration_text(400000)
    ('6 s', '13 min', '2.5 h', '4.6 d')
    """
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _cdf(series: dict[str, list[float]], label: str, path: Path, title: str, mark: int | None = None) -> None:
    """One step CDF per series of hours (the first drawn thick) on a log time axis, each with its ``mark``
    percentile as a dot and in the legend."""
    figure, axes = _figure(8, 4.5, title)
    longest, shortest = FLOOR, np.inf
    for i, (name, values) in enumerate(series.items()):
        if not values:
            continue
        ordered = np.maximum(np.sort(values) * 3600, FLOOR)
        longest, shortest = max(longest, float(ordered[-1])), min(shortest, float(ordered[0]))
        color = "black" if i == 0 else f"C{(i - 1) % 10}"
        width = 2.2 if i == 0 else 1.2
        text = f"{name} ({len(values):,})"
        if mark is not None:
            at = float(np.percentile(np.sort(values), mark)) * 3600
            axes.plot([max(at, FLOOR)], [mark / 100], "o", color=color, markersize=5)
            text += f", p{mark} {duration_text(at)}"
        axes.step(ordered, np.arange(1, len(ordered) + 1) / len(ordered), where="post", color=color, lw=width,
                  label=text)  # fmt: skip
    if mark is not None:
        axes.axhline(mark / 100, color="grey", linestyle=":", linewidth=1)
    axes.set_xscale("log")
    right = longest * 2
    left = max((at for at, _ in TIME_TICKS if at <= shortest), default=FLOOR)  # from the tick below the shortest
    ticks = [(at, text) for at, text in TIME_TICKS if left <= at <= right]
    axes.set_xticks([at for at, _ in ticks], [text for _, text in ticks])
    axes.minorticks_off()
    axes.set_xlim(left, right)
    axes.set_xlabel(label)
    axes.set_ylabel("share of jobs")
    axes.set_ylim(0, 1.02)
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
    if data.get("arrivals_h"):  # the window of the offered load (summary.json, "arrivals")
        axes.axvspan(0, data["arrivals_h"], color="grey", alpha=0.12, linewidth=0, label="jobs arriving")
    axes.step(hours, [1 - r["free_gpus"] / total for r in rows], where="post", label="share of GPUs in use (left)")
    if any(r.get("fragmented_gpus") for r in rows):  # docs/snapshot-format.md, "GPU sharing"
        partly = [r.get("fragmented_gpus", 0) / total for r in rows]
        axes.step(hours, partly, where="post", color="C2", linestyle="--",
                  label="share of GPUs partly used by shares (left)")  # fmt: skip
    axes.set_xlabel("simulated time (hours)")
    axes.set_ylabel("share of GPUs")
    axes.set_ylim(0, 1.02)
    twin = axes.twinx()
    counts = [r["preemptions"] for r in rows]
    twin.step(hours, counts, where="post", color="C3", label="preemptions, cumulative (right)")
    twin.set_ylabel("preemptions (cumulative count)")
    twin.yaxis.set_major_locator(MaxNLocator(integer=True))
    twin.set_ylim(0, max(max(counts, default=0) * 1.05, 1))
    lines = [*axes.get_lines(), *axes.patches, *twin.get_lines()]
    axes.legend(lines, [str(line.get_label()) for line in lines], loc="upper left", bbox_to_anchor=(0, -0.16), ncol=2,
                fontsize="small", frameon=False)  # fmt: skip
    axes.grid(alpha=0.3)
    _save(figure, path)


def _fill_up(data: dict[str, Any], path: Path, title: str) -> None:
    """A fill-up: the share of GPUs allocated against the share requested, arrival by arrival (the diagonal: all of
    it allocated), and the GPUs left unallocated at the end by cause."""
    figure = Figure(figsize=(11, 4.5))
    figure.subplots_adjust(left=0.07, right=0.98, bottom=0.14, top=0.88, wspace=0.55)
    figure.suptitle(title, fontsize="medium")
    curve, causes = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    requested, allocated = data["requested"], data["allocated"]
    top = max([1.0, *requested])
    curve.plot([0, top], [0, top], color="grey", linestyle=":", linewidth=1, label="all of it allocated")
    curve.step(requested, allocated, where="post", color="C0", label="allocated")
    curve.set_xlabel("GPUs requested (share of capacity)")
    curve.set_ylabel("GPUs allocated (share of capacity)")
    curve.set_xlim(0, top)
    curve.set_ylim(0, 1.02)
    curve.grid(alpha=0.3)
    curve.legend(fontsize="small", loc="upper left")
    names = list(data["causes"])
    causes.barh(names, [data["causes"][n] for n in names], color="C1")
    causes.invert_yaxis()
    causes.set_xlabel("GPUs unallocated at the end")
    causes.grid(alpha=0.3, axis="x")
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
