"""Requeue with backoff after eviction (docs/rules.md, "Requeue with backoff"; Kueue's ``requeuingStrategy``).

Three rules:

* **Backoff.** A job evicted for the n-th time may run again
  ``min(backoff_base * 2^(n-1), backoff_max) * (1 + 0.0001 * U)`` after the
  eviction, U uniform in [0, 1) (Kueue's ``WaitTime(n)``, docs/rules.md, "Requeue with backoff").
  With the defaults: 60, 120, 240, 480, 960, 1920, 3600, 3600, ... seconds.
* **Deactivation.** When ``backoff_limit_count`` is set and ``count + 1`` would
  exceed it, the job is deactivated instead (``active: false``, no ``requeue_at``;
  the count is kept), as Kueue's ``RequeuingLimitExceeded``.
* **Order.** With ``timestamp: eviction`` a requeued job waits in its queue as if
  submitted at its last eviction, behind older jobs of the same priority; with
  ``creation`` it keeps its place (docs/rules.md, "Requeue with backoff").

The jitter U comes from a generator seeded by the snapshot (its solver seed,
the job, its count and ``now``), through SHA-256: the same input gives the same
state on every machine. Instants are kept to the millisecond, as output prints them.

>>> from gpu_preempt.models import RequeueConfig
>>> [backoff_delay(RequeueConfig(), count) for count in range(8)]
[60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 3600.0, 3600.0]
"""

from __future__ import annotations

import hashlib
import math
import random

from gpu_preempt.models import Job, RequeueConfig, RequeueState, Snapshot, format_time
from gpu_preempt.models.decision import Decision

__all__ = [
    "JITTER",
    "backoff_delay",
    "backoff_reason",
    "evicted_states",
    "jitter_draw",
    "next_state",
    "queue_order_time",
]

JITTER = 0.0001
"""Kueue's fixed jitter factor (not configurable there either)."""


def backoff_delay(policy: RequeueConfig, count: int) -> float:
    """The delay, before jitter, after the eviction that follows ``count`` earlier ones (the (count+1)-th)."""
    if count >= 64:  # 2^64 * base exceeds any cap a float can tell apart
        return policy.backoff_max
    return min(policy.backoff_base * 2.0**count, policy.backoff_max)


def jitter_draw(snapshot: Snapshot, job: str, count: int) -> float:
    """U in [0, 1), reproducible from the snapshot: seeded by solver seed, job name, count and ``now``."""
    key = f"{snapshot.config.solver.seed}|{job}|{count}|{snapshot.now!r}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big")).random()


def next_state(snapshot: Snapshot, job: Job) -> RequeueState:
    """The requeue state of ``job`` after it is evicted at ``snapshot.now``."""
    policy = snapshot.config.requeue
    count = 0 if job.requeue is None else job.requeue.count
    now = snapshot.now
    limit = policy.backoff_limit_count
    if limit is not None and count + 1 > limit:
        return RequeueState(count=count, evicted_at=now, requeue_at=None, active=False)
    delay = backoff_delay(policy, count) * (1 + JITTER * jitter_draw(snapshot, job.name, count))
    at = math.floor((now + delay) * 1000) / 1000
    at = max(at, now + backoff_delay(policy, count))  # never below the delay itself
    return RequeueState(count=count + 1, evicted_at=now, requeue_at=at, active=True)


def evicted_states(snapshot: Snapshot, decision: Decision) -> dict[str, RequeueState]:
    """The next requeue state of every job ``decision`` evicts whole.

    A job that loses only elastic surplus keeps running at or above its
    ``min_available``: it is not evicted and not requeued.
    """
    if not decision.victims or not (decision.placed or decision.outcome in ("enforced", "partial")):
        return {}
    return {v.job: next_state(snapshot, snapshot.job(v.job)) for v in decision.victims if v.whole_job}


def backoff_reason(job: Job, now: float) -> str | None:
    """Why ``job`` may not be scheduled at ``now``: deactivated, or still in backoff; ``None`` when it may."""
    state = job.requeue
    if state is None:
        return None
    if not state.active:
        return f"deactivated: evicted {state.count} time(s), past the requeue limit; set requeue.active to run it"
    if state.requeue_at is not None and now < state.requeue_at:
        return (
            f"backoff: requeued at {format_time(state.requeue_at)} ({state.requeue_at - now:g}s from now) "
            f"after eviction {state.count}"
        )
    return None


def queue_order_time(snapshot: Snapshot, job: Job) -> float | None:
    """The time that orders ``job`` among equals in its queue: its last eviction (``eviction``) or its creation."""
    state = job.requeue
    if snapshot.config.requeue.timestamp == "eviction" and state is not None and state.evicted_at is not None:
        return state.evicted_at
    return job.created_at
