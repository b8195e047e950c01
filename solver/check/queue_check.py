"""KAI's queue rows (docs/rules.md, "The reclaim gate", "The reclaim line", "The saturation rule"): limits and the
non-preemptible quota at every level, the reclaim gate and line, the parent-level saturation rule."""

from __future__ import annotations

from fractions import Fraction

from gpu_preempt.models import Job, Resources, format_quantity
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.quantity import add
from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.rules.reclaim_line import reclaim_line
from gpu_preempt.state.cluster import ClusterState

__all__ = ["check_queue_limits", "check_reclaim"]


def _freed_under(cluster: ClusterState, queue: str, taken: dict[str, list[str]]) -> Resources:
    freed: Resources = {}
    for name, tasks in taken.items():
        victim = cluster.snapshot.job(name)
        if queue in cluster.tree.upward(victim.queue):
            by_name = {str(t.name): t for t in victim.tasks}
            for task in tasks:
                freed = add(freed, victim.requests(by_name[task]))
    return freed


def check_queue_limits(cluster: ClusterState, job: Job, taken: dict[str, list[str]], placed: Resources) -> list[str]:
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
                    f"limit: queue {name} would hold {format_quantity(resource, after[resource])} {resource}, "
                    f"above its limit {format_quantity(resource, limit)}"
                )
            deserved = queue.quota_of(resource)
            if not job.is_preemptible and deserved is not None:
                held = usage.allocated_non_preemptible.get(resource, 0) + amount
                if held > deserved:
                    out.append(
                        f"non-preemptible quota: queue {name} would hold {format_quantity(resource, held)} {resource} "
                        f"(deserved {format_quantity(resource, deserved)})"
                    )
    return out


def check_reclaim(
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
                        f"guarantee: queue {vq} would keep {format_quantity(resource, after)} {resource}, "
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
    return ", ".join(f"{format_quantity(r, a)} {r}" for r, a in sorted(amounts.items()) if a) or "nothing"


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
