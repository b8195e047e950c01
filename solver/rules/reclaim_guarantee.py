"""The reclaim guarantee: how much of each victim queue a reclaim must leave in place.

Spec "Rules", *Reclaim*. For a reclaimer in leaf ``r`` and a victim in leaf
``v``, compare the leveled pair ``(rq, vq)``: the siblings under the lowest
common ancestor (:meth:`QueueTree.leveled_pair`). For each resource the
reclaimer's chunk requests:

* a reclaim never takes from ``vq`` what ``vq`` holds within its guaranteed
  quota (``deserved``);
* when ``rq`` would itself be above its deserved quota (with the chunk), it
  never takes ``vq`` below its fair share either (KAI's *allocatable share*:
  ``max(deserved, fair share)``, capped by the limit).

So after the reclaim ``vq`` still holds at least ``floor = min(held, threshold)``.
This is a true guarantee: stricter than KAI, whose validator checks each victim
chunk *before* subtracting it and so lets the last chunk cross the line
(reference/kai.md §3.6). Only finite quotas protect: an unlimited ``deserved``
adds no guarantee, and neither does a resource ``deserved`` does not list: fair
share counts it as quota 0, but a queue guarantees only what it declares (spec,
*Quotas that count*). Likewise "``rq`` within its deserved quota" looks only at
the resources ``rq`` declares.
"""

from __future__ import annotations

from gpu_preempt.models import Resources
from gpu_preempt.models.quantity import add
from gpu_preempt.solver.state.cluster import Cluster


def within_deserved(cluster: Cluster, queue: str, chunk: Resources) -> bool:
    """Whether ``queue`` plus ``chunk`` stays within its declared quota.

    Only resources the queue declares in ``deserved`` count (an unlimited one always
    fits); a queue that declares none of what it holds or asks for is not within
    its quota: it has no guarantee to call on.
    """
    holding = add(cluster.usage[queue].allocated, chunk)
    spec = cluster.tree.queue(queue)
    considered = False
    for resource, amount in holding.items():
        if amount <= 0 or resource not in spec.deserved:
            continue
        considered = True
        quota = spec.quota_of(resource)
        if quota is not None and amount > quota:
            return False
    return considered


def guarantee_threshold(cluster: Cluster, rq: str, vq: str, chunk: Resources) -> dict[str, tuple[int, str]]:
    """Per chunk resource that ``vq`` declares a finite quota for: the amount protected, and which rule sets it.

    The second element is ``"deserved"`` or ``"fair share"``. Resources with no
    protection (threshold 0, or no declared finite quota) are left out.
    """
    spec = cluster.tree.queue(vq)
    rq_within = within_deserved(cluster, rq, chunk)
    out: dict[str, tuple[int, str]] = {}
    for resource in sorted(r for r, amount in chunk.items() if amount > 0):
        deserved = spec.quota_of(resource)
        if deserved is None:
            continue
        if rq_within:
            threshold, kind = deserved, "deserved"
        else:
            share = cluster.shares[vq].get(resource, 0)
            threshold, kind = (deserved, "deserved") if deserved >= share else (share, "fair share")
            limit = spec.limit_of(resource)
            if limit is not None and limit < threshold:
                threshold = limit
        if threshold > 0:
            out[resource] = (threshold, kind)
    return out


def guarantee_floor(cluster: Cluster, rq: str, vq: str, chunk: Resources) -> Resources:
    """What ``vq`` must still hold after the reclaim, per protected resource."""
    held = cluster.usage[vq].allocated
    return {r: min(held.get(r, 0), t) for r, (t, _) in guarantee_threshold(cluster, rq, vq, chunk).items()}
