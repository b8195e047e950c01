"""Everything the commands print for people: summaries, decisions, victims tables, the inventory.

One place for the consoles (``out`` for results, ``err`` for errors and
progress) and for every table, so the commands stay thin and look alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from gpu_preempt.models import (
    Job,
    SnapshotError,
    format_duration,
    format_quantity,
    format_resources,
    format_time,
    is_gpu_resource,
)
from gpu_preempt.models.decision import Decision, VictimTasks
from gpu_preempt.models.quantity import add
from gpu_preempt.models.quota_decision import QuotaDecision

if TYPE_CHECKING:
    from gpu_preempt.explain.summary import Summary
    from gpu_preempt.inventory.nvml import Inventory
    from gpu_preempt.planning.run_sweep import SweepResult
    from gpu_preempt.questions import Audit, Forecast, RiskReport, WhatIf
    from gpu_preempt.state.cluster import ClusterState

__all__ = [
    "KINDS",
    "PERCENTILES",
    "PROTECTED_ROWS",
    "PROTECTED_SHOWN",
    "SHOWN_PROBLEMS",
    "VICTIM_ROWS",
    "err",
    "other_kind",
    "out",
    "print_audit",
    "print_decision",
    "print_decision_brief",
    "print_forecast",
    "print_inventory",
    "print_problems",
    "print_risk",
    "print_simulation",
    "print_summary",
    "print_sweep",
    "print_whatif",
]

# Names, reasons and messages are printed as they are: no rich markup (a queue "team[gpu]" lost its "[gpu]" as a
# style tag) and no emoji codes.
out = Console(highlight=False, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)
if not out.is_terminal:  # piped output: do not squeeze tables into 80 columns
    out.width = 160

PROTECTED_SHOWN = 8
"""Protected jobs listed one by one in human output; beyond that, a count per rule."""

VICTIM_ROWS = 50
"""Rows of a decision's victims table (and its requeue lines); beyond that, a count: the greedy baseline on a large
cluster evicts hundreds of jobs, and rich lays out a long table more slowly than the decision is made."""

PROTECTED_ROWS = 50
"""Rows of the protected-jobs table of ``validate``; beyond that, a count per rule (a table of a large cluster's
thousands of rows takes rich seconds to lay out and nobody reads it)."""


def print_summary(file: Path, s: Summary) -> None:
    models = ", ".join(f"{n} x {m}" for m, n in sorted(s.gpus_by_model.items()))
    out.print(f"{file}: valid snapshot")
    out.print(
        f"nodes: {s.nodes} ({s.schedulable_nodes} schedulable); GPUs: {s.gpus}" + (f" ({models})" if models else "")
    )
    out.print(f"capacity: {format_resources(s.capacity) or 'none'}")
    jobs = ", ".join(f"{n} {status}" for status, n in s.jobs.items())
    tasks = ", ".join(f"{n} {status}" for status, n in s.tasks.items())
    out.print(f"jobs: {jobs} (tasks: {tasks})")
    if s.policy == "kueue":
        _print_kueue_queues(s)
    else:
        _print_kai_queues(s)
    if not s.protected:
        out.print("protected jobs: none")
        return
    protected = Table(title="protected jobs", title_justify="left")
    for column in ("job", "queue", "rule", "until", "why"):
        protected.add_column(column)
    for p in s.protected[:PROTECTED_ROWS]:
        protected.add_row(p.job, p.queue, p.rule, p.until or "forever", p.detail)
    out.print(protected)
    if len(s.protected) > PROTECTED_ROWS:
        rules = Counter(p.rule for p in s.protected)
        summary = ", ".join(f"{n} by {rule}" for rule, n in sorted(rules.items()))
        shielded = len({p.job for p in s.protected})
        out.print(
            f"protected: {len(s.protected)} rows in all, {shielded} jobs ({summary}); the first {PROTECTED_ROWS} are "
            "shown, --json lists every one",
        )


def _print_kai_queues(s: Summary) -> None:
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


def _print_kueue_queues(s: Summary) -> None:
    """Kueue's ClusterQueues and Cohorts (docs/rules.md, "Kueue's preemption"): quotas, usage, what is available."""
    table = Table(title="queues (Kueue: ClusterQueues and Cohorts)", title_justify="left", show_lines=False)
    for column in ("queue", "nominal", "borrowing limit", "lending limit", "usage", "available"):
        table.add_column(column)
    for row in s.queues:
        found = row.kueue or {}
        name = "  " * row.depth + row.name + ("" if row.leaf else "/")
        table.add_row(
            name,
            format_resources(found.get("nominal", {})) or "0",
            format_resources(found.get("borrowing_limit", {})) or "unlimited",
            format_resources(found.get("lending_limit", {})) or "-",
            format_resources(found.get("usage", {})) or "0",
            format_resources(found.get("available", {})) or "0",
        )
    out.print(table)


