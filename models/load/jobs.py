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
    unset_mask,
)
from .shapes import OPTIONAL, RICH, TASK_FIELDS, Extras, shapes
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
    nodes = [task.node for task in flat]
    unset: list[Any] = []
    if len(flat) <= LARGE_COLUMN:
        rich = jobs_at(
            missing_at(nodes),  # no node given, or a null
            *(given_at(column) for column in (names, statuses, devices, order)),
        )
    else:  # as masks: most columns are given everywhere or nowhere, which a count in C tells
        unset = [unset_mask(column) for column in (nodes, names, statuses, devices, order)]
        marks = [u is False if type(u) is bool else ~u for u in unset[1:]]  # given somewhere
        rich = _rich(starts, [unset_mask(nodes, None) | unset[0], *marks], len(raw))
    extras: dict[int, dict[str, Any]] = {}
    for name in JOB_EXTRAS:  # field by field: most are given by no job, which a count in C tells
        column = list(map(attrgetter(name), raw))
        for i in given_at(column):
            given = extras.get(i)
            if given is None:
                given = extras[i] = {}
            given[name] = column[i]
    for i in [i for i, given in extras.items() if "gpu_devices" in given or "preemption_delay" in given]:
        odd.add(i)
        del extras[i]
    rich.update(extras)
    read = TaskRead(tasks, flat, starts, names, statuses, devices, order)
    read.nodes, read.unset = nodes, unset
    read.extras = extras
    return odd, rich - odd, read


def _rich(starts: list[int], marks: list[Any], jobs: int) -> set[int]:
    """The jobs with a task marked by one of ``marks`` (``True``: every task; ``False``: none; else a mask)."""
    import numpy as np

    if any(mark is True for mark in marks):
        return set(range(jobs))
    masks = [mark for mark in marks if mark is not False]
    if not masks:
        return set()
    marked = np.logical_or.reduce(masks) if len(masks) > 1 else masks[0]
    found: list[int] = np.flatnonzero(np.logical_or.reduceat(marked, starts[:-1])).tolist()  # every job has a task
    return set(found)


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
        self.nodes: list[Any] = []
        self.unset: list[Any] = []
        """Where the nodes, names, statuses, devices and order are not given (masks), for a large snapshot."""


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
    optional = [list(map(attrgetter(name), raw)) for name in OPTIONAL]
    given_classes, given_priorities, given_preemptible, given_gang, given_maps, given_created, given_started = optional
    gathered.classes = classes = nones(given_classes)
    gang = nones(given_gang)
    if any(m is not None and m > c for m, c in zip(gang, counts, strict=True)):
        raise Refused
    gathered.minimum = [c if m is None else m for m, c in zip(gang, counts, strict=True)]
    gathered.shared = resource_maps(given_maps, gathered)
    if any(map(_mixed_share, {id(m): m for m in gathered.shared}.values())):
        raise Refused
    gathered.created = instants(given_created, gathered)
    gathered.started = instants(given_started, gathered)
    priorities = nones(given_priorities)
    preemptible = nones(given_preemptible)
    resolve = gathered.resolve
    by_class = {name: resolve((name, None, None)) for name in set(classes)}  # most jobs: the class says it all
    resolved = list(map(by_class.__getitem__, classes))
    for i in given_at(priorities, missing=None) + given_at(preemptible, missing=None):
        resolved[i] = resolve((classes[i], priorities[i], preemptible[i]))
    gathered.priority = [r[0] for r in resolved]
    gathered.preemptible = [r[1] for r in resolved]
    gathered.marked = [flag is False for flag in preemptible]
    gathered.uniform = [True] * count
    gathered.nodes = nones(read.nodes)  # msgspec typed them: a node given is a string
    if rich and 2 * (read.names.count(UNSET) + read.names.count(None)) < len(flat):
        gathered.names = []  # most tasks named: _task_columns writes their names, and the defaults of the rest
    else:
        suffixes = [f"-{index}" for index in range(max(counts, default=0))]
        gathered.names = [name + suffix for name, n in zip(names, counts, strict=True) for suffix in suffixes[:n]]
    gathered.statuses = ["running"] * len(flat)
    extras = Extras(read.starts)
    extras.shapes = shapes(optional, rich, count)
    extras.task_shapes = shapes(
        [read.nodes, read.names, read.statuses, read.devices, read.order], set(), len(flat), read.unset
    )
    for name, column in (("priority", priorities), ("preemptible", preemptible), ("min_available", gang)):
        extras.given[name] = {i: column[i] for i in given_at(column, None)}
    if rich:
        _task_columns(read, gathered, odd, extras)
        _job_extras(read, gathered, odd, extras)
    if odd:
        built_now(sorted(odd), raw, gathered, resolved)
    refuse_running_shares(gathered)
    return resolved, extras


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
    if statuses.count(UNSET) < len(statuses) or None in nodes:
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
            gathered.devices[position] = found
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
    if not gathered.devices.keys() <= shared_at:
        raise Refused  # a task of whole GPUs names devices
    statuses = gathered.statuses
    if any(statuses[position] in HOLDING_DEVICES for position in shared_at - gathered.devices.keys()):
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
        given = (none_if_unset(struct.priority), none_if_unset(struct.preemptible), none_if_unset(struct.min_available))
        values = _job_values(gathered, i, resolved[i], given)
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
        gathered.devices[position] = devices
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


