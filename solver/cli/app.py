"""The ``gpu-preempt`` Typer application, the options its commands share, and loading a snapshot.

Exit codes: 0 success (whatever the decisions' outcomes), 2 bad input (every
problem is listed, with its field path), 1 when a command cannot do its job for
another reason (no GPUs for ``inventory --as-node``, a decision failing
``--verify``).
"""

from __future__ import annotations

import difflib
import gc
import json
import math
import sys
import tempfile
import types
from collections import Counter
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Any, ClassVar, NoReturn, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from gpu_preempt.models import Job, Snapshot, SnapshotError, SolverName, load_snapshot
from gpu_preempt.models.duration import MAX_DURATION

from .render import err, other_kind, print_problems

__all__ = [
    "JSON_PROBLEMS",
    "SHOWN_NAMES",
    "WRITTEN",
    "WRITTEN_JSON",
    "Command",
    "FileArg",
    "ForceOpt",
    "Group",
    "JsonOpt",
    "OwnProcess",
    "SolverOpt",
    "TimeOpt",
    "TimingOpt",
    "VerifyOpt",
    "WorkersOpt",
    "app",
    "check_file_out",
    "check_limits",
    "collector_off_if_ours",
    "command",
    "hold_until_exit",
    "import_cpsat_without_pandas",
    "job_to_decide",
    "load",
    "out_option",
    "snapshot_to_solve",
    "usage_error",
    "with_solver_options",
    "write_file",
]


def _plain(params: list[Any]) -> None:
    """Help shows ``FILE`` for an argument and nothing after a flag (not ``{file}``, ``<path>`` or ``<bool>``)."""
    for param in params:
        if param.param_type_name == "argument" and param.metavar is None:
            param.metavar = (param.name or "arg").upper()
        elif param.param_type_name == "option" and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class Command(TyperCommand):
    """A command whose usage line reads ``gpu-preempt cycle [OPTIONS] FILE``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain(self.params)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = param.metavar or (param.name or "arg").upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            _plain([option])
        return option


class Group(TyperGroup):
    """The top level: ``--help`` without a type placeholder."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            _plain([option])
        return option


F = TypeVar("F", bound=Callable[..., Any])

app = typer.Typer(
    name="gpu-preempt",
    help="Exact, explainable victim selection for GPU batch clusters.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=Group,
)


def command(name: str | None = None, *, example: str) -> Callable[[F], F]:
    """``@app.command`` with this CLI's :class:`Command` (plain usage line and help), its help ending with
    ``example`` (a command line run from a checkout, its files bundled)."""
    decorate: Callable[[F], F] = app.command(name, cls=Command, epilog=f"Example: {example}")
    return decorate


def _version(value: bool) -> None:
    if value:
        try:
            print(f"gpu-preempt {version('gpu-preempt')}")
        except PackageNotFoundError:  # run from a source tree that is not installed
            print("gpu-preempt (not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    _: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, metavar="", help="print the version and exit"),
    ] = False,
) -> None:
    """Exact, explainable victim selection for GPU batch clusters."""


FileArg = Annotated[Path, typer.Argument(help="snapshot file (YAML, or JSON if it ends in .json)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document for programs")]
SolverOpt = Annotated[SolverName, typer.Option("--solver", help="cpsat (exact) or greedy (KAI-Scheduler's own search)")]
VerifyOpt = Annotated[bool, typer.Option("--verify", help="re-check every decision with the independent verifier")]
WorkersOpt = Annotated[
    int | None,
    typer.Option("--workers", metavar="N", help="CP-SAT workers, 0 = all cores (overrides config.solver.workers)"),
]
TimeOpt = Annotated[
    float | None,
    typer.Option("--time-limit", metavar="SECONDS", help="seconds per decision, above 0 (overrides the config)"),
]
TimingOpt = Annotated[bool, typer.Option("--timing/--no-timing", help="include solve_ms in --json output")]


def out_option(contents: str) -> Any:
    """The ``--out FOLDER`` option of a command that writes a folder of ``contents``."""
    return typer.Option("--out", metavar="FOLDER", help=f"output folder ({contents})")


ForceOpt = Annotated[
    bool,
    typer.Option("--force", help="replace the output even if it holds files gpu-preempt did not write"),
]


