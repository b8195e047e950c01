"""The ``gpu-preempt`` command line.

``validate FILE`` checks a snapshot and summarizes it; ``schema`` prints the
snapshot's JSON Schema; ``inventory`` lists this machine's GPUs through NVML.
Exit codes: 0 success, 2 bad input (every problem is listed, with its field
path), 1 when the command cannot do its job for another reason (no GPUs for
``inventory --as-node``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from models import Snapshot, SnapshotError, format_resources, is_gpu_resource, load_snapshot

from .cluster import Cluster
from .gpu_inventory import Inventory, RecordedNVML, inventory_as_node, read_inventory
from .summary import Summary, summarize

app = typer.Typer(
    name="gpu-preempt",
    help="Exact, explainable victim selection for GPU batch clusters.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)
if not out.is_terminal:  # piped output: do not squeeze tables into 80 columns
    out.width = 160

FileArg = Annotated[Path, typer.Argument(help="snapshot file (YAML, or JSON if it ends in .json)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document for programs")]


def _load(path: Path, as_json: bool) -> Snapshot:
    try:
        return load_snapshot(path)
    except SnapshotError as error:
        if as_json:
            problems = [{"path": e.path, "message": e.message} for e in error.errors]
            print(json.dumps({"valid": False, "file": str(path), "errors": problems}, indent=2))
        else:
            err.print(f"error: {path} is not a valid snapshot ({len(error.errors)} problem(s)):", markup=False)
            for problem in error.errors:
                err.print(f"  {problem}", markup=False)
        raise typer.Exit(2) from None


@app.command()
def validate(file: FileArg, as_json: JsonOpt = False) -> None:
    """Check a snapshot; print nodes, the queue tree with fair shares, jobs, and protected jobs."""
    snapshot = _load(file, as_json)
    summary = summarize(Cluster.of(snapshot))
    if as_json:
        print(json.dumps({"valid": True, "file": str(file), **summary.to_dict()}, indent=2))
    else:
        _print_summary(file, summary)


def _print_summary(file: Path, s: Summary) -> None:
    models = ", ".join(f"{n} x {m}" for m, n in sorted(s.gpus_by_model.items()))
    out.print(f"{file}: valid snapshot", markup=False)
    out.print(
        f"nodes: {s.nodes} ({s.schedulable_nodes} schedulable); GPUs: {s.gpus}" + (f" ({models})" if models else "")
    )
    out.print(f"capacity: {format_resources(s.capacity) or 'none'}", markup=False)
    jobs = ", ".join(f"{n} {status}" for status, n in s.jobs.items())
    tasks = ", ".join(f"{n} {status}" for status, n in s.tasks.items())
    out.print(f"jobs: {jobs} (tasks: {tasks})")
    table = Table(title="queues", title_justify="left", show_lines=False)
    for column in ("queue", "deserved", "limit", "fair share", "allocated", "requested"):
        table.add_column(column)
    shown = _quota_resources(s)
    for row in s.queues:
        name = "  " * row.depth + row.name + ("" if row.leaf else "/")
        table.add_row(
            name,
            format_resources(row.deserved, only=shown) or "-",
            format_resources(row.limit, only=shown) or "-",
            format_resources(row.fair_share, only=shown) or "0",
            format_resources(row.allocated, only=shown) or "0",
            format_resources(row.requested, only=shown) or "0",
        )
    out.print(table)
    if not s.protected:
        out.print("protected jobs: none")
        return
    protected = Table(title="protected jobs", title_justify="left")
    for column in ("job", "queue", "rule", "until", "why"):
        protected.add_column(column)
    for p in s.protected:
        protected.add_row(p.job, p.queue, p.rule, p.until or "forever", p.detail)
    out.print(protected)


def _quota_resources(s: Summary) -> tuple[str, ...]:
    """Resources worth a column: GPUs, and whatever some queue sets a quota or limit on (--json has all)."""
    named = {r for row in s.queues for r in (*row.deserved, *row.limit)}
    return tuple(r for r in s.capacity if is_gpu_resource(r) or r in named) or tuple(named)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the snapshot format (v1)."""
    document = Snapshot.model_json_schema()
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["title"] = "gpu-preempt snapshot v1"
    print(json.dumps(document, indent=2))


@app.command()
def inventory(
    as_json: JsonOpt = False,
    as_node: Annotated[
        str | None, typer.Option("--as-node", metavar="NAME", help="print a snapshot node entry named NAME")
    ] = None,
    recording: Annotated[
        Path | None,
        typer.Option(
            "--recording", metavar="FILE", help="read a recorded device list (the --json output) instead of NVML"
        ),
    ] = None,
) -> None:
    """List this machine's GPUs (index, model, UUID, memory, MIG) through NVML."""
    nvml = None
    if recording is not None:
        try:
            nvml = RecordedNVML.from_file(recording)
        except (OSError, ValueError) as error:
            err.print(f"error: cannot read recording {recording}: {error}", markup=False)
            raise typer.Exit(2) from None
    found = read_inventory(nvml)
    if as_node is not None:
        if not found.devices:
            err.print(f"error: no GPUs to describe: {found.reason}", markup=False)
            raise typer.Exit(1)
        node = {"nodes": [inventory_as_node(found, as_node)]}
        print(json.dumps(node, indent=2) if as_json else yaml.safe_dump(node, sort_keys=False).rstrip())
        return
    if as_json:
        print(json.dumps(found.to_dict(), indent=2))
        return
    _print_inventory(found)


def _print_inventory(found: Inventory) -> None:
    if not found.devices:
        out.print(f"no GPUs: {found.reason}", markup=False)
    else:
        out.print(f"driver {found.driver_version or 'unknown'}; {len(found.devices)} GPU(s)")
        table = Table()
        for column in ("index", "model", "uuid", "memory", "MIG"):
            table.add_column(column)
        for d in found.devices:
            table.add_row(str(d.index), d.name, d.uuid, _gib(d.memory_total), d.mig_mode)
            for m in d.mig_devices:
                table.add_row(f"{d.index}/{m.slot}", m.name, m.uuid, _gib(m.memory_total), "MIG device")
        out.print(table)
    for note in found.notes:
        out.print(f"note: {note}", markup=False)


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def main() -> Any:
    """Console-script entry point."""
    return app()