def _quota_resources(s: Summary) -> tuple[str, ...]:
    """Resources worth a column: GPUs, and whatever some queue sets a quota or limit on (--json has all)."""
    named = {r for row in s.queues for r in (*row.deserved, *row.limit)}
    return tuple(r for r in s.capacity if is_gpu_resource(r) or r in named) or tuple(named)


def print_decision(cluster: ClusterState, d: Decision) -> None:
    from gpu_preempt.explain.reasons import why_victim  # with the engine: imported when a decision is shown

    if isinstance(d, QuotaDecision):
        _print_quota(cluster, d)
        return
    status = {True: "optimal", False: "not proved optimal"}[d.optimal] if d.placed else ""
    head = f"{d.job}: {d.action} -> {d.outcome}"
    if d.placed:
        head += f" ({status}, {d.solver}, {d.solve_ms:.1f} ms)"
    out.print(head)
    if d.reason:
        out.print(f"  reason: {d.reason}")
    if d.victims:
        _print_victims(cluster, d, "why it may go", lambda job, v: why_victim(cluster, d, job), ", ".join)
    for m in d.moves:
        device = _on_device(d, m.task)
        out.print(f"  moved: {m.task} ({m.job}) from {m.source} to {m.node}{device}, pipelined there")
    if d.placements:
        nodes: dict[str, list[str]] = {}
        for task, node in d.placements.items():
            nodes.setdefault(node, []).append(task + _on_device(d, task))
        placed = "; ".join(f"{node}: {', '.join(tasks)}" for node, tasks in nodes.items())
        out.print(f"  placements: {placed}")
    if d.placed and (d.victims or d.moves):
        obj = d.objective
        levels = ", ".join(f"{n} at priority {p}" for p, n in zip(d.priority_levels, obj["priority"], strict=True) if n)
        moved = f", {obj['moves']} task(s) moved" if obj.get("moves") else ""
        spread = f", {obj['domains']} topology domain(s) used" if "domains" in obj else ""
        out.print(
            f"  objective: {obj['jobs']} job(s){f' ({levels})' if levels else ''}, {obj['tasks']} task(s), "
            f"{_lost(obj)}{moved}{spread}",
        )
    for b in d.below_line:
        out.print(
            f"  below its line: queue {b.queue} keeps {format_quantity(b.resource, b.after)} {b.resource} of its "
            f"{b.kind} {format_quantity(b.resource, b.line)} ({b.rule}: above its line in {b.above} before its "
            "last chunk)",
        )
    _print_requeue(d)
    shown = d.protected if len(d.protected) <= PROTECTED_SHOWN else d.protected[:PROTECTED_SHOWN]
    for p in shown:
        out.print(f"  protected: {p.job}: {p.reason}")
    if len(shown) < len(d.protected):
        rules = Counter(p.rule for p in d.protected)
        summary = ", ".join(f"{n} by {rule}" for rule, n in sorted(rules.items()))
        out.print(f"  protected: {len(d.protected)} jobs in all ({summary}); --json lists every one")


