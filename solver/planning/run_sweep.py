"""One sweep from its file to its output folder: ``gpu-preempt sweep`` without the printing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_preempt.models import SnapshotError

from .backends import Backend, Done, replay_runs
from .out_folder import OutFolder
from .report import scenario_text, sweep_report
from .size_search import SizeSearch, smallest_sizes
from .sweep import Cache, Run, SweepPlan, default_cache, load_sweep
from .sweep_output import result_rows, target_rows, write_sweep
from .table import Target, parse_target

__all__ = ["SweepResult", "sweep"]


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
    sweep: Path | str | Mapping[str, Any],
    out: Path | str | None = None,
    *,
    workers: int = 1,
    backend: Backend = "local",
    target: str | None = None,
    cache: Path | None = None,
    use_cache: bool = True,
    on_done: Done | None = None,
    on_plan: Callable[[int | None], None] | None = None,
    force: bool = False,
) -> SweepResult:
    """Replay a scenario at every point of the axes of ``sweep`` (a sweep file, or its document: its scenario path
    relative to the working folder; docs/scenario-format.md, ``sweep``), ``workers`` at a time, runs cached in
    ``cache`` (default ``~/.cache/gpu-preempt/runs``; ``use_cache=False``: none). With ``target``
    (``"wait.p95 <= 1h"``), find the smallest size on the size axis that meets it. Raises :class:`SnapshotError`
    on bad input.

    With ``out``, write its folder there (results.csv, runs.jsonl, plots); ``out`` is checked first: a folder
    holding files gpu-preempt did not write is refused unless ``force``. ``on_plan`` learns how many runs there
    will be (with a target: ``None``, then at most how many, before each step of the search), ``on_done`` hears of
    each run as it ends.

    Two 8-GPU jobs ten minutes apart, on one node or two:

    >>> import json, tempfile, shutil, gpu_preempt
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "trace.csv").write_text("job_id,submission_time,duration,num_gpu\\na,0,3600,8\\nb,600,3600,8\\n")
    >>> _ = (folder / "scenario.json").write_text(json.dumps({
    ...     "cluster": {"nodes": [{"count": 1, "gpu": 8, "cpu": 64, "memory": "512Gi"}]},
    ...     "queues": [{"name": "team", "deserved": {"gpu": 8}}],
    ...     "workload": {"trace": {"format": "itp", "path": "trace.csv"}}}))
    >>> result = gpu_preempt.sweep({"scenario": str(folder / "scenario.json"), "solvers": ["cpsat"],
    ...                             "grid": {"cluster.nodes.0.count": [1, 2]}}, use_cache=False)
    >>> [(row["cluster.nodes.0.count"], row["wait.p95"]) for row in result.rows]
    [(1, 2850.0), (2, 0.0)]
    >>> shutil.rmtree(folder)
    """
    source = Path(sweep) if isinstance(sweep, str) else sweep
    name = source.stem if isinstance(source, Path) else "sweep"
    if out is None:
        result = _sweep(source, workers, backend, target, cache, use_cache, on_done, on_plan)
        result.rows = result_rows(result.runs, result.results)
        return result
    with OutFolder(Path(out), "sweep", force=force) as folder:
        result = _sweep(source, workers, backend, target, cache, use_cache, on_done, on_plan)
        size = result.plan.sweep.size_axis()
        listed = [int(v) for v in result.plan.sweep.grid[size]] if size is not None else []
        result.rows = write_sweep(
            folder.staging, result.runs, result.results, result.searches, result.target, size, name, listed
        )
        found = None
        if result.searches is not None and result.target is not None and size is not None:
            found = target_rows(result.searches, result.target, size, listed)
        text = source.read_text(encoding="utf-8") if isinstance(source, Path) else scenario_text(source)
        sweep_report(folder.staging, text, result.rows, found, name)
    return result


def _sweep(
    source: Path | Mapping[str, Any],
    workers: int,
    backend: Backend,
    target: str | None,
    cache: Path | None,
    use_cache: bool,
    on_done: Done | None,
    on_plan: Callable[[int | None], None] | None,
) -> SweepResult:
    if workers < 1:
        raise SnapshotError.single("--workers", "must be at least 1")
    plan = load_sweep(source)
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
        searches, runs = smallest_sizes(plan, wanted, replay, on_plan)
    else:
        runs = [plan.run(axes) for axes in plan.points()]
        if on_plan is not None:
            on_plan(len({run.key for run in runs}))
        replay(runs)
    return SweepResult(plan, runs, results, [], replayed, wanted, searches)
