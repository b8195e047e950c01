"""A cycle's decisions carried out on the replay's jobs: placements, evictions and moves, and what follows them.

The cycle compares the task statuses it started and ended with; each job whose tasks changed is brought up to date
in arrival order (as a walk over the active jobs would): an ``allocated`` task runs, a ``pipelined`` one is
nominated (or, moved, restarts on its new node, or waits there nominated while releasing tasks still hold its
room), a ``releasing`` one leaves after the grace period. Then the job
pays what the restart model charges (:func:`.progress.after_change`), takes its requeue state, restarts its
protections when it starts again, and gets a new completion time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpu_preempt.actions.cycle import CycleResult

from .events import EventQueue, Kind
from .progress import SimJob, after_change
from .replay_cluster import ReplayCluster
from .workload import EPOCH

if TYPE_CHECKING:
    from .simulator import Simulator

__all__ = ["apply_cycle", "leave", "place", "schedule_completion"]


def apply_cycle(sim: Simulator, result: CycleResult) -> None:
    """Carry out ``result``'s decisions on ``sim``'s jobs, nodes and events."""
    start, end = result.start, result.end
    states = result.requeue()
    touched = {sim.task_of[task][0] for task, _ in end.status.items() - start.status.items()}
    for job in sorted((sim.jobs[name] for name in touched), key=lambda j: j.order):
        job.touch(sim.now)
        running_before = job.running()
        gone: list[int] = []
        changed = evicted = moved = False
        for i in range(job.spec.tasks):
            name = f"{job.spec.name}-{i}"
            before, after, node = start.status[name], end.status[name], end.node_of[name]
            if after == before:
                continue
            changed = True
            devices = end.task_devices.get(name)  # docs/snapshot-format.md, "GPU sharing"
            if after == "allocated":
                place(sim.cluster, job, i, node, devices)
            elif after == "pipelined" and before == "running":
                leave(sim.cluster, job, i)
                assert node is not None
                if sim.cluster.fits_now(node, job.spec.task_resources(i), devices):
                    place(sim.cluster, job, i, node, devices)
                else:  # its new room is still held by releasing tasks: it waits there, nominated
                    job.status[i], job.node[i] = "nominated", node
                    _name_devices(job, i, devices)
                moved = True
            elif after == "pipelined":
                job.status[i], job.node[i] = "nominated", node
                _name_devices(job, i, devices)
            elif after == "releasing":
                job.status[i] = "releasing"
                gone.append(i)
                evicted = True
            elif after == "pending":
                job.status[i], job.node[i] = "pending", None
                if job.devices:
                    job.devices[i] = None
        if changed:
            job.changed()
            sim.ledgers.changed(job.spec.name)
            _settle(sim, job, running_before, gone, states, evicted=evicted, moved=moved)


def _settle(
    sim: Simulator,
    job: SimJob,
    running_before: int,
    gone: list[int],
    states: dict[str, Any],
    *,
    evicted: bool,
    moved: bool,
) -> None:
    """What follows a cycle's change of ``job``'s tasks: lost progress, the evicted tasks' departure, its requeue
    state, a new start (protections run from it) and a new completion time."""
    settings, queue, now = sim.settings, sim.queue, sim.now
    after_change(job, settings.restart, evicted=evicted, moved=moved)
    running = job.running()
    if gone:
        queue.push(now + settings.grace_period, Kind.GONE, (job.spec.name, tuple(gone)))
    if job.spec.name in states:
        job.requeue = states[job.spec.name]
        if job.requeue.requeue_at is not None:
            queue.push(max(now, job.requeue.requeue_at - EPOCH), Kind.WAKE)
    if running and (not running_before or (moved and not job.spec.min_available)):
        job.started_at = now
        if job.first_start is None:
            job.first_start = now
        for d in sim.protections:
            queue.push(now + d, Kind.WAKE)
    if running != running_before or moved:
        schedule_completion(queue, now, job)


def place(cluster: ReplayCluster, job: SimJob, task: int, node: str | None, devices: tuple[int, ...] | None) -> None:
    """``job``'s task runs on ``node`` (its GPUs held there; a share of a GPU on its ``devices``)."""
    assert node is not None
    job.status[task], job.node[task] = "running", node
    if job.devices or devices is not None:
        _name_devices(job, task, devices)
    cluster.hold(node, job.spec.task_resources(task), devices)


def leave(cluster: ReplayCluster, job: SimJob, task: int) -> None:
    """``job``'s task leaves its node (its GPUs freed there)."""
    node = job.node[task]
    assert node is not None
    cluster.hold(node, job.spec.task_resources(task), job.devices[task] if job.devices else None, -1)
    job.node[task] = None
    if job.devices:
        job.devices[task] = None


def _name_devices(job: SimJob, task: int, devices: tuple[int, ...] | None) -> None:
    if not job.devices:
        job.devices = [None] * job.spec.tasks
    job.devices[task] = devices


def schedule_completion(queue: EventQueue, now: float, job: SimJob) -> None:
    """A new completion event for ``job`` at its present width (any earlier one is stale from now on)."""
    job.epoch += 1
    left = job.time_left()
    if left is not None:
        queue.push(now + left, Kind.DONE, (job.spec.name, job.epoch))