def _job_values(gathered: Gathered, i: int, resolved: tuple[int, bool, bool], given: tuple[Any, ...]) -> dict[str, Any]:
    """The fields of the model of the ``i``-th job but its tasks, labels, annotations and requeue state, from the
    columns, with the values the snapshot resolves for it; ``given``: its priority, preemptibility and gang minimum
    (``None`` where not given)."""
    priority, preemptible, may_evict = resolved
    created, started = gathered.created[i], gathered.started[i]
    values: dict[str, Any] = {
        "name": gathered.job_names[i],
        "queue": gathered.queues[i],
        "priority_class": gathered.classes[i],
        "priority": given[0],
        "preemptible": given[1],
        "min_available": given[2],
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
    """Job models made from the columns and the shapes of the jobs not built at once (:class:`Extras`)."""

    def __init__(self, gathered: Gathered) -> None:
        self.seen = gathered
        self.resolved: list[tuple[int, bool, bool]] = []
        """Per job: resolved priority, preemptibility, and whether it may evict (set by :func:`job_columns`)."""
        self.extras = Extras([])
        self.given: dict[tuple[int, tuple[str, ...]], set[str]] = {}
        self.task_given: dict[int, set[str]] = {}

    def make(self, i: int, shape: int) -> Job:
        """The model of the ``i``-th job, of ``shape`` (see :attr:`Extras.shapes`)."""
        seen, extras = self.seen, self.extras
        given = extras.given
        values = _job_values(
            seen,
            i,
            self.resolved[i],
            (given["priority"].get(i), given["preemptible"].get(i), given["min_available"].get(i)),
        )
        fields = extras.fields.get(i, _NO_FIELDS) if shape & RICH else _NO_FIELDS
        key = (shape, tuple(fields))
        found = self.given.get(key)
        if found is None:
            left_out = {name for k, name in enumerate(OPTIONAL) if shape >> k & 1}
            names = ("name", "queue", "tasks", *(name for name in OPTIONAL if name not in left_out), *fields)
            found = self.given[key] = given_set(names)
        values["_uniform"] = True
        start = int(extras.starts[i])
        if shape & RICH:
            values["tasks"] = self._tasks(start, seen.counts[i])
            values.update(fields)
        else:
            del values["tasks"]  # made when first read (Job.made_tasks): most jobs' tasks are never looked at
            values["_task_nodes"] = seen.nodes[start : start + seen.counts[i]]
        return built_model(Job, values, found)

    def _tasks(self, start: int, count: int) -> list[Task]:
        """The ``count`` tasks from position ``start``, from the lists (checked by :func:`_task_columns`)."""
        seen, devices, order = self.seen, self.seen.devices, self.extras.order
        shapes, known = self.extras.task_shapes, self.task_given
        tasks = []
        for position in range(start, start + count):
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
            shape = shapes[position]
            given = known.get(shape)
            if given is None:
                given = known[shape] = given_set(tuple(n for k, n in enumerate(TASK_FIELDS) if not shape >> k & 1))
            set_given(task, given)
            set_extra(task, None)
            set_private(task, None)
            tasks.append(task)
        return tasks


_NO_FIELDS: dict[str, Any] = {}
