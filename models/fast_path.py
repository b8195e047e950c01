"""The same snapshot, sooner: nodes, jobs and tasks built without pydantic's per-object validation.

A 100,000-node snapshot holds about a million node, job and task objects, and
pydantic validates each with Python validators (quantities, instants, the task
status rule), which cost more than reading the file. :func:`fast_snapshot`
checks each raw node, job and task in plain Python for exactly what its model
checks, parsing each distinct quantity map and instant once, and builds the
models directly. The few other parts (``now``, ``config``, queues, priority
classes) are validated by pydantic as usual, and the whole-document checks
(:meth:`Snapshot._resolve`) run unchanged.

It never decides what is wrong with a document: at the first thing it does not
accept, it gives up (returns ``None``) and the caller validates the whole
document with pydantic, which gives the error messages. A property test checks
that both paths build equal snapshots (issue 14).

Examples
--------
>>> snap = fast_snapshot({"now": 0, "nodes": [{"name": "n", "resources": {"gpu": 8}}], "queues": [{"name": "q"}],
...     "jobs": [{"name": "j", "queue": "q", "task_resources": {"gpu": 8}, "tasks": [{"node": "n"}]}]})
>>> snap.job("j").tasks[0].status, snap.job("j").tasks[0].name
('running', 'j-0')
>>> fast_snapshot({"now": 0, "nodes": [{"name": "n", "resources": {"gpu": 0.5}}], "queues": []}) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from . import snapshot as _snapshot
from .duration import MAX_INSTANT, MIN_INSTANT, parse_time
from .fields import _resource_map, bounded_depth, parsed_resource_map
from .job import NODE_ONLY, Job, Task
from .job import set_dict as _set_dict
from .job import set_extra as _set_extra
from .job import set_given as _set_given
from .job import set_private as _set_private
from .node import Node
from .requeue import RequeueState
from .snapshot import Snapshot, resolution

M = TypeVar("M", bound=BaseModel)

_INT32 = (-(2**31), 2**31 - 1)
_STATUSES = frozenset(("running", "pending", "releasing", "nominated"))
_NODE_FIELDS = frozenset(Node.model_fields)
_JOB_FIELDS = frozenset(Job.model_fields)
_TASK_FIELDS = frozenset(Task.model_fields)
_ABSENT: Any = object()
_new = object.__new__


class Refused(Exception):
    """Something the fast path does not accept; pydantic will say what."""


def fast_snapshot(data: dict[str, Any], *, consume: bool = False, parsed: bool = False) -> Snapshot | None:
    """The snapshot pydantic would validate from ``data``, or ``None`` where it would refuse it (or might).

    ``data`` is a parsed document (a mapping). Nothing in it is changed, unless ``consume``: then each raw node and
    job is taken out of its list (replaced by ``None``) once its model is built, so that a large document's raw
    objects are freed while the models are made, and ``data`` is of no further use. With ``parsed`` (``data`` is
    what a JSON parser made, and nothing else), resource maps are looked up by :func:`~.fields.parsed_resource_map`
    and labels of strings only are taken without a walk over their depth.
    """
    try:
        return _build(data, consume, parsed)
    except (Refused, ValidationError, PydanticCustomError, ValueError, TypeError, KeyError):
        return None


def _build(data: dict[str, Any], consume: bool, parsed: bool) -> Snapshot:
    raw_nodes, raw_jobs = data.get("nodes"), data.get("jobs", [])
    if type(raw_nodes) is not list or type(raw_jobs) is not list:
        raise Refused
    # Everything else is small: pydantic validates it first, with no nodes and jobs to check against.
    head = Snapshot.model_validate({**data, "nodes": [], "jobs": []})
    seen = Seen(parsed, head)
    if consume:
        nodes = [built_node(_take(raw_nodes, i), seen) for i in range(len(raw_nodes))]
        jobs = [built_job(_take(raw_jobs, i), seen) for i in range(len(raw_jobs))]
    else:
        nodes = [built_node(raw, seen) for raw in raw_nodes]
        jobs = [built_job(raw, seen) for raw in raw_jobs]
    return assembled(head, "jobs" in data, nodes, jobs, seen)


def assembled(head: Snapshot, has_jobs: bool, nodes: list[Node], jobs: list[Job], seen: Seen) -> Snapshot:
    """The snapshot of ``head`` (validated, without nodes and jobs) with ``nodes`` and ``jobs`` (whose columns
    ``seen`` gathered), checked as a whole; ``has_jobs``: the document gives ``jobs``."""
    if not {q.name for q in head.queues if head.is_leaf(q.name)}.issuperset(seen.queues):
        raise Refused  # a job in an unknown queue, or in one with children
    fields = {**head.__dict__, "nodes": nodes, "jobs": jobs}
    given = head.model_fields_set if has_jobs else head.model_fields_set - {"jobs"}
    snapshot = Snapshot.model_construct(_fields_set=set(given), **fields)
    if len(jobs) >= _snapshot.COLUMNS_FROM:
        from .columns import TaskColumns  # numpy: only for snapshots large enough to gain from it

        snapshot.__dict__["_columns"] = TaskColumns.assemble(
            nodes,
            job_names=seen.job_names,
            job_queues=seen.queues,
            names=seen.names,
            node_names=seen.nodes,
            statuses=seen.statuses,
            shared=seen.shared,
            counts=seen.counts,
            own=seen.own,
        )
        snapshot.__dict__["_job_lists"] = {  # Snapshot.job_columns; validation adds the resolved values
            "names": seen.job_names,
            "queues": seen.queues,
            "classes": seen.classes,
            "started": seen.started,
            "created": seen.created,
            "minimum": seen.minimum,
            "uniform": seen.uniform,
            "resources": seen.shared,
            "priority": seen.priority,
            "preemptible": seen.preemptible,
            "marked": seen.marked,
        }
    snapshot._resolve(fitted=False)
    return snapshot


EMPTY: dict[str, Any] = {}
"""The ``task_resources``, ``labels`` and ``annotations`` of every model that gives none: one map, since models are
frozen and nothing changes their maps (a map each would cost ~60 MB at 100,000 nodes)."""


def _shared_map(value: object) -> dict[str, int]:
    return _resource_map(value, allow_unlimited=False, shared=True)


def _take(items: list[Any], i: int) -> Any:
    item, items[i] = items[i], None
    return item


class Seen:
    """What :class:`~.columns.TaskColumns` is made of, gathered while the jobs are built."""

    def __init__(self, parsed: bool, head: Snapshot) -> None:
        self.parsed = parsed  # the document is what a JSON parser made, and nothing else
        self.head = head
        self.resources: Callable[[object], dict[str, int]] = parsed_resource_map if parsed else _shared_map
        """A node's or a job's resource map, parsed (or found already parsed)."""
        self.job_names: list[str] = []
        self.queues: list[str] = []
        self.names: list[str] = []
        self.nodes: list[str | None] = []
        self.statuses: list[str] = []
        self.shared: list[dict[str, int]] = []
        self.counts: list[int] = []
        self.own: list[tuple[int, dict[str, int]]] = []
        self.classes: list[str | None] = []
        self.started: list[float | None] = []
        self.created: list[float | None] = []
        self.minimum: list[int] = []
        self.uniform: list[bool] = []
        self.priority: list[int] = []
        self.preemptible: list[bool] = []
        self.marked: list[bool] = []
        """Per job, whether it says ``preemptible: false``."""
        self.config, self.priority_classes = head.config, {c.name: c for c in head.priority_classes}
        self.resolved: dict[tuple[str | None, int | None, bool | None], tuple[int, bool, bool]] = {}
        """(priority class, priority, preemptible) -> resolved priority, preemptibility, and whether it may evict."""

    def resolve(self, key: tuple[str | None, int | None, bool | None]) -> tuple[int, bool, bool]:
        """What :meth:`Snapshot._check_jobs` resolves for a job of ``key`` (worked out once per key); refused where
        it would find the class unknown or disagreeing with the priority."""
        found = self.resolved.get(key)
        if found is None:
            priority_class, priority, preemptible = key
            may_evict = True
            if priority_class is not None:
                pclass = self.priority_classes.get(priority_class)
                if pclass is None or (priority is not None and priority != pclass.value):
                    raise Refused
                priority, may_evict = pclass.value, pclass.preemption_policy != "Never"
            found = self.resolved[key] = (*resolution(self.config, priority, preemptible), may_evict)
        return found


def built_model(cls: type[M], values: dict[str, Any], given: set[str]) -> M:
    """An instance of ``cls`` with checked ``values``, as :meth:`BaseModel.model_construct` builds it, minus its loop
    over fields (these models have no private attributes and no extra fields)."""
    model = _new(cls)
    _set_dict(model, values)
    _set_given(model, given)
    _set_extra(model, None)
    _set_private(model, None)
    return model


_GIVEN: dict[tuple[str, ...], set[str]] = {}


def given_set(raw: dict[str, Any] | tuple[str, ...]) -> set[str]:
    """The fields given in ``raw`` (its keys), as one set shared by every model given the same keys in the same order.

    Sharing is safe because the models are frozen: pydantic changes a model's set of given fields only when a
    field is assigned (refused) and copies it in ``model_copy``. A million models save a few hundred megabytes.
    """
    key = tuple(raw)
    found = _GIVEN.get(key)
    if found is None:
        if len(_GIVEN) >= 4096:
            _GIVEN.clear()
        found = _GIVEN[key] = set(key)
    return found


def _name(value: object) -> str:
    if type(value) is not str or not value:
        raise Refused
    return value


def _optional_str(value: object) -> str | None:
    if value is not None and type(value) is not str:
        raise Refused
    return value


def free_map(value: object, seen: Seen) -> dict[str, Any]:
    """Labels or annotations: a mapping with string keys, nested at most :data:`MAX_FREE_DEPTH` levels."""
    if value is _ABSENT:
        return EMPTY
    if type(value) is not dict:
        raise Refused
    if seen.parsed:  # JSON keys are strings; string values (most labels) nest nothing, and join checks them in C
        try:
            "".join(value.values())
            return dict(value)
        except TypeError:
            pass
    if any(type(key) is not str for key in value):
        raise Refused
    if value:
        bounded_depth(value)
    return dict(value)


def instant(value: object) -> float | None:
    if (type(value) is int or type(value) is float) and MIN_INSTANT <= value <= MAX_INSTANT:
        return float(value)
    return None if value is None else parse_time(value)


def built_node(raw: object, seen: Seen) -> Node:
    if type(raw) is not dict or not raw.keys() <= _NODE_FIELDS or "resources" not in raw:
        raise Refused
    get = raw.get
    schedulable = get("schedulable", True)
    if type(schedulable) is not bool:
        raise Refused
    values = {
        "name": _name(get("name")),
        "resources": seen.resources(raw["resources"]),
        "gpu_model": _optional_str(get("gpu_model")),
        "labels": free_map(get("labels", _ABSENT), seen),
        "annotations": free_map(get("annotations", _ABSENT), seen),
        "schedulable": schedulable,
    }
    return built_model(Node, values, given_set(raw))


def built_job(raw: object, seen: Seen) -> Job:
    if type(raw) is not dict or not raw.keys() <= _JOB_FIELDS:
        raise Refused
    get = raw.get
    name, queue, priority, preemptible = get("name"), get("queue"), get("priority"), get("preemptible")
    raw_tasks, min_available = get("tasks"), get("min_available")
    if (
        type(name) is not str
        or not name
        or type(queue) is not str
        or not queue
        or type(raw_tasks) is not list
        or not raw_tasks
        or (priority is not None and (type(priority) is not int or not _INT32[0] <= priority <= _INT32[1]))
        or (preemptible is not None and type(preemptible) is not bool)
        or (min_available is not None and (type(min_available) is not int or not 1 <= min_available <= len(raw_tasks)))
    ):
        raise Refused
    raw_resources = get("task_resources", _ABSENT)
    shared = EMPTY if raw_resources is _ABSENT else seen.resources(raw_resources)
    requeue, labels, annotations = get("requeue"), get("labels", _ABSENT), get("annotations", _ABSENT)
    priority_class = get("priority_class")
    if priority_class is not None and type(priority_class) is not str:
        raise Refused
    created, started = get("created_at"), get("started_at")
    # _time, inlined for the common case: whole seconds since the epoch (three quarters of a million of them)
    if type(created) is int and MIN_INSTANT <= created <= MAX_INSTANT:
        created = float(created)
    elif created is not None:
        created = instant(created)
    if type(started) is int and MIN_INSTANT <= started <= MAX_INSTANT:
        started = float(started)
    elif started is not None:
        started = instant(started)
    key = (priority_class, priority, preemptible)
    resolved = seen.resolved.get(key) or seen.resolve(key)
    own = len(seen.own)
    values: dict[str, Any] = {
        "name": name,
        "queue": queue,
        "priority_class": priority_class,
        "priority": priority,
        "preemptible": preemptible,
        "min_available": min_available,
        "task_resources": shared,
        "created_at": created,
        "started_at": started,
        "tasks": None,  # below
        "labels": EMPTY if labels is _ABSENT else free_map(labels, seen),  # absent: the common case, without a call
        "annotations": EMPTY if annotations is _ABSENT else free_map(annotations, seen),
        "requeue": None if requeue is None else RequeueState.model_validate(requeue),
        "_resolved_priority": resolved[0],  # resolved by the snapshot (Snapshot._check_jobs), known here
        "_resolved_preemptible": resolved[1],
    }
    if not resolved[2]:
        values["_may_evict"] = False
    nodes = _nodes_only(raw_tasks, name, seen)
    if nodes is None:
        values["tasks"] = _tasks(raw_tasks, name, seen)
    else:  # made when first read (Job.made_tasks): most jobs' tasks are never looked at
        del values["tasks"]
        values["_task_nodes"] = nodes
    uniform = len(seen.own) == own
    if uniform:
        values["_uniform"] = True  # no task asks for requests of its own (Job.uniform, known here for free)
    seen.shared.append(shared)
    seen.counts.append(len(raw_tasks))
    seen.job_names.append(name)
    seen.queues.append(queue)
    seen.classes.append(priority_class)
    seen.started.append(started)
    seen.created.append(created)
    seen.minimum.append(len(raw_tasks) if min_available is None else min_available)
    job = built_model(Job, values, given_set(raw))
    seen.uniform.append(uniform or job.uniform)
    seen.priority.append(resolved[0])
    seen.preemptible.append(resolved[1])
    seen.marked.append(preemptible is False)
    return job


def _nodes_only(raw_tasks: list[Any], job: str, seen: Seen) -> list[str] | None:
    """The nodes of ``raw_tasks`` if every task gives only its node (running there, named by its job), gathered
    into the columns; else ``None`` (nothing gathered)."""
    nodes = []
    for raw in raw_tasks:
        if type(raw) is not dict or len(raw) != 1:
            return None
        node = raw.get("node")
        if type(node) is not str:
            return None
        nodes.append(node)
    count = len(nodes)
    seen.names.extend([f"{job}-{index}" for index in range(count)])
    seen.nodes.extend(nodes)
    seen.statuses.extend(["running"] * count)
    return nodes


def _tasks(raw_tasks: list[Any], job: str, seen: Seen) -> list[Task]:
    tasks = []
    names, nodes, statuses = seen.names, seen.nodes, seen.statuses
    for index, raw in enumerate(raw_tasks):
        if type(raw) is not dict:
            raise Refused
        node = raw.get("node")
        if len(raw) == 1 and type(node) is str:  # the common case, {"node": ...}: a running task, named by its job
            name, status, resources, given = f"{job}-{index}", "running", None, NODE_ONLY
        else:
            name, status, resources, given = _task_fields(raw, node, job, index, seen)
        # built_model(Task, ...), inlined: half a million tasks
        task = _new(Task)
        _set_dict(task, {"name": name, "node": node, "status": status, "resources": resources})
        _set_given(task, given)
        _set_extra(task, None)
        _set_private(task, None)
        tasks.append(task)
        names.append(name)
        nodes.append(node)
        statuses.append(status)
    return tasks


def _task_fields(
    raw: dict[str, Any], node: object, job: str, index: int, seen: Seen
) -> tuple[str, str, dict[str, int] | None, set[str]]:
    """Name, status, own requests and given fields of a task that gives more than its node."""
    if not raw.keys() <= _TASK_FIELDS:
        raise Refused
    get = raw.get
    name, status, resources = get("name"), get("status"), get("resources")
    if node is not None and type(node) is not str:
        raise Refused
    if status is None:
        status = "pending" if node is None else "running"
    elif type(status) is not str or status not in _STATUSES:
        raise Refused
    if (node is None) != (status == "pending"):
        raise Refused
    name = f"{job}-{index}" if name is None else _name(name)
    if resources is not None:
        resources = _resource_map(resources, allow_unlimited=False)
        seen.own.append((len(seen.names), resources))
    return name, status, resources, given_set(raw)
