"""Requeue states (docs/rules.md, "Requeue with backoff"), recomputed from the formula."""

from __future__ import annotations

from gpu_preempt.models.decision import Decision
from gpu_preempt.state.cluster import ClusterState

__all__ = ["check_requeue"]


def check_requeue(cluster: ClusterState, decision: Decision) -> list[str]:
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
