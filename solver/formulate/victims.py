"""The candidates as victims of a problem: their slots (tasks alike on one node), where each may move, and whether a
decision considers moves at all (docs/snapshot-format.md, "Moves")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from gpu_preempt.models import Job, Resources, Task
from gpu_preempt.problem.records import (
    NodeRoom,
    Slot,
    Victim,
    share_size,
)
from gpu_preempt.rules.candidates import Candidate
from gpu_preempt.rules.placement import eligibility
from gpu_preempt.state.cluster import ClusterState

if TYPE_CHECKING:
    from .builder import Prepared

from .chunk import requested

__all__ = ["MOVE_CANDIDATES", "MOVE_PAIRS", "moves_possible_for", "victim_of", "whole_chunk"]


MOVE_CANDIDATES = 64
"""Moves are considered on decisions with at most this many candidate victims (evictable or movable)."""

MOVE_PAIRS = 2000
"""... and at most this many possible moves (a running task and a node whose free room takes it)."""


def victim_of(
    cluster: ClusterState,
    job: Job,
    running: list[Task],
    candidate: Candidate,
    index: dict[str, int],
    nodes: tuple[NodeRoom, ...],
    fitting: dict[tuple[object, ...], tuple[int, ...]],
    on_device: Mapping[str, tuple[int, ...]],
    *,
    evictable: bool = True,
) -> Victim:
    """``job`` (its ``running`` tasks) as a victim; with ``nodes``, where each of its tasks could be moved (spec
    "Moves"). A job that is not ``evictable`` (only the reclaim line keeps it out of reach) may only be moved.
    ``fitting`` keeps, per task shape and placement, the nodes whose free room takes one such task (the same for
    every victim of one problem); a move lands only on a node eligible for the moved job (docs/rules.md,
    "Placement"). ``on_device``: the devices of every task holding a share of a GPU."""
    slots: dict[tuple[int, tuple[tuple[str, int], ...], tuple[int, ...], int | None], list[str]] = {}
    node_of, shared = cluster.task_nodes(job), all(task.resources is None for task in running)
    every = tuple(sorted(job.task_resources.items()))  # what a task without its own requests asks for
    for task in reversed(running):  # evict-first order: newest task first (KAI's reverse task order)
        name = str(task.name)
        requests = every if shared else tuple(sorted(job.requests(task).items()))
        devices = on_device.get(name, ())  # a share's devices; none: whole GPUs
        slots.setdefault((index[str(node_of[name])], requests, devices, task.order), []).append(name)
    since = job.progress_since  # the lost-work clock
    elapsed = 0 if since is None else max(0, round((cluster.now - since) * 1000))
    gang = len(running) <= job.gang_minimum
    allowed = eligibility(cluster, job).mask if nodes else cluster.index.schedulable
    positions = cluster.node_index()

    def destinations(home: int, shape: tuple[tuple[str, int], ...]) -> tuple[int, ...]:
        if not nodes or job.gpu_devices > 1:  # a share on several devices is not moved (docs/rules.md, "GPU sharing")
            return ()
        key = (shape, id(allowed))
        found = fitting.get(key)
        if found is None:
            found = fitting[key] = tuple(
                n
                for n, room in enumerate(nodes)
                if allowed[positions[room.name]]
                and all(a <= room.free_room().get(r, 0) for r, a in shape if a > 0)
                and (room.devices is None or room.free is None)  # devices are seen at the decision's priority
            )
        if share_size(dict(shape)):  # a share may go to another device of its own node
            devices = nodes[home].devices
            return tuple(n for n in found if n != home or (devices is not None and devices.count > 1))
        return tuple(n for n in found if n != home)

    return Victim(
        job=job.name,
        queue=job.queue,
        priority=job.resolved_priority,
        whole_job=candidate.whole_job and evictable,
        surplus=candidate.surplus if evictable else 0,
        slots=tuple(
            Slot(node, dict(req), tuple(tasks), destinations(node, req), devices, order)
            for (node, req, devices, order), tasks in sorted(slots.items(), key=_slot_key)
        ),
        elapsed_ms=elapsed,
        whole_chunk=whole_chunk(job, running, shared=shared),
        move="none" if not nodes else "whole" if gang else "tasks",
        disturb=candidate.surplus if candidate.restrictions else None,
    )


def _slot_key(item: tuple[tuple[int, Any, tuple[int, ...], int | None], list[str]]) -> tuple[Any, ...]:
    """Slots by node, requests, devices, then task order (none first)."""
    (node, requests, devices, order), _ = item
    return node, requests, devices, order is not None, order or 0


def moves_possible_for(prepared: Prepared) -> bool:
    cluster = prepared.cluster
    if (
        prepared.candidates is None
        or not cluster.snapshot.config.moves
        or cluster.snapshot.config.policy == "kueue"  # Kueue evicts, it does not move
        or prepared.action not in ("reclaim", "preempt")
    ):
        return False
    candidates = [*prepared.candidates.candidates, *prepared.candidates.movable]
    if not candidates or len(candidates) > MOVE_CANDIDATES:
        return False
    Key = tuple[tuple[tuple[str, int], ...], int]
    tasks: dict[Key, list[int]] = {}  # (task shape, where it may go) -> the node of each such task
    masks: dict[int, np.ndarray] = {}
    index = cluster.node_index()
    for candidate in candidates:
        job = cluster.snapshot.job(candidate.job)
        if job.gpu_devices > 1:
            continue  # not moved
        allowed = eligibility(cluster, job).mask
        masks[id(allowed)] = allowed
        for task in cluster.tasks(job, "running"):
            shape = tuple(sorted((r, a) for r, a in job.requests(task).items() if a > 0))
            tasks.setdefault((shape, id(allowed)), []).append(index[str(cluster.node_of[str(task.name)])])
    fitting: dict[Key, set[int]] = {key: set() for key in tasks}
    for n, node in enumerate(cluster.snapshot.nodes):
        if not node.schedulable:
            continue
        capacity, load = node.resources, cluster.final_load(node.name)
        for (shape, mask), found in fitting.items():
            if masks[mask][n] and all(a <= capacity.get(r, 0) - load.get(r, 0) for r, a in shape):
                found.add(n)
    # a share may move to another device of its own node (docs/snapshot-format.md, "GPU sharing")
    stays = {key: 0 if share_size(dict(key[0])) else 1 for key in tasks}
    pairs = sum(
        len(fitting[key]) - stays[key] * (home in fitting[key]) for key, homes in tasks.items() for home in homes
    )
    return 0 < pairs <= MOVE_PAIRS


def whole_chunk(job: Job, running: list[Task], *, shared: bool | None = None) -> Resources:
    """Per resource, the largest chunk of ``job`` evicted whole (KAI's reclaimable chunks, docs/rules.md, "The reclaim
    line"):
    its core, the first ``min_available`` running tasks, or one of the surplus tasks after them. ``shared``: whether
    no running task has requests of its own (found here if not given)."""
    if shared is None:
        shared = all(task.resources is None for task in running)
    if shared:  # every task asks for the job's requests
        each, count = job.task_resources, min(job.gang_minimum, len(running))
        largest = {r: a * count for r, a in each.items()} if count else {}
        if len(running) > count:
            for r, a in each.items():
                largest[r] = max(largest.get(r, 0), a)
        return largest
    core = requested(job, running[: job.gang_minimum])
    largest = dict(core)
    for task in running[job.gang_minimum :]:
        for r, a in job.requests(task).items():
            largest[r] = max(largest.get(r, 0), a)
    return largest
