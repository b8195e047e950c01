"""An independent check of any decision against the rules: plain Python, no solver, no model.

It re-derives everything from the cluster state and the rule modules, not from
the :class:`~gpu_preempt.problem.records.Problem` the solver saw, so a bug in building or
solving the model shows up here as a violation. Every check names the rule it
enforces:

* the job and its chunk: pending tasks of the job, all of the gang chunk placed
  (or exactly one more task for preempt/reclaim growth), schedulable nodes only;
* placement (docs/rules.md, "Placement"): every placement and move on a node
  whose labels and taints the job's selector, affinity and tolerations accept,
  and a job with a required topology inside one domain of its level;
* victims: running tasks of other jobs; whole job, or at most the surplus above
  ``min_available``;
* the action's rules: preempt (same leaf, strictly lower priority), reclaim
  (other leaves, the fair-share gate), preemptibility, min-runtime, toleration;
* capacity of every node, now for ``allocated`` and once releasing tasks leave
  for ``pipelined``; with shares of a GPU, of every device (docs/snapshot-format.md, "GPU sharing");
* queue limits and the non-preemptible quota at every level;
* the reclaim line, read ``strict`` (never below ``min(held, line)``) or
  ``last_chunk`` (above the line in some resource before the last chunk, the
  chunks re-derived from the victims' tasks), and the decision's notes of the
  queues it takes below their line; the parent-level saturation rule;
* the objective the decision reports, recomputed from its victims;
* nominations (docs/rules.md, "Nominations"): capacity held by every nomination the decision does
  not override; only lower-priority nominations overridden; a claim lands on
  the nominated nodes and evicts nothing;
* requeue states (docs/rules.md, "Requeue with backoff"), recomputed from the formula;
* KAI's task order (docs/rules.md, "Task order"): an elastic victim's tasks without an order go first, then the
  lowest order up;
* ``preemption_policy: Never``: such a job evicts and moves nothing;
* under ``config.policy: kueue``, Kueue's rules instead of KAI's reclaim and preempt (:mod:`.kueue_check`);
* the preemption delay (docs/rules.md, "Preemption delay"): a job within it does not reclaim or preempt;
* moves (docs/snapshot-format.md, "Moves"): only in preempt and reclaim with ``config.moves`` on,
  of running tasks of jobs the action may disturb (the reclaim line aside), to
  another schedulable node whose free room (every promise kept) takes them; a
  gang moves whole or not at all and is not also evicted; an elastic job keeps
  ``min_available`` tasks (kept or moved) unless evicted whole; a protected
  elastic job has at most its surplus evicted or moved.

Quota-enforcement decisions (docs/rules.md, "Quota enforcement") are checked by :mod:`gpu_preempt.check.quota_verifier`.
"""

from __future__ import annotations

from fractions import Fraction

from gpu_preempt.models import MILLI, Job, Node, Resources, format_quantity
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.duration import format_time
from gpu_preempt.models.quantity import add
from gpu_preempt.models.quota_decision import QuotaDecision
from gpu_preempt.models.sharing import counted_share
from gpu_preempt.rules.preemption_delay import delay_ends
from gpu_preempt.rules.protection import Action, protections
from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.rules.reclaim_line import reclaim_line
from gpu_preempt.state.cluster import ClusterState

from .kueue_check import check_kueue
from .objective_check import check_objective
from .quota_verifier import verify_quota
from .task_order import out_of_order

__all__ = ["verify", "verify_decisions"]


