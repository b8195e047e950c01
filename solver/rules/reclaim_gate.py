"""The reclaim gate: may this pending job take resources from other queues at all?

docs/snapshot-format.md, "Reclaim"; KAI's ``CanReclaimResources`` (docs/rules.md, "The reclaim gate"):
the reclaimer's leaf queue, with the job's chunk added, must stay within its
fair share in **every** resource it holds or asks for (so a queue over its CPU
fair share cannot reclaim GPUs). A non-preemptible reclaimer must moreover stay
within ``deserved`` at every level of its path, in each resource the chunk
requests and the queue declares a finite quota for (KAI's reclaim strategies and capacity policy; docs/rules.md, "The
reclaim line"):
non-preemptible work lives only on guaranteed quota.
"""

from __future__ import annotations

from gpu_preempt.models import Job, Resources, format_quantity
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState

__all__ = ["reclaim_gate"]


def reclaim_gate(cluster: ClusterState, reclaimer: Job, chunk: Resources) -> str | None:
    """``None`` when ``reclaimer`` may reclaim ``chunk``; otherwise the reason, in words."""
    leaf = reclaimer.queue
    holding = add(cluster.usage[leaf].allocated, chunk)
    share = cluster.shares[leaf]
    for resource in sorted(r for r, amount in holding.items() if amount > 0):
        if holding[resource] > share.get(resource, 0):
            return (
                f"queue {leaf} would hold {format_quantity(resource, holding[resource])} {resource} with this job, "
                f"above its fair share of {format_quantity(resource, share.get(resource, 0))}"
            )
    if not reclaimer.is_preemptible:
        for name in cluster.tree.upward(leaf):
            held = add(cluster.usage[name].allocated_non_preemptible, chunk)
            for resource in sorted(r for r, amount in chunk.items() if amount > 0):
                deserved = cluster.tree.queue(name).quota_of(resource)
                if deserved is not None and held[resource] > deserved:
                    return (
                        f"non-preemptible jobs may reclaim only within deserved: queue {name} would hold "
                        f"{format_quantity(resource, held[resource])} {resource} of non-preemptible work, "
                        f"above its deserved {format_quantity(resource, deserved)}"
                    )
    return None