def _print_quota(cluster: ClusterState, d: QuotaDecision) -> None:
    head = f"queue {d.queue}: {d.action} -> {d.outcome}"
    if d.evicts:
        head += f" ({'optimal' if d.optimal else 'not proved optimal'}, {d.solve_ms:.1f} ms)"
    out.print(head)
    for resource, q in d.resources.items():
        line = f"  {resource}: usage {format_quantity(resource, q.usage)}, limit {format_quantity(resource, q.limit)}"
        if q.tolerated != q.limit:
            line += f", tolerated {format_quantity(resource, q.tolerated)}"
        if d.evicts:
            line += f" -> {format_quantity(resource, q.after)} after"
        out.print(line)
    if d.reason:
        out.print(f"  reason: {d.reason}")
    if d.victims:

        def frees(job: Job, v: VictimTasks) -> str:
            freed: dict[str, int] = {}
            for task in job.tasks:
                if str(task.name) in v.tasks:
                    freed = add(freed, job.requests(task))
            return format_resources(freed, only=tuple(d.resources))

        _print_victims(cluster, d, "frees", frees, _names)
        obj = d.objective
        out.print(f"  objective: {obj['jobs']} job(s), {obj['tasks']} task(s), {_lost(obj)}")
    _print_requeue(d)
    for p in d.protected[:PROTECTED_SHOWN]:
        out.print(f"  protected: {p.job}: {p.reason}")
    if len(d.protected) > PROTECTED_SHOWN:
        out.print(f"  protected: {len(d.protected)} jobs in all; --json lists every one")


def _print_victims(
    cluster: ClusterState,
    d: Decision,
    last: str,
    describe: Callable[[Job, VictimTasks], str],
    names: Callable[[tuple[str, ...]], str],
) -> None:
    """The victims table: who goes, from which queue, at which priority, and a last column ``last``."""
    table = Table(title="  victims", title_justify="left")
    for column in ("job", "queue", "priority", "tasks", "evicted", last):
        table.add_column(column)
    for v in d.victims[:VICTIM_ROWS]:
        job = cluster.snapshot.job(v.job)
        evicted = "whole job" if v.whole_job else "surplus above min_available"
        table.add_row(v.job, job.queue, str(job.resolved_priority), names(v.tasks), evicted, describe(job, v))
    out.print(table)
    if len(d.victims) > VICTIM_ROWS:
        tasks = sum(len(v.tasks) for v in d.victims)
        out.print(
            f"  victims: {len(d.victims)} jobs in all, {tasks} tasks; the first {VICTIM_ROWS} are shown, --json lists "
            "every one",
        )


def _print_requeue(d: Decision) -> None:
    """The requeue design (docs/rules.md, "Requeue with backoff"): when each job evicted whole may run again, or that
    it is deactivated."""
    states = sorted(d.requeue.items())
    for name, state in states[:VICTIM_ROWS]:
        if not state.active:
            out.print(f"  requeue: {name} deactivated (eviction {state.count + 1} passes the limit)")
        elif state.requeue_at is not None and state.evicted_at is not None:
            wait = format_duration(round(state.requeue_at - state.evicted_at))
            when = format_time(state.requeue_at)
            out.print(f"  requeue: {name} after {wait}, at {when} (eviction {state.count})")
    if len(states) > VICTIM_ROWS:
        out.print(f"  requeue: {len(states)} jobs in all; --json lists every one")


def _names(tasks: tuple[str, ...]) -> str:
    return ", ".join(tasks) if len(tasks) <= 3 else f"{', '.join(tasks[:3])} (+{len(tasks) - 3} more)"


def print_inventory(found: Inventory) -> None:
    if not found.devices:
        out.print(f"no GPUs: {found.reason}")
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
        out.print(f"note: {note}")


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


SHOWN_PROBLEMS = 50
"""The most problems listed; a file with thousands of bad entries says how many more there are."""


KINDS = (
    ("snapshot", ("nodes", "jobs"), "gpu-preempt cycle, solve or validate"),
    ("scenario", ("cluster", "workload"), "gpu-preempt simulate"),
    ("sweep file", ("scenario", "grid"), "gpu-preempt sweep"),
    ("sweep file", ("scenario", "points"), "gpu-preempt sweep"),
)
"""Each kind of file a command reads: the top-level keys that give it away, and the commands that read it."""


