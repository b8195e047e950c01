"""KAI's preemption delay (docs/rules.md, "Preemption delay").

A job may give a ``preemption_delay``: while it waits, it may be allocated into free room at once, but it reclaims and
preempts only once it has waited that long, counted from its creation, or from its last eviction when it was evicted
since (the window opens again after each eviction). The delay gives no protection: a delayed job is a victim as any
other. It leaves cluster autoscalers time to add nodes before running work is evicted.

>>> from gpu_preempt.models import Job
>>> job = Job(name="j", queue="q", created_at=0, preemption_delay="10m", tasks=[{}])
>>> delay_reason(job, 60.0)
'preemption delay: it may reclaim or preempt from 1970-01-01T00:10:00Z (540s from now)'
>>> delay_reason(job, 600.0) is None
True
"""

from __future__ import annotations

from gpu_preempt.models import Job
from gpu_preempt.models.duration import format_time

__all__ = ["delay_ends", "delay_reason"]


def delay_ends(job: Job) -> float | None:
    """When ``job``'s preemption delay ends (``None``: it gives none): its delay after its creation, or after its
    last eviction."""
    if job.preemption_delay is None or job.created_at is None:
        return None
    since = job.created_at
    if job.requeue is not None and job.requeue.evicted_at is not None:
        since = max(since, job.requeue.evicted_at)
    return since + job.preemption_delay


def delay_reason(job: Job, now: float) -> str | None:
    """Why ``job`` may not reclaim or preempt at ``now`` (its delay still runs); ``None`` when it may."""
    ends = delay_ends(job)
    if ends is None or now >= ends:
        return None
    return f"preemption delay: it may reclaim or preempt from {format_time(ends)} ({ends - now:g}s from now)"
