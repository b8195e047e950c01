"""Kueue's quota arithmetic over the queue tree (docs/snapshot-format.md, "Peer semantics: Kueue's queues").

Under ``config.policy: kueue`` a leaf is a ClusterQueue and an inner queue a Cohort, each with a ``nominal`` quota
per resource, and optionally a ``borrowing_limit`` and a ``lending_limit``. Per resource:

* the **local quota** of a queue is the part of its quota it keeps to itself: ``max(0, subtree quota - lending
  limit)`` when it gives a lending limit, else 0 (it lends all it does not use);
* its **subtree quota**: a ClusterQueue's nominal quota; a Cohort's own nominal quota plus, for each child, the
  child's subtree quota less its local quota (what the child lends up);
* its **usage**: a ClusterQueue's admitted work; a Cohort's, for each child, what the child uses beyond its local
  quota (what it takes from the pool);
* what it has **available**: a top-level queue, its subtree quota less its usage; any other, what is left of its
  local quota plus what its parent has available, the latter at most what it lends up less what it uses up plus
  its borrowing limit (when it gives one).

A workload fits a ClusterQueue when every resource it asks for is at most what the queue has available. These are
the rules of Kueue's ``pkg/cache/scheduler/resource_node.go`` (``localQuota``, ``available``,
``accumulateFromChild``), written over this project's queue tree.

>>> quotas = CohortQuotas(
...     parents={"pool": None, "a": "pool", "b": "pool"},
...     nominal={"pool": {}, "a": {"gpu": 8}, "b": {"gpu": 8}},
...     borrowing={"b": {"gpu": 4}},
...     lending={"a": {"gpu": 2}},
...     used={"a": {"gpu": 4}, "b": {"gpu": 9}},
... )
>>> quotas.available("a", "gpu"), quotas.available("b", "gpu")  # a keeps 6 of its 8; b borrows 1 of the 2 it lends
(3, 1)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from .quantity import Resources
from .queue import Queue

__all__ = ["CohortQuotas"]


@dataclass
class CohortQuotas:
    """The quota arithmetic of one tree: ``parents`` (queue -> parent, ``None`` at the top), each queue's
    ``nominal`` quota, ``borrowing`` and ``lending`` limits (queues that give them), and what each ClusterQueue
    ``used``. Subtree quotas and usages are found once, from the leaves up."""

    parents: Mapping[str, str | None]
    nominal: Mapping[str, Resources]
    borrowing: Mapping[str, Resources] = field(default_factory=dict)
    lending: Mapping[str, Resources] = field(default_factory=dict)
    used: Mapping[str, Resources] = field(default_factory=dict)
    _subtree: dict[str, dict[str, int]] = field(default_factory=dict, init=False)
    _usage: dict[str, dict[str, int]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        children: dict[str | None, list[str]] = {}
        for queue, parent in self.parents.items():
            children.setdefault(parent, []).append(queue)
        for top in children.get(None, []):
            self._accumulate(top, children)

    def _accumulate(self, queue: str, children: Mapping[str | None, list[str]]) -> None:
        subtree = dict(self.nominal.get(queue, {}))
        usage: dict[str, int] = {}
        below = children.get(queue, [])
        if not below:
            usage = dict(self.used.get(queue, {}))
        for child in below:
            self._accumulate(child, children)
            for resource, amount in self._subtree[child].items():
                subtree[resource] = subtree.get(resource, 0) + amount - self.local_quota(child, resource)
            for resource, amount in self._usage[child].items():
                lent_up = max(0, amount - self.local_quota(child, resource))
                usage[resource] = usage.get(resource, 0) + lent_up
        self._subtree[queue], self._usage[queue] = subtree, usage

    def subtree_quota(self, queue: str, resource: str) -> int:
        return self._subtree[queue].get(resource, 0)

    def usage(self, queue: str, resource: str) -> int:
        return self._usage[queue].get(resource, 0)

    def local_quota(self, queue: str, resource: str) -> int:
        """What ``queue`` keeps of its subtree quota: all but its lending limit (0 without one)."""
        limit = self.lending.get(queue, {}).get(resource)
        return 0 if limit is None else max(0, self.subtree_quota(queue, resource) - limit)

    def available(self, queue: str, resource: str) -> int:
        """What ``queue`` may still take of ``resource``: its local quota left, and what its parent has for it
        (negative when it holds more than its quota allows, as after a quota was lowered)."""
        parent = self.parents[queue]
        if parent is None:
            return self.subtree_quota(queue, resource) - self.usage(queue, resource)
        local = self.local_quota(queue, resource)
        from_parent = self.available(parent, resource)
        limit = self.borrowing.get(queue, {}).get(resource)
        if limit is not None:
            lent_up = self.subtree_quota(queue, resource) - local
            used_up = max(0, self.usage(queue, resource) - local)
            from_parent = min(from_parent, lent_up - used_up + limit)
        return max(0, local - self.usage(queue, resource)) + from_parent

    def within_nominal(self, queue: str, resources: list[str]) -> bool:
        """Whether ``queue`` uses no more than its subtree quota in every one of ``resources`` (Kueue's
        ``IsWithinNominalInResources``: exactly at it counts as within)."""
        return all(self.usage(queue, r) <= self.subtree_quota(queue, r) for r in resources)

    def borrowing_now(self, queue: str, resource: str) -> bool:
        """Whether ``queue`` uses more than its nominal quota of ``resource``."""
        return self.usage(queue, resource) > self.nominal.get(queue, {}).get(resource, 0)

    @classmethod
    def of(cls, queues: Sequence[Queue], used: Mapping[str, Resources]) -> CohortQuotas:
        """The arithmetic of a snapshot's ``queues`` (under ``config.policy: kueue``), with ``used`` per
        ClusterQueue (a queue without an entry uses nothing)."""
        return cls(
            parents={q.name: q.parent for q in queues},
            nominal={q.name: dict(q.nominal) for q in queues},
            borrowing={q.name: dict(q.borrowing_limit) for q in queues if q.borrowing_limit is not None},
            lending={q.name: dict(q.lending_limit) for q in queues if q.lending_limit is not None},
            used=used,
        )

    def with_used(self, used: Mapping[str, Resources]) -> CohortQuotas:
        """The same tree with ``used`` per ClusterQueue."""
        return CohortQuotas(self.parents, self.nominal, self.borrowing, self.lending, used)

    def fits(self, queue: str, request: Resources, *, borrowing: bool = True) -> bool:
        """Kueue's ``workloadFits``: every resource of ``request`` within what ``queue`` has available, and
        without ``borrowing`` within its nominal quota as well."""
        for resource, amount in request.items():
            if amount <= 0:
                continue
            if not borrowing and self.usage(queue, resource) + amount > self.nominal.get(queue, {}).get(resource, 0):
                return False
            if amount > max(0, self.available(queue, resource)):
                return False
        return True

    def fits_in_quota(self, queue: str, request: Resources) -> tuple[bool, Resources]:
        """Kueue's ``QuantitiesFitInQuota``: whether ``request`` fits ``queue``'s subtree quota on top of its usage,
        and what of it is left beyond the local quota ``queue`` has left (asked of its parent next)."""
        fits = all(self.usage(queue, r) + a <= self.subtree_quota(queue, r) for r, a in request.items() if a > 0)
        left = {r: max(0, a - max(0, self.local_quota(queue, r) - self.usage(queue, r))) for r, a in request.items()}
        return fits, left

    def potential_available(self, queue: str, resource: str) -> int:
        """The most ``queue`` could ever have of ``resource`` with nothing used (Kueue's ``potentialAvailable``)."""
        parent = self.parents[queue]
        if parent is None:
            return self.subtree_quota(queue, resource)
        found = self.local_quota(queue, resource) + self.potential_available(parent, resource)
        limit = self.borrowing.get(queue, {}).get(resource)
        if limit is not None:
            found = min(found, self.subtree_quota(queue, resource) + limit)
        return found

    def share(self, queue: str, weight: Fraction, resources: Sequence[str]) -> int | None:
        """Kueue's dominant resource share of ``queue``, rounded up as its preemption strategies compare it: per
        resource of ``resources`` it borrows (uses beyond its subtree quota), what it borrows x 1000 over what its
        parent could ever lend it; the largest, over ``weight``. 0 when it borrows nothing, ``None`` (infinite) when
        it borrows with a weight of 0 (``dominantResourceShare``, ``roundedWeightedShare``)."""
        parent = self.parents[queue]
        if parent is None:
            return 0
        borrowed = {r: b for r in resources if (b := self.usage(queue, r) - self.subtree_quota(queue, r)) > 0}
        if not borrowed:
            return 0
        if weight == 0:
            return None
        ratios = [
            Fraction(b * 1000, lendable)
            for r, b in borrowed.items()
            if (lendable := self.potential_available(parent, r)) > 0
        ]
        return math.ceil(max(ratios, default=Fraction(0)) / weight)
