"""Decisions: ``solve`` (one pending job), ``cycle`` (every pending job), ``enforce-quota``.

The engine (and OR-Tools with it) is imported inside each command, so that ``--help`` and the commands that do not
solve start fast.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from gpu_preempt.models import read_document
from gpu_preempt.models.decision import CYCLE_ACTIONS, Protected
from gpu_preempt.models.load.loader import is_json

from .app import (
    WRITTEN,
    FileArg,
    ForceOpt,
    JsonOpt,
    SolverOpt,
    TimeOpt,
    TimingOpt,
    VerifyOpt,
    WorkersOpt,
    check_file_out,
    command,
    hold_until_exit,
    job_to_decide,
    snapshot_to_solve,
    usage_error,
    write_file,
)
from .render import err, out, print_decision

if TYPE_CHECKING:
    from gpu_preempt.actions.cycle import CycleResult
    from gpu_preempt.models.decision import Decision
    from gpu_preempt.state.cluster import ClusterState

__all__ = ["ExplainOpt", "cycle", "enforce_quota", "solve"]


@command(example="gpu-preempt solve fixtures/example-cluster.yaml --job serving-new --verify")
def solve(
    file: FileArg,
    job: Annotated[str, typer.Option("--job", metavar="NAME", help="the pending job to decide for")],
    action: Annotated[
        Literal["auto", "allocate", "reclaim", "preempt"],
        typer.Option("--action", help="auto tries allocate, then reclaim, then preempt"),
    ] = "auto",
    solver: SolverOpt = "cpsat",
    as_json: JsonOpt = False,
    verify_: VerifyOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
    timing: TimingOpt = True,
    explain: ExplainOpt = "matter",
) -> None:
    """Decide for one pending job: victims, placements, and why."""
    snapshot = snapshot_to_solve(file, as_json, workers, time_limit)
    from gpu_preempt.actions.cycle import final_decision, solve_one
    from gpu_preempt.actions.protection_matters import remember_candidates
    from gpu_preempt.state.cluster import ClusterState

    chosen = job_to_decide(snapshot, job)
    cluster = ClusterState.of(snapshot)
    hold_until_exit(cluster)
    if explain == "matter":  # the second decision, of the jobs that matter, starts from the first one's candidates
        remember_candidates(cluster)
    tried = solve_one(cluster, chosen, action, solver=solver)
    decision = final_decision(tried)
    if as_json:
        document = {
            "jobs": _jobs_after(
                cluster, decision, [job, *[v.job for v in decision.victims], *[m.job for m in decision.moves]]
            ),
            "decisions": [_decision_json(cluster, decision, explain, timing)],
        }
        if action == "auto":
            document["attempts"] = [{"action": d.action, "outcome": d.outcome, "reason": d.reason} for d in tried]
        print(json.dumps(document, indent=2))
    else:
        if action == "auto" and len(tried) > 1:
            for d in tried:
                if d is not decision:
                    out.print(f"{d.action}: {d.outcome}" + (f" ({d.reason})" if d.reason else ""))
        _print_with_protected(cluster, decision, explain)
    if verify_:
        _verify_all([decision], [cluster])


@command(example="gpu-preempt cycle fixtures/example-cluster.yaml --next-snapshot next.yaml")
def cycle(
    file: FileArg,
    actions: Annotated[
        str | None,
        typer.Option(
            "--actions",
            metavar="A,B,...",
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
    explain: ExplainOpt = "matter",
    next_file: Annotated[
        Path | None,
        typer.Option(
            "--next-snapshot",
            metavar="FILE",
            help="write the snapshot this cycle leaves (bound tasks running, pipelined ones nominated, victims "
            "releasing, requeue states) to this file: YAML, or JSON for a .json name",
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Run one scheduling cycle over all pending jobs (allocate, reclaim, preempt; enforce-quota first if on)."""
    chosen = None if actions is None else _actions(actions)
    if next_file is not None:
        check_file_out("--next-snapshot", next_file, force)
    snapshot = snapshot_to_solve(file, as_json, workers, time_limit)
    from gpu_preempt.actions.cycle import run_cycle

    result = run_cycle(snapshot, chosen, solver=solver)
    hold_until_exit(result)
    if next_file is not None:
        _write_next(file, next_file, result)
    if as_json:
        document = result.to_dict(timing=timing)
        document["decisions"] = [
            _decision_json(state, d, explain, timing) for state, d in zip(result.states, result.decisions, strict=True)
        ]
        print(json.dumps(document, indent=2))
    else:
        placed = [d for d in result.decisions if d.placed]
        evicted = sum(len(v.tasks) for d in result.decisions if d.changes() for v in d.victims)
        out.print(
            f"{file}: {len(result.decisions)} decision(s); {len(placed)} job(s) placed, {evicted} task(s) evicted",
        )
        for state, decision in zip(result.states, result.decisions, strict=True):
            if decision.outcome == "skipped" and decision.reason == "no pending tasks":
                continue
            _print_with_protected(state, decision, explain)
    if verify_:
        _verify_all(result.decisions, result.states)


