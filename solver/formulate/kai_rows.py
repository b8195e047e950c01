"""KAI's rows of a problem: queue limits and the non-preemptible quota at every level of the job's path, the reclaim
line of each leveled victim queue (:mod:`gpu_preempt.rules.reclaim_line`) and the parent-level saturation rule."""

from __future__ import annotations

from fractions import Fraction

from gpu_preempt.models import Job, Resources, Task
from gpu_preempt.problem.records import (
    GuaranteeRow,
    LimitRow,
    SaturationRow,
    Victim,
)
from gpu_preempt.rules.reclaim_line import reclaim_line
from gpu_preempt.state.cluster import ClusterState

from .chunk import requested

__all__ = ["limit_rows", "line_rows", "saturation_rows", "victims_by_leaf", "victims_under"]


def victims_under(cluster: ClusterState, queue: str, by_leaf: dict[str, list[int]]) -> tuple[int, ...]:
    """Indices of the victims (``by_leaf``: per leaf queue, from :func:`_by_leaf`) whose leaf queue is ``queue`` or lies
    below it."""
    found = [v for leaf in cluster.tree.leaves_under(queue) for v in by_leaf.get(leaf, ())]
    return tuple(sorted(found))


def victims_by_leaf(victims: tuple[Victim, ...]) -> dict[str, list[int]]:
    """Per leaf queue, the indices of its victims."""
    out: dict[str, list[int]] = {}
    for v, victim in enumerate(victims):
        out.setdefault(victim.queue, []).append(v)
    return out


def limit_rows(
    cluster: ClusterState, job: Job, victims: tuple[Victim, ...], chunk: list[tuple[Task, bool]]
) -> tuple[LimitRow, ...]:
    most = requested(job, [t for t, _ in chunk])
    rows = []
    by_leaf = victims_by_leaf(victims)
    for name in cluster.tree.upward(job.queue):
        queue = cluster.tree.queue(name)
        usage = cluster.usage[name]
        for resource in sorted(r for r, a in most.items() if a > 0):
            limit = queue.limit_of(resource)
            if limit is not None:
                headroom = limit - usage.allocated.get(resource, 0)
                if headroom < most[resource]:
                    under = victims_under(cluster, name, by_leaf)
                    rows.append(LimitRow(name, resource, headroom, under, "limit", limit))
            deserved = queue.quota_of(resource)
            if not job.is_preemptible and deserved is not None:
                headroom = deserved - usage.allocated_non_preemptible.get(resource, 0)
                if headroom < most[resource]:
                    rows.append(LimitRow(name, resource, headroom, (), "non-preemptible quota", deserved))
    return tuple(rows)


def line_rows(
    cluster: ClusterState, job: Job, victims: tuple[Victim, ...], chunk: Resources
) -> tuple[GuaranteeRow, ...]:
    """The reclaim line of each leveled victim queue (docs/snapshot-format.md, "Reclaim"), as
    ``config.reclaim_guarantee`` reads it.

    ``strict``: a row per resource the chunk asks for, where the victims could take the queue below
    ``min(held, line)``. ``last_chunk``: a row per resource the queue holds above its line; none for a queue
    that stays above in some resource however much it loses (it may lose anything).
    """
    strict = cluster.snapshot.config.reclaim_guarantee == "strict"
    leveled: dict[str, str] = {}
    for victim in victims:
        rq, vq = cluster.tree.leveled_pair(job.queue, victim.queue)
        leveled[vq] = rq
    rows: list[GuaranteeRow] = []
    by_leaf = victims_by_leaf(victims)
    for vq, rq in sorted(leveled.items()):
        members = victims_under(cluster, vq, by_leaf)
        held = cluster.usage[vq].allocated
        line = reclaim_line(cluster, rq, vq, chunk)

        def most(resource: str, members: tuple[int, ...] = members) -> int:
            return sum(s.count * s.requests.get(resource, 0) for v in members for s in victims[v].slots)

        if strict:
            for resource in sorted(r for r, a in chunk.items() if a > 0):
                row = GuaranteeRow(
                    vq, resource, held.get(resource, 0), line.amount.get(resource), line.kind[resource], members
                )
                if most(resource) > row.max_take:
                    rows.append(row)
            continue
        group: list[GuaranteeRow] = []
        for resource in line.above(held):
            amount = line.amount[resource]
            assert amount is not None
            if held[resource] - most(resource) > amount:
                group = []
                break  # above in this resource whatever is taken: the queue's line never binds
            group.append(GuaranteeRow(vq, resource, held[resource], amount, line.kind[resource], members))
        rows.extend(group)
    return tuple(rows)


def saturation_rows(
    cluster: ClusterState, job: Job, victims: tuple[Victim, ...], chunk: Resources
) -> tuple[SaturationRow, ...]:
    """KAI's saturation rule (docs/rules.md, "The saturation rule"): each queue ``a`` on the reclaimer's path against
    each sibling ``s`` holding candidates."""
    tree = cluster.tree
    multiplier = Fraction(cluster.snapshot.config.reclaimer_saturation_multiplier)
    rows = []
    by_leaf = victims_by_leaf(victims)
    for a in tree.upward(job.queue):
        under_a = victims_under(cluster, a, by_leaf)
        for s in tree.children(tree.parent(a)):
            under_s = victims_under(cluster, s, by_leaf)
            if s == a or not under_s:
                continue
            held = {r for v in under_s for slot in victims[v].slots for r, x in slot.requests.items() if x > 0}
            for resource in sorted(held | {r for r, x in chunk.items() if x > 0}):
                share_a = cluster.shares[a].get(resource, 0)
                share_s = cluster.shares[s].get(resource, 0)
                mine = cluster.usage[a].allocated.get(resource, 0) + chunk.get(resource, 0)
                if (
                    share_s == 0
                    or (not under_a and share_a > 0 and mine <= share_a)
                    or (share_a == 0 and mine == 0 and not under_a)
                ):
                    continue
                rows.append(
                    SaturationRow(
                        a=a,
                        s=s,
                        resource=resource,
                        mine_base=mine,
                        victims_a=under_a,
                        held_s=cluster.usage[s].allocated.get(resource, 0),
                        victims_s=under_s,
                        share_a=share_a,
                        share_s=share_s,
                        multiplier=multiplier,
                        requested=chunk.get(resource, 0) > 0,
                    )
                )
    return tuple(rows)
