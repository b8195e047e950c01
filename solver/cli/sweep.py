"""Capacity planning: ``sweep`` (replay a base scenario over axes, in parallel, cached; optionally find the smallest
cluster that meets a target)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from .app import ForceOpt, command, out_option, usage_error
from .progress import Rate, clock, nothing_written, replay_progress
from .render import print_sweep

if TYPE_CHECKING:
    from gpu_preempt.planning.sweep import Run

__all__ = ["sweep"]


@command(example="gpu-preempt sweep fixtures/scenarios/sweep-cluster10-size.yaml --out runs/size --workers 2")
def sweep(
    file: Annotated[Path, typer.Argument(help="sweep file (YAML: scenario, grid, points, seeds, solvers, size)")],
    out: Annotated[Path, out_option("results.csv, runs.jsonl, plots")],
    workers: Annotated[int, typer.Option("--workers", metavar="N", help="local worker processes, 1 to 256")] = 1,
    backend: Annotated[
        Literal["local", "ray"],
        typer.Option("--backend", help="ray: pip install 'gpu-preempt\\[ray]'; ray.init() finds the cluster"),
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
    force: ForceOpt = False,
) -> None:
    """Replay a scenario at every point of some axes (CP-SAT and greedy side by side); a table and plots."""
    if not 1 <= workers <= 256:
        usage_error("--workers", f"expected 1 to 256 worker processes, got {workers}")
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from gpu_preempt.planning.run_sweep import sweep as run_sweep
    from gpu_preempt.planning.sweep import default_cache

    columns = (
        TextColumn("runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("about {task.fields[left]} left"),
    )
    seen: dict[str, int | None] = {"done": 0, "replayed": 0, "total": None}
    rate = Rate()

    def left() -> str:
        """From the runs replayed so far (cached ones take no time): the time the others would take."""
        done, replayed, total = seen["done"] or 0, seen["replayed"] or 0, seen["total"]
        if total is None:
            return "?"
        return rate.left(replayed, replayed + total - done) if done < total else clock(0)

    def describe() -> str:
        total = "?" if seen["total"] is None else f"{seen['total']:,}"
        return f"sweep: {seen['done']:,}/{total} runs done, {clock(rate.elapsed())} elapsed, about {left()} left"

    def interrupted() -> str:
        kept = "" if no_cache else f"; the {seen['done']} run(s) that finished are kept in {cache or default_cache()}"
        return nothing_written(out) + kept

    with replay_progress(file, "sweep file", *columns, describe=describe, interrupted=interrupted) as progress:
        task = progress.add_task("sweep", total=None, left="?")

        def on_plan(total: int | None) -> None:
            seen["total"] = total
            progress.update(task, total=total)

        def on_done(run: Run, cached: bool) -> None:
            seen["done"] = (seen["done"] or 0) + 1
            seen["replayed"] = (seen["replayed"] or 0) + (not cached)
            progress.update(task, advance=1, left=left())

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
            force=force,
        )
    print_sweep(out, result)
