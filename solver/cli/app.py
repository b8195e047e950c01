"""The ``gpu-preempt`` Typer application, the options its commands share, and loading a snapshot.

Exit codes: 0 success (whatever the decisions' outcomes), 2 bad input (every
problem is listed, with its field path), 1 when a command cannot do its job for
another reason (no GPUs for ``inventory --as-node``, a decision failing
``--verify``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gpu_preempt.models import Snapshot, SnapshotError, load_snapshot

from .render import err, print_problems

app = typer.Typer(
    name="gpu-preempt",
    help="Exact, explainable victim selection for GPU batch clusters.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

FileArg = Annotated[Path, typer.Argument(help="snapshot file (YAML, or JSON if it ends in .json)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document for programs")]
SolverOpt = Annotated[str, typer.Option("--solver", help="cpsat (exact) or greedy (the KAI-like baseline)")]
VerifyOpt = Annotated[bool, typer.Option("--verify", help="re-check every decision with the independent verifier")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", help="CP-SAT workers (overrides config.solver.workers)")]
TimeOpt = Annotated[float | None, typer.Option("--time-limit", help="seconds per decision (overrides the config)")]
TimingOpt = Annotated[bool, typer.Option("--timing/--no-timing", help="include solve_ms in --json output")]


def load(path: Path, as_json: bool) -> Snapshot:
    try:
        return load_snapshot(path)
    except SnapshotError as error:
        if as_json:
            problems = [{"path": e.path, "message": e.message} for e in error.errors]
            print(json.dumps({"valid": False, "file": str(path), "errors": problems}, indent=2))
        else:
            print_problems(f"{path} is not a valid snapshot", error.errors)
        raise typer.Exit(2) from None


def tuned(snapshot: Snapshot, workers: int | None, time_limit: float | None) -> Snapshot:
    solver = snapshot.config.solver
    if workers is not None:
        solver = solver.model_copy(update={"workers": workers})
    if time_limit is not None:
        solver = solver.model_copy(update={"time_limit": time_limit})
    return snapshot.model_copy(update={"config": snapshot.config.model_copy(update={"solver": solver})})


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        err.print(f"error: {name}: '{value}' is not one of {', '.join(allowed)}", markup=False)
        raise typer.Exit(2)
