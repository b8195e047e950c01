"""The reclaim line: how far a reclaim may take a victim queue (docs/snapshot-format.md, "Rules", *Reclaim* and *Quotas
that count*).

For a reclaimer in leaf ``r`` and a victim in leaf ``v``, compare the leveled
pair ``(rq, vq)``: the siblings under the lowest common ancestor
(:meth:`QueueTree.leveled_pair`). The *line* of ``vq``, per resource, is its
``deserved`` quota while ``rq``, with the chunk, stays within its own deserved
quota; otherwise its fair share (KAI's *allocatable share*: ``max(deserved, fair
share)``, capped by the limit). Quotas count as declared: a resource ``deserved``
does not list has quota 0, so a line of 0 counts (holding anything of it is
above the line); an ``unlimited`` deserved is an infinite line (never above it).

Two readings of the line (``config.reclaim_guarantee``):

* ``last_chunk`` (default, KAI's ``reclaimableFn``, docs/rules.md, "The reclaim line"): a set
  of chunks may be taken from ``vq`` when ``vq`` is still above its line in at
  least one resource it holds *before its last chunk* is taken; the last chunk
  may take it below, even below deserved. The optimiser picks which chunk is
  last. A chunk is one surplus task of an elastic job, or a job's core (its
  ``min_available`` tasks, taken last when the whole job goes).
* ``strict`` (opt-in): ``vq`` never goes below ``min(held, line)`` in any resource
  the reclaimer asks for (an infinite line: nothing of it may be taken).

Examples
--------
queue0 (deserved 1 GPU) runs one 2-GPU job; queue1 (deserved 1) waits for 1 GPU:

>>> from gpu_preempt.models import parse_snapshot
>>> from gpu_preempt.state.cluster import ClusterState
>>> cluster = ClusterState.of(parse_snapshot('''
... now: 0
... nodes: [{name: n0, resources: {gpu: 2}}]
... queues: [{name: queue0, deserved: {gpu: 1}}, {name: queue1, deserved: {gpu: 1}}]
... jobs:
... - {name: big, queue: queue0, task_resources: {gpu: 2}, tasks: [{node: n0}]}
... - {name: want, queue: queue1, task_resources: {gpu: 1}, tasks: [{}]}
... '''))
>>> line = reclaim_line(cluster, "queue1", "queue0", {"gpu": 1000})
>>> line.amount["gpu"], line.kind["gpu"], line.above(cluster.usage["queue0"].allocated)
(1000, 'deserved', ['gpu'])

queue0 holds 2 GPUs, above its line of 1: under ``last_chunk`` its one chunk may
go (queue0 ends at 0); under ``strict`` it must keep 1, so the 2-GPU job may not.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_preempt.models import Job, Resources, Task
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState

__all__ = ["Line", "above_before_last", "chunks_of", "reclaim_line", "within_deserved"]


def within_deserved(cluster: ClusterState, queue: str, chunk: Resources) -> bool:
    """Whether ``queue`` plus ``chunk`` stays within its deserved quota in every resource it holds or asks for.

    A resource ``deserved`` does not list counts as quota 0; an unlimited one always fits (KAI:
    ``Allocated(rq) + req <= Deserved(rq)``, unset quotas 0, -1 unlimited).
    """
    spec = cluster.tree.queue(queue)
    for resource, amount in add(cluster.usage[queue].allocated, chunk).items():
        quota = spec.deserved_of(resource)
        if amount > 0 and quota is not None and amount > quota:
            return False
    return True


@dataclass(frozen=True)
class Line:
    """The line of a victim queue ``queue`` against one reclaimer: per resource, an amount (``None``: infinite)."""

    queue: str
    amount: dict[str, int | None]
    kind: dict[str, str]
    """``deserved`` or ``fair share``: which quota sets the line of each resource."""

    def above(self, held: Resources) -> list[str]:
        """Resources in which ``held`` is above the line (an infinite line is never crossed)."""
        out = []
        for resource in sorted(self.amount):
            line = self.amount[resource]
            if line is not None and held.get(resource, 0) > line:
                out.append(resource)
        return out

    def floor(self, resource: str, held: int) -> int:
        """What ``strict`` keeps of ``resource``: ``min(held, line)``; all of it under an infinite line."""
        line = self.amount.get(resource, 0)
        return held if line is None else min(held, line)


def reclaim_line(cluster: ClusterState, rq: str, vq: str, chunk: Resources) -> Line:
    """The line of ``vq`` against a reclaim from ``rq`` asking for ``chunk``, in every resource ``vq`` holds or
    the chunk asks for."""
    spec = cluster.tree.queue(vq)
    held = cluster.usage[vq].allocated
    resources = {r for r, a in held.items() if a > 0} | {r for r, a in chunk.items() if a > 0}
    rq_within = within_deserved(cluster, rq, chunk)
    amount: dict[str, int | None] = {}
    kind: dict[str, str] = {}
    for resource in sorted(resources):
        deserved = spec.deserved_of(resource)
        if deserved is None or rq_within:
            amount[resource], kind[resource] = deserved, "deserved"
            continue
        share = cluster.shares[vq].get(resource, 0)
        line, kind[resource] = (deserved, "deserved") if deserved >= share else (share, "fair share")
        limit = spec.limit_of(resource)
        amount[resource] = line if limit is None else min(line, limit)
    return Line(vq, amount, kind)


def chunks_of(job: Job, running: list[Task], evicted: set[str]) -> list[Resources]:
    """The chunks ``job`` loses when the tasks named in ``evicted`` go (docs/rules.md, "The reclaim line").

    A job that loses every running task loses its core (its first ``min_available`` running tasks, taken
    last) and each task after it; a job that loses only surplus tasks loses each of them as a chunk.
    """
    if {str(t.name) for t in running} <= evicted:
        core: Resources = {}
        for task in running[: job.gang_minimum]:
            core = add(core, job.requests(task))
        return [core, *(job.requests(task) for task in running[job.gang_minimum :])]
    return [job.requests(task) for task in running if str(task.name) in evicted]


def above_before_last(line: Line, held: Resources, freed: Resources, chunks: list[Resources]) -> str | None:
    """``last_chunk``: a resource in which the queue is still above its line before the best last chunk
    (``held - freed + chunk > line``), or ``None`` when there is none and the chunks may not all be taken."""
    for resource in sorted(line.amount):
        amount = line.amount[resource]
        if amount is None:
            continue
        base = held.get(resource, 0) - freed.get(resource, 0)
        if any(base + chunk.get(resource, 0) > amount for chunk in chunks):
            return resource
    return None
