"""Fair share per resource over the queue tree (KAI proportion plugin, docs/rules.md, "Queue usage and fair share").

Top-level queues share the cluster's capacity; the children of a queue share
that queue's fair share, recursively. For one set of siblings and one resource
with amount ``T`` to divide:

1. **Deserved phase** (queue priority irrelevant): each queue receives
   ``min(deserved, requestable)``, where ``requestable = min(request, limit)``
   and an unlimited ``deserved`` counts as ``T``. Nothing is scaled down when
   these add up to more than ``T`` (docs/snapshot-format.md, "Fair share when guarantees are
   oversubscribed", as KAI): the siblings' fair shares may then exceed ``T``,
   and the over-quota phase has nothing to divide.
2. **Over-quota phase**, by queue ``priority`` from highest down; a priority
   bucket absorbs all it can before lower buckets get anything. Within a bucket,
   rounds: every queue still wanting more (request and limit above its share,
   a positive ``over_quota_weight`` for this resource) is offered
   ``R * weight / sum(weights)`` of the round's remainder ``R``; with KAI's
   time-based fair share (``config.fair_share_usage``), ``R * s / sum(s)`` where
   ``s = max(0, W' + k (W' - U))``, ``W'`` the queue's weight over the sum of the
   weights of the queues still wanting more and ``U`` its ``usage`` of the
   resource (docs/rules.md, "Time-based fair share"). A queue that
   needs no more than its offer takes what it needs; otherwise it takes the
   offer rounded *down* to whole units and its fraction is remembered. Another
   round runs while some queue needed less than its offer.
3. **Leftovers** of the bucket go one unit at a time to the queues with
   remembered fractions, largest fraction first (ties by name).

A *unit* is one millicore of CPU and one whole unit (one GPU, one byte) of
anything else, as in KAI, which floors CPU in millicores, memory in bytes and
GPUs in devices. ``over_quota_weight`` may differ per resource (a map; spec
"Over-quota weight per resource"), so a GPU weight of 0 leaves CPU and memory
shareable.

Deliberate differences from KAI:

* Ties among leftover fractions are broken by queue name (KAI: queue creation
  time, then UID).

The flat example of docs/rules.md, "KAI's worked examples" (10 GPUs):

>>> claims = [Claim("A", 2000, None, 8000, 2), Claim("B", 3000, None, 3000, 1), Claim("C", 1000, None, 10000, 1)]
>>> divide(10000, claims, unit=1000)
{'A': 5000, 'B': 3000, 'C': 2000}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import groupby

from gpu_preempt.models import MILLI, Resources, Snapshot

from .queue_tree import ROOT, QueueTree
from .queue_usage import QueueUsage, queue_usage

__all__ = ["Claim", "cluster_capacity", "divide", "fair_shares", "unit_of"]


@dataclass(frozen=True)
class Claim:
    """One queue's claim on one resource (milli-units; ``None`` = unlimited)."""

    name: str
    deserved: int | None
    limit: int | None
    request: int
    weight: float = 1.0
    priority: int = 100
    usage: float = 0.0
    """Past usage of the resource, as a share of the cluster's capacity (KAI's time-based fair share)."""

    def requestable(self) -> int:
        return self.request if self.limit is None else min(self.limit, self.request)


def unit_of(resource: str) -> int:
    """The rounding unit of ``resource`` in milli-units: 1 for CPU (millicores), 1000 otherwise."""
    return 1 if resource == "cpu" else MILLI


@lru_cache(maxsize=256)
def _exact(weight: float) -> Fraction:
    """``weight`` as an exact fraction (queues share a few weights: each is converted once)."""
    return Fraction(weight)


def divide(total: int, claims: list[Claim], *, unit: int = MILLI, k: float | None = None) -> dict[str, int]:
    """Divide ``total`` among sibling ``claims``; returns each queue's fair share. ``k``: KAI's ``kValue``, with
    which each claim's ``usage`` moves its over-quota offers (``None``: usage is not read).

    Two queues of equal weight share 6 GPUs beyond their quotas; one used half the cluster in the window:

    >>> claims = [Claim("a", 0, None, 8000, usage=0.5), Claim("b", 0, None, 8000)]
    >>> divide(6000, claims), divide(6000, claims, k=1)
    ({'a': 3000, 'b': 3000}, {'a': 2000, 'b': 4000})
    """
    share = {c.name: 0 for c in claims}
    wanted = {c.name: min(total if c.deserved is None else c.deserved, c.requestable()) for c in claims}
    share.update(wanted)
    remaining = total - sum(wanted.values())
    by_priority = sorted(claims, key=lambda c: -c.priority)
    for _, bucket in groupby(by_priority, key=lambda c: c.priority):
        if remaining <= 0:
            break
        remaining = _divide_bucket(remaining, list(bucket), share, unit, k)
    return share