class OwnProcess:
    """Whether the command runs as the ``gpu-preempt`` process itself (set by ``main``), not inside another
    program (a test's ``CliRunner``, a notebook)."""

    ours = False
    kept: ClassVar[list[object]] = []
    """Large results held until the process ends (:func:`hold_until_exit`)."""


def hold_until_exit(*objects: object) -> None:
    """When the process is this command's, hold ``objects`` until it ends: returning from the command would free a
    large snapshot and its state object by object, and ``main`` ends the process without freeing the heap anyway."""
    if OwnProcess.ours:
        OwnProcess.kept.extend(objects)


def collector_off_if_ours() -> None:
    """Turn Python's cyclic garbage collector off for the rest of the process, when the process is this command's.

    Loading and deciding on a large cluster builds millions of objects that form no reference cycles (reference
    counting frees them), which the collector's passes would walk again and again for nothing. The process ends
    right after the command. Replays (``simulate``, ``sweep``) run for long and keep it on (the replay freezes
    its workload instead), and so does any program that runs a command inside itself.
    """
    if OwnProcess.ours:
        gc.disable()


def import_cpsat_without_pandas() -> None:
    """Import OR-Tools' CP-SAT without pandas, when the process is this command's.

    ``ortools.sat.python.cp_model`` imports pandas at module level (most of the import's time) for its
    ``*_series`` helpers, which gpu-preempt never calls; while it is imported it only reads the
    names ``pandas.Index`` and ``pandas.Series`` (type hints). So this process imports it with a stand-in module
    holding those two names, then takes the stand-in out of ``sys.modules``: whatever imports pandas afterwards gets
    the real one. If the import fails with the stand-in (a version of OR-Tools that reads more of pandas), it is
    undone, and the solver is imported the usual way when first needed. A program running a command inside itself
    (a test, a notebook) imports OR-Tools as it always does.
    """
    if not OwnProcess.ours or "ortools.sat.python.cp_model" in sys.modules or "pandas" in sys.modules:
        return
    stand_in = types.ModuleType(
        "pandas", "a stand-in while gpu-preempt imports OR-Tools (see import_cpsat_without_pandas)"
    )
    stand_in.Index = type("Index", (), {})  # type: ignore[attr-defined]
    stand_in.Series = type("Series", (), {})  # type: ignore[attr-defined]
    sys.modules["pandas"] = stand_in
    try:
        import ortools.sat.python.cp_model  # noqa: F401
    except Exception:
        sys.modules.pop("ortools.sat.python.cp_model", None)
    finally:
        if sys.modules.get("pandas") is stand_in:
            del sys.modules["pandas"]


def check_limits(workers: int | None, time_limit: float | None) -> None:
    """Exit 2 on ``--workers`` outside 0..1024 or a ``--time-limit`` that is not a positive number of seconds."""
    if workers is not None and not 0 <= workers <= 1024:
        usage_error("--workers", f"expected 0 (all cores) to 1024, got {workers}")
    if time_limit is not None and not (math.isfinite(time_limit) and 0 < time_limit <= MAX_DURATION):
        usage_error("--time-limit", f"expected a positive number of seconds, got {time_limit}")


SHOWN_NAMES = 8
"""Job names listed in a message."""


def job_to_decide(snapshot: Snapshot, name: str) -> Job:
    """The job ``--job`` names, when it waits (a pending or nominated task); else exit 2 naming the close matches
    (a name it ends or is part of, or a near spelling), or saying what its tasks are doing and which jobs wait."""
    jobs = snapshot.jobs_by_name()
    if name not in jobs:
        close = [n for n in jobs if name in n] or difflib.get_close_matches(name, list(jobs), n=SHOWN_NAMES)
        if close:
            usage_error("--job", f"unknown job '{name}'; did you mean {_names(close)}?")
        usage_error("--job", f"unknown job '{name}' (the jobs: {_names(list(jobs))})")
    job = jobs[name]
    statuses = Counter(str(task.status) for task in job.tasks)
    if not statuses["pending"] and not statuses["nominated"]:
        doing = ", ".join(f"{count} {status}" for status, count in statuses.items())
        waiting = [j.name for j in snapshot.jobs if any(t.status in ("pending", "nominated") for t in j.tasks)]
        others = f"the jobs waiting: {_names(waiting)}" if waiting else "no job waits"
        usage_error("--job", f"'{name}' has no task waiting to be placed (its tasks: {doing}); {others}")
    return job


