"""The independent check of an ``enforce-quota`` decision (docs/rules.md, "Quota enforcement"): plain Python, no
solver, no model.

Re-derived from the snapshot and the cluster state alone (not from the rule
module or the problem the solver saw):

* the timer: the switch is on, the delay is positive and has passed since
  ``limit_changed_at``; otherwise nothing may be evicted;
* victims: running tasks of preemptible jobs in leaves under the queue that
  free some resource the queue holds above its limit; each loses all its
  running tasks or at most its surplus above ``min_available``;
* the limit: after the eviction, usage is within the limit in every resource
  that was over it (``enforced``), or within ``floor(limit * (1 + quota_miss))``
  (``partial``, only with ``quota_miss`` > 0; with ``best_effort`` any partial set); with
  ``quota_overshoot: never``, never below the limit in a resource that was over it (``partial``: any such set);
* the guarantee: no queue of the whole tree ends below ``min(usage, deserved)``
  in any resource with a finite ``deserved``;
* the numbers the decision reports (usage before and after, limit, tolerated)
  and its objective, recomputed from its victims.
"""

from __future__ import annotations

from decimal import Decimal

from gpu_preempt.models import MILLI, Resources, format_quantity, is_gpu_resource
from gpu_preempt.models.quantity import add
from gpu_preempt.models.quota_decision import QuotaDecision
from gpu_preempt.state.cluster import ClusterState

from .objective_check import check_objective
from .task_order import out_of_order

__all__ = ["verify_quota"]


def verify_quota(cluster: ClusterState, decision: QuotaDecision) -> list[str]:
    """Every rule the quota decision breaks, in words; an empty list when it is sound."""
    snapshot = cluster.snapshot
    if decision.queue not in {q.name for q in snapshot.queues}:
        return [f"enforce-quota: unknown queue {decision.queue}"]
    if decision.outcome not in ("enforced", "partial"):
        return ["enforce-quota: evicts without enforcing"] if decision.victims else []
    problems = _timer(cluster, decision.queue)
    freed_by_leaf = _victims(cluster, decision, problems)
    problems += _limit(cluster, decision, freed_by_leaf)
    problems += _guarantees(cluster, freed_by_leaf)
    problems += check_objective(cluster, decision)
    return problems


def _timer(cluster: ClusterState, queue: str) -> list[str]:
    snapshot = cluster.snapshot
    spec = next(q for q in snapshot.queues if q.name == queue)
    if not snapshot.config.quota_preemption_enabled:
        return ["timer: quota_preemption_enabled is false"]
    if spec.quota_preemption_delay <= 0 or spec.limit_changed_at is None:
        return [f"timer: queue {queue} has no quota preemption delay running"]
    if snapshot.now < spec.limit_changed_at + spec.quota_preemption_delay:
        return [f"timer: the delay of queue {queue} has not passed"]
    return []


def _subtree_leaves(cluster: ClusterState, queue: str) -> set[str]:
    parent = {q.name: q.parent for q in cluster.snapshot.queues}
    out = set()
    for name in parent:
        current: str | None = name
        while current is not None and current != queue:
            current = parent[current]
        if current == queue:
            out.add(name)
    return out


def _victims(cluster: ClusterState, decision: QuotaDecision, out: list[str]) -> dict[str, Resources]:
    """Checks each victim; returns leaf queue -> resources freed there."""
    inside = _subtree_leaves(cluster, decision.queue)
    spec = cluster.tree.queue(decision.queue)
    usage = cluster.usage[decision.queue].allocated
    over = {r for r, limit in spec.limit.items() if limit >= 0 and usage.get(r, 0) > limit}
    freed: dict[str, Resources] = {}
    for entry in decision.victims:
        job = cluster.snapshot.job(entry.job)
        running = [t for t in job.tasks if cluster.status[str(t.name)] == "running"]
        names = {str(t.name) for t in running}
        if job.queue not in inside:
            out.append(f"victims: {job.name} is in queue {job.queue}, not under {decision.queue}")
        if not job.is_preemptible:
            out.append(f"victims: {job.name} is not preemptible")
        bad = [t for t in entry.tasks if t not in names]
        if bad:
            out.append(f"victims: {', '.join(bad)} of {job.name} are not running")
        if len(set(entry.tasks)) != len(entry.tasks):
            out.append(f"victims: {job.name} lists a task twice")
        lost = len(set(entry.tasks) & names)
        whole = lost == len(running)
        if entry.whole_job != whole:
            out.append(f"victims: {job.name} marked whole_job={entry.whole_job} but loses {lost} of {len(running)}")
        if not whole and lost > max(0, len(running) - job.gang_minimum):
            out.append(f"gang: {job.name} would keep {len(running) - lost} tasks, below min_available")
        broken = None if whole else out_of_order(job.name, running, entry.tasks)
        if broken is not None:
            out.append(broken)
        uses = False
        for task in running:
            if str(task.name) in entry.tasks:
                freed[job.queue] = add(freed.get(job.queue, {}), job.requests(task))
                uses = uses or any(job.requests(task).get(r, 0) > 0 for r in over)
        if not uses:
            out.append(f"victims: {job.name} frees nothing of what queue {decision.queue} holds above its limit")
    return freed


