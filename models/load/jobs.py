"""Jobs and their tasks built from their structs: the common job (its tasks give only their node) gathered as
columns and made when first read (:class:`JobMaker`), any other built at once."""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from operator import attrgetter
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..fields import Duration, _resource_map
from ..job import NODE_ONLY, Job, Task, set_dict, set_extra, set_given, set_private, share_of
from ..placement import Placement
from ..quantity import MAX_GPUS
from ..requeue import RequeueState
from ..sharing import HOLDING_DEVICES
from . import structs
from .checked import (
    EMPTY,
    PARSED_MAP,
    STATUSES,
    Gathered,
    Refused,
    built_model,
    free_map,
    given_at,
    given_set,
    instant,
    instants,
    missing_at,
    none_if_unset,
    nones,
    resource_maps,
    uninitialised,
)
from .structs import UNSET

__all__ = ["JobMaker", "built_now", "job_columns", "refuse_running_shares", "uncommon_jobs"]


_DURATION: TypeAdapter[float] = TypeAdapter(Duration)


def uncommon_jobs(raw: list[Any]) -> tuple[set[int], tuple[list[list[Any]], list[Any]]]:
    """The positions of the jobs out of the common case (a task that gives more than its node, or no node; labels,
    annotations or requeue state), and every job's tasks, alone and in one list."""
    tasks = [job.tasks for job in raw]
    flat = [task for job_tasks in tasks for task in job_tasks]
    at = missing_at([task.node for task in flat])  # no node given, or a null
    given = list(map(_TASK_EXTRAS, flat))  # one pass in C for every field a task may give besides its node
    at += given_at(given, _NONE_GIVEN)
    starts = list(accumulate(map(len, tasks), initial=0))
    odd = {bisect_right(starts, position) - 1 for position in at}
    for column in (
        [job.labels for job in raw],
        [job.annotations for job in raw],
        [job.requeue for job in raw],
        [job.placement for job in raw],
        [job.checkpointed_at for job in raw],
        [job.expected_end for job in raw],
        [job.gpu_devices for job in raw],
        [job.preemption_delay for job in raw],
    ):
        odd.update(given_at(column))
    return odd, (tasks, flat)


_TASK_EXTRAS = attrgetter("name", "status", "resources", "devices", "order")


_NONE_GIVEN = (UNSET,) * 5
"""What :data:`_TASK_EXTRAS` reads of a task that gives only its node."""


def _plain_task(task: Any) -> bool:
    return (
        type(task.node) is str
        and task.name is UNSET
        and task.status is UNSET
        and task.resources is UNSET
        and task.devices is UNSET
        and task.order is UNSET
    )


def job_columns(
    raw: list[Any], gathered: Gathered, odd: set[int], read: tuple[list[list[Any]], list[Any]]
) -> list[tuple[int, bool, bool]]:
    """Check every job of ``raw``, gathering the lists into ``gathered``; the jobs at positions ``odd`` are built now,
    in place in ``raw``. Returns each job's resolved priority, preemptibility, and whether it may evict."""
    tasks, flat = read
    count = len(raw)
    names = gathered.job_names
    gathered.counts = counts = list(map(len, tasks))
    gathered.queues = [job.queue for job in raw]
    gathered.classes = classes = nones([job.priority_class for job in raw])
    gang = nones([job.min_available for job in raw])
    if any(m is not None and m > c for m, c in zip(gang, counts, strict=True)):
        raise Refused
    gathered.minimum = [c if m is None else m for m, c in zip(gang, counts, strict=True)]
    gathered.shared = resource_maps([job.task_resources for job in raw], gathered)
    if any(map(_mixed_share, {id(m): m for m in gathered.shared}.values())):
        raise Refused
    gathered.created = instants([job.created_at for job in raw], gathered)
    gathered.started = instants([job.started_at for job in raw], gathered)
    priorities = nones([job.priority for job in raw])
    preemptible = nones([job.preemptible for job in raw])
    resolve = gathered.resolve
    by_class = {name: resolve((name, None, None)) for name in set(classes)}  # most jobs: the class says it all
    resolved = list(map(by_class.__getitem__, classes))
    for i in given_at(priorities, missing=None) + given_at(preemptible, missing=None):
        resolved[i] = resolve((classes[i], priorities[i], preemptible[i]))
    gathered.priority = [r[0] for r in resolved]
    gathered.preemptible = [r[1] for r in resolved]
    gathered.marked = [flag is False for flag in preemptible]
    gathered.uniform = [True] * count
    gathered.nodes = [task.node if type(task.node) is str else None for task in flat]
    suffixes = [f"-{index}" for index in range(max(counts, default=0))]
    gathered.names = [name + suffix for name, n in zip(names, counts, strict=True) for suffix in suffixes[:n]]
    gathered.statuses = ["running"] * len(flat)
    if odd:
        built_now(sorted(odd), raw, gathered, resolved)
    refuse_running_shares(gathered)
    for job in raw:  # a raw map is a view of the document's bytes: kept, it would keep them all
        if type(job) is structs.RawJob and job.task_resources is not UNSET:
            job.task_resources = PARSED_MAP
    return resolved


