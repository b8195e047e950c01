"""Sweeps (docs/scenario-format.md, ``sweep``): the runs of a sweep file, each a replay, cached by the hash of its
inputs.

A run is the base scenario document with one point of the axes set in it
(:func:`set_path`); it is validated like any scenario before anything runs.
Its key is the SHA-256 of the document, the bytes of every file it reads (trace,
cluster snapshot) and the engine's source code, so an identical run is never
replayed twice (:class:`Cache`) and a changed trace or engine is. Runs are
replayed by a backend (:mod:`gpu_preempt.planning.backends`); results
come back keyed by run, so the table does not depend on which worker ran what.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpu_preempt.models import SnapshotError, read_document
from gpu_preempt.models.errors import FieldError, format_loc, kind_of
from gpu_preempt.models.scenario import Scenario, scenario_from_data
from gpu_preempt.models.sweep import Sweep

from .metrics import summary
from .simulator import Simulator
from .workload import load_workload

__all__ = [
    "Axes",
    "Cache",
    "Run",
    "SweepPlan",
    "code_hash",
    "default_cache",
    "inputs",
    "load_sweep",
    "replay_document",
    "run_key",
    "set_path",
]

Axes = tuple[tuple[str, Any], ...]
"""A run's point: (path, value) pairs in axis order."""


@dataclass(frozen=True)
class Run:
    """One replay of a sweep: its point, its scenario document and its content key."""

    axes: Axes
    document: dict[str, Any]
    key: str

    def value(self, path: str) -> Any:
        return dict(self.axes)[path]


@dataclass
class SweepPlan:
    """A validated sweep: the base scenario document, where relative paths start, and the axes."""

    sweep: Sweep
    base: dict[str, Any]
    base_dir: Path
    seeds: list[int]

    def points(self, sizes: Iterable[int] | None = None) -> list[Axes]:
        """Every point: points x grid x seeds x solvers (``sizes`` replaces the size axis's values)."""
        sweep = self.sweep
        grid = dict(sweep.grid)
        size = sweep.size_axis()
        if sizes is not None and size is not None:
            grid[size] = list(sizes)
        fixed = [tuple(p.items()) for p in sweep.points] or [()]
        crossed = [tuple(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
        return [
            (*f, *c, ("simulation.seed", seed), ("simulation.solver", solver))
            for f in fixed
            for c in crossed
            for seed in self.seeds
            for solver in sweep.solvers
        ]

    def run(self, axes: Axes) -> Run:
        """The run at ``axes``, validated (a :class:`SnapshotError` names the point and the field)."""
        document = copy.deepcopy(self.base)
        label = ", ".join(f"{p}={v}" for p, v in axes)
        for path, value in axes:
            try:
                set_path(document, path, value)
            except (KeyError, IndexError, TypeError) as error:
                raise SnapshotError.single(path, f"cannot be set ({error.args[0]}) in the run {label}") from None
        try:
            scenario = scenario_from_data(document)
        except SnapshotError as error:
            found = [FieldError(e.path, f"{e.message} (in the run {label})") for e in error.errors]
            raise SnapshotError(found) from None
        return Run(axes, document, run_key(document, inputs(scenario, self.base_dir)))


def load_sweep(source: Path | Mapping[str, Any]) -> SweepPlan:
    """The sweep file at ``source`` (or its document, its scenario path relative to the working folder) and its
    base scenario, validated; raises :class:`SnapshotError`."""
    raw = read_document(source) if isinstance(source, Path) else dict(source)
    folder = source.parent if isinstance(source, Path) else Path.cwd()
    if not isinstance(raw, dict):
        raise SnapshotError.single("", f"a sweep is a mapping with scenario, grid, ...; the file holds {kind_of(raw)}")
    try:
        sweep = Sweep.model_validate(raw)
    except ValidationError as error:
        raise SnapshotError.from_validation_error(error) from None
    base_path = folder / sweep.scenario
    base = read_document(base_path)
    scenario = scenario_from_data(base)
    load_workload(scenario, base, base_path.parent)  # the base trace is read once here: its errors come first
    seeds = sweep.seeds or [scenario.simulation.seed]
    return SweepPlan(sweep, base, base_path.parent, seeds)


def set_path(document: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at the dotted ``path`` of ``document``; missing mappings on the way are created.

    >>> doc = {"cluster": {"nodes": [{"count": 2}]}}
    >>> set_path(doc, "cluster.nodes.0.count", 4); set_path(doc, "config.preempt_min_runtime", "10m")
    >>> doc
    {'cluster': {'nodes': [{'count': 4}]}, 'config': {'preempt_min_runtime': '10m'}}
    """
    parts = path.split(".")
    here: Any = document
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = format_loc(tuple(int(p) if p.isdigit() else p for p in parts[: i + 1]))
        if isinstance(here, list):
            if not part.isdigit() or int(part) >= len(here):
                raise IndexError(f"{where}: no such list item")
            if last:
                here[int(part)] = value
            else:
                here = here[int(part)]
        elif isinstance(here, dict):
            if last:
                here[part] = value
            else:
                here = here.setdefault(part, {})
        else:
            raise TypeError(f"{where}: the value above it is not a mapping or a list")


def inputs(scenario: Scenario, base_dir: Path) -> list[Path]:
    """The files a run reads besides its document."""
    found = [base_dir / scenario.workload.trace.path]
    if scenario.cluster.snapshot is not None:
        found.append(base_dir / scenario.cluster.snapshot)
    if scenario.cluster.machines is not None:
        found.append(base_dir / scenario.cluster.machines.path)
    if scenario.queues_from is not None:
        found.append(base_dir / scenario.queues_from.path)
    if scenario.workload.durations is not None:
        found.append(base_dir / scenario.workload.durations.path)
    return found


def run_key(document: dict[str, Any], files: list[Path]) -> str:
    """The content hash of a run: its document, the bytes of its files, the engine's code."""
    digest = hashlib.sha256()
    digest.update(json.dumps(document, sort_keys=True, default=str).encode())
    for path in files:
        digest.update(_file_hash(path.resolve()).encode())
    digest.update(code_hash().encode())
    return digest.hexdigest()


@cache
def _file_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


@cache
def code_hash() -> str:
    """A hash of every Python source file of the package: a changed engine invalidates the cache."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(("models/", "solver/")) or "/" not in relative:
            digest.update(relative.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def replay_document(document: dict[str, Any], base_dir: str) -> dict[str, Any]:
    """Replay one run (in a worker); returns its summary without timings, or ``{"error": [...]}``."""
    try:
        scenario = scenario_from_data(document)
        workload = load_workload(scenario, document, Path(base_dir))
        simulator = Simulator(scenario, workload, event_lines=False)
        simulator.run()
    except SnapshotError as error:
        return {"error": [str(e) for e in error.errors]}
    except ValueError as error:  # a scheduled change naming something that does not exist
        return {"error": [f"events: {error}"]}
    figures = summary(simulator)
    figures["solver"].pop("time_ms", None)  # timings differ between machines; everything else is the seed's
    return figures


class Cache:
    """Summaries by run key, one JSON file each, written atomically (workers may share the folder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return found

    def put(self, key: str, figures: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{key}.", dir=self.folder)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(figures, file, sort_keys=True)
        os.replace(name, self.folder / f"{key}.json")


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/gpu-preempt/runs``, else ``~/.cache/gpu-preempt/runs``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpu-preempt" / "runs"