def _freed_under(cluster: ClusterState, queue: str, freed_by_leaf: dict[str, Resources]) -> Resources:
    total: Resources = {}
    for leaf, amounts in freed_by_leaf.items():
        if leaf in _subtree_leaves(cluster, queue):
            total = add(total, amounts)
    return total


def _limit(cluster: ClusterState, decision: QuotaDecision, freed_by_leaf: dict[str, Resources]) -> list[str]:
    spec = cluster.tree.queue(decision.queue)
    usage = cluster.usage[decision.queue].allocated
    after = add(usage, _freed_under(cluster, decision.queue, freed_by_leaf), times=-1)
    config = cluster.snapshot.config
    best_effort = config.quota_miss == "best_effort"
    miss = Decimal(0) if best_effort else Decimal(str(config.quota_miss))
    never = config.quota_overshoot == "never"
    out = []
    if decision.outcome == "partial" and miss == 0 and not best_effort and not never:
        out.append("limit: a partial enforcement needs quota_miss > 0, best_effort or quota_overshoot never")
    over = 0
    for resource, limit in spec.limit.items():
        if limit < 0 or usage.get(resource, 0) <= limit:
            continue
        over += 1
        bound = limit if decision.outcome == "enforced" else limit + int(miss * limit)
        if decision.outcome == "partial" and (best_effort or never):
            bound = usage.get(resource, 0)  # best effort, or no overshoot: whatever remains
        held = format_quantity(resource, after.get(resource, 0))
        if never and after.get(resource, 0) < limit:
            out.append(
                f"limit: quota_overshoot never, yet queue {decision.queue} would hold "
                f"{held} {resource}, below its limit {format_quantity(resource, limit)}"
            )
        if is_gpu_resource(resource):
            bound -= bound % MILLI  # whole GPUs
        if after.get(resource, 0) > bound:
            which = "its limit" if decision.outcome == "enforced" else "the tolerated"
            out.append(
                f"limit: queue {decision.queue} would hold {held} {resource}, above {which} "
                f"{format_quantity(resource, bound)}"
            )
        reported = decision.resources.get(resource)
        if reported is None or (reported.usage, reported.limit, reported.after) != (
            usage.get(resource, 0),
            limit,
            after.get(resource, 0),
        ):
            out.append(f"report: the numbers reported for {resource} do not match the state")
    if over == 0:
        out.append(f"limit: queue {decision.queue} was not over its limit")
    return out


def _guarantees(cluster: ClusterState, freed_by_leaf: dict[str, Resources]) -> list[str]:
    out = []
    for spec in cluster.snapshot.queues:
        freed = _freed_under(cluster, spec.name, freed_by_leaf)
        if not freed:
            continue
        usage = cluster.usage[spec.name].allocated
        for resource, deserved in spec.deserved.items():
            if deserved < 0:
                continue
            have = usage.get(resource, 0)
            left = have - freed.get(resource, 0)
            if left < min(have, deserved):
                out.append(
                    f"guarantee: queue {spec.name} would keep {format_quantity(resource, left)} {resource}, "
                    f"below min(usage {format_quantity(resource, have)}, "
                    f"deserved {format_quantity(resource, deserved)})"
                )
    return out