def _mixed_share(requests: dict[str, int]) -> bool:
    """Whether ``requests`` asks for GPU memory beside a fraction of a GPU or whole GPUs (Job._sharing_errors)."""
    return requests.get("gpu_memory", 0) > 0 and requests.get("gpu", 0) > 0


def _devices(value: Any, status: str) -> list[int] | None:
    """The devices a task names (``None``: none); refused unless they are distinct devices, of a task on a node
    (pydantic says what is wrong with the rest)."""
    if value is UNSET or value is None:
        return None
    if type(value) is not list or not 0 < len(value) <= MAX_GPUS or status == "pending":
        raise Refused
    if any(type(d) is not int or not 0 <= d < MAX_GPUS for d in value) or len(set(value)) < len(value):
        raise Refused
    return list(value)


def _delay(value: Any) -> float | None:
    """A job's ``preemption_delay``, checked as its model checks it."""
    if value is UNSET or value is None:
        return None
    try:
        found: float = _DURATION.validate_python(value)
    except ValidationError:
        raise Refused from None
    return found


def _gpu_devices(value: Any) -> int:
    """A job's ``gpu_devices`` (1 when not given), checked as its model checks it."""
    if value is UNSET:
        return 1
    if type(value) is not int or not 1 <= value <= MAX_GPUS:
        raise Refused
    return value


def refuse_running_shares(gathered: Gathered) -> None:
    """Refuse a snapshot where a running or releasing share of a GPU names no device, or a task that is no share
    names one (docs/snapshot-format.md, "GPU sharing"; pydantic says which). The device ledger itself is checked
    with the snapshot (:meth:`Snapshot._check_devices`)."""
    shares = {id(m) for m in gathered.shared if share_of(m) is not None}
    own = {position: r for position, r in gathered.own if share_of(r) is not None or position in gathered.devices}
    if not shares and not gathered.devices and not own:
        return
    own = dict(gathered.own)
    starts = list(accumulate(gathered.counts, initial=0))
    for i, requests in enumerate(gathered.shared):
        if id(requests) not in shares and not (gathered.devices or own):
            continue
        for position in range(starts[i], starts[i + 1]):
            share = share_of(own.get(position, requests)) is not None
            if share and gathered.statuses[position] in HOLDING_DEVICES and position not in gathered.devices:
                raise Refused
            if not share and position in gathered.devices:
                raise Refused


def built_now(odd: list[int], raw: list[Any], gathered: Gathered, resolved: list[tuple[int, bool, bool]]) -> None:
    """Build the jobs at positions ``odd`` (ascending) at once, in place in ``raw``, and put what their tasks hold
    into ``gathered``."""
    starts = list(accumulate(gathered.counts, initial=0))
    for i in odd:
        struct = raw[i]
        first = starts[i]
        own = len(gathered.own)
        tasks = [_task(t, struct.name, index, first + index, gathered) for index, t in enumerate(struct.tasks)]
        values = _job_values(struct, gathered, i, resolved[i])
        values["tasks"] = tasks
        values["labels"] = free_map(struct.labels, gathered)
        values["annotations"] = free_map(struct.annotations, gathered)
        values["requeue"] = None if struct.requeue in (None, UNSET) else RequeueState.model_validate(struct.requeue)
        values["placement"] = None if struct.placement in (None, UNSET) else Placement.model_validate(struct.placement)
        values["checkpointed_at"] = None if struct.checkpointed_at in (None, UNSET) else instant(struct.checkpointed_at)
        values["expected_end"] = None if struct.expected_end in (None, UNSET) else instant(struct.expected_end)
        values["gpu_devices"] = _gpu_devices(struct.gpu_devices)
        values["preemption_delay"] = _delay(struct.preemption_delay)
        uniform = len(gathered.own) == own
        if uniform:
            values["_uniform"] = True
        job = raw[i] = built_model(Job, values, given_set(structs.given(struct)))
        if (
            job._sharing_errors()
            or (job.preemption_delay is not None and job.created_at is None)
            or (job.gang_minimum >= len(job.tasks) and any(t.order is not None for t in job.tasks))
        ):
            raise Refused  # pydantic says why (its devices, for one)
        gathered.uniform[i] = uniform or job.uniform
        if job.checkpointed_at is not None:
            if gathered.since is None:
                gathered.since = list(gathered.started)
            gathered.since[i] = job.progress_since