def other_kind(path: Path, expected: str) -> str | None:
    """When ``path`` (refused as a ``expected``) holds the top-level keys of another kind of file: a line saying
    which, and the command that reads it."""
    from gpu_preempt.models import read_document

    try:
        document = read_document(path)
    except SnapshotError:
        return None
    if not isinstance(document, dict):
        return None
    for kind, keys, commands in KINDS:
        if kind != expected and all(key in document for key in keys):
            return (
                f"hint: {path} looks like a {kind} (it has {' and '.join(f'{k}:' for k in keys)}): {commands} reads it"
            )
    return None


def print_problems(headline: str, problems: list[Any]) -> None:
    """An input error on stderr: the headline with the number of problems, then one problem a line."""
    err.print(f"error: {headline} ({len(problems)} problem(s)):")
    for problem in problems[:SHOWN_PROBLEMS]:
        err.print(f"  {problem}")
    if len(problems) > SHOWN_PROBLEMS:
        err.print(f"  ... and {len(problems) - SHOWN_PROBLEMS} more")


PERCENTILES = ("p50", "p90", "p95", "p99")
"""The percentiles of a time every output gives."""


def print_simulation(scenario: Path, folder: Path, s: dict[str, Any]) -> None:
    """The human summary of a replay: waits and preemptions per queue (and per GPU model, when jobs draw one), then
    the cluster-wide figures."""
    window = s["arrivals"]
    load, busy = window["offered_load"], window["utilisation"]
    out.print(
        f"{scenario}: {s['overall']['jobs']} jobs over {s['span_h']:.1f} simulated hours on {s['gpus']} GPUs "
        f"(time_scale {s['time_scale']:g}); while jobs arrive (0 to {window['window_h']:.1f} h): offered load "
        f"{'-' if load is None else f'{load:.2f}'}, utilisation {'-' if busy is None else f'{busy:.3f}'}"
    )
    groups = [("queue", [*s["queues"].items(), ("all", s["overall"])])]
    if s.get("gpu_models"):
        groups.append(("GPU model", list(s["gpu_models"].items())))
    for title, rows in groups:
        table = Table(title=None)
        for name in (title, "jobs", "completed", *(f"wait {p}" for p in PERCENTILES), "JCT p50", "preempted jobs"):
            table.add_column(name, justify="left" if name == title else "right")
        for name, figures in rows:
            wait, jct = figures["wait"], figures["jct"]
            table.add_row(
                name,
                str(figures["jobs"]),
                str(figures["completed"]),
                *(_span(wait[p]) for p in PERCENTILES),
                _span(jct["p50"]),
                str(figures["preempted_jobs"]),
            )
        out.print(table)
    hours, pre, solver = s["gpu_hours"], s["preemptions"], s["solver"]
    proved = solver["proved_optimal_share"]
    out.print(
        f"over the whole replay: utilisation {s['utilisation']:.3f}, goodput {hours['goodput']:,.1f} GPU-h, "
        f"lost {hours['lost']:,.1f} GPU-h; "
        f"{pre['total']} preemptions ({pre['per_1000_gpu_hours']} per 1,000 GPU-h, at most {pre['max_per_job']} "
        f"of one job), {pre['moves']} moves; Jain's index {s['fairness']['jain_index']}"
    )
    partly = s.get("fragmentation", {})
    if partly.get("max_gpus"):
        out.print(
            f"GPUs partly used by shares (they cannot host a whole-GPU task): {partly['mean_gpus']:g} on average, "
            f"{partly['max_gpus']} at most"
        )
    out.print(
        f"solver {solver['name']}: {solver['cycles']} cycles, {solver['decisions']} decisions, "
        f"{solver['victim_decisions']} victim searches, "
        f"{'-' if proved is None else f'{proved:.1%}'} proved optimal; "
        f"{len(s['unfinished'])} unfinished job(s); files in {folder}"
    )


def _span(seconds: float | None) -> str:
    return "-" if seconds is None else format_duration(round(seconds))


