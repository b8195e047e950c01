"""The figures a sweep compares (one column each), read from a run's summary, and targets on them.

Times are in seconds, GPU-time in GPU-hours. A target is ``<figure> <op> <value>``
with ``op`` one of ``<= < >= >`` and the value a number or a duration:

>>> parse_target("wait.p95 <= 1h")
Target(figure='wait.p95', op='<=', value=3600.0, text='wait.p95 <= 1h')
>>> parse_target("lost_gpu_h < 2.5").met({"gpu_hours": {"lost": 3.0}})
False
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any

from gpu_preempt.models import SnapshotError, parse_duration
from gpu_preempt.models.errors import shown

__all__ = ["FIGURES", "OPERATORS", "Target", "figure", "figures", "parse_target"]

FIGURES: dict[str, tuple[str, ...]] = {
    "wait.p50": ("overall", "wait", "p50"),
    "wait.p90": ("overall", "wait", "p90"),
    "wait.p95": ("overall", "wait", "p95"),
    "wait.p99": ("overall", "wait", "p99"),
    "jct.p50": ("overall", "jct", "p50"),
    "jct.p90": ("overall", "jct", "p90"),
    "jct.p95": ("overall", "jct", "p95"),
    "jct.p99": ("overall", "jct", "p99"),
    "slowdown.mean": ("overall", "bounded_slowdown", "mean"),
    "utilisation": ("utilisation",),
    "goodput_gpu_h": ("gpu_hours", "goodput"),
    "lost_gpu_h": ("gpu_hours", "lost"),
    "lost_to_moves_gpu_h": ("gpu_hours", "lost_to_moves"),
    "preemptions": ("preemptions", "total"),
    "preemptions_per_1000_gpu_h": ("preemptions", "per_1000_gpu_hours"),
    "jobs_preempted_share": ("preemptions", "jobs_preempted_share"),
    "jobs_preempted_repeatedly": ("preemptions", "jobs_preempted_repeatedly"),
    "max_preemptions_per_job": ("preemptions", "max_per_job"),
    "moves": ("preemptions", "moves"),
    "jain_index": ("fairness", "jain_index"),
    "fragmented_gpus": ("fragmentation", "mean_gpus"),
    "fair_share_deviation_gpus": ("fairness", "mean_deviation_gpus"),
    "proved_optimal_share": ("solver", "proved_optimal_share"),
    "decisions": ("solver", "decisions"),
    "unfinished": ("unfinished",),
    "offered_load": ("offered_load",),
    "gpus": ("gpus",),
}
"""Column name -> where the summary holds it."""

OPERATORS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}
_TARGET = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(<=|>=|<|>)\s*(\S+)\s*$")


def figure(summary: dict[str, Any], name: str) -> Any:
    """The figure ``name`` of a run's summary (``unfinished`` counts the unfinished jobs)."""
    value: Any = summary
    for part in FIGURES[name]:
        value = value.get(part) if isinstance(value, dict) else None
    return len(value) if isinstance(value, list) else value


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    return {name: figure(summary, name) for name in FIGURES}


@dataclass(frozen=True)
class Target:
    figure: str
    op: str
    value: float
    text: str = ""
    """As the user wrote it."""

    def met(self, summary: dict[str, Any]) -> bool:
        found = figure(summary, self.figure)
        return found is not None and bool(OPERATORS[self.op](found, self.value))

    def __str__(self) -> str:
        return self.text or f"{self.figure} {self.op} {self.value:g}"


def parse_target(text: str) -> Target:
    """``'wait.p95 <= 1h'`` as a :class:`Target`; raises :class:`SnapshotError` naming ``--target``."""
    match = _TARGET.match(text)
    if match is None:
        raise SnapshotError.single(
            "--target", f"expected '<figure> <op> <value>', e.g. 'wait.p95 <= 1h'; got {shown(text)}"
        )
    name, op, raw = match.groups()
    if name not in FIGURES:
        raise SnapshotError.single("--target", f"unknown figure {shown(name)}; one of: {', '.join(FIGURES)}")
    try:
        value = float(raw)
    except ValueError:
        try:
            value = parse_duration(raw)
        except ValueError as error:
            raise SnapshotError.single("--target", f"{shown(raw)} is not a number or a duration ({error})") from None
    return Target(name, op, value, f"{name} {op} {raw}")
