"""Capacity planning: ``simulate`` (replay a scenario's workload through the engine) and ``schema --scenario``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpu_preempt.models import parse_duration

from .app import command, out_option
from .render import err, print_simulation, replay_progress


@command()
def simulate(
    scenario: Annotated[Path, typer.Argument(metavar="SCENARIO", help="scenario file (YAML; docs/scenario-format.md)")],
    out: Annotated[Path, out_option("summary.json, jobs.parquet, ...")],
    dump_at: Annotated[
        str | None,
        typer.Option(
            "--dump-at", metavar="TIME", help="write dump.json: the snapshot of the first cycle at or after this time"
        ),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="check invariants and verify every decision, every cycle")
    ] = False,
) -> None:
    """Replay a scenario: waits, preemptions, fairness, utilisation and lost work, as files and plots."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from gpu_preempt.planning.run import simulate as replay

    try:
        at = None if dump_at is None else parse_duration(dump_at)
    except ValueError as error:
        err.print(f"error: --dump-at: {error}")
        raise typer.Exit(2) from None
    columns = (
        TextColumn("simulated {task.fields[hours]:.1f} h"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("jobs done"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with replay_progress(scenario, "cannot be simulated", *columns, out=out) as progress:
        task = progress.add_task("replay", total=None, hours=0.0)

        def on_cycle(now: float, done: int, total: int) -> None:
            progress.update(task, hours=now / 3600, completed=done, total=total)

        result = replay(scenario, out, dump_at=at, check=check or None, on_cycle=on_cycle)
    summary: dict[str, Any] = result.summary
    print_simulation(scenario, out, summary)
    if result.simulator.problems:
        err.print(f"error: {len(result.simulator.problems)} broken invariant(s) or rule(s):")
        for broken in result.simulator.problems[:20]:
            err.print(f"  {broken}")
        raise typer.Exit(1)