def _task(struct: Any, job: str, index: int, position: int, gathered: Gathered) -> Task:
    """A task that may give more than its node, checked as its model checks it; its name, node and status written
    into ``gathered``'s lists at ``position``."""
    node, name, status, resources = none_if_unset(struct.node), struct.name, struct.status, struct.resources
    if _plain_task(struct):  # the common case, {"node": ...}: a running task, named by its job
        name, status, resources, given = f"{job}-{index}", "running", None, NODE_ONLY
    else:
        given = given_set(structs.given(struct))
        if status is UNSET or status is None:
            status = "pending" if node is None else "running"
        elif type(status) is not str or status not in STATUSES:
            raise Refused
        if (node is None) != (status == "pending"):
            raise Refused
        if name is UNSET or name is None:
            name = f"{job}-{index}"
        elif type(name) is not str or not name:
            raise Refused
        if resources is UNSET or resources is None:
            resources = None
        else:
            resources = _resource_map(resources, allow_unlimited=False)
            if _mixed_share(resources):
                raise Refused  # pydantic says why
            gathered.own.append((position, resources))
    devices = _devices(struct.devices, status)
    if devices is not None:
        gathered.devices.add(position)
    order = struct.order
    if order is UNSET or order is None:
        order = None
    elif type(order) is not int or not -(2**31) <= order < 2**31:
        raise Refused  # pydantic says why
    else:
        gathered.ordered.add(job)
    gathered.names[position], gathered.nodes[position], gathered.statuses[position] = name, node, status
    task = uninitialised(Task)
    set_dict(
        task,
        {"name": name, "node": node, "status": status, "resources": resources, "devices": devices, "order": order},
    )
    set_given(task, given)
    set_extra(task, None)
    set_private(task, None)
    return task


def _job_values(struct: Any, gathered: Gathered, i: int, resolved: tuple[int, bool, bool]) -> dict[str, Any]:
    """The fields of the job model of ``struct`` (the ``i``-th job) but its tasks, labels, annotations and requeue
    state, with the values the snapshot resolves for it."""
    priority, preemptible, may_evict = resolved
    created, started = gathered.created[i], gathered.started[i]
    values: dict[str, Any] = {
        "name": struct.name,
        "queue": struct.queue,
        "priority_class": none_if_unset(struct.priority_class),
        "priority": none_if_unset(struct.priority),
        "preemptible": none_if_unset(struct.preemptible),
        "min_available": none_if_unset(struct.min_available),
        "task_resources": gathered.shared[i],
        "created_at": None if created is None else float(created),
        "started_at": None if started is None else float(started),
        "tasks": None,
        "labels": EMPTY,
        "annotations": EMPTY,
        "requeue": None,
        "placement": None,
        "checkpointed_at": None,
        "expected_end": None,
        "gpu_devices": 1,  # a job that gives it is built by built_now
        "preemption_delay": None,
        "_resolved_priority": priority,  # resolved by the snapshot (Snapshot._check_jobs), known here
        "_resolved_preemptible": preemptible,
    }
    if not may_evict:
        values["_may_evict"] = False
    return values


class JobMaker:
    """Job models made from the structs of the common case, with what the lists hold for them."""

    def __init__(self, gathered: Gathered) -> None:
        self.seen = gathered
        self.resolved: list[tuple[int, bool, bool]] = []
        """Per job: resolved priority, preemptibility, and whether it may evict (set by :func:`job_columns`)."""
        self.given: dict[tuple[bool, ...], set[str]] = {}

    def make(self, i: int, struct: Any) -> Job:
        values = _job_values(struct, self.seen, i, self.resolved[i])
        del values["tasks"]  # made when first read (Job.made_tasks): most jobs' tasks are never looked at
        values["_task_nodes"] = [task.node for task in struct.tasks]
        values["_uniform"] = True
        # The fields a job of the common case may leave out (the others are given, or absent in all of them).
        key = (
            struct.priority_class is UNSET,
            struct.priority is UNSET,
            struct.preemptible is UNSET,
            struct.min_available is UNSET,
            struct.task_resources is UNSET,
            struct.created_at is UNSET,
            struct.started_at is UNSET,
        )
        given = self.given.get(key) or self.given.setdefault(key, given_set(structs.given(struct)))
        return built_model(Job, values, given)