def print_sweep(folder: Path, result: SweepResult) -> None:
    from gpu_preempt.planning.table import FIGURES

    """The sweep's table: one row per run (its axes, then the figures operators compare first), then the target."""
    rows = result.rows
    figures = ("wait.p50", "wait.p95", "preemptions", "lost_gpu_h", "utilisation", "jain_index")
    axes = [k for k in rows[0] if k not in FIGURES and k != "run"] if rows else []
    table = Table(title=None)
    for name in ("run", *(a.removeprefix("simulation.") for a in axes), *figures):
        table.add_column(name, justify="right")
    for row in rows:
        shown = [_span(row[f]) if f.startswith("wait") else _number(row[f]) for f in figures]
        table.add_row(str(row["run"]), *(str(row[a]) for a in axes), *shown)
    out.print(table)
    for search in result.searches or []:
        setting = ", ".join(f"{p.removeprefix('simulation.')}={v}" for p, v in search.setting) or "all runs"
        if search.met_at_largest:
            worst = _span(search.worst) if str(result.target).startswith(("wait", "jct")) else _number(search.worst)
            what = f"smallest {result.plan.sweep.size_axis()} = {search.smallest} ({worst} at worst over seeds)"
        else:
            what = "not met even at the largest size"
        probes = " ".join(str(p) for p in search.probes)
        out.print(f"target {result.target}: {setting}: {what}; probed {probes}")
        size = result.plan.sweep.size_axis()
        skipped = search.not_run([int(v) for v in result.plan.sweep.grid[size]]) if size is not None else []
        if skipped:
            out.print(f"  listed, not run: {'; '.join(skipped)}")
    cached = len(rows) - result.replayed
    out.print(f"{len(rows)} run(s): {result.replayed} replayed, {cached} from the cache; files in {folder}")


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _on_device(decision: Decision, task: str) -> str:
    """`` (device 3)`` for a share of a GPU placed or moved (docs/snapshot-format.md, "GPU sharing"), else ``""``."""
    found = decision.devices.get(task)
    if not found:
        return ""
    return f" (device{'s' if len(found) > 1 else ''} {', '.join(map(str, found))})"


def _lost(objective: dict[str, Any]) -> str:
    """The work a decision's victims lose, in words: GPU-seconds, and the CPU-seconds of victims without GPUs."""
    cpu = objective.get("lost_cpu_work")
    return f"{objective['lost_work']:g} GPU-seconds lost" + (f", {cpu:g} CPU-seconds" if cpu else "")


def print_audit(file: Path, found: Audit) -> None:
    """``audit``: a line of totals, then one row per decision of the scheduler held against the minimum, then what
    the state of an observed preemption could not be rebuilt from."""
    t = found.totals()
    no_room = f", {t['no room']} making no room" if t["no room"] else ""
    out.print(
        f"{file}: {t['decisions']} decision(s) of {found.by} against the minimum: {t['over-eviction']} "
        f"over-evicting, {t['missed']} missed, {t['minimal']} minimal{no_room}; beyond the minimum {t['extra_jobs']} "
        f"job(s), {t['extra_tasks']} task(s), {t['extra_gpu_hours']:g} GPU-hour(s); {t['stray_victims']} victim(s) "
        "freed for no one"
    )
    for line in found.not_audited:
        out.print(line)
    if not found.findings:
        return
    table = Table(title=None)
    verb = "evicts" if found.by.endswith("search") else "evicted"
    for header in ("job", "action", "finding", f"{found.by} {verb}", "the minimum evicts", "extra"):
        table.add_column(header)
    for f in found.findings:
        extra = f"{f.extra_jobs} job(s), {f.extra_tasks} task(s), {f.extra_gpu_hours:g} GPU-h"
        if f.stray:
            extra += f"; freed for no one: {', '.join(f.stray)}"
        searched = _evicts(f.search) if f.search.placed else _victims(f.search) + " (no room made)"
        table.add_row(f.job, f.action, f.kind, searched, _evicts(f.exact), extra)
    out.print(table)
    for f in found.findings:
        for line in f.broken:
            out.print(f"{f.job}: {found.by}'s decision breaks: {line}")
        for line in f.notes:
            out.print(f"{f.job}: state before: {line}")


