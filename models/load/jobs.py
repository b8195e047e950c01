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
    LARGE_COLUMN,
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

__all__ = [
    "JOB_EXTRAS",
    "Extras",
    "JobMaker",
    "TaskRead",
    "built_now",
    "job_columns",
    "refuse_running_shares",
    "uncommon_jobs",
]


_DURATION: TypeAdapter[float] = TypeAdapter(Duration)


def uncommon_jobs(raw: list[Any]) -> tuple[set[int], set[int], TaskRead]:
    """The positions of the jobs built at once (a task that overrides its resources; ``gpu_devices``, a preemption
    delay) and of the jobs that give more than the plainest job (a task that gives more than its node, or no node;
    labels, annotations, requeue state, a placement, a checkpoint, an expected end), and every job's tasks, alone,
    in one list, and as columns of what they give besides their node."""
    tasks = [job.tasks for job in raw]
    flat = [task for job_tasks in tasks for task in job_tasks]
    starts = list(accumulate(map(len, tasks), initial=0))
    names, statuses, resources, devices, order = (list(map(attrgetter(name), flat)) for name in _TASK_EXTRAS)

    def jobs_at(*columns: list[int]) -> set[int]:
        """The jobs of the tasks at the positions ``columns`` list."""
        if any(len(positions) == len(flat) for positions in columns):
            return set(range(len(raw)))
        if not any(columns):
            return set()
        if len(flat) <= LARGE_COLUMN:  # a small snapshot: numpy is not loaded for it
            jobs, last = set(), -1
            for position in sorted(set().union(*columns)):
                if position >= last:  # past the job found last
                    job = bisect_right(starts, position) - 1
                    jobs.add(job)
                    last = starts[job + 1]
            return jobs
        import numpy as np

        first = np.asarray(starts, dtype=np.int64)  # where each job's tasks start (every job has one)
        marked = np.zeros(len(raw), dtype=bool)
        for positions in columns:
            marked[np.searchsorted(first, np.asarray(positions, dtype=np.int64), side="right") - 1] = True
        found: list[int] = np.flatnonzero(marked).tolist()
        return set(found)

    odd = jobs_at(given_at(resources))
    rich = jobs_at(
        missing_at([task.node for task in flat]),  # no node given, or a null
        *(given_at(column) for column in (names, statuses, devices, order)),
    )
    fields = list(map(_JOB_EXTRAS, raw))  # one pass in C for every field the plainest job leaves out
    extras = {}
    for i in given_at(fields, _NO_EXTRAS):
        given = {name: value for name, value in zip(JOB_EXTRAS, fields[i], strict=True) if value is not UNSET}
        if "gpu_devices" in given or "preemption_delay" in given:
            odd.add(i)
        else:
            rich.add(i)
            extras[i] = given
    read = TaskRead(tasks, flat, starts, names, statuses, devices, order)
    read.extras = extras
    return odd, rich - odd, read


JOB_EXTRAS = (
    "labels",
    "annotations",
    "requeue",
    "placement",
    "checkpointed_at",
    "expected_end",
    "gpu_devices",
    "preemption_delay",
)
"""The job fields the plainest job leaves out (besides priorities, gang minimum, requests and instants)."""
_JOB_EXTRAS = attrgetter(*JOB_EXTRAS)
_NO_EXTRAS = (UNSET,) * len(JOB_EXTRAS)


class TaskRead:
    """Every job's tasks (alone and in one list, with where each job's start in it) and what they give besides
    their node, as columns (:data:`UNSET` where not given)."""

    def __init__(
        self,
        tasks: list[list[Any]],
        flat: list[Any],
        starts: list[int],
        names: list[Any],
        statuses: list[Any],
        devices: list[Any],
        order: list[Any],
    ) -> None:
        self.tasks, self.flat, self.starts = tasks, flat, starts
        self.names, self.statuses, self.devices, self.order = names, statuses, devices, order
        self.extras: dict[int, dict[str, Any]] = {}
        """Per job that gives any of :data:`JOB_EXTRAS`, those it gives."""


