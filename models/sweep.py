"""Sweeps (docs/scenario-format.md, ``sweep``): one base scenario replayed at every point of some axes.

An axis is a dotted path into the scenario document (list items by index) and
the values it takes: ``cluster.nodes.0.count: [16, 24, 32]``. ``grid`` axes are
crossed with each other; ``points`` are whole settings taken as they are (each a
mapping of paths to values); seeds and solvers are axes of their own. Every run
is the base scenario with its point applied, validated like any scenario.

Examples
--------
>>> s = Sweep.model_validate({
...     "scenario": "itp-cluster10.yaml",
...     "grid": {"config.preempt_min_runtime": ["0s", "10m"], "cluster.nodes.0.count": [16, 32]},
... })
>>> s.solvers, s.seeds
(['cpsat', 'greedy'], [])
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from .config import SolverName
from .fields import FreeMap, SnapshotModel, bounded_depth, raise_errors

__all__ = ["PATH", "RESERVED", "SOLVERS", "Sweep"]

PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.([A-Za-z_][A-Za-z0-9_-]*|[0-9]+))*$")
"""A dotted path into a scenario document: names, and list indexes as numbers."""

SOLVERS: tuple[SolverName, ...] = ("cpsat", "greedy")

RESERVED = ("simulation.seed", "simulation.solver")
"""Paths set by ``seeds`` and ``solvers``, not by ``grid`` or ``points``."""


class Sweep(SnapshotModel):
    """Runs of a base scenario over axes (docs/scenario-format.md, ``sweep``)."""

    scenario: str = Field(description="the base scenario file, relative to the sweep file")
    grid: Annotated[dict[str, list[Any]], BeforeValidator(bounded_depth)] = Field(
        default_factory=dict, description="path -> values; every combination of the axes is run"
    )
    points: list[FreeMap] = Field(
        default_factory=list, description="settings taken as they are (path -> value), each crossed with the grid"
    )
    seeds: list[int] = Field(default_factory=list, description="simulation.seed values; default: the scenario's")
    solvers: list[SolverName] = Field(
        default_factory=lambda: list(SOLVERS), min_length=1, description="CP-SAT and greedy side by side"
    )
    size: str | None = Field(None, description="the cluster-size axis --target searches (a grid path)")
    description: str | None = None

    @model_validator(mode="after")
    def _check_axes(self) -> Sweep:
        errors: list[tuple[tuple[str | int, ...], str]] = []
        for path, values in self.grid.items():
            if not PATH.match(path):
                errors.append((("grid", path), "not a dotted path (names, and list indexes as numbers)"))
            elif path in RESERVED:
                errors.append((("grid", path), "set by seeds or solvers"))
            if not values:
                errors.append((("grid", path), "an axis needs at least one value"))
            elif len({repr(v) for v in values}) < len(values):
                errors.append((("grid", path), "a value is listed twice"))
        for i, point in enumerate(self.points):
            for path in point:
                if not PATH.match(path) or path in RESERVED:
                    errors.append((("points", i, path), "not a dotted path, or one set by seeds or solvers"))
                elif path in self.grid:
                    errors.append((("points", i, path), "also a grid axis"))
        if len(set(self.seeds)) < len(self.seeds) or any(s < 0 for s in self.seeds):
            errors.append((("seeds",), "seeds must be distinct and >= 0"))
        if len(set(self.solvers)) < len(self.solvers):
            errors.append((("solvers",), "a solver is listed twice"))
        if self.size is not None and self.size not in self.grid:
            errors.append((("size",), "must be one of the grid's paths"))
        if self.size is not None and not all(_whole(v) for v in self.grid.get(self.size, [])):
            errors.append((("grid", self.size), "a size axis takes whole numbers"))
        raise_errors("Sweep", errors)
        return self

    def size_axis(self) -> str | None:
        """The size axis: ``size``, else the only grid path ending in ``count``."""
        if self.size is not None:
            return self.size
        counts = [p for p, values in self.grid.items() if p.endswith(".count") and all(_whole(v) for v in values)]
        return counts[0] if len(counts) == 1 else None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