def _victims(decision: Decision) -> str:
    return ", ".join(v.job for v in decision.victims) or "nothing"


def _evicts(decision: Decision) -> str:
    """A decision's victims in a cell: ``-`` when it places nothing."""
    if not decision.placed:
        return f"- ({decision.outcome})"
    if not decision.victims:
        return "nothing"
    return ", ".join(v.job if v.whole_job else f"{v.job} ({len(v.tasks)} task(s))" for v in decision.victims)


def print_whatif(file: Path, answer: WhatIf) -> None:
    """``whatif``: the decision the job would get now, then the variants that run when it would not."""
    decision = answer.decision
    verdict = "runs now" if decision.placed else "does not run now"
    out.print(f"{file}: {answer.job} {verdict}")
    for tried in answer.tried[:-1]:
        out.print(f"{tried.action}: {tried.outcome} ({tried.reason})" if tried.reason else tried.action)
    print_decision_brief(decision)
    if decision.placed:
        return
    if not answer.variants:
        out.print("no variant runs: fewer GPUs or tasks, another queue or GPU model, no topology, later")
        return
    table = Table(title="variants that run")
    for header in ("change", "action", "evicts", "placements"):
        table.add_column(header)
    for v in answer.variants:
        placements = ", ".join(sorted({n for n in v.decision.placements.values()}))
        table.add_row(v.change, f"{v.decision.action} -> {v.decision.outcome}", _evicts(v.decision), placements)
    out.print(table)


def print_decision_brief(d: Decision) -> None:
    """One decision in two lines: action, outcome, victims and placements, or why it places nothing."""
    if d.placed:
        nodes = ", ".join(f"{t}: {n}" for t, n in sorted(d.placements.items()))
        out.print(f"{d.job}: {d.action} -> {d.outcome}; evicts {_evicts(d)}; places {nodes}")
    else:
        out.print(f"{d.job}: {d.action} -> {d.outcome}" + (f" ({d.reason})" if d.reason else ""))


def print_risk(file: Path, found: RiskReport) -> None:
    """``risk``: the running jobs by the smallest request that takes them, then those no request searched takes."""
    out.print(
        f"{file}: {len(found.ranked)} running job(s) at risk, by the smallest request that makes each a victim "
        f"({found.decisions} request(s) decided, up to {found.searched_up_to} GPUs)"
    )
    table = Table(title=None)
    for header in ("job", "queue", "priority", "smallest request that takes it", "protected now by"):
        table.add_column(header)
    for r in [*found.ranked, *found.unranked]:
        if r.request is None:
            request = f"none up to {found.searched_up_to} GPUs"
        else:
            p = r.request
            tasks = "" if p.tasks == 1 else f" in {p.tasks} tasks"
            request = f"{p.gpus} GPU(s){tasks} from {p.queue} at priority {p.priority} ({r.action})"
        table.add_row(r.job, r.queue, str(r.priority), request, "; ".join(r.protections) or "-")
    out.print(table)


def print_forecast(file: Path, found: Forecast) -> None:
    """``forecast``: each pending job's start, P50 and P90 over the seeds, then the jobs preempted on the way."""
    out.print(f"{file}: {len(found.pending)} pending job(s), {found.seeds} replay(s) from the snapshot")
    table = Table(title=None)
    for header in ("job", "starts in (P50)", "P90", "started in"):
        table.add_column(header)
    for p in found.pending:
        started = sum(1 for s in p.starts if s is not None)
        shown = [("-" if v is None else format_duration(round(v))) for v in (p.p50, p.p90)]
        table.add_row(p.job, shown[0], shown[1], f"{started} of {found.seeds} replays")
    out.print(table)
    if found.preempted:
        said = ", ".join(f"{job} ({n} of {found.seeds})" for job, n in sorted(found.preempted.items()))
        out.print(f"preempted on the way: {said}")
