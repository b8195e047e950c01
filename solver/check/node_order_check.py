"""KAI's node order (docs/rules.md, "Node order"), recomputed from KAI's own scores: the tasks a decision places go,
once its victims are gone, where KAI would put them one at a time.

Each node that takes the task scores 100 when the task fits in its idle room (``nodeavailability``), 10 for a task
without GPUs on a node without GPUs (``resourcetype``), and ``nodeplacement``'s score: binpack 9 x (1 - (free -
min) / (max - min)) over the nodes that take the task (9 when all are equal, 0 on a node without the resource),
spread free / count; the highest total wins, ties by node name. Not checked where the placement is part of the
objective (moves, a preferred topology level), with shares of a GPU (their devices decide, and the fixtures check
them), for tasks of several shapes, or when that order cannot place every task the decision places (the decision
then found another packing).
"""

from __future__ import annotations

from gpu_preempt.models import MILLI, Job, Node, Resources, is_gpu_resource
from gpu_preempt.models.decision import Decision
from gpu_preempt.state.cluster import ClusterState

from .placement_check import eligible_for

__all__ = ["check_node_order"]


def check_node_order(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
    snapshot = cluster.snapshot
    topology = job.placement.topology if job.placement is not None else None
    if not decision.placements or decision.moves or snapshot.shared_jobs():
        return []
    if topology is not None and topology.preferred is not None:
        return []
    priority = job.resolved_priority
    candidates = [n for n in snapshot.nodes if eligible_for(n, job)]
    if topology is not None and topology.required is not None:
        level = topology.required
        chosen = {snapshot.node(n).labels.get(level) for n in decision.placements.values()}
        candidates = [n for n in candidates if n.labels.get(level) in chosen]
    room: dict[str, dict[str, int]] = {}
    idle: dict[str, dict[str, int]] = {}
    for node in candidates:
        final, now = cluster.room_load(node.name, priority), cluster.current_load(node.name)
        names = {*node.resources, *final, *now}
        room[node.name] = {r: node.resources.get(r, 0) - final.get(r, 0) for r in names}
        idle[node.name] = {r: node.resources.get(r, 0) - now.get(r, 0) for r in names}
    for name, tasks in taken.items():
        victim = snapshot.job(name)
        by_name = {str(t.name): t for t in victim.tasks}
        for task in tasks:
            host = cluster.node_of[task]
            if host in room:
                for r, a in victim.requests(by_name[task]).items():
                    room[host][r] = room[host].get(r, 0) + a
    by_name = {str(t.name): t for t in job.tasks}
    kinds: dict[tuple[tuple[str, int], ...], list[str]] = {}
    for task in decision.placements:
        kinds.setdefault(tuple(sorted(job.requests(by_name[task]).items())), []).append(task)
    if len(kinds) > 1:
        return []  # tasks of several shapes: the decision may pack them otherwise
    strategy = snapshot.config.placement_strategy
    expected: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    for kind in sorted(kinds, key=lambda k: sorted((a for _, a in k), reverse=True), reverse=True):
        request = dict(kind)
        weigh = next((r for r, a in request.items() if a > 0 and is_gpu_resource(r)), "cpu")
        how = strategy.gpu if weigh != "cpu" else strategy.cpu
        for _ in kinds[kind]:
            fitting = [n for n in candidates if all(room[n.name].get(r, 0) >= a for r, a in request.items() if a > 0)]
            if not fitting:
                return []  # this order cannot place them all: the decision packed them otherwise
            frees = [room[n.name].get(weigh, 0) for n in fitting if n.resources.get(weigh, 0) > 0]
            low, high = (min(frees), max(frees)) if frees else (0, 0)

            def score(
                node: Node,
                request: Resources = request,
                weigh: str = weigh,
                how: str = how,
                low: int = low,
                high: int = high,
            ) -> float:
                name, have = node.name, node.resources
                total = 100.0 if all(idle[name].get(r, 0) >= a for r, a in request.items() if a > 0) else 0.0
                if weigh == "cpu" and not any(a > 0 and is_gpu_resource(r) for r, a in have.items()):
                    total += 10
                free, amount = room[name].get(weigh, 0), have.get(weigh, 0)
                if amount <= 0:
                    return total
                if how == "spread":
                    return total + free / (amount // MILLI if weigh != "cpu" else amount)
                return total + (9.0 if high == low else 9 * (1 - (free - low) / (high - low)))

            scores = {n.name: score(n) for n in fitting}
            top = max(scores.values())
            best = min((n for n in fitting if scores[n.name] == top), key=lambda n: n.name)
            expected.setdefault(kind, {})[best.name] = expected.get(kind, {}).get(best.name, 0) + 1
            for r, a in request.items():
                room[best.name][r] = room[best.name].get(r, 0) - a
                idle[best.name][r] = idle[best.name].get(r, 0) - a
    out = []
    for kind, tasks in kinds.items():
        placed: dict[str, int] = {}
        for task in tasks:
            placed[decision.placements[task]] = placed.get(decision.placements[task], 0) + 1
        if placed != expected.get(kind, {}):
            want = ", ".join(f"{n} x{c}" for n, c in sorted(expected.get(kind, {}).items()))
            got = ", ".join(f"{n} x{c}" for n, c in sorted(placed.items()))
            out.append(f"node order: KAI's order places {len(tasks)} task(s) on {want}; the decision on {got}")
    return out
