"""Requeue with backoff after eviction (docs/rules.md, "Requeue with backoff"; Kueue's ``requeuingStrategy``): the
``config.requeue`` policy and a job's state.

A job that a decision evicts is put back in its queue only after a backoff that
doubles with each eviction: the n-th eviction waits
``min(backoff_base * 2^(n-1), backoff_max) * (1 + 0.0001 * U)`` with U in [0, 1).
Once ``backoff_limit_count`` evictions have been requeued, the next one
deactivates the job instead. Defaults are Kueue's (docs/rules.md, "Requeue with backoff").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .fields import Count, Duration, SnapshotModel, Time, raise_errors

__all__ = ["RequeueConfig", "RequeueState"]


class RequeueConfig(SnapshotModel):
    """How evicted jobs are requeued (as Kueue's ``requeuingStrategy``)."""

    timestamp: Literal["eviction", "creation"] = Field(
        "eviction", description="which time orders a requeued job in its queue: its last eviction or its creation"
    )
    backoff_base: Duration = Field(60.0, description="delay after the first eviction; doubles with each one")
    backoff_max: Duration = Field(3600.0, description="the delay never exceeds this")
    backoff_limit_count: Count | None = Field(
        None, description="null = requeue forever; else deactivate the job when its count would exceed this"
    )

    @model_validator(mode="after")
    def _max_covers_base(self) -> RequeueConfig:
        if self.backoff_max < self.backoff_base:
            message = f"backoff_max ({self.backoff_max:g}s) is below backoff_base ({self.backoff_base:g}s)"
            raise_errors("RequeueConfig", [(("backoff_max",), message)])
        return self


class RequeueState(SnapshotModel):
    """A job's requeue state (as Kueue's ``requeueState``): evictions so far, the last one, and when it may run again.

    ``active: false`` means the job was deactivated (its count passed ``backoff_limit_count``);
    it is never scheduled until a user sets it back to ``true``.
    """

    count: Count = Field(0, description="evictions requeued so far")
    evicted_at: Time | None = Field(None, description="the last eviction")
    requeue_at: Time | None = Field(None, description="not eligible before this instant")
    active: bool = Field(True, description="false = deactivated; never scheduled")

    @model_validator(mode="after")
    def _requeued_after_eviction(self) -> RequeueState:
        if self.requeue_at is not None and self.evicted_at is not None and self.requeue_at < self.evicted_at:
            message = "requeue_at is before evicted_at: a job is requeued after it is evicted"
            raise_errors("RequeueState", [(("requeue_at",), message)])
        return self