_TASK_EXTRAS = ("name", "status", "resources", "devices", "order")
"""The fields a task may give besides its node."""


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
    raw: list[Any], gathered: Gathered, odd: set[int], rich: set[int], read: TaskRead
) -> tuple[list[tuple[int, bool, bool]], Extras]:
    """Check every job of ``raw``, gathering the lists into ``gathered``; the jobs at positions ``odd`` are built now,
    in place in ``raw``, and what the jobs at positions ``rich`` give beyond the plainest job is checked on columns
    and kept to make them with. Returns each job's resolved priority, preemptibility, and whether it may evict, and
    what the rich jobs give."""
    tasks, flat = read.tasks, read.flat
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
    if rich and 2 * (read.names.count(UNSET) + read.names.count(None)) < len(flat):
        gathered.names = []  # most tasks named: _task_columns writes their names, and the defaults of the rest
    else:
        suffixes = [f"-{index}" for index in range(max(counts, default=0))]
        gathered.names = [name + suffix for name, n in zip(names, counts, strict=True) for suffix in suffixes[:n]]
    gathered.statuses = ["running"] * len(flat)
    extras = Extras(read.starts)
    if rich:
        _task_columns(read, gathered, odd, extras)
        _job_extras(read, gathered, odd, extras)
    if odd:
        built_now(sorted(odd), raw, gathered, resolved)
    refuse_running_shares(gathered)
    for job in raw:  # a raw map is a view of the document's bytes: kept, it would keep them all
        if type(job) is structs.RawJob and job.task_resources is not UNSET:
            job.task_resources = PARSED_MAP
    return resolved, extras


class Extras:
    """What the jobs that give more than the plainest job give, checked, by position: their tasks' devices and
    order (by task position in the document), and the job fields beyond the common ones (by job position)."""

    def __init__(self, starts: list[int]) -> None:
        self.starts = starts
        self.devices: dict[int, list[int]] = {}
        self.order: dict[int, int] = {}
        self.fields: dict[int, dict[str, Any]] = {}


_NO_NAME = frozenset((type(UNSET), type(None)))
"""What a task gives that names no name of its own (its default, ``<job>-<index>``, names it)."""


def _task_columns(read: TaskRead, gathered: Gathered, odd: set[int], extras: Extras) -> None:
    """Check what every task gives besides its node, as columns (docs/snapshot-format.md, "jobs"): a
    name, a status that agrees with the node (a pending task has none, any other has one), devices, an order.
    The tasks of ``odd`` jobs are checked again as those jobs are built."""
    names, nodes = read.names, gathered.nodes
    if not gathered.names:  # most tasks named (job_columns): every name checked in C, the few defaults added
        if set(map(type, names)) - _NO_NAME != {str} or "" in names:
            raise Refused
        unnamed = missing_at(names)
        gathered.names = list(names) if unnamed else names
        for position in unnamed:
            i = bisect_right(read.starts, position) - 1
            gathered.names[position] = f"{gathered.job_names[i]}-{position - read.starts[i]}"
    else:
        named = given_at(names)
        for position in named:
            name = names[position]
            if name is not None:
                if type(name) is not str or not name:
                    raise Refused
                gathered.names[position] = name
    statuses = read.statuses
    if given_at(statuses) or None in nodes:
        if statuses.count(UNSET) + statuses.count(None):
            statuses = [
                ("pending" if node is None else "running") if status is UNSET or status is None else status
                for status, node in zip(statuses, nodes, strict=True)
            ]
        if not set(map(type, statuses)) <= {str} or not set(statuses) <= STATUSES:
            raise Refused
        nodeless = missing_at(nodes)  # the pending tasks are exactly those without a node (found in C)
        if statuses.count("pending") != len(nodeless) or any(statuses[i] != "pending" for i in nodeless):
            raise Refused  # a pending task on a node, or another without one
        gathered.statuses = statuses
    starts = extras.starts
    for position in given_at(read.devices):
        found = _devices(read.devices[position], gathered.statuses[position])
        if found is not None:
            if len(found) != 1 and bisect_right(starts, position) - 1 not in odd:
                raise Refused  # a job without gpu_devices takes one device per share
            extras.devices[position] = found
            gathered.devices.add(position)
    for position in given_at(read.order):
        order = read.order[position]
        if order is None:
            continue
        if type(order) is not int or not -(2**31) <= order < 2**31:
            raise Refused
        i = bisect_right(starts, position) - 1
        if gathered.minimum[i] >= gathered.counts[i]:
            raise Refused  # only an elastic job orders its tasks
        extras.order[position] = order
        gathered.ordered.add(gathered.job_names[i])


