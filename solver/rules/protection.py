"""Why a running job may not be evicted by a given preemptor: the three protections.

* **non-preemptible** (KAI ``preemptible.go``): ``preemptible: false``, or no
  flag and a priority at or above ``config.preemptible_below_priority``. Such a
  job is never a victim.
* **min-runtime** (docs/rules.md, "Min-runtime"): protected while ``now < started_at + resolved
  min-runtime`` (see :mod:`gpu_preempt.rules.min_runtime`). A protected elastic job may
  still lose the tasks it runs above ``min_available``; a protected gang may
  lose nothing.
* **toleration** (docs/rules.md, "Preemption toleration"): the victim's priority class tolerates this
  preemptor (see :mod:`gpu_preempt.rules.toleration`). Nothing may be taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpu_preempt.models import Job, format_duration, format_time
from gpu_preempt.models.duration import MAX_INSTANT
from gpu_preempt.state.cluster import ClusterState

from .min_runtime import preempt_min_runtime, protected_until, reclaim_min_runtime
from .toleration import tolerated_until

__all__ = [
    "LIFTABLE",
    "EvictingAction",
    "Lifted",
    "MinRuntimes",
    "Protection",
    "Rule",
    "min_runtime",
    "protections",
    "queue_min_runtime",
]

EvictingAction = Literal["preempt", "reclaim"]
"""The actions that evict (``allocate`` evicts nothing)."""
Rule = Literal["non-preemptible", "min-runtime", "toleration"]


@dataclass(frozen=True)
class Protection:
    """One rule that shields ``job`` from one preemptor.

    ``until`` is when the protection ends (seconds since the epoch), ``None``
    when it never ends. ``surplus_only`` is true when the job may still lose the
    tasks it runs above ``min_available``.
    """

    job: str
    rule: Rule
    until: float | None
    surplus_only: bool
    detail: str

    def describe(self) -> str:
        when = "" if self.until is None else f" until {format_time(self.until)}"
        return f"{self.rule}{when}: {self.detail}"


@dataclass
class Lifted:
    """Jobs whose own protections (non-preemptible, min-runtime, toleration) a state's decisions ignore for a while:
    the question "what would the optimum take but for them" (``actions/protection_matters.py``). Empty otherwise."""

    jobs: frozenset[str] = frozenset()


LIFTABLE = ("non-preemptible", "min-runtime", "toleration")
"""The protections of a single job, which :class:`Lifted` may set aside."""


def protections(cluster: ClusterState, victim: Job, preemptor: Job, action: EvictingAction) -> list[Protection]:
    """Every protection ``victim`` has against ``preemptor`` under ``action`` at ``cluster.now`` (but those of
    :data:`LIFTABLE` for a job :class:`Lifted` names)."""
    found = _protections(cluster, victim, preemptor, action)
    if found and victim.name in cluster.for_state(Lifted).jobs:
        return [p for p in found if p.rule not in LIFTABLE]
    return found


def _protections(cluster: ClusterState, victim: Job, preemptor: Job, action: EvictingAction) -> list[Protection]:
    found: list[Protection] = []
    now = cluster.now
    if not victim.is_preemptible:
        why = (
            "marked preemptible: false"
            if victim.preemptible is False
            else f"priority {victim.resolved_priority} is not below "
            f"{cluster.snapshot.config.preemptible_below_priority} (config.preemptible_below_priority)"
        )
        found.append(Protection(victim.name, "non-preemptible", None, False, why))
    started = victim.started_at
    if started is not None:
        runtime = min_runtime(cluster, victim, preemptor, action)
        until = protected_until(started, runtime)
        if until is not None and now < until:
            found.append(
                Protection(
                    victim.name,
                    "min-runtime",
                    None if until > MAX_INSTANT else until,
                    victim.is_elastic,
                    f"{action}-min-runtime {format_duration(runtime)} since its start at {format_time(started)}"
                    + (f"; only tasks above min_available {victim.gang_minimum} may go" if victim.is_elastic else ""),
                )
            )
    if victim.priority_class is not None:
        policy = cluster.snapshot.toleration_of(victim)
        tolerated = tolerated_until(policy, started_at=started, preemptor_priority=preemptor.resolved_priority, now=now)
        if tolerated is not None and policy is not None:
            found.append(
                Protection(
                    victim.name,
                    "toleration",
                    None if tolerated > MAX_INSTANT else tolerated,
                    False,
                    f"class '{victim.priority_class}' tolerates preemptors below priority "
                    f"{policy.minimum_preemptable_priority} (this one has {preemptor.resolved_priority})",
                )
            )
    return found


def min_runtime(cluster: ClusterState, victim: Job, preemptor: Job, action: EvictingAction) -> float:
    """The min-runtime that protects ``victim`` from ``preemptor`` under ``action`` (it depends on their queues)."""
    return queue_min_runtime(cluster, victim.queue, preemptor, action)


def queue_min_runtime(cluster: ClusterState, victim_queue: str, preemptor: Job, action: EvictingAction) -> float:
    """:func:`min_runtime` of a victim in leaf ``victim_queue``."""
    known = cluster.for_snapshot(MinRuntimes).seconds
    key = (action, preemptor.queue if action == "reclaim" else "", victim_queue)
    cached = known.get(key)
    if cached is None:
        config = cluster.snapshot.config
        if action == "preempt":
            cached = preempt_min_runtime(cluster.tree, config, victim_queue)
        else:
            cached = reclaim_min_runtime(cluster.tree, config, preemptor.queue, victim_queue)
        known[key] = cached
    return cached


@dataclass
class MinRuntimes:
    """The resolved min-runtimes of a snapshot's queue tree and config (:func:`queue_min_runtime`)."""

    seconds: dict[tuple[str, str, str], float] = field(default_factory=dict)
    """(action, preemptor's queue for a reclaim, victim's leaf queue) -> seconds."""
