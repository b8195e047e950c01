"""Real clusters: ``import`` (Kubernetes objects -> a snapshot) and ``plan`` (a decision -> Evictions to review)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
import typer

from gpu_preempt.models import SnapshotError, parse_time, snapshot_from_data

from .app import (
    WRITTEN,
    WRITTEN_JSON,
    FileArg,
    ForceOpt,
    SolverOpt,
    check_file_out,
    collector_off_if_ours,
    command,
    import_cpsat_without_pandas,
    job_to_decide,
    load,
    usage_error,
    write_file,
)
from .render import err, out, print_problems

if TYPE_CHECKING:
    from gpu_preempt.kube.core import Report
    from gpu_preempt.kube.kai_config import KaiSettings
    from gpu_preempt.kube.plan import PodEviction
    from gpu_preempt.models.decision import Decision

__all__ = ["import_", "plan"]


@command("import", example="gpu-preempt import fixtures/kube/kai-cluster.json -o kai.yaml")
def import_(
    files: Annotated[
        list[str], typer.Argument(metavar="FILE", help="kubectl get ... -o json output: files, or - for stdin")
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", metavar="FILE", help="write the snapshot here (default: stdout)")
    ] = None,
    now: Annotated[
        str | None, typer.Option("--now", metavar="TIME", help="the snapshot's instant (RFC 3339); default: now")
    ] = None,
    queue_source: Annotated[
        Literal["kai", "kueue", "volcano", "labels"] | None,
        typer.Option("--queue-source", help="where queues come from; default: from the objects"),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="refuse to guess: every guess is an error")] = False,
    gpu_jobs_only: Annotated[
        bool,
        typer.Option("--gpu-jobs-only", help="leave jobs without GPUs out: their running pods are load on their nodes"),
    ] = False,
    force: ForceOpt = False,
) -> None:
    """Read Kubernetes objects (nodes, pods, priority classes, queues, pod groups) and write a snapshot."""
    collector_off_if_ours()
    if output is not None:
        check_file_out("--output", output, force)
    import yaml

    from gpu_preempt.kube.importer import import_objects
    from gpu_preempt.kube.read import read_objects

    try:
        instant = None if now is None else parse_time(now)
    except ValueError as error:
        err.print(f"error: --now: {error}")
        raise typer.Exit(2) from None
    try:
        settings: list[KaiSettings] = []
        objects = read_objects(files, sys.stdin, settings)
        document, report = import_objects(
            objects, now=instant, queue_source=queue_source, cpu_jobs=not gpu_jobs_only, settings=settings
        )
        count = len(objects)
        del objects  # a large dump's objects are freed before its snapshot is checked
        snapshot_from_data(document)  # what is written is a valid snapshot
    except SnapshotError as error:
        print_problems("the input cannot be imported", error.errors)
        raise typer.Exit(2) from None
    _print_report(report, count)
    if strict and report.guesses:
        err.print(f"error: --strict: {len(report.guesses)} guess(es), listed above")
        raise typer.Exit(2)
    if output is not None and output.suffix.lower() == ".json":  # what a large cluster's snapshot is read fastest in
        text = msgspec.json.encode({"description": "written by gpu-preempt import", **document}).decode() + "\n"
        assert text.startswith(WRITTEN_JSON)
    else:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter where PyYAML has it
        text = f"{WRITTEN} import\n" + yaml.dump(document, Dumper=dumper, sort_keys=False)
    if output is None:
        sys.stdout.write(text)
    else:
        write_file("--output", output, text)
        err.print(f"wrote {output}")


def _print_report(report: Report, count: int) -> None:
    err.print(f"read {count} object(s)")
    for line in report.guesses:
        err.print(f"guessed: {line}")
    for kind, names in sorted(report.ignored.items()):
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        err.print(f"ignored {len(names)} {kind}: {shown}")
    for line in report.notes:
        err.print(f"note: {line}")


@command(example="gpu-preempt plan fixtures/example-cluster.yaml --cycle --format kubectl")
def plan(
    file: FileArg,
    job: Annotated[str | None, typer.Option("--job", metavar="NAME", help="decide for this pending job")] = None,
    cycle: Annotated[bool, typer.Option("--cycle", help="run a whole scheduling cycle")] = False,
    format_: Annotated[
        Literal["table", "eviction-json", "kubectl"],
        typer.Option("--format", help="a table to read, policy/v1 Evictions, or a kubectl script"),
    ] = "table",
    solver: SolverOpt = "cpsat",
) -> None:
    """The evictions a decision needs, as Eviction objects or a kubectl script to review (nothing is sent)."""
    collector_off_if_ours()
    import_cpsat_without_pandas()
    from gpu_preempt.actions.cycle import final_decision, run_cycle, solve_one
    from gpu_preempt.kube.plan import eviction_list, evictions, kubectl_script
    from gpu_preempt.state.cluster import ClusterState

    if (job is None) == (not cycle):
        usage_error("--job/--cycle", "give either --job NAME or --cycle")
    snapshot = load(file, False)
    decisions: list[Decision]
    if job is not None:
        tried = solve_one(ClusterState.of(snapshot), job_to_decide(snapshot, job), "auto", solver=solver)
        decisions = [final_decision(tried)]
    else:
        decisions = run_cycle(snapshot, solver=solver).decisions
    pods = evictions(snapshot, decisions)
    if format_ == "eviction-json":
        sys.stdout.write(json.dumps(eviction_list(pods), indent=2) + "\n")
    elif format_ == "kubectl":
        sys.stdout.write(kubectl_script(pods))
    else:
        _print_table(decisions, pods)


def _placed_nothing(decisions: list[Decision]) -> list[Decision]:
    """For each job that no decision places, its last decision that was not skipped (else its last one)."""
    from gpu_preempt.models.quota_decision import QuotaDecision

    by_job: dict[str, list[Decision]] = {}
    for decision in decisions:
        if not isinstance(decision, QuotaDecision):
            by_job.setdefault(decision.job, []).append(decision)
    out = []
    for tried in by_job.values():
        if not any(d.placed for d in tried):
            out.append(next((d for d in reversed(tried) if d.outcome != "skipped"), tried[-1]))
    return out


def _print_table(decisions: list[Decision], pods: list[PodEviction]) -> None:
    from rich.table import Table

    for decision in decisions:
        if decision.victims or decision.moves:
            out.print(f"{decision.job}: {decision.action} -> {decision.outcome}")
    for decision in _placed_nothing(decisions):
        out.print(f"{decision.job}: nothing placed ({decision.action} -> {decision.outcome}): {decision.reason}")
    table = Table("namespace", "pod", "node", "job", "reason")
    for pod in pods:
        table.add_row(pod.namespace, pod.name, pod.node or "-", pod.job, pod.reason)
    out.print(table)
    out.print(f"{len(pods)} pod(s) to evict; nothing was sent to the cluster")