def _job_extras(read: TaskRead, gathered: Gathered, odd: set[int], extras: Extras) -> None:
    """Check the job fields beyond the common ones: labels and annotations, requeue state, placement (once per
    distinct spelling in a JSON document), checkpoint and expected end."""
    placements: dict[bytes, Placement] = {}
    for i, given in read.extras.items():
        if i in odd:
            continue
        fields = extras.fields[i] = {}
        for name, value in given.items():
            if name in ("labels", "annotations"):
                fields[name] = free_map(value, gathered)
            elif name == "requeue":
                fields[name] = None if value is None else RequeueState.model_validate(value)
            elif name == "placement":
                if value is None:
                    fields[name] = None
                elif gathered.raw or gathered.parsed:  # JSON: equal spellings are equal placements
                    key = structs.encode(value)
                    found = placements.get(key)
                    fields[name] = found if found is not None else placements.setdefault(key, _placement(value))
                else:
                    fields[name] = _placement(value)
            else:  # checkpointed_at, expected_end
                fields[name] = instant(value)
        checkpoint = fields.get("checkpointed_at")
        if checkpoint is not None:
            if gathered.since is None:
                gathered.since = list(gathered.started)
            started = gathered.started[i]
            gathered.since[i] = started if started is None else max(started, checkpoint)


def _placement(value: Any) -> Placement:
    return Placement.model_validate(value)


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
    maps = {id(m): m for m in gathered.shared}
    shares = {key for key, m in maps.items() if share_of(m) is not None}
    if not shares and not gathered.devices and not gathered.own:
        return
    starts = list(accumulate(gathered.counts, initial=0))
    shared_at: set[int] = set()  # the positions of the tasks that ask for a share
    if shares:
        for i, requests in enumerate(gathered.shared):
            if id(requests) in shares:
                shared_at.update(range(starts[i], starts[i + 1]))
    for position, requests in gathered.own:
        if share_of(requests) is not None:
            shared_at.add(position)
        else:
            shared_at.discard(position)
    if not gathered.devices <= shared_at:
        raise Refused  # a task of whole GPUs names devices
    statuses = gathered.statuses
    if any(statuses[position] in HOLDING_DEVICES for position in shared_at - gathered.devices):
        raise Refused  # a running or releasing share names no device


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
    """Job models made from the structs of the jobs not built at once, with what the lists hold for them."""

    def __init__(self, gathered: Gathered) -> None:
        self.seen = gathered
        self.resolved: list[tuple[int, bool, bool]] = []
        """Per job: resolved priority, preemptibility, and whether it may evict (set by :func:`job_columns`)."""
        self.rich: set[int] = set()
        """The positions of the jobs that give more than the plainest job."""
        self.extras = Extras([])
        self.given: dict[tuple[bool, ...], set[str]] = {}

    def make(self, i: int, struct: Any) -> Job:
        values = _job_values(struct, self.seen, i, self.resolved[i])
        if i in self.rich:
            values["tasks"] = self._tasks(i, struct.tasks)
            values.update(self.extras.fields.get(i, ()))
            values["_uniform"] = True
            return built_model(Job, values, given_set(structs.given(struct)))
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

    def _tasks(self, i: int, structs_: list[Any]) -> list[Task]:
        """The tasks of the ``i``-th job, from the lists (checked by :func:`_task_columns`)."""
        seen, devices, order = self.seen, self.extras.devices, self.extras.order
        tasks = []
        for position, struct in enumerate(structs_, self.extras.starts[i]):
            task = uninitialised(Task)
            set_dict(
                task,
                {
                    "name": seen.names[position],
                    "node": seen.nodes[position],
                    "status": seen.statuses[position],
                    "resources": None,
                    "devices": devices.get(position),
                    "order": order.get(position),
                },
            )
            key = (
                struct.node is UNSET,
                struct.name is UNSET,
                struct.status is UNSET,
                struct.devices is UNSET,
                struct.order is UNSET,
            )
            given = self.given.get(key) or self.given.setdefault(key, given_set(structs.given(struct)))
            set_given(task, given)
            set_extra(task, None)
            set_private(task, None)
            tasks.append(task)
        return tasks