@command("enforce-quota", example="gpu-preempt enforce-quota fixtures/quota-leaf-successful.yaml")
def enforce_quota(
    file: FileArg,
    queue: Annotated[
        str | None,
        typer.Option("--queue", metavar="NAME", help="only this queue (default: every queue above its limit)"),
    ] = None,
    as_json: JsonOpt = False,
    verify_: VerifyOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
    timing: TimingOpt = True,
) -> None:
    """Bring queues above their limit back within it by preemption, deepest queues first."""
    snapshot = snapshot_to_solve(file, as_json, workers, time_limit)
    from gpu_preempt.actions.quota_enforcement import enforce, enforcement_order
    from gpu_preempt.state.cluster import ClusterState

    names = [q.name for q in snapshot.queues]
    if queue is not None and queue not in names:
        err.print(f"error: --queue: unknown queue '{queue}' (queues: {', '.join(names[:10])})")
        raise typer.Exit(2)
    cluster = ClusterState.of(snapshot)
    decisions: list[Decision] = []
    states: list[ClusterState] = []
    for name in [queue] if queue is not None else enforcement_order(cluster):
        decision = enforce(cluster, name)
        decisions.append(decision)
        states.append(cluster)
        cluster = cluster.with_changes(decision.changes(), decision.devices)
    if as_json:
        touched = [v.job for d in decisions for v in d.victims]
        document = {"jobs": _job_states(cluster, touched), "decisions": [d.to_dict(timing=timing) for d in decisions]}
        print(json.dumps(document, indent=2))
    else:
        evicted = sum(len(v.tasks) for d in decisions for v in d.victims)
        out.print(f"{file}: {len(decisions)} queue decision(s); {evicted} task(s) evicted")
        for state, made in zip(states, decisions, strict=True):
            print_decision(state, made)
    if verify_:
        _verify_all(decisions, states)


ExplainOpt = Annotated[
    Literal["matter", "all", "counts"],
    typer.Option(
        "--explain",
        help="protected jobs: those the optimum would have taken but for their protection (matter), every one (all), "
        "or only how many each rule shields (counts)",
    ),
]


def _protected_shown(cluster: ClusterState, decision: Decision, explain: str) -> list[Protected]:
    """The protected jobs ``--explain`` lists (docs/snapshot-format.md, "Commands and output")."""
    if explain == "all":
        return decision.protected
    if explain == "counts" or not decision.protected:
        return []
    from gpu_preempt.actions.protection_matters import taken_but_for_protection

    matter = set(taken_but_for_protection(cluster, cluster.snapshot.job(decision.job), decision))
    return [p for p in decision.protected if p.job in matter]


def _protected_counts(decision: Decision) -> dict[str, int]:
    return dict(sorted(Counter(p.rule for p in decision.protected).items()))


def _decision_json(cluster: ClusterState, decision: Decision, explain: str, timing: bool) -> dict[str, Any]:
    """A decision's JSON with its protected jobs as ``--explain`` says: counts by rule and the total always."""
    shown = {p.job for p in _protected_shown(cluster, decision, explain)}
    kept = [p for p in decision.protected if p.job in shown]  # written out: a large cluster shields 100,000s
    document = dataclasses.replace(decision, protected=kept).to_dict(timing=timing)
    document["protected_counts"] = _protected_counts(decision)
    document["protected_total"] = len({p.job for p in decision.protected})
    return document