def _names(names: list[str]) -> str:
    more = len(names) - SHOWN_NAMES
    return ", ".join(names[:SHOWN_NAMES]) + (f" and {more} more" if more > 0 else "")


def usage_error(option: str, message: str) -> NoReturn:
    err.print(f"error: {option}: {message}")
    raise typer.Exit(2)


JSON_PROBLEMS = 1000
"""The most problems ``--json`` lists (``error_count`` has them all)."""


def load(path: Path, as_json: bool) -> Snapshot:
    from gpu_preempt.state.cluster import decidable  # numpy: imported when a snapshot is read

    try:
        snapshot = load_snapshot(path)
    except SnapshotError as error:
        _refused(path, as_json, error)
    try:
        snapshot = decidable(snapshot)
    except SnapshotError as error:  # valid, but not decided: one line
        first = error.errors[0]
        if as_json:
            print(json.dumps({"valid": True, "file": str(path), "decided": False, "reason": first.message}, indent=2))
        else:
            err.print(f"error: {path}: {first.message} ({first.path})")
        raise typer.Exit(2) from None
    hold_until_exit(snapshot)
    return snapshot


def _refused(path: Path, as_json: bool, error: SnapshotError) -> NoReturn:
    """Exit 2 on a snapshot that is not valid, listing every problem."""
    if as_json:
        problems = [{"path": e.path, "message": e.message} for e in error.errors[:JSON_PROBLEMS]]
        report = {"valid": False, "file": str(path), "errors": problems, "error_count": len(error.errors)}
        print(json.dumps(report, indent=2))
    else:
        print_problems(f"{path} is not a valid snapshot", error.errors)
        hint = other_kind(path, "snapshot")
        if hint is not None:
            err.print(hint)
    raise typer.Exit(2) from None


def snapshot_to_solve(file: Path, as_json: bool, workers: int | None, time_limit: float | None) -> Snapshot:
    """What every solving command does first: the collector off and CP-SAT imported when the process is ours,
    ``--workers`` and ``--time-limit`` checked, the snapshot loaded (exit 2 if it is bad) with both applied."""
    collector_off_if_ours()
    import_cpsat_without_pandas()
    check_limits(workers, time_limit)
    return with_solver_options(load(file, as_json), workers, time_limit)


def with_solver_options(snapshot: Snapshot, workers: int | None, time_limit: float | None) -> Snapshot:
    """``snapshot`` with ``--workers`` and ``--time-limit`` applied (exit 2 if either is out of range)."""
    solver = snapshot.config.solver
    if workers is not None:
        solver = solver.model_copy(update={"workers": workers})
    if time_limit is not None:
        solver = solver.model_copy(update={"time_limit": time_limit})
    return snapshot.model_copy(update={"config": snapshot.config.model_copy(update={"solver": solver})})


WRITTEN = "# written by gpu-preempt"
WRITTEN_JSON = '{"description":"written by gpu-preempt'
"""How a JSON file a command writes starts (JSON has no comments: its description says so)."""
"""The first line of every YAML file a command writes: such a file may be written over again."""


def check_file_out(option: str, target: Path, force: bool) -> None:
    """Before any work, exit 2 unless ``target`` can be written: not a folder, in a folder that exists and takes
    files, and either new or a file gpu-preempt wrote (its first line, :data:`WRITTEN` or :data:`WRITTEN_JSON`),
    unless ``force``."""
    if target.is_dir():
        usage_error(option, f"{target} is a folder, not a file")
    if target.exists() and not force and not _written_by_us(target):
        usage_error(option, f"{target} exists and gpu-preempt did not write it: choose another name, or pass --force")
    try:
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}."):
            pass
    except OSError as error:
        usage_error(option, f"cannot write {target} ({error.strerror or error})")


def _written_by_us(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as file:
            return file.readline().startswith((WRITTEN, WRITTEN_JSON))
    except (OSError, UnicodeDecodeError):
        return False


def write_file(option: str, target: Path, text: str) -> None:
    """Write ``text`` to ``target`` whole or not at all (a temporary file, then renamed); exit 2 if it cannot be."""
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        usage_error(option, f"cannot write {target} ({error.strerror})")
