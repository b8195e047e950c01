"""Victims and moves against the action's rules (docs/rules.md, "Candidates"; docs/snapshot-format.md, "Moves"):
running tasks of other jobs, whole or within the surplus, in the task order; moved tasks to free room."""

from __future__ import annotations

from gpu_preempt.models import Job, Resources, format_quantity
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.quantity import add
from gpu_preempt.models.sharing import counted_share
from gpu_preempt.rules.protection import EvictingAction, protections
from gpu_preempt.state.cluster import ClusterState

from .task_order import out_of_order

__all__ = ["check_moves", "taken_victims"]


def taken_victims(cluster: ClusterState, job: Job, decision: Decision, out: list[str]) -> dict[str, list[str]]:
    """Checks each victim against the action's rules; returns victim job -> evicted task names."""
    taken: dict[str, list[str]] = {}
    kueue = cluster.snapshot.config.policy == "kueue"  # checked by check_kueue
    if decision.action == "allocate" and decision.victims:
        out.append("allocate: evicts nothing, yet the decision has victims")
    for entry in decision.victims:
        victim = cluster.snapshot.job(entry.job)
        running = {str(t.name) for t in cluster.tasks(victim, "running")}
        if victim.name == job.name:
            out.append(f"victims: {job.name} cannot evict itself")
        bad = [t for t in entry.tasks if t not in running]
        if bad:
            out.append(f"victims: {', '.join(bad)} of {victim.name} are not running")
        lost = len(set(entry.tasks) & running)
        whole = lost == len(running)
        surplus = max(0, len(running) - victim.gang_minimum)
        if entry.whole_job != whole:
            out.append(f"victims: {victim.name} marked whole_job={entry.whole_job} but loses {lost} of {len(running)}")
        if not whole and lost > surplus:
            out.append(f"gang: {victim.name} would keep {len(running) - lost} tasks, below min_available")
        if not whole:
            broken = out_of_order(victim.name, cluster.tasks(victim, "running"), entry.tasks)
            if broken is not None:
                out.append(broken)
        if decision.action == "preempt" and not kueue:
            if victim.queue != job.queue:
                out.append(f"preempt: {victim.name} is in queue {victim.queue}, not {job.queue}")
            if victim.resolved_priority >= job.resolved_priority:
                out.append(
                    f"preempt: {victim.name} has priority {victim.resolved_priority}, not below {job.resolved_priority}"
                )
        if decision.action == "reclaim" and victim.queue == job.queue:
            out.append(f"reclaim: {victim.name} is in the reclaimer's own queue")
        action: EvictingAction = (
            "reclaim" if decision.action == "reclaim" or (kueue and victim.queue != job.queue) else "preempt"
        )
        for p in protections(cluster, victim, job, action):
            if not p.surplus_only or whole:
                out.append(f"{p.rule}: {victim.name} is protected ({p.describe()})")
        taken[victim.name] = list(entry.tasks)
    return taken


def check_moves(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
    """docs/snapshot-format.md, "Moves": each move is allowed and lands on free room; the moved jobs keep their
    gangs."""
    if not decision.moves:
        return []
    snapshot = cluster.snapshot
    out: list[str] = []
    if not snapshot.config.moves or decision.action not in ("preempt", "reclaim"):
        return [f"moves: a {decision.action} decision moves nothing here (config.moves: {snapshot.config.moves})"]
    moved: dict[str, list[str]] = {}
    arriving: dict[str, Resources] = {}
    for move in decision.moves:
        other = snapshot.job(move.job)
        spec = next((t for t in other.tasks if str(t.name) == move.task), None)
        if spec is None or cluster.status[move.task] != "running" or cluster.node_of[move.task] != move.source:
            out.append(f"moves: {move.task} is not a task of {move.job} running on {move.source}")
            continue
        if move.task in taken.get(move.job, []):
            out.append(f"moves: {move.task} is both evicted and moved")
        same = move.node == move.source
        if other.gpu_devices > 1:  # docs/rules.md, "GPU sharing"
            out.append(f"moves: {move.task} takes its share on several devices: it is evicted or stays, never moved")
        if same and counted_share(other, other.requests(spec)) is not None:  # may change devices on its own node
            same = decision.devices.get(move.task) in (None, tuple(spec.devices or ()))
        if same or not snapshot.node(move.node).schedulable:
            out.append(f"moves: {move.task} cannot move from {move.source} to {move.node}")
        moved.setdefault(move.job, []).append(move.task)
        if move.node != move.source:  # a share on another device of its node: the devices are checked in _devices
            arriving[move.node] = add(arriving.get(move.node, {}), other.requests(spec))
    for node, load in sorted(arriving.items()):
        capacity, held = snapshot.node(node).resources, cluster.final_load(node)
        for resource, amount in sorted(load.items()):
            if amount > 0 and held.get(resource, 0) + amount > capacity.get(resource, 0):
                need = format_quantity(resource, amount)
                out.append(f"moves: the tasks moved to {node} need {need} {resource} of free room")
    action: EvictingAction = "reclaim" if decision.action == "reclaim" else "preempt"
    for name, tasks in sorted(moved.items()):
        other = snapshot.job(name)
        running = cluster.running_count(other)
        evicted = len(taken.get(name, []))
        if name == job.name:
            out.append(f"moves: {name} cannot move itself")
        if action == "preempt" and (other.queue != job.queue or other.resolved_priority >= job.resolved_priority):
            out.append(f"moves: {name} is not a preempt candidate of {job.name}")
        if action == "reclaim" and other.queue == job.queue:
            out.append(f"moves: {name} is in the reclaimer's own queue")
        found = protections(cluster, other, job, action)
        if any(not p.surplus_only for p in found):
            out.append(f"moves: {name} is protected ({found[0].describe()})")
        elif found and len(tasks) + evicted > max(0, running - other.gang_minimum):
            out.append(f"moves: {name} is protected; only its surplus may be evicted or moved")
        if running <= other.gang_minimum and (len(tasks) != running or evicted):
            out.append(f"moves: the gang {name} moves all its {running} tasks or none, and is not also evicted")
        if evicted == running and tasks:
            out.append(f"moves: {name} is evicted whole yet has tasks moved")
    return out