def verify(cluster: ClusterState, decision: Decision) -> list[str]:
    """Every rule the decision breaks, in words; an empty list when it is sound."""
    if isinstance(decision, QuotaDecision):
        # docs/rules.md, "Quota enforcement": for a queue, not a job
        return verify_quota(cluster, decision) + _requeue(cluster, decision)
    if not decision.placed:
        return [] if not decision.victims and not decision.placements else ["a decision that places nothing evicts"]
    snapshot = cluster.snapshot
    job = snapshot.job(decision.job)
    nominated = {str(t.name): cluster.node_of[str(t.name)] for t in cluster.tasks(job, "nominated")}
    if decision.placements and set(decision.placements) <= set(nominated):
        return _claim(cluster, job, decision, nominated) + _requeue(cluster, decision)
    problems: list[str] = []
    if not job.may_evict and (decision.victims or decision.moves):
        problems.append(f"preemption policy: {job.name}'s priority class says Never, yet the decision evicts or moves")
    ends = delay_ends(job)
    if decision.action != "allocate" and ends is not None and cluster.now < ends:
        problems.append(f"preemption delay: {job.name} may {decision.action} only from {format_time(ends)}")
    problems += _chunk(cluster, job, decision)
    problems += _placement(cluster, job, decision)
    problems += _overrides(cluster, job, decision)
    taken = _victims(cluster, job, decision, problems)
    problems += _moves(cluster, job, decision, taken)
    placed = _placed(job, decision)
    problems += _capacity(cluster, job, decision, taken)
    if snapshot.shared_jobs() or decision.devices:
        problems += _devices(cluster, job, decision, taken)
    problems += _quotas(cluster, job, taken, placed)
    if snapshot.config.policy == "kueue":
        problems += check_kueue(cluster, job, decision, placed)
    elif decision.action == "reclaim":
        problems += _reclaim(cluster, job, decision, taken, placed)
    problems += check_objective(cluster, decision)
    problems += _requeue(cluster, decision)
    return problems


def verify_decisions(decisions: list[Decision], states: list[ClusterState]) -> list[str]:
    """Every broken rule of a sequence of decisions, each checked in the state it was made in.

    Each line names its subject: ``job (action): rule``, or ``queue (enforce-quota): rule``.
    """
    out: list[str] = []
    for decision, state in zip(decisions, states, strict=True):
        subject = decision.queue if isinstance(decision, QuotaDecision) else decision.job
        out.extend(f"{subject} ({decision.action}): {problem}" for problem in verify(state, decision))
    return out


def _placed(job: Job, decision: Decision) -> Resources:
    total: Resources = {}
    tasks = {str(t.name): t for t in job.tasks}
    for name in decision.placements:
        total = add(total, job.requests(tasks[name]))
    return total


