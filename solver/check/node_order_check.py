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

from typing import Any

from gpu_preempt.models import MILLI, Job, Node, Resources, Snapshot, is_gpu_resource
from gpu_preempt.models.decision import Decision
from gpu_preempt.rules.victim_order import keep_order
from gpu_preempt.state.cluster import ClusterState

from .placement_check import eligible_for

__all__ = ["check_move_order", "check_node_order"]


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


def check_move_order(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
    """Each moved task lands where KAI's node order puts it (docs/rules.md, "Node order"): the moved jobs taken in
    the order KAI gives victims their places back (the most worth keeping first), each task on the node, of those
    eligible for its job whose room after the decision and free room before it take it, with KAI's best score,
    ties by node name; the later jobs see where the order landed the earlier ones. Not checked with shares of a GPU
    (their devices decide), for a job whose moved tasks have several shapes or that asks for a topology, or when the
    order cannot land them all (the decision then found another packing)."""
    snapshot = cluster.snapshot
    if not decision.moves or snapshot.shared_jobs():
        return []
    priority = job.resolved_priority
    room: dict[str, dict[str, int]] = {}
    free: dict[str, dict[str, int]] = {}
    for node in snapshot.nodes:
        final, held = cluster.room_load(node.name, priority), cluster.final_load(node.name)
        room[node.name] = {r: node.resources.get(r, 0) - final.get(r, 0) for r in {*node.resources, *final}}
        free[node.name] = {r: node.resources.get(r, 0) - held.get(r, 0) for r in {*node.resources, *held}}

    def take(rooms: dict[str, dict[str, int]], node: str, requests: Resources, sign: int) -> None:
        for r, a in requests.items():
            rooms[node][r] = rooms[node].get(r, 0) + sign * a

    jobs = {*taken, *(m.job for m in decision.moves)}
    tasks_of = {name: {str(t.name): t for t in snapshot.job(name).tasks} for name in jobs}
    for name, tasks in taken.items():
        for task in tasks:
            take(room, str(cluster.node_of[task]), snapshot.job(name).requests(tasks_of[name][task]), 1)
    for move in decision.moves:
        take(room, move.source, snapshot.job(move.job).requests(tasks_of[move.job][move.task]), 1)
    own = {str(t.name): t for t in job.tasks}
    for task, host in decision.placements.items():
        take(room, host, job.requests(own[task]), -1)
    moved: dict[str, list[Any]] = {}
    for move in decision.moves:
        moved.setdefault(move.job, []).append(move)
    names = sorted(moved)
    out: list[str] = []
    for at in keep_order(cluster, names):
        other = snapshot.job(names[at])
        moves = moved[other.name]
        shapes = {tuple(sorted(other.requests(tasks_of[other.name][m.task]).items())) for m in moves}
        topology = other.placement.topology if other.placement is not None else None
        sources = {m.source for m in moves}
        landed: dict[str, int] = {}
        for m in moves:
            landed[m.node] = landed.get(m.node, 0) + 1
        if len(shapes) == 1 and len(sources) == 1 and topology is None:
            request = dict(next(iter(shapes)))
            expected = _landing(snapshot, other, request, sources.pop(), len(moves), room, free)
            if expected is None:
                return []  # the order cannot land them all: the decision found another packing
            if landed != expected:
                want = ", ".join(f"{n} x{c}" for n, c in sorted(expected.items()))
                got = ", ".join(f"{n} x{c}" for n, c in sorted(landed.items()))
                out.append(f"node order: KAI's order moves {other.name}'s task(s) to {want}; the decision to {got}")
            for host, count in expected.items():  # the next jobs see where the order lands these
                take(room, host, {r: a * count for r, a in request.items()}, -1)
                take(free, host, {r: a * count for r, a in request.items()}, -1)
            continue
        for m in moves:  # not checked: the next jobs see where these landed
            requests = other.requests(tasks_of[other.name][m.task])
            take(room, m.node, requests, -1)
            take(free, m.node, requests, -1)
    return out


def _landing(
    snapshot: Snapshot,
    job: Job,
    request: Resources,
    source: str,
    count: int,
    room: dict[str, dict[str, int]],
    free: dict[str, dict[str, int]],
) -> dict[str, int] | None:
    """Where KAI's order lands ``count`` tasks of ``job`` asking for ``request`` moved off ``source``, one at a time
    (``None`` if it cannot land them all); ``room`` and ``free`` are not changed."""
    asked = {r: a for r, a in request.items() if a > 0}
    weigh = next((r for r in asked if is_gpu_resource(r)), "cpu")
    strategy = snapshot.config.placement_strategy
    how = strategy.gpu if weigh != "cpu" else strategy.cpu
    left = {n: dict(r) for n, r in room.items()}
    open_ = {n: dict(r) for n, r in free.items()}
    expected: dict[str, int] = {}

    def score(node: Node) -> tuple[int, float]:
        have = node.resources.get(weigh, 0)
        cpu_node = int(weigh == "cpu" and not any(a > 0 and is_gpu_resource(r) for r, a in node.resources.items()))
        if have <= 0:
            return cpu_node, float("-inf")
        spare = left[node.name].get(weigh, 0)
        return cpu_node, (spare / (have // MILLI if weigh != "cpu" else have) if how == "spread" else -spare)

    for _ in range(count):
        fitting = [
            n
            for n in snapshot.nodes
            if n.name != source
            and eligible_for(n, job)
            and all(left[n.name].get(r, 0) >= a and open_[n.name].get(r, 0) >= a for r, a in asked.items())
        ]
        if not fitting:
            return None
        top = max(score(n) for n in fitting)
        best = min((n for n in fitting if score(n) == top), key=lambda n: n.name)
        expected[best.name] = expected.get(best.name, 0) + 1
        for r, a in asked.items():
            left[best.name][r] = left[best.name].get(r, 0) - a
            open_[best.name][r] = open_[best.name].get(r, 0) - a
    return expected
