"""Queues: the quota tree. Jobs belong to leaf queues."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from .fields import MAX_WEIGHT, BoundMap, Duration, FreeMap, Int32, Name, SnapshotModel, Time, raise_errors
from .quantity import UNLIMITED, format_quantity

__all__ = ["KAI_FIELDS", "KUEUE_FIELDS", "BorrowWithinCohort", "Preemption", "Queue"]


class BorrowWithinCohort(SnapshotModel):
    """Kueue's ``borrowWithinCohort``: whether a ClusterQueue that borrows may preempt in its cohort."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: Int32 | None = Field(
        None, description="only workloads of at most this priority are preempted while borrowing"
    )


class Preemption(SnapshotModel):
    """Kueue's preemption policies of a ClusterQueue (its defaults: Never everywhere)."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: BorrowWithinCohort = Field(default_factory=BorrowWithinCohort)


KUEUE_FIELDS = ("nominal", "borrowing_limit", "lending_limit", "fair_sharing_weight", "preemption")
"""The fields of a queue read only under ``config.policy: kueue`` (docs/snapshot-format.md, "Peer semantics")."""
KAI_FIELDS = ("deserved", "over_quota_weight")
"""The fields of a queue read only under ``config.policy: kai``."""


class Queue(SnapshotModel):
    """One queue of the tree.

    ``deserved`` is the guaranteed quota: a resource not listed has quota 0.
    ``limit`` is the maximum: a resource not listed is unlimited.
    """

    name: Name
    parent: str | None = Field(None, description="absent or null = top-level queue")
    deserved: BoundMap = Field(default_factory=dict, description="guaranteed quota per resource")
    limit: BoundMap = Field(default_factory=dict, description="maximum per resource; absent = unlimited")
    over_quota_weight: float | dict[str, float] = Field(
        1.0,
        description="share of capacity beyond deserved: a number for every resource, or a map per resource "
        "(resources not named: 1)",
    )
    priority: Int32 = Field(100, description="queue priority for over-quota division and ordering")
    usage: dict[str, Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]] = Field(
        default_factory=dict,
        description="KAI's time-based fair share: decayed share of the cluster's capacity used in the window, per "
        "resource, 0 to 1 (read with config.fair_share_usage)",
    )
    preempt_min_runtime: Duration | None = Field(None, description="absent = the parent's, then config's")
    reclaim_min_runtime: Duration | None = Field(None, description="absent = the parent's, then config's")
    labels: FreeMap = Field(default_factory=dict)
    annotations: FreeMap = Field(default_factory=dict)
    limit_changed_at: Time | None = Field(
        None, description="when limit or quota_preemption_delay last changed: the delay timer's start"
    )
    quota_preemption_delay: Duration = Field(
        0.0, description="enforce the limit by preemption this long after limit_changed_at; 0 = never"
    )
    nominal: BoundMap = Field(default_factory=dict, description="kueue: nominal quota per resource")
    borrowing_limit: BoundMap | None = Field(None, description="kueue: most it may borrow; absent = unlimited")
    lending_limit: BoundMap | None = Field(
        None, description="kueue: most of its unused nominal quota it lends; absent = all of it"
    )
    fair_sharing_weight: float = Field(1.0, ge=0, le=MAX_WEIGHT, description="kueue, with config.fair_sharing")
    preemption: Preemption | None = Field(None, description="kueue: a ClusterQueue's preemption policies")

    @model_validator(mode="after")
    def _deserved_within_limit(self) -> Queue:
        errors: list[tuple[tuple[str | int, ...], str]] = []
        weights = self.over_quota_weight
        for key, weight in weights.items() if isinstance(weights, dict) else [(None, weights)]:
            if not math.isfinite(weight) or not 0 <= weight <= MAX_WEIGHT:
                where: tuple[str | int, ...] = ("over_quota_weight",) if key is None else ("over_quota_weight", key)
                errors.append((where, f"a weight must be from 0 to {MAX_WEIGHT:,.0f} (got {weight})"))
        for name, amount in (self.lending_limit or {}).items():
            nominal = self.nominal.get(name, 0)
            if amount == UNLIMITED or amount > nominal:
                errors.append(
                    (
                        ("lending_limit", name),
                        f"lending_limit {format_quantity(name, amount)} exceeds the nominal quota "
                        f"{format_quantity(name, nominal)}",
                    )
                )
        for name, amount in self.deserved.items():
            limit = self.limit_of(name)
            if limit is not None and (amount == UNLIMITED or amount > limit):
                errors.append(
                    (
                        ("deserved", name),
                        f"deserved {format_quantity(name, amount)} exceeds this queue's limit "
                        f"{format_quantity(name, limit)}",
                    )
                )
        raise_errors("Queue", errors)
        return self

    def weight_of(self, resource: str) -> float:
        """The over-quota weight of ``resource`` (docs/snapshot-format.md, "Over-quota weight per resource"; default
        1)."""
        weights = self.over_quota_weight
        return weights.get(resource, 1.0) if isinstance(weights, dict) else weights

    def deserved_of(self, resource: str) -> int | None:
        """Guaranteed quota of ``resource`` in milli-units; ``None`` = unlimited, 0 = not declared."""
        amount = self.deserved.get(resource, 0)
        return None if amount == UNLIMITED else amount

    def guarantee(self, resource: str) -> int:
        """What the queue is guaranteed of ``resource`` under either policy: ``deserved`` (KAI) or ``nominal``
        (Kueue); the fields of one policy are refused under the other."""
        return (self.deserved or self.nominal).get(resource, 0)

    def quota_of(self, resource: str) -> int | None:
        """The guaranteed quota the queue *declares* for ``resource``: finite amounts only.

        ``None`` when ``deserved`` does not list the resource or lists it as unlimited.
        Quota rules (the reclaim guarantee, the non-preemptible quota) protect or bind
        only such resources; fair share treats an unlisted resource as quota 0.
        """
        amount = self.deserved.get(resource)
        return None if amount is None or amount == UNLIMITED else amount

    def limit_of(self, resource: str) -> int | None:
        """Maximum of ``resource`` in milli-units; ``None`` = unlimited."""
        amount = self.limit.get(resource, UNLIMITED)
        return None if amount == UNLIMITED else amount