def _chunk(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
    out: list[str] = []
    pending = {str(t.name) for t in cluster.tasks(job, "pending")}
    for task, node in decision.placements.items():
        if task not in pending:
            out.append(f"gang: {task} is not a pending task of {job.name}")
        if not cluster.snapshot.node(node).schedulable:
            out.append(f"capacity: {task} placed on unschedulable node {node}")
    active = cluster.active_count(job)
    count = len(decision.placements)
    if active < job.gang_minimum and active + count < job.gang_minimum:
        out.append(f"gang: {count} task(s) placed but the gang needs {job.gang_minimum - active}")
    if decision.action != "allocate" and active >= job.gang_minimum and count != 1:
        out.append(f"gang: a satisfied job grows by one task per {decision.action}, not {count}")
    if count == 0:
        out.append("gang: nothing placed")
    return out


def _eligible(node: Node, job: Job) -> str | None:
    """Why ``job`` may not place a task on ``node`` by its selector, affinity and tolerations (docs/rules.md,
    "Placement"), or ``None``."""
    placement = job.placement
    taint = next((t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")), None)
    if placement is None:
        return None if taint is None else f"{node.name} has taint {taint}, which {job.name} does not tolerate"
    for key, value in placement.node_selector.items():
        if node.labels.get(key) != value:
            return f"{node.name} does not match the node selector {key}={value}"
    if placement.node_affinity and not any(
        term and all(e.matches(node.labels, node.name) for e in term) for term in placement.node_affinity
    ):
        return f"{node.name} matches no term of the node affinity"
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in placement.tolerations):
            return f"{node.name} has taint {taint}, which {job.name} does not tolerate"
    return None


def _domain_split(cluster: ClusterState, job: Job, new: dict[str, str]) -> str | None:
    """Why the job's tasks, after ``new`` (task -> node) lands, do not lie in one domain of its required topology
    level, or ``None``."""
    topology = job.placement.topology if job.placement is not None else None
    if topology is None or topology.required is None:
        return None
    level = topology.required
    holding = ("running", "allocated", "pipelined", "nominated")
    nodes = {str(t.name): cluster.node_of[str(t.name)] for t in job.tasks if cluster.status[str(t.name)] in holding}
    nodes.update(new)
    values = {cluster.snapshot.node(str(n)).labels.get(level) for n in nodes.values()}
    if None in values:
        return f"a task of {job.name} lies on a node without the label {level}"
    if len(values) > 1:
        return f"the tasks of {job.name} lie in {len(values)} domains of {level}: {', '.join(sorted(map(str, values)))}"
    return None


def _placement(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
    """Placements and moves land on nodes eligible for their jobs, inside one domain of a required topology."""
    out = []
    for task, node in decision.placements.items():
        why = _eligible(cluster.snapshot.node(node), job)
        if why is not None:
            out.append(f"placement: {task} placed on {node}: {why}")
    split = _domain_split(cluster, job, dict(decision.placements))
    if split is not None:
        out.append(f"placement: {split}")
    moved: dict[str, dict[str, str]] = {}
    for move in decision.moves:
        other = cluster.snapshot.job(move.job)
        why = _eligible(cluster.snapshot.node(move.node), other)
        if why is not None:
            out.append(f"placement: {move.task} moved to {move.node}: {why}")
        moved.setdefault(move.job, {})[move.task] = move.node
    for name, new in sorted(moved.items()):
        split = _domain_split(cluster, cluster.snapshot.job(name), new)
        if split is not None:
            out.append(f"placement: after the moves, {split}")
    return out


def _claim(cluster: ClusterState, job: Job, decision: Decision, nominated: dict[str, str | None]) -> list[str]:
    """The nominations design (docs/rules.md, "Nominations"): a job claiming its nominations lands exactly on its
    nominated nodes, evicting nothing."""
    out = [
        f"nomination: {task} was nominated for {nominated[task]}, not {node}"
        for task, node in decision.placements.items()
        if nominated[task] != node
    ]
    if decision.victims or decision.overrides:
        out.append("nomination: claiming a nomination evicts and overrides nothing")
    if decision.outcome == "allocated":
        by_name = {str(t.name): t for t in job.tasks}
        for node in sorted(set(decision.placements.values())):
            load = dict(cluster.current_load(node))
            for task in (t for t, n in decision.placements.items() if n == node):
                load = add(load, job.requests(by_name[task]))
            capacity = cluster.snapshot.node(node).resources
            if any(amount > capacity.get(r, 0) for r, amount in load.items()):
                out.append(f"capacity: 'allocated' on {node} but the nominated room is not free yet")
    return out


def _overrides(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
    """The nominations design (docs/rules.md, "Nominations"): only nominations of strictly lower priority may be
    overridden, and only real ones."""
    out: list[str] = []
    for override in decision.overrides:
        other = cluster.snapshot.job(override.job)
        promised = cluster.status.get(override.task) in ("pipelined", "nominated")
        if not promised or cluster.node_of.get(override.task) != override.node:
            out.append(f"nomination: {override.task} is not nominated for {override.node}")
        elif other.resolved_priority >= job.resolved_priority:
            out.append(
                f"nomination: {override.job} (priority {other.resolved_priority}) may not give way to "
                f"{job.name} (priority {job.resolved_priority})"
            )
    return out


def _victims(cluster: ClusterState, job: Job, decision: Decision, out: list[str]) -> dict[str, list[str]]:
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
        action: Action = (
            "reclaim" if decision.action == "reclaim" or (kueue and victim.queue != job.queue) else "preempt"
        )
        for p in protections(cluster, victim, job, action):
            if not p.surplus_only or whole:
                out.append(f"{p.rule}: {victim.name} is protected ({p.describe()})")
        taken[victim.name] = list(entry.tasks)
    return taken


def _moves(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
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
                out.append(f"moves: the tasks moved to {node} need {_q(resource, amount)} {resource} of free room")
    action: Action = "reclaim" if decision.action == "reclaim" else "preempt"
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


def _capacity(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
    snapshot = cluster.snapshot
    final: dict[str, Resources] = {n.name: dict(cluster.final_load(n.name)) for n in snapshot.nodes}
    current: dict[str, Resources] = {n.name: dict(cluster.current_load(n.name)) for n in snapshot.nodes}
    for name, tasks in taken.items():
        victim = snapshot.job(name)
        by_name = {str(t.name): t for t in victim.tasks}
        for task in tasks:
            host = str(cluster.node_of[task])
            final[host] = add(final[host], victim.requests(by_name[task]), times=-1)
    for move in decision.moves:  # a moved task leaves its node (once its old pod is gone) for its new one
        other = snapshot.job(move.job)
        spec = next((t for t in other.tasks if str(t.name) == move.task), None)
        if spec is not None and cluster.node_of.get(move.task) == move.source:
            final[move.source] = add(final[move.source], other.requests(spec), times=-1)
            final[move.node] = add(final[move.node], other.requests(spec))
    for override in decision.overrides:  # a nomination given way (checked in _overrides) no longer holds its node
        other = snapshot.job(override.job)
        spec = next((t for t in other.tasks if str(t.name) == override.task), None)
        if spec is not None and cluster.status[override.task] in ("pipelined", "nominated"):
            final[override.node] = add(final[override.node], other.requests(spec), times=-1)
    by_name = {str(t.name): t for t in job.tasks}
    for task, where in decision.placements.items():
        final[where] = add(final[where], job.requests(by_name[task]))
        current[where] = add(current[where], job.requests(by_name[task]))
    out: list[str] = []
    for node in snapshot.nodes:
        for resource, amount in final[node.name].items():
            if amount > node.resources.get(resource, 0):
                out.append(
                    f"capacity: node {node.name} would hold {_q(resource, amount)} {resource} "
                    f"(has {_q(resource, node.resources.get(resource, 0))})"
                )
        if decision.outcome == "allocated":
            for resource, amount in current[node.name].items():
                if amount > node.resources.get(resource, 0):
                    out.append(f"capacity: 'allocated' on {node.name} but {resource} is not free yet")
    return out


def _devices(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
    """docs/snapshot-format.md, "GPU sharing": every share placed names one device of its node; on every device the
    shares that stay and those placed sum to at most one GPU, and the whole GPUs fit the devices without shares; for
    ``allocated``, likewise with what the devices hold now. Re-counted from every task's status, node and device."""
    out: list[str] = []
    gone = {task for tasks in taken.values() for task in tasks} | {o.task for o in decision.overrides}
    moved = {m.task: m.node for m in decision.moves}
    final: dict[str, dict[int, int]] = {}
    now: dict[str, dict[int, int]] = {}
    before: dict[str, dict[int, int]] = {}  # what the devices hold before the decision, every promise kept
    whole_final: dict[str, int] = {}
    whole_now: dict[str, int] = {}
    whole_before: dict[str, int] = {}

    def hold(ledger: dict[str, dict[int, int]], node: str, devices: tuple[int, ...], amount: int) -> None:
        on = ledger.setdefault(node, {})
        for device in devices:
            on[device] = on.get(device, 0) + amount

    for other in cluster.snapshot.jobs:
        for task in other.tasks:
            name = str(task.name)
            state, node = cluster.status[name], cluster.node_of[name]
            if node is None or state == "pending":
                continue
            requests = other.requests(task)
            share = counted_share(other, requests)
            in_before = state in ("running", "allocated", "pipelined", "nominated")
            in_final = in_before and name not in gone
            in_now = state in ("running", "allocated", "releasing")
            lands = moved.get(name, node)  # a moved task holds its new place once its old pod is gone
            if share is None:
                gpus = requests.get("gpu", 0) // MILLI
                if in_final:
                    whole_final[lands] = whole_final.get(lands, 0) + gpus
                if in_now:
                    whole_now[node] = whole_now.get(node, 0) + gpus
                if in_before:
                    whole_before[node] = whole_before.get(node, 0) + gpus
                continue
            devices = cluster.task_devices.get(name) or (tuple(task.devices) if task.devices else ())
            if in_before:
                hold(before, node, devices, share)
            if state == "pipelined" and task.status == "running" and task.devices:
                hold(now, str(task.node), tuple(task.devices), share)  # moved earlier: its old pod is still there
            if in_final:
                if name in moved:
                    count = cluster.snapshot.node(lands).resources.get("gpu", 0) // MILLI
                    new = decision.devices.get(name, ())
                    if len(new) != other.gpu_devices or any(d >= count for d in new):
                        out.append(f"devices: the moved share {name} names devices {list(new)} of {lands}")
                    hold(final, lands, new, share)
                else:
                    hold(final, node, devices, share)
            if in_now:
                hold(now, node, devices, share)
    by_name = {str(t.name): t for t in job.tasks}
    for placed, where in decision.placements.items():
        requests = job.requests(by_name[placed])
        share = counted_share(job, requests)
        count = cluster.snapshot.node(where).resources.get("gpu", 0) // MILLI
        devices = decision.devices.get(placed, ())
        if share is None:
            if devices:
                out.append(f"devices: {placed} takes whole GPUs yet names devices")
            whole_final[where] = whole_final.get(where, 0) + requests.get("gpu", 0) // MILLI
            whole_now[where] = whole_now.get(where, 0) + requests.get("gpu", 0) // MILLI
            continue
        if len(set(devices)) != job.gpu_devices or len(devices) != job.gpu_devices or any(d >= count for d in devices):
            out.append(
                f"devices: the share {placed} names devices {list(devices)} of {where}, which has {count}; it takes "
                f"{job.gpu_devices} distinct"
            )
            continue
        hold(final, where, devices, share)
        hold(now, where, devices, share)
    out += _moved_onto_free_devices(cluster, decision, before, whole_before)
    ledgers = [("", final, whole_final)]
    if decision.outcome == "allocated":
        ledgers.append(("'allocated' but now ", now, whole_now))
    for when, shares, whole in ledgers:
        for spec_node in cluster.snapshot.nodes:
            name = spec_node.name
            on = shares.get(name, {})
            full = sorted(d for d, a in on.items() if a > MILLI)
            if full:
                out.append(f"devices: {when}device {full[0]} of {name} would hold {on[full[0]] / MILLI:g} GPUs")
            count = spec_node.resources.get("gpu", 0) // MILLI
            used = whole.get(name, 0) + sum(1 for a in on.values() if a)
            if used > count:
                out.append(
                    f"devices: {when}{name} would hold {whole.get(name, 0)} whole GPU(s) and shares on "
                    f"{sum(1 for a in on.values() if a)} device(s), more than its {count} devices"
                )
    return out


def _moved_onto_free_devices(
    cluster: ClusterState, decision: Decision, held: dict[str, dict[int, int]], whole: dict[str, int]
) -> list[str]:
    """docs/snapshot-format.md, "Moves": a moved task uses only free room, device by device: the shares moved to a
    device fit beside what it ``held`` before the decision (every promise kept), and the devices they open and the
    whole GPUs moved to a node are at most its devices free before the decision (``whole``: the whole GPUs held)."""
    if not decision.moves:
        return []
    arriving: dict[str, dict[int, int]] = {}
    opened: dict[str, int] = {}
    out = []
    for move in decision.moves:
        other = cluster.snapshot.job(move.job)
        spec = next((t for t in other.tasks if str(t.name) == move.task), None)
        if spec is None:
            continue
        share = counted_share(other, other.requests(spec))
        if share is None:
            opened[move.node] = opened.get(move.node, 0) + other.requests(spec).get("gpu", 0) // MILLI
            continue
        for device in decision.devices.get(move.task, ()):
            on = arriving.setdefault(move.node, {})
            on[device] = on.get(device, 0) + share
    for node, on in sorted(arriving.items()):
        for device, amount in sorted(on.items()):
            before = held.get(node, {}).get(device, 0)
            if before + amount > MILLI:
                out.append(f"moves: the shares moved to device {device} of {node} need {amount / MILLI:g} GPU free")
            if not before:
                opened[node] = opened.get(node, 0) + 1
    for node, count in sorted(opened.items()):
        devices = cluster.snapshot.node(node).resources.get("gpu", 0) // MILLI
        free = devices - whole.get(node, 0) - sum(1 for a in held.get(node, {}).values() if a)
        if count > free:
            out.append(f"moves: the tasks moved to {node} need {count} free device(s); it has {free}")
    return out


def _freed_under(cluster: ClusterState, queue: str, taken: dict[str, list[str]]) -> Resources:
    freed: Resources = {}
    for name, tasks in taken.items():
        victim = cluster.snapshot.job(name)
        if queue in cluster.tree.upward(victim.queue):
            by_name = {str(t.name): t for t in victim.tasks}
            for task in tasks:
                freed = add(freed, victim.requests(by_name[task]))
    return freed


def _quotas(cluster: ClusterState, job: Job, taken: dict[str, list[str]], placed: Resources) -> list[str]:
    out: list[str] = []
    for name in cluster.tree.upward(job.queue):
        queue = cluster.tree.queue(name)
        usage = cluster.usage[name]
        after = add(add(usage.allocated, _freed_under(cluster, name, taken), times=-1), placed)
        for resource, amount in placed.items():
            if amount <= 0:
                continue
            limit = queue.limit_of(resource)
            if limit is not None and after.get(resource, 0) > limit:
                out.append(
                    f"limit: queue {name} would hold {_q(resource, after[resource])} {resource}, "
                    f"above its limit {_q(resource, limit)}"
                )
            deserved = queue.quota_of(resource)
            if not job.is_preemptible and deserved is not None:
                held = usage.allocated_non_preemptible.get(resource, 0) + amount
                if held > deserved:
                    out.append(
                        f"non-preemptible quota: queue {name} would hold {_q(resource, held)} {resource} "
                        f"(deserved {_q(resource, deserved)})"
                    )
    return out


def _reclaim(
    cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]], placed: Resources
) -> list[str]:
    out: list[str] = []
    gate = reclaim_gate(cluster, job, placed)
    if gate is not None:
        out.append(f"reclaim gate: {gate}")
    tree = cluster.tree
    strict = cluster.snapshot.config.reclaim_guarantee == "strict"
    queues = {cluster.snapshot.job(name).queue for name in taken} - {job.queue}  # own queue: reported already
    leveled = {tree.leveled_pair(job.queue, queue) for queue in queues}
    below: set[tuple[str, str]] = set()
    for rq, vq in sorted(leveled):
        held = cluster.usage[vq].allocated
        freed = _freed_under(cluster, vq, taken)
        line = reclaim_line(cluster, rq, vq, placed)
        if strict:
            for resource in sorted(r for r, a in placed.items() if a > 0):
                have, after = held.get(resource, 0), held.get(resource, 0) - freed.get(resource, 0)
                if after < line.floor(resource, have):
                    out.append(
                        f"guarantee: queue {vq} would keep {_q(resource, after)} {resource}, "
                        f"below its {line.kind[resource]}"
                    )
            continue
        chunks = _chunks_under(cluster, vq, taken)
        if chunks and not any(
            line.amount.get(r) is not None and held.get(r, 0) - freed.get(r, 0) + chunk.get(r, 0) > line.amount[r]  # type: ignore[operator]
            for chunk in chunks
            for r in line.amount
        ):
            out.append(
                f"guarantee: queue {vq} is at or below its line in every resource before its last chunk "
                f"(last_chunk; holds {_shown(held)}, would keep {_shown(add(held, freed, times=-1))})"
            )
        for r, amount in line.amount.items():
            if amount is not None and freed.get(r, 0) > 0 and held.get(r, 0) - freed[r] < amount:
                below.add((vq, r))
    noted = {(b.queue, b.resource) for b in decision.below_line}
    if not strict and noted != below:
        out.append(f"below-line notes: the decision notes {sorted(noted)}, but {sorted(below)} go below their line")
    out += _saturation(cluster, job, taken, placed)
    return out


def _chunks_under(cluster: ClusterState, queue: str, taken: dict[str, list[str]]) -> list[Resources]:
    """The chunks taken from victims under ``queue`` (docs/rules.md, "The reclaim line"): a job that loses every
    running task
    gives its core (its first ``min_available`` running tasks) and each task after it; a peeled job, each task."""
    chunks: list[Resources] = []
    for name, tasks in taken.items():
        victim = cluster.snapshot.job(name)
        if queue not in cluster.tree.upward(victim.queue):
            continue
        running = cluster.tasks(victim, "running")
        if {str(t.name) for t in running} <= set(tasks):
            core: Resources = {}
            for task in running[: victim.gang_minimum]:
                core = add(core, victim.requests(task))
            chunks.append(core)
            chunks.extend(victim.requests(task) for task in running[victim.gang_minimum :])
        else:
            chunks.extend(victim.requests(task) for task in running if str(task.name) in tasks)
    return chunks


def _shown(amounts: Resources) -> str:
    return ", ".join(f"{_q(r, a)} {r}" for r, a in sorted(amounts.items()) if a) or "nothing"


def _saturation(cluster: ClusterState, job: Job, taken: dict[str, list[str]], placed: Resources) -> list[str]:
    """KAI's saturation rule (docs/rules.md, "The saturation rule"), re-derived: each queue on the reclaimer's path
    against each sibling that loses something."""
    tree = cluster.tree
    m = Fraction(cluster.snapshot.config.reclaimer_saturation_multiplier)
    out: list[str] = []
    for a in tree.upward(job.queue):
        mine_all = add(add(cluster.usage[a].allocated, _freed_under(cluster, a, taken), times=-1), placed)
        for s in tree.children(tree.parent(a)):
            if s == a:
                continue
            victims_s = [n for n in taken if s in tree.upward(cluster.snapshot.job(n).queue)]
            if not victims_s:
                continue
            freed_s = _freed_under(cluster, s, taken)
            involved = {r for r, x in freed_s.items() if x > 0} | {r for r, x in placed.items() if x > 0}
            for r in sorted(involved):
                share_a, share_s = cluster.shares[a].get(r, 0), cluster.shares[s].get(r, 0)
                mine = mine_all.get(r, 0)
                rest = cluster.usage[s].allocated.get(r, 0) - freed_s.get(r, 0)
                if share_s <= 0:
                    continue
                ratio_a = None if share_a == 0 else Fraction(mine, share_a)
                over = mine > 0 if ratio_a is None else ratio_a > 1
                if over and (ratio_a is None or m * ratio_a >= Fraction(rest, share_s)):
                    out.append(f"saturation: queue {a} ({r}) is more saturated than {s} would be")
    return out


def _requeue(cluster: ClusterState, decision: Decision) -> list[str]:
    """The requeue design (docs/rules.md, "Requeue with backoff"): each job evicted whole carries its next requeue
    state; nobody else does."""
    snapshot, now = cluster.snapshot, cluster.now
    policy = snapshot.config.requeue
    whole = {v.job for v in decision.victims if v.whole_job}
    extra = sorted(set(decision.requeue) - whole)
    problems = [f"requeue: {name} gets a requeue state but is not evicted whole" for name in extra]
    for name in sorted(whole):
        state = decision.requeue.get(name)
        if state is None:
            problems.append(f"requeue: {name} is evicted but gets no requeue state")
            continue
        before = snapshot.job(name).requeue
        count = 0 if before is None else before.count
        if state.evicted_at != now:
            problems.append(f"requeue: {name}: evicted_at is not now")
        if policy.backoff_limit_count is not None and count >= policy.backoff_limit_count:
            if state.active or state.requeue_at is not None or state.count != count:
                limit = policy.backoff_limit_count
                problems.append(f"requeue: {name}: eviction {count + 1} passes the limit {limit}: deactivate")
            continue
        delay = min(policy.backoff_base * 2.0 ** min(count, 64), policy.backoff_max)
        at = state.requeue_at
        if not state.active or state.count != count + 1:
            problems.append(f"requeue: {name}: expected an active requeue with count {count + 1}")
        elif at is None or not now + delay <= at <= now + delay * 1.0001 + 0.001:
            problems.append(f"requeue: {name}: requeue_at is not now + {delay:g}s with at most 0.01% jitter")
    return problems


def _q(resource: str, amount: int) -> str:
    return format_quantity(resource, amount)