def _divide_bucket(remaining: int, bucket: list[Claim], share: dict[str, int], unit: int, k: float | None) -> int:
    fractions: dict[str, Fraction] = {}
    while remaining > 0:
        hungry = [c for c in bucket if c.requestable() > share[c.name] and c.weight > 0]
        if not hungry:
            break
        parts = _parts(hungry, k)
        weights = sum(parts.values())
        if weights == 0:
            break  # every queue still wanting more used more than its weight's part: KAI gives none of them more
        offered_total = remaining
        another_round = False
        for claim in hungry:
            offer = offered_total * parts[claim.name] / weights
            need = claim.requestable() - share[claim.name]
            if need <= offer:
                give = need
                fractions.pop(claim.name, None)
                another_round = another_round or need < offer
            else:
                give = int(offer // unit) * unit
                if offer - give > 0:
                    fractions[claim.name] = offer - give
            share[claim.name] += give
            remaining -= give
        if not another_round:
            break
    for name in sorted(fractions, key=lambda n: (-fractions[n], n)):
        if remaining <= 0:
            break
        claim = next(c for c in bucket if c.name == name)
        give = min(unit, remaining, claim.requestable() - share[name])
        share[name] += give
        remaining -= give
    return remaining


def _parts(hungry: list[Claim], k: float | None) -> dict[str, Fraction]:
    """Each queue's part of a round: its weight, or with ``k`` KAI's ``max(0, W' + k (W' - U))`` (``W'`` its weight
    over the hungry queues' sum, ``U`` its usage; ``calcShareWeights`` in KAI's ``resource_division.go``)."""
    if k is None:
        return {c.name: _exact(c.weight) for c in hungry}
    total = sum(_exact(c.weight) for c in hungry)
    kk = _bounded(k)
    out = {}
    for c in hungry:
        normal = _exact(c.weight) / total
        out[c.name] = max(Fraction(0), normal + kk * (normal - _bounded(c.usage)))
    return out


@lru_cache(maxsize=4096)
def _bounded(value: float) -> Fraction:
    """A usage or ``kValue`` as a fraction of denominator at most a million: exact floats of 53 bits would make the
    rounds' fractions grow without bound, and six places are all a usage says."""
    return Fraction(value).limit_denominator(1_000_000)


def cluster_capacity(snapshot: Snapshot) -> Resources:
    """Sum of allocatable resources over all nodes (resources in the order nodes first name them)."""
    maps = [node.resources for node in snapshot.nodes]
    by_id = dict(zip(map(id, maps), maps, strict=True))
    total: Resources = {}
    # Nodes of one kind share one map (the loaders give equal maps one object): each map is added once, times its
    # number of nodes.
    for key, count in Counter(map(id, maps)).items():
        for resource, amount in by_id[key].items():
            total[resource] = total.get(resource, 0) + amount * count
    return total


def fair_shares(
    snapshot: Snapshot,
    tree: QueueTree,
    usage: dict[str, QueueUsage] | None = None,
    capacity: Resources | None = None,
) -> dict[str, Resources]:
    """Fair share of every queue in every resource known to the snapshot (milli-units); ``capacity``, when given,
    is :func:`cluster_capacity` of the snapshot."""
    usage = queue_usage(snapshot, tree) if usage is None else usage
    capacity = cluster_capacity(snapshot) if capacity is None else capacity
    resources = set(capacity)
    for queue in snapshot.queues:
        resources |= set(queue.deserved) | set(queue.limit)
    for name in usage:
        resources |= set(usage[name].requested)
    shares: dict[str, Resources] = {name: {} for name in tree.queues()}
    timed = snapshot.config.fair_share_usage
    k = None if timed is None else timed.k_value
    families = [
        (parent, [(child, tree.queue(child)) for child in tree.children(parent)]) for parent in (ROOT, *tree.queues())
    ]
    families = [(parent, children) for parent, children in families if children]
    for resource in sorted(resources):
        amounts = {ROOT: capacity.get(resource, 0)}
        for parent, children in families:
            claims = [
                Claim(
                    name=child,
                    deserved=queue.deserved_of(resource),
                    limit=queue.limit_of(resource),
                    request=usage[child].requested.get(resource, 0),
                    weight=queue.weight_of(resource),
                    priority=queue.priority,
                    usage=queue.usage.get(resource, 0.0),
                )
                for child, queue in children
            ]
            amounts.update(divide(amounts[parent], claims, unit=unit_of(resource), k=k))
        for name in shares:
            shares[name][resource] = amounts[name]
    return shares
