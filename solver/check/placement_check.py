"""The decision's chunk and where it lands (docs/rules.md, "Placement" and "Nominations"): pending tasks of the job,
the whole gang, schedulable nodes its placement accepts, one domain of a required topology; a claim on its nominated
nodes; nominations it overrides."""

from __future__ import annotations

from gpu_preempt.models import Job, Node
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState

__all__ = ["check_chunk", "check_claim", "check_overrides", "check_placement", "eligible_for"]


def check_chunk(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
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


def eligible_for(node: Node, job: Job) -> bool:
    """Whether ``job`` may place a new task on ``node`` (topology aside)."""
    return node.schedulable and _eligible(node, job) is None


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


def check_placement(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
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


def check_claim(cluster: ClusterState, job: Job, decision: Decision, nominated: dict[str, str | None]) -> list[str]:
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


def check_overrides(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
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