def _print_with_protected(cluster: ClusterState, decision: Decision, explain: str) -> None:
    """:func:`print_decision`, its protected jobs as ``--explain`` says, and how many each rule shields."""
    shown = _protected_shown(cluster, decision, explain)
    print_decision(cluster, dataclasses.replace(decision, protected=shown))
    if decision.protected and explain != "all":
        jobs = len({p.job for p in decision.protected})
        counts = ", ".join(f"{n} by {rule}" for rule, n in _protected_counts(decision).items())
        which = "shown: those the optimum would take but for it; " if explain == "matter" else ""
        out.print(f"  protected: {jobs} job(s) ({counts}); {which}--explain all lists every one")


def _actions(text: str) -> list[str]:
    """``--actions``: names from :data:`CYCLE_ACTIONS`, at least one (exit 2 otherwise)."""
    chosen = [a.strip() for a in text.split(",") if a.strip()]
    if not chosen:
        usage_error("--actions", f"name at least one of {', '.join(CYCLE_ACTIONS)}")
    for name in chosen:
        if name not in CYCLE_ACTIONS:
            usage_error("--actions", f"'{name}' is not one of {', '.join(CYCLE_ACTIONS)}")
    return chosen


def _write_next(source: Path, target: Path, result: CycleResult) -> None:
    """The state the cycle leaves, as a snapshot to feed the next cycle (YAML, or JSON for a ``.json`` name)."""
    import yaml

    from gpu_preempt.actions.next_snapshot import next_snapshot

    document = next_snapshot(read_document(source), result)
    if is_json(target):  # read back as JSON by the next cycle
        text = json.dumps(document, indent=2) + "\n"
    else:
        text = f"{WRITTEN} cycle --next-snapshot\n" + yaml.safe_dump(document, sort_keys=False, width=120)
    write_file("--next-snapshot", target, text)


def _job_states(cluster: ClusterState, names: list[str]) -> dict[str, Any]:
    """Each job's tasks after the decisions: status and node, and the devices of a share of a GPU placed."""

    def state(name: str) -> dict[str, Any]:
        found: dict[str, Any] = {"status": cluster.status[name], "node": cluster.node_of[name]}
        if name in cluster.task_devices and found["status"] != "pending":
            found["devices"] = list(cluster.task_devices[name])
        return found

    return {
        name: {"tasks": {str(t.name): state(str(t.name)) for t in cluster.snapshot.job(name).tasks}}
        for name in dict.fromkeys(names)
    }


def _jobs_after(cluster: ClusterState, decision: Decision, names: list[str]) -> dict[str, Any]:
    """:func:`_job_states` after ``decision``, read for these jobs' tasks alone (a whole state derived for a few
    jobs would copy a large cluster's maps)."""
    from gpu_preempt.state.derive import landed

    changed = {task: (status, node) for task, status, node in decision.changes()}
    devices = {**cluster.task_devices, **decision.devices}
    found: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        job = cluster.snapshot.job(name)
        statuses, nodes = cluster.task_statuses(job), cluster.task_nodes(job)
        tasks: dict[str, Any] = {}
        for task in map(str, (t.name for t in job.tasks)):
            status, node = statuses[task], nodes[task]
            if task in changed:
                status, node = changed[task][0], landed(changed[task][0], node, changed[task][1])
            tasks[task] = {"status": status, "node": node}
            if task in devices and status != "pending":
                tasks[task]["devices"] = list(devices[task])
        found[name] = {"tasks": tasks}
    return found


def _verify_all(decisions: list[Decision], states: list[ClusterState]) -> None:
    """``--verify``: re-check every decision in the state it was made in; list every broken rule and exit 1."""
    from gpu_preempt.check.verifier import verify_decisions

    failures = verify_decisions(decisions, states)
    if failures:
        for failure in failures:
            err.print(f"verify: {failure}")
        raise typer.Exit(1)
    err.print(f"verify: {len(decisions)} decision(s) re-checked, all sound")
