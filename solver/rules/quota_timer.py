"""The delay timer of quota enforcement (docs/rules.md, "Quota enforcement").

``limit_changed_at`` is the time of the last change of a queue's ``limit`` or
``quota_preemption_delay``: a newer change restarts the timer from 0, as the
seed asks. Enforcement is due at ``limit_changed_at + quota_preemption_delay``
when the switch ``config.quota_preemption_enabled`` is on and the delay is
positive (0, the default, means never).
"""

from __future__ import annotations

from gpu_preempt.models import format_time
from gpu_preempt.state.cluster import ClusterState

__all__ = ["due_time", "not_due"]


def due_time(cluster: ClusterState, queue: str) -> float | None:
    """``limit_changed_at + quota_preemption_delay``; ``None`` when there is no timer."""
    spec = cluster.tree.queue(queue)
    if spec.quota_preemption_delay <= 0 or spec.limit_changed_at is None:
        return None
    return spec.limit_changed_at + spec.quota_preemption_delay


def not_due(cluster: ClusterState, queue: str) -> str | None:
    """Why ``queue`` is not enforced now, or ``None`` when it is due."""
    spec = cluster.tree.queue(queue)
    if not cluster.snapshot.config.quota_preemption_enabled:
        return "quota enforcement is off (config.quota_preemption_enabled is false)"
    if spec.quota_preemption_delay <= 0:
        return "quota_preemption_delay is 0: the limit takes effect only as running work ends"
    if spec.limit_changed_at is None:
        return "limit_changed_at is not set: the delay timer has not started"
    due = spec.limit_changed_at + spec.quota_preemption_delay
    if cluster.now < due:
        return f"the delay timer runs until {format_time(due)} ({due - cluster.now:g} s from now)"
    return None
