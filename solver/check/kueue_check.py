"""The verifier's check of a decision under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption").

Re-derived from the state and the queues, not from the problem the solver saw: the resources needing
preemption, each victim's policy and class, the queues it comes from still above their quota before their last
workload goes, and the chunk within what its ClusterQueue has available once the victims go, in an attempt
Kueue makes.
"""

from __future__ import annotations

from fractions import Fraction

from gpu_preempt.models import Job, Resources
from gpu_preempt.models.cohort_quotas import CohortQuotas
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.queue import Preemption
from gpu_preempt.rules.protection import protections
from gpu_preempt.rules.requeue import queue_order_time
from gpu_preempt.state.cluster import ClusterState

__all__ = ["check_kueue"]


def check_kueue(cluster: ClusterState, job: Job, decision: Decision, placed: Resources) -> list[str]:
    """Every Kueue rule ``decision`` breaks."""
    snapshot, tree = cluster.snapshot, cluster.tree
    used = {leaf: dict(cluster.usage[leaf].allocated) for leaf in tree.leaves() if leaf in cluster.usage}
    quotas = CohortQuotas.of(snapshot.queues, used)
    mine = job.queue
    if decision.action == "reclaim":
        return ["kueue: under policy kueue, preempt covers the cohort; there is no reclaim"]
    if decision.action == "allocate":
        return [] if quotas.fits(mine, placed) else [f"kueue: {job.name} does not fit the quota of {mine}"]
    out: list[str] = []
    needs = [r for r, a in placed.items() if a > 0 and a > max(0, quotas.available(mine, r))]
    if not needs:
        return ["kueue: the quota had room for the job: Kueue does not preempt"] if decision.victims else []
    policy = tree.queue(mine).preemption or Preemption()
    fair = bool(snapshot.config.fair_sharing)
    advantage_at = _advantage(cluster, quotas, mine, placed)
    after = {q: dict(a) for q, a in used.items()}
    freed_by: dict[str, Resources] = {}
    without = False
    for entry in decision.victims:
        victim = snapshot.job(entry.job)
        running = cluster.tasks(victim, "running")
        if len(entry.tasks) != len(running):
            out.append(f"kueue: {victim.name} loses {len(entry.tasks)} of its {len(running)} tasks, not the whole job")
        freed: Resources = {}
        for task in running:
            for r, a in victim.requests(task).items():
                freed[r] = freed.get(r, 0) + a
        freed_by[victim.name] = freed
        for r, a in freed.items():
            after.setdefault(victim.queue, {})[r] = after.get(victim.queue, {}).get(r, 0) - a
        if not any(freed.get(r, 0) > 0 for r in needs):
            out.append(f"kueue: {victim.name} uses none of the resources needing preemption ({', '.join(needs)})")
        same = victim.queue == mine
        rule = policy.within_cluster_queue if same else policy.reclaim_within_cohort
        if not _policy_allows(cluster, rule, job, victim):
            name = "within_cluster_queue" if same else "reclaim_within_cohort"
            out.append(f"kueue: {name} {rule} does not allow {victim.name} (priority {victim.resolved_priority})")
            continue
        if same:
            continue
        top = tree.lca(mine, victim.queue)
        if top is None:
            out.append(f"kueue: {victim.name} is in another cohort tree")
            continue
        for queue in tree.upward(victim.queue):
            if queue == top:
                break
            if quotas.within_nominal(queue, needs):
                out.append(f"kueue: {victim.name}'s queue {queue} is within its quota in {', '.join(needs)}")
        if fair:
            if not any(quotas.borrowing_now(victim.queue, r) for r in needs):
                out.append(f"kueue: {victim.name}'s queue {victim.queue} borrows none of {', '.join(needs)}")
            continue
        if not advantage_at[top]:
            borrow = policy.borrow_within_cohort
            threshold = borrow.max_priority_threshold
            if (
                borrow.policy == "Never"
                or victim.resolved_priority >= job.resolved_priority
                or (threshold is not None and victim.resolved_priority > threshold)
            ):
                without = True
    out += _last_workload(cluster, quotas, mine, needs, freed_by)
    if fair:
        out += _fair_shares(cluster, quotas, job, needs, freed_by, after, placed)
    modes = (True,) if fair else _modes(cluster, quotas, job, policy, needs, decision, advantage_at)
    after_quotas = quotas.with_used(after)
    allowed = [m for m in modes if not (m and without)]
    if not any(after_quotas.fits(mine, placed, borrowing=m) for m in allowed):
        out.append(
            f"kueue: {job.name} does not fit the quota of {mine} once its victims go, in any attempt Kueue makes"
        )
    return out


def _policy_allows(cluster: ClusterState, rule: str, job: Job, victim: Job) -> bool:
    if rule == "Any":
        return True
    if rule == "Never":
        return False
    if job.resolved_priority > victim.resolved_priority:
        return True
    if rule == "LowerOrNewerEqualPriority" and job.resolved_priority == victim.resolved_priority:
        ours, theirs = queue_order_time(cluster.snapshot, job), queue_order_time(cluster.snapshot, victim)
        return ours is not None and theirs is not None and ours < theirs
    return False


def _advantage(cluster: ClusterState, quotas: CohortQuotas, queue: str, request: Resources) -> dict[str, bool]:
    """Per ancestor of ``queue``, whether the request fits the quota of the preemptor's side below it."""
    found: dict[str, bool] = {}
    ahead = dict(request)
    node = queue
    fits = True
    for resource, amount in request.items():
        if quotas.usage(queue, resource) + amount > quotas.subtree_quota(queue, resource):
            fits = False
    for ancestor in cluster.tree.upward(queue)[1:]:
        ahead = {r: max(0, a - max(0, quotas.local_quota(node, r) - quotas.usage(node, r))) for r, a in ahead.items()}
        found[ancestor] = fits
        if all(quotas.usage(ancestor, r) + a <= quotas.subtree_quota(ancestor, r) for r, a in ahead.items()):
            fits = True
        node = ancestor
    return found


