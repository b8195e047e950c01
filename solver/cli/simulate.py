"""Capacity planning: ``simulate`` (replay a scenario's workload through the engine) and ``schema --scenario``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gpu_preempt.models import format_duration, parse_duration

from .app import ForceOpt, command, out_option
from .progress import Rate, clock, nothing_written, replay_progress
from .render import err, print_simulation

__all__ = ["simulate"]


@command(example="gpu-preempt simulate fixtures/scenarios/itp-cluster10.yaml --out runs/cluster10")
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
    force: ForceOpt = False,
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
        TextColumn("simulated {task.fields[hours]:.1f} h (last arrival at {task.fields[span]:.1f} h)"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("jobs done"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    seen = {"now": 0.0, "span": 0.0, "done": 0, "total": 0}
    rate = Rate()

    def describe() -> str:
        return (
            f"simulate: {seen['done']:,}/{seen['total']:,} jobs done, simulated {seen['now'] / 3600:.1f} h (last "
            f"arrival at {seen['span'] / 3600:.1f} h), {clock(rate.elapsed())} elapsed, about "
            f"{rate.left(seen['done'], seen['total'])} left"
        )

    def interrupted() -> str:
        return nothing_written(out)

    with replay_progress(scenario, "scenario", *columns, describe=describe, interrupted=interrupted) as progress:
        task = progress.add_task("replay", total=None, hours=0.0, span=0.0)

        def on_start(span: float) -> None:
            seen["span"] = span
            progress.update(task, span=span / 3600)

        def on_cycle(now: float, done: int, total: int) -> None:
            seen.update(now=now, done=done, total=total)
            progress.update(task, hours=now / 3600, completed=done, total=total)

        result = replay(
            scenario, out, dump_at=at, check=check or None, on_cycle=on_cycle, on_start=on_start, force=force
        )
    summary: dict[str, Any] = result.summary
    print_simulation(scenario, out, summary)
    if at is not None and result.simulator.dump is None:
        last = result.simulator.last_cycle
        when = "none ran at all" if last is None else f"the last ran at {format_duration(round(last))}"
        err.print(f"error: --dump-at {dump_at}: no cycle ran at or after that time ({when}); {out} has no dump.json")
        raise typer.Exit(2)
    if result.simulator.problems:
        err.print(f"error: {len(result.simulator.problems)} broken invariant(s) or rule(s):")
        for broken in result.simulator.problems[:20]:
            err.print(f"  {broken}")
        raise typer.Exit(1)
