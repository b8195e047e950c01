"""One sweep from its file to its output folder: ``gpu-preempt sweep`` without the printing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_preempt.models import SnapshotError

from .backends import Backend, Done, replay_runs
from .output import check_out, staged
from .size_search import SizeSearch, smallest_sizes
from .sweep import Cache, Run, SweepPlan, default_cache, load_sweep
from .sweep_output import write_sweep
from .table import Target, parse_target


@dataclass
class SweepResult:
    plan: SweepPlan
    runs: list[Run]
    results: dict[str, dict[str, Any]]
    rows: list[dict[str, Any]]
    replayed: int
    """Runs replayed by this call (the others came from the cache)."""
    target: Target | None = None
    searches: list[SizeSearch] | None = None


def sweep(
    path: Path,
    out: Path,
    *,
    workers: int = 1,
    backend: Backend = "local",
    target: str | None = None,
    cache: Path | None = None,
    use_cache: bool = True,
    on_done: Done | None = None,
    on_plan: Callable[[int | None], None] | None = None,
) -> SweepResult:
    """Run the sweep in ``path`` and write its folder ``out``; raises :class:`SnapshotError` on bad input.

    ``on_plan`` learns how many runs there will be (``None`` with a target: the search decides), ``on_done``
    hears of each run as it ends.
    """
    check_out(out, "results.csv", "sweep")
    if workers < 1:
        raise SnapshotError.single("--workers", "must be at least 1")
    plan = load_sweep(path)
    wanted = parse_target(target) if target is not None else None
    store = Cache(cache or default_cache()) if use_cache else None
    results: dict[str, dict[str, Any]] = {}
    replayed = 0

    def done(run: Run, cached: bool) -> None:
        nonlocal replayed
        replayed += not cached
        if on_done is not None:
            on_done(run, cached)

    def replay(runs: list[Run]) -> dict[str, dict[str, Any]]:
        found = replay_runs(runs, plan.base_dir, cache=store, backend=backend, workers=workers, on_done=done)
        results.update(found)
        return found

    searches = None
    size = plan.sweep.size_axis()
    if wanted is not None:
        if size is None:
            raise SnapshotError.single("size", "--target needs a size axis: set size: to a grid path of whole numbers")
        values = plan.sweep.grid[size]
        for axes in plan.points(sizes=[min(values), max(values)]):
            plan.run(axes)  # every setting is valid at both ends before anything runs
        if on_plan is not None:
            on_plan(None)
        searches, runs = smallest_sizes(plan, wanted, replay)
    else:
        runs = [plan.run(axes) for axes in plan.points()]
        if on_plan is not None:
            on_plan(len({run.key for run in runs}))
        replay(runs)
    with staged(out, "results.csv", "sweep") as folder:
        rows = write_sweep(folder, runs, results, searches, wanted, size)
    return SweepResult(plan, runs, results, rows, replayed, wanted, searches)