def _last_workload(
    cluster: ClusterState, quotas: CohortQuotas, mine: str, needs: list[str], freed_by: dict[str, Resources]
) -> list[str]:
    """Each queue a cohort victim comes from (and each cohort between it and the preemptor's side) still uses more
    than its quota in a resource needing preemption before its last (largest) workload goes."""
    tree, out = cluster.tree, []
    under: dict[str, list[str]] = {}
    for name in freed_by:
        queue = cluster.snapshot.job(name).queue
        top = tree.lca(mine, queue)
        if queue == mine or top is None:
            continue
        for node in tree.upward(queue):
            if node == top:
                break
            under.setdefault(node, []).append(name)
    for node, names in sorted(under.items()):
        leaf = tree.is_leaf(node)
        over = False
        for r in needs:
            quota = quotas.nominal.get(node, {}).get(r, 0) if leaf else quotas.subtree_quota(node, r)
            gone = sum(freed_by[n].get(r, 0) for n in names)
            last = max(freed_by[n].get(r, 0) for n in names)
            if quotas.usage(node, r) - gone + last > quota:
                over = True
        if not over:
            out.append(f"kueue: {node} would be within its quota before its last workload goes ({', '.join(names)})")
    return out


def _modes(
    cluster: ClusterState,
    quotas: CohortQuotas,
    job: Job,
    policy: Preemption,
    needs: list[str],
    decision: Decision,
    advantage_at: dict[str, bool],
) -> tuple[bool, ...]:
    """The attempts Kueue makes (borrowing allowed or not), from the cohort candidates the state holds."""
    tree, mine = cluster.tree, job.queue
    cohort: list[bool] = []  # per cohort candidate: whether it has the hierarchical advantage
    if tree.parent(mine) is not None and policy.reclaim_within_cohort != "Never":
        for other in cluster.running_jobs():
            queue = other.queue
            top = tree.lca(mine, queue)
            if queue == mine or top is None or other.name == job.name:
                continue
            path = tree.upward(queue)[: tree.upward(queue).index(top)]
            if any(quotas.within_nominal(q, needs) for q in path):
                continue
            if not any(other.requests(t).get(r, 0) > 0 for t in cluster.tasks(other, "running") for r in needs):
                continue
            if not _policy_allows(cluster, policy.reclaim_within_cohort, job, other):
                continue
            if protections(cluster, other, job, "reclaim"):
                continue
            cohort.append(advantage_at[top])
    forbidden = policy.borrow_within_cohort.policy == "Never"
    under = all(quotas.usage(mine, r) < quotas.nominal.get(mine, {}).get(r, 0) for r in needs)
    if not cohort or (forbidden and not under):
        return (True,)
    return (False, True)


def _fair_shares(
    cluster: ClusterState,
    quotas: CohortQuotas,
    job: Job,
    needs: list[str],
    freed_by: dict[str, Resources],
    after: dict[str, Resources],
    placed: Resources,
) -> list[str]:
    """Kueue's fair sharing: with the job added, its ClusterQueue within its nominal quota in the resources needing
    preemption, or each other ClusterQueue losing victims passing a strategy between the shares of the pair below
    their lowest common ancestor."""
    snapshot, tree, mine = cluster.snapshot, cluster.tree, job.queue
    config = snapshot.config
    strategies = config.fair_sharing_strategies or ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    resources = sorted({r for q in snapshot.queues for r in q.nominal})
    weights = {q.name: Fraction(q.fair_sharing_weight).limit_denominator(10**6) for q in snapshot.queues}

    def state(skip: str | None) -> CohortQuotas:
        used = {q: dict(a) for q, a in after.items()}
        if skip is not None:
            queue = snapshot.job(skip).queue
            for r, a in freed_by[skip].items():
                used[queue][r] = used[queue].get(r, 0) + a
        for r, a in placed.items():
            used.setdefault(mine, {})[r] = used.get(mine, {}).get(r, 0) + a
        return quotas.with_used(used)

    final = state(None)
    if all(final.usage(mine, r) <= quotas.nominal.get(mine, {}).get(r, 0) for r in needs):
        return []
    by_queue: dict[str, list[str]] = {}
    for name in freed_by:
        queue = snapshot.job(name).queue
        if queue != mine:
            by_queue.setdefault(queue, []).append(name)
    out = []
    for target, names in sorted(by_queue.items()):
        left, right = tree.leveled_pair(mine, target)
        ours = final.share(left, weights[left], resources)

        def theirs(state: CohortQuotas, right: str = right) -> int | None:
            return state.share(right, weights[right], resources)

        infinite = 10**30
        after_share = theirs(final)
        ok = "LessThanOrEqualToFinalShare" in strategies and (
            (infinite if after_share is None else after_share) >= (infinite if ours is None else ours)
        )
        if (
            not ok
            and "LessThanInitialShare" in strategies
            and (len(names) == 1 or "LessThanOrEqualToFinalShare" in strategies)
        ):
            for name in names:
                before = theirs(state(name))
                if ours is not None and (before is None or ours < before):
                    ok = True
        if not ok:
            lost = ", ".join(names)
            out.append(
                f"kueue fair sharing: {target} loses {lost}; {left}'s share passes no strategy against {right}'s"
            )
    return out
