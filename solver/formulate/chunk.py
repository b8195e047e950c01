"""The pending chunk of a decision (docs/snapshot-format.md, "Gang and elastic"; KAI ``GetTasksToAllocate``): the
tasks to place, each required (the gang chunk) or optional (growth by ``allocate``), and their task types."""

from __future__ import annotations

from gpu_preempt.models import Job, Resources, Task
from gpu_preempt.models.quantity import add
from gpu_preempt.problem.records import (
    Action,
    ChunkType,
)
from gpu_preempt.state.cluster import ClusterState

__all__ = ["chunk_of", "chunk_types", "requested"]


def chunk_of(cluster: ClusterState, job: Job, action: Action) -> tuple[list[tuple[Task, bool]], str | None]:
    """Pending tasks to place, each flagged required (gang chunk) or optional (growth by allocate)."""
    pending = cluster.tasks(job, "pending")
    if not pending:
        return [], "no pending tasks"
    active = cluster.active_count(job)
    if active < job.gang_minimum:
        need = job.gang_minimum - active
        if need > len(pending):
            return [], f"the gang needs {need} more tasks to reach min_available but only {len(pending)} are pending"
        extra = pending[need:] if action == "allocate" else []
        return [(t, True) for t in pending[:need]] + [(t, False) for t in extra], None
    if action == "allocate":
        return [(t, False) for t in pending], None
    return [(pending[0], True)], None


def requested(job: Job, tasks: list[Task]) -> Resources:
    total: Resources = {}
    for task in tasks:
        total = add(total, job.requests(task))
    return total


def chunk_types(job: Job, chunk: list[tuple[Task, bool]]) -> tuple[ChunkType, ...]:
    groups: dict[tuple[tuple[str, int], ...], list[tuple[Task, bool]]] = {}
    for task, required in chunk:
        key = tuple(sorted((r, a) for r, a in job.requests(task).items() if a > 0))
        groups.setdefault(key, []).append((task, required))
    return tuple(
        ChunkType(
            requests=dict(key),
            tasks=tuple(str(t.name) for t, _ in [*[x for x in items if x[1]], *[x for x in items if not x[1]]]),
            required=sum(1 for _, required in items if required),
            spread=job.gpu_devices,
        )
        for key, items in groups.items()
    )
