"""The ``gpu-preempt`` command line.

``validate FILE`` checks a snapshot and summarizes it; ``solve`` decides for
one pending job; ``cycle`` runs a whole scheduling cycle; ``enforce-quota``
brings queues above their limit back within it (seed 002); ``schema`` prints the
snapshot's JSON Schema; ``inventory`` lists this machine's GPUs through NVML.
Exit codes: 0 success (whatever the decisions' outcomes), 2 bad input (every
problem is listed, with its field path), 1 when the command cannot do its job
for another reason (no GPUs for ``inventory --as-node``, a decision failing
``--verify``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from models import (
    Job,
    Snapshot,
    SnapshotError,
    format_duration,
    format_quantity,
    format_resources,
    format_time,
    is_gpu_resource,
    load_snapshot,
    read_document,
)
from models.quantity import add

from .cluster import Cluster
from .cycle import CYCLE_ACTIONS, CycleResult, run_cycle, solve_one
from .decision import Decision, VictimTasks
from .gpu_inventory import Inventory, RecordedNVML, inventory_as_node, read_inventory
from .next_snapshot import next_snapshot
from .quota_decision import QuotaDecision
from .quota_enforcement import enforce, enforcement_order
from .reclaim_guarantee import guarantee_threshold
from .summary import Summary, summarize
from .verifier import verify

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


def _write_next(source: Path, target: Path, result: CycleResult) -> None:
    """Seed 004: the state the cycle leaves, as a snapshot to feed the next cycle."""
    document = next_snapshot(read_document(source), result)
    try:
        if target.suffix.lower() == ".json":
            target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        else:
            target.write_text(yaml.safe_dump(document, sort_keys=False, width=120), encoding="utf-8")
    except OSError as error:
        err.print(f"error: --next-snapshot: cannot write {target} ({error.strerror})", markup=False)
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


PROTECTED_SHOWN = 8
"""Protected jobs listed one by one in human output; beyond that, a count per rule."""

SolverOpt = Annotated[str, typer.Option("--solver", help="cpsat (exact) or greedy (the KAI-like baseline)")]
VerifyOpt = Annotated[bool, typer.Option("--verify", help="re-check every decision with the independent verifier")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", help="CP-SAT workers (overrides config.solver.workers)")]
TimeOpt = Annotated[float | None, typer.Option("--time-limit", help="seconds per decision (overrides the config)")]
TimingOpt = Annotated[bool, typer.Option("--timing/--no-timing", help="include solve_ms in --json output")]


def _tuned(snapshot: Snapshot, workers: int | None, time_limit: float | None) -> Snapshot:
    solver = snapshot.config.solver
    if workers is not None:
        solver = solver.model_copy(update={"workers": workers})
    if time_limit is not None:
        solver = solver.model_copy(update={"time_limit": time_limit})
    return snapshot.model_copy(update={"config": snapshot.config.model_copy(update={"solver": solver})})


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        err.print(f"error: {name}: '{value}' is not one of {', '.join(allowed)}", markup=False)
        raise typer.Exit(2)


@app.command()
def solve(
    file: FileArg,
    job: Annotated[str, typer.Option("--job", help="the pending job to decide for")],
    action: Annotated[str, typer.Option("--action", help="reclaim, preempt, allocate, or auto")] = "auto",
    solver: SolverOpt = "cpsat",
    as_json: JsonOpt = False,
    verify_: VerifyOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
    timing: TimingOpt = True,
) -> None:
    """Decide for one pending job: victims, placements, and why."""
    _check_choice("--action", action, ("auto", "allocate", "reclaim", "preempt"))
    _check_choice("--solver", solver, ("cpsat", "greedy"))
    snapshot = _tuned(_load(file, as_json), workers, time_limit)
    names = [j.name for j in snapshot.jobs]
    if job not in names:
        err.print(
            f"error: --job: unknown job '{job}' (jobs: {', '.join(names[:10])}{' ...' if len(names) > 10 else ''})"
        )
        raise typer.Exit(2)
    cluster = Cluster.of(snapshot)
    tried = solve_one(cluster, snapshot.job(job), action, solver=solver)  # type: ignore[arg-type]
    decision = tried[-1]
    if action == "auto" and not decision.placed:
        decision = next((d for d in reversed(tried) if d.outcome != "skipped"), decision)
    if as_json:
        document = {
            "jobs": _job_states(cluster.with_changes(decision.changes()), [job, *[v.job for v in decision.victims]]),
            "decisions": [decision.to_dict(timing=timing)],
        }
        if action == "auto":
            document["attempts"] = [{"action": d.action, "outcome": d.outcome, "reason": d.reason} for d in tried]
        print(json.dumps(document, indent=2))
    else:
        if action == "auto" and len(tried) > 1:
            for d in tried:
                if d is not decision:
                    out.print(f"{d.action}: {d.outcome}" + (f" ({d.reason})" if d.reason else ""), markup=False)
        _print_decision(cluster, decision)
    if verify_:
        _verify(cluster, [decision], [cluster])


@app.command()
def cycle(
    file: FileArg,
    actions: Annotated[
        str | None,
        typer.Option(
            "--actions",
            help="comma-separated, run in this order (enforce-quota, allocate, reclaim, preempt); default: "
            "allocate,reclaim,preempt, with enforce-quota first when config.quota_preemption_enabled is true",
        ),
    ] = None,
    solver: SolverOpt = "cpsat",
    as_json: JsonOpt = False,
    verify_: VerifyOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
    timing: TimingOpt = True,
    next_file: Annotated[
        Path | None,
        typer.Option(
            "--next-snapshot",
            help="write the snapshot this cycle leaves (bound tasks running, pipelined ones nominated, victims "
            "releasing, requeue states) to this file: YAML, or JSON for a .json name",
        ),
    ] = None,
) -> None:
    """Run one scheduling cycle over all pending jobs (allocate, reclaim, preempt; enforce-quota first if on)."""
    chosen = None if actions is None else [a.strip() for a in actions.split(",") if a.strip()]
    for name in chosen or ():
        _check_choice("--actions", name, CYCLE_ACTIONS)
    _check_choice("--solver", solver, ("cpsat", "greedy"))
    snapshot = _tuned(_load(file, as_json), workers, time_limit)
    result = run_cycle(snapshot, chosen, solver=solver)  # type: ignore[arg-type]
    if next_file is not None:
        _write_next(file, next_file, result)
    if as_json:
        print(json.dumps(result.to_dict(timing=timing), indent=2))
    else:
        placed = [d for d in result.decisions if d.placed]
        evicted = sum(len(v.tasks) for d in result.decisions if d.changes() for v in d.victims)
        out.print(
            f"{file}: {len(result.decisions)} decision(s); {len(placed)} job(s) placed, {evicted} task(s) evicted",
            markup=False,
        )
        for state, decision in zip(result.states, result.decisions, strict=True):
            if decision.outcome == "skipped" and decision.reason == "no pending tasks":
                continue
            _print_decision(state, decision)
    if verify_:
        _verify(result.start, result.decisions, result.states)


@app.command("enforce-quota")
def enforce_quota(
    file: FileArg,
    queue: Annotated[
        str | None, typer.Option("--queue", help="only this queue (default: every queue above its limit)")
    ] = None,
    as_json: JsonOpt = False,
    verify_: VerifyOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
    timing: TimingOpt = True,
) -> None:
    """Bring queues above their limit back within it by preemption (seed 002), deepest queues first."""
    snapshot = _tuned(_load(file, as_json), workers, time_limit)
    names = [q.name for q in snapshot.queues]
    if queue is not None and queue not in names:
        err.print(f"error: --queue: unknown queue '{queue}' (queues: {', '.join(names[:10])})", markup=False)
        raise typer.Exit(2)
    start = cluster = Cluster.of(snapshot)
    decisions: list[Decision] = []
    states: list[Cluster] = []
    for name in [queue] if queue is not None else enforcement_order(cluster):
        decision = enforce(cluster, name)
        decisions.append(decision)
        states.append(cluster)
        cluster = cluster.with_changes(decision.changes())
    if as_json:
        touched = [v.job for d in decisions for v in d.victims]
        document = {"jobs": _job_states(cluster, touched), "decisions": [d.to_dict(timing=timing) for d in decisions]}
        print(json.dumps(document, indent=2))
    else:
        evicted = sum(len(v.tasks) for d in decisions for v in d.victims)
        out.print(f"{file}: {len(decisions)} queue decision(s); {evicted} task(s) evicted", markup=False)
        for state, made in zip(states, decisions, strict=True):
            _print_decision(state, made)
    if verify_:
        _verify(start, decisions, states)


def _job_states(cluster: Cluster, names: list[str]) -> dict[str, Any]:
    return {
        name: {
            "tasks": {
                str(t.name): {"status": cluster.status[str(t.name)], "node": cluster.node_of[str(t.name)]}
                for t in cluster.snapshot.job(name).tasks
            }
        }
        for name in dict.fromkeys(names)
    }


def _verify(start: Cluster, decisions: list[Decision], states: list[Cluster]) -> None:
    failures = [(d, problem) for d, state in zip(decisions, states, strict=True) for problem in verify(state, d)]
    if failures:
        for decision, problem in failures:
            subject = decision.queue if isinstance(decision, QuotaDecision) else decision.job
            err.print(f"verify: {subject} ({decision.action}): {problem}", markup=False)
        raise typer.Exit(1)
    err.print(f"verify: {len(decisions)} decision(s) re-checked, all sound", markup=False)


def _print_decision(cluster: Cluster, d: Decision) -> None:
    if isinstance(d, QuotaDecision):
        _print_quota(cluster, d)
        return
    status = {True: "optimal", False: "not proved optimal"}[d.optimal] if d.placed else ""
    head = f"{d.job}: {d.action} -> {d.outcome}"
    if d.placed:
        head += f" ({status}, {d.solver}, {d.solve_ms:.1f} ms)"
    out.print(head, markup=False)
    if d.reason:
        out.print(f"  reason: {d.reason}", markup=False)
    if d.victims:
        _print_victims(cluster, d, "why it may go", lambda job, v: _why_victim(cluster, d, job), ", ".join)
    if d.placements:
        nodes: dict[str, list[str]] = {}
        for task, node in d.placements.items():
            nodes.setdefault(node, []).append(task)
        placed = "; ".join(f"{node}: {', '.join(tasks)}" for node, tasks in nodes.items())
        out.print(f"  placements: {placed}", markup=False)
    if d.placed and d.victims:
        obj = d.objective
        levels = ", ".join(f"{n} at priority {p}" for p, n in zip(d.priority_levels, obj["priority"], strict=True) if n)
        out.print(
            f"  objective: {obj['jobs']} job(s) ({levels}), {obj['tasks']} task(s), "
            f"{obj['lost_work']:g} GPU-seconds lost",
            markup=False,
        )
    _print_requeue(d)
    shown = d.protected if len(d.protected) <= PROTECTED_SHOWN else d.protected[:PROTECTED_SHOWN]
    for p in shown:
        out.print(f"  protected: {p.job}: {p.reason}", markup=False)
    if len(shown) < len(d.protected):
        rules = Counter(p.rule for p in d.protected)
        summary = ", ".join(f"{n} by {rule}" for rule, n in sorted(rules.items()))
        out.print(f"  protected: {len(d.protected)} jobs in all ({summary}); --json lists every one", markup=False)


def _print_quota(cluster: Cluster, d: QuotaDecision) -> None:
    head = f"queue {d.queue}: {d.action} -> {d.outcome}"
    if d.evicts:
        head += f" ({'optimal' if d.optimal else 'not proved optimal'}, {d.solve_ms:.1f} ms)"
    out.print(head, markup=False)
    for resource, q in d.resources.items():
        line = f"  {resource}: usage {format_quantity(resource, q.usage)}, limit {format_quantity(resource, q.limit)}"
        if q.tolerated != q.limit:
            line += f", tolerated {format_quantity(resource, q.tolerated)}"
        if d.evicts:
            line += f" -> {format_quantity(resource, q.after)} after"
        out.print(line, markup=False)
    if d.reason:
        out.print(f"  reason: {d.reason}", markup=False)
    if d.victims:

        def frees(job: Job, v: VictimTasks) -> str:
            freed: dict[str, int] = {}
            for task in job.tasks:
                if str(task.name) in v.tasks:
                    freed = add(freed, job.requests(task))
            return format_resources(freed, only=tuple(d.resources))

        _print_victims(cluster, d, "frees", frees, _names)
        obj = d.objective
        out.print(f"  objective: {obj['jobs']} job(s), {obj['tasks']} task(s), {obj['lost_work']:g} GPU-seconds lost")
    _print_requeue(d)
    for p in d.protected[:PROTECTED_SHOWN]:
        out.print(f"  protected: {p.job}: {p.reason}", markup=False)
    if len(d.protected) > PROTECTED_SHOWN:
        out.print(f"  protected: {len(d.protected)} jobs in all; --json lists every one", markup=False)


def _print_victims(
    cluster: Cluster,
    d: Decision,
    last: str,
    describe: Callable[[Job, VictimTasks], str],
    names: Callable[[tuple[str, ...]], str],
) -> None:
    """The victims table: who goes, from which queue, at which priority, and a last column ``last``."""
    table = Table(title="  victims", title_justify="left")
    for column in ("job", "queue", "priority", "tasks", "evicted", last):
        table.add_column(column)
    for v in d.victims:
        job = cluster.snapshot.job(v.job)
        evicted = "whole job" if v.whole_job else "surplus above min_available"
        table.add_row(v.job, job.queue, str(job.resolved_priority), names(v.tasks), evicted, describe(job, v))
    out.print(table)


def _print_requeue(d: Decision) -> None:
    """Seed 003: when each job evicted whole may run again, or that it is deactivated."""
    for name, state in sorted(d.requeue.items()):
        if not state.active:
            out.print(f"  requeue: {name} deactivated (eviction {state.count + 1} passes the limit)", markup=False)
        elif state.requeue_at is not None and state.evicted_at is not None:
            wait = format_duration(round(state.requeue_at - state.evicted_at))
            when = format_time(state.requeue_at)
            out.print(f"  requeue: {name} after {wait}, at {when} (eviction {state.count})", markup=False)


def _why_victim(cluster: Cluster, d: Decision, job: Job) -> str:
    me = cluster.snapshot.job(d.job)
    if d.action == "preempt":
        return f"same queue, priority {job.resolved_priority} < {me.resolved_priority}"
    rq, vq = cluster.tree.leveled_pair(me.queue, job.queue)
    requested: dict[str, int] = {}
    for task in me.tasks:
        if str(task.name) in d.placements:
            requested = add(requested, me.requests(task))
    held = cluster.usage[vq].allocated
    parts = []
    for resource, (threshold, kind) in guarantee_threshold(cluster, rq, vq, requested).items():
        have = held.get(resource, 0)
        parts.append(
            f"queue {vq} holds {format_quantity(resource, have)} {resource}, "
            f"{format_quantity(resource, have - threshold)} above its {kind} {format_quantity(resource, threshold)}"
        )
    return "; ".join(parts) or f"queue {vq} has no guaranteed quota in what {me.name} asks for"


def _names(tasks: tuple[str, ...]) -> str:
    return ", ".join(tasks) if len(tasks) <= 3 else f"{', '.join(tasks[:3])} (+{len(tasks) - 3} more)"


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
