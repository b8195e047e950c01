"""Capacity planning: ``sweep`` (replay a base scenario over axes, in parallel, cached; optionally find the smallest
cluster that meets a target)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from .app import command, out_option, usage_error
from .render import print_sweep, replay_progress

if TYPE_CHECKING:
    from gpu_preempt.planning.sweep import Run


@command()
def sweep(
    file: Annotated[Path, typer.Argument(help="sweep file (YAML: scenario, grid, points, seeds, solvers, size)")],
    out: Annotated[Path, out_option("results.csv, runs.jsonl, plots")],
    workers: Annotated[int, typer.Option("--workers", metavar="N", help="local worker processes, 1 to 256")] = 1,
    backend: Annotated[
        Literal["local", "ray"],
        typer.Option("--backend", help="ray: pip install 'gpu-preempt[ray]'; ray.init() finds the cluster"),
    ] = "local",
    target: Annotated[
        str | None,
        typer.Option(
            "--target", metavar="GOAL", help="e.g. 'wait.p95 <= 1h': the smallest size on the size axis that meets it"
        ),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option("--cache", metavar="FOLDER", help="run cache folder (default ~/.cache/gpu-preempt/runs)"),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="replay every run, store nothing")] = False,
) -> None:
    """Replay a scenario at every point of some axes (CP-SAT and greedy side by side); a table and plots."""
    if not 1 <= workers <= 256:
        usage_error("--workers", f"expected 1 to 256 worker processes, got {workers}")
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from gpu_preempt.planning.run_sweep import sweep as run_sweep

    columns = (TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with replay_progress(file, "cannot be swept", *columns, out=out) as progress:
        task = progress.add_task("sweep", total=None)

        def on_plan(total: int | None) -> None:
            progress.update(task, total=total)

        def on_done(run: Run, cached: bool) -> None:
            progress.advance(task)

        result = run_sweep(
            file,
            out,
            workers=workers,
            backend=backend,
            target=target,
            cache=cache,
            use_cache=not no_cache,
            on_done=on_done,
            on_plan=on_plan,
        )
    print_sweep(out, result)
