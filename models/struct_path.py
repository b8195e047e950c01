"""A large JSON snapshot, sooner still: decoded into typed structs, checked on columns, its jobs made when read.

The fast path (:mod:`.fast_path`) still checks each raw job in Python and builds every job model: at 100,000 nodes
that is most of loading. Here msgspec decodes the document's bytes straight into structs (:class:`_Job`,
:class:`_Task`, :class:`_Node`), checking in C the field names and types the models take; what only a model can
tell (quantities, instants, gang minimums against the number of tasks, priority classes, leaf queues) is checked
on lists read from the structs, once per distinct value where it can be. Job models are made from the structs when
the snapshot's :class:`~.job_list.JobList` is first read there: a decision reads about one in six.

The common job has no labels, annotations or requeue state, and its tasks give only their node. Any other job is
built at once by the fast path's own :func:`~.fast_path.built_job`. Anything the structs or the checks do not
accept sends the document back to the fast path, and from there to pydantic, which says what is wrong (the
property test checks that the three paths accept the same documents and build equal snapshots).

Duplicate keys are found as :func:`~.document.decode_json_fast` finds them: every member of the document holds one
``:`` outside strings, and re-encoding the structs writes back every member they kept (fields left at their
default, ``None``, are not written: a document that spells out a ``null`` goes back to the fast path).

Examples
--------
>>> data = (b'{"now": 0, "nodes": [{"name": "n", "resources": {"gpu": 8}}], "queues": [{"name": "q"}], "jobs": '
...     b'[{"name": "j", "queue": "q", "task_resources": {"gpu": 4}, "tasks": [{"node": "n"}, {"node": "n"}]}]}')
>>> snap = struct_snapshot(data, least_jobs=1)
>>> type(snap.jobs).__name__, snap.job("j").tasks[1].name
('JobList', 'j-1')
>>> struct_snapshot(data.replace(b'"gpu": 4', b'"gpu": 4, "gpu": 5'), least_jobs=1) is None  # a duplicate key
True
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Annotated, Any, NamedTuple

import msgspec
from msgspec import Meta, Struct
from msgspec.structs import astuple
from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from .document import decode_json_fast
from .duration import MAX_INSTANT, MIN_INSTANT
from .fast_path import EMPTY, Refused, Seen, assembled, built_job, built_model, free_map, given_set, instant
from .fields import parsed_resource_map
from .job import Job
from .job_list import JobList
from .node import Node
from .snapshot import COLUMNS_FROM, Snapshot

_Name = Annotated[str, Meta(min_length=1)]
_Instant = (
    Annotated[int, Meta(ge=int(MIN_INSTANT), le=int(MAX_INSTANT))]
    | Annotated[float, Meta(ge=MIN_INSTANT, le=MAX_INSTANT)]
)
"""Seconds since the epoch (kept as given: :class:`~.columns.JobColumns` and the job models make them floats)."""
_NO_MAP = msgspec.Raw(b"null")
"""A raw map's default: not given (a ``null`` spelt out is another object, refused by :func:`_decoded`)."""
_PARSED_MAP = msgspec.Raw(b"{}")
"""What a job's given map is replaced with once parsed (into the columns)."""


class _Task(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    node: str | None = None
    name: Any = None
    status: Any = None
    resources: Any = None


class _Job(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    name: _Name
    queue: _Name
    tasks: Annotated[list[_Task], Meta(min_length=1)]
    priority_class: str | None = None
    priority: Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)] | None = None
    preemptible: bool | None = None
    min_available: Annotated[int, Meta(ge=1)] | None = None
    task_resources: msgspec.Raw = _NO_MAP  # parsed once per spelling (_maps)
    created_at: _Instant | str | None = None
    started_at: _Instant | str | None = None
    labels: Any = None
    annotations: Any = None
    requeue: Any = None


class _Node(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    name: _Name
    resources: msgspec.Raw
    gpu_model: str | None = None
    labels: Any = None
    annotations: Any = None
    schedulable: bool | None = None


class _Document(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    nodes: list[_Node]
    jobs: list[_Job] | None = None
    now: Any = None
    config: Any = None
    queues: Any = None
    priority_classes: Any = None
    description: Any = None
    expect: Any = None


_DECODE = msgspec.json.Decoder(_Document).decode
_ENCODE = msgspec.json.Encoder().encode
_HEAD = ("now", "config", "queues", "priority_classes", "description", "expect")
MOST_ODD = 0.1
"""The largest share of jobs out of the common case (built at once) a document may have to take this path: above
it, as in a snapshot imported from Kubernetes (named tasks, annotations), the fast path builds them sooner."""


def struct_snapshot(data: bytes, *, least_jobs: int = COLUMNS_FROM, most_odd: float = MOST_ODD) -> Snapshot | None:
    """The snapshot pydantic would validate from the JSON document in ``data``, or ``None`` where this path does not
    decide (a document with fewer than ``least_jobs`` jobs, or more than a ``most_odd`` share of jobs out of the
    common case, anything it does not accept, or an error)."""
    if data.count(b'"annotations"') > most_odd * data.count(b'"queue"'):
        return None  # a quick look at the bytes: jobs with annotations (imported ones all have some) are built at once
    try:
        document = _DECODE(data)
    except (msgspec.MsgspecError, RecursionError, ValueError, OverflowError):
        return None
    if len(document.jobs or ()) < least_jobs or b"\\u003" in data:
        return None
    try:
        odd, read = _odd(document.jobs or [], most_odd)  # first: a document this path leaves is left sooner
        if _ENCODE(document).count(b":") != data.count(b":"):
            return None  # a member given twice, or a null spelt out
        return _build(document, odd, read)
    except (Refused, ValidationError, PydanticCustomError, ValueError, TypeError, KeyError):
        return None


def _build(document: _Document, odd: set[int], read: _Tasks) -> Snapshot:
    head = Snapshot.model_validate(
        {
            **{key: getattr(document, key) for key in _HEAD if getattr(document, key) is not None},
            "nodes": [],
            "jobs": [],
        }
    )
    raw = document.jobs or []
    seen = Seen(True, head)
    nodes = _nodes(document.nodes, seen)
    seen.job_names = [job.name for job in raw]
    made = _Made(seen)
    made.resolved = _columns(raw, seen, odd, read)  # the jobs out of the common case are built, in place in raw
    jobs = JobList(raw, made=made.made, raw=_Job, names=seen.job_names)
    return assembled(head, document.jobs is not None, nodes, jobs, seen)


def _given(struct: Struct) -> dict[str, Any]:
    """The members ``struct`` was decoded from (every field not left at ``None``; a raw map decoded)."""
    return {
        key: _decoded(value) if type(value) is msgspec.Raw else value
        for key, value in zip(struct.__struct_fields__, astuple(struct), strict=True)
        if value is not None and value is not _NO_MAP
    }


def _decoded(raw: msgspec.Raw | bytes) -> Any:
    value = decode_json_fast(bytes(raw))
    if value is None:  # a duplicate key, or what msgspec leaves to the standard decoder (or a null)
        raise Refused
    return value


def _given_set(struct: Struct) -> set[str]:
    """The set of fields given in ``struct``, shared (:func:`~.fast_path.given_set`)."""
    fields = zip(struct.__struct_fields__, astuple(struct), strict=True)
    return given_set(tuple(key for key, value in fields if value is not None and value is not _NO_MAP))


def _maps(raws: list[msgspec.Raw]) -> list[dict[str, int]]:
    """Each raw resource map parsed (:data:`_NO_MAP`: none given), once per distinct spelling."""
    keys = [None if raw is _NO_MAP else bytes(raw) for raw in raws]
    parsed: dict[bytes | None, dict[str, int]] = {None: EMPTY}
    for key in set(keys).difference(parsed):
        parsed[key] = parsed_resource_map(_decoded(key))  # type: ignore[arg-type]
    return list(map(parsed.__getitem__, keys))


def _nodes(raw: list[_Node], seen: Seen) -> list[Node]:
    """The node models of ``raw``, checked as :func:`~.fast_path.built_node` checks them."""
    nodes: list[Node] = []
    given: dict[tuple[bool, ...], set[str]] = {}
    for node, resources in zip(raw, _maps([node.resources for node in raw]), strict=True):
        labels, annotations = node.labels, node.annotations
        key = (node.gpu_model is None, labels is None, annotations is None, node.schedulable is None)
        fields = given.get(key) or given.setdefault(key, _given_set(node))
        values = {
            "name": node.name,
            "resources": resources,
            "gpu_model": node.gpu_model,
            "labels": EMPTY if labels is None else free_map(labels, seen),
            "annotations": EMPTY if annotations is None else free_map(annotations, seen),
            "schedulable": node.schedulable is not False,
        }
        nodes.append(built_model(Node, values, fields))
    return nodes


def _times(values: list[Any]) -> list[float | int | None]:
    """Instants in seconds (strings parsed; numbers were checked by the decoder)."""
    if str in set(map(type, values)):
        return [instant(value) if type(value) is str else value for value in values]
    return values


class _Tasks(NamedTuple):
    """Every job's tasks, every task in document order, and their nodes."""

    of: list[list[_Task]]
    flat: list[_Task]
    nodes: list[str | None]


def _odd(raw: list[_Job], most_odd: float) -> tuple[set[int], _Tasks]:
    """The positions of the jobs out of the common case (a task that gives more than its node; labels, annotations
    or requeue state); refused if they are more than a ``most_odd`` share of the jobs."""
    tasks = [job.tasks for job in raw]
    flat = [task for job_tasks in tasks for task in job_tasks]
    nodes = [task.node for task in flat]
    at = _none_at(nodes)
    for column in ([task.name for task in flat], [task.status for task in flat], [task.resources for task in flat]):
        at += _given_at(column)
    starts = list(accumulate(map(len, tasks), initial=0))
    odd = {bisect_right(starts, position) - 1 for position in at}
    for column in ([job.labels for job in raw], [job.annotations for job in raw], [job.requeue for job in raw]):
        odd.update(_given_at(column))
    if len(odd) > most_odd * len(raw):
        raise Refused  # the fast path builds them sooner (here each costs a conversion from its struct too)
    return odd, _Tasks(tasks, flat, nodes)


def _columns(raw: list[Any], seen: Seen, odd: set[int], read: _Tasks) -> list[tuple[int, bool, bool]]:
    """Check every job of ``raw`` as :func:`~.fast_path.built_job` would, gathering into ``seen`` what it gathers;
    the jobs at positions ``odd`` are built now, in place in ``raw``. Returns each job's resolved priority,
    preemptibility, and whether it may evict."""
    tasks, flat, nodes = read
    count = len(raw)
    names = seen.job_names
    seen.counts = counts = list(map(len, tasks))
    seen.queues = [job.queue for job in raw]
    seen.classes = classes = [job.priority_class for job in raw]
    gang = [job.min_available for job in raw]
    if any(m is not None and m > c for m, c in zip(gang, counts, strict=True)):
        raise Refused
    seen.minimum = [c if m is None else m for m, c in zip(gang, counts, strict=True)]
    seen.shared = _maps([job.task_resources for job in raw])
    seen.created = _times([job.created_at for job in raw])
    seen.started = _times([job.started_at for job in raw])
    priorities, preemptible = [job.priority for job in raw], [job.preemptible for job in raw]
    resolve = seen.resolve
    by_class = {name: resolve((name, None, None)) for name in set(classes)}  # most jobs: the class says it all
    resolved = list(map(by_class.__getitem__, classes))
    for i in _given_at(priorities) + _given_at(preemptible):
        resolved[i] = resolve((classes[i], priorities[i], preemptible[i]))
    seen.priority = [r[0] for r in resolved]  # (priority, preemptible, may evict)
    seen.preemptible = [r[1] for r in resolved]
    seen.marked = [flag is False for flag in preemptible]
    seen.uniform = [True] * count
    seen.nodes = nodes
    suffixes = [f"-{index}" for index in range(max(counts, default=0))]
    seen.names = [name + suffix for name, n in zip(names, counts, strict=True) for suffix in suffixes[:n]]
    seen.statuses = ["running"] * len(flat)
    if odd:
        _built_now(sorted(odd), raw, seen)
    for job in raw:  # a raw map is a view of the document's bytes: kept, it would keep them all
        if type(job) is _Job and job.task_resources is not _NO_MAP:
            job.task_resources = _PARSED_MAP
    return resolved


def _given_at(column: list[Any]) -> list[int]:
    """The positions in ``column`` of values other than ``None``."""
    if column.count(None) == len(column):  # the common case, in C
        return []
    return [i for i, value in enumerate(column) if value is not None]


def _none_at(column: list[Any]) -> list[int]:
    """The positions of ``None`` in ``column`` (rare: looked for in C)."""
    found, start = [], 0
    for _ in range(column.count(None)):
        start = column.index(None, start) + 1
        found.append(start - 1)
    return found


def _built_now(odd: list[int], raw: list[Any], seen: Seen) -> None:
    """Build the jobs at positions ``odd`` (ascending) with the fast path, in place in ``raw``, and put what they hold
    into ``seen``."""
    scratch = Seen(True, seen.head)
    starts = list(accumulate(seen.counts, initial=0))
    for i in odd:
        struct = raw[i]
        fields = _given(struct)
        fields["tasks"] = [_given(task) for task in struct.tasks]
        job = raw[i] = built_job(fields, scratch)
        seen.shared[i], seen.created[i], seen.started[i] = job.task_resources, job.created_at, job.started_at
        seen.uniform[i] = job.uniform
        for position, task in enumerate(job.tasks, start=starts[i]):
            seen.names[position], seen.nodes[position] = task.name, task.node  # type: ignore[assignment]
            seen.statuses[position] = task.status  # type: ignore[assignment]  # set by validation
            if task.resources is not None:
                seen.own.append((position, task.resources))


class _Made:
    """Job models made from the structs of the common case, with what the columns hold for them."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen
        self.resolved: list[tuple[int, bool, bool]] = []
        """Per job: resolved priority, preemptibility, and whether it may evict (set by :func:`_columns`)."""
        self.given: dict[tuple[bool, ...], set[str]] = {}

    def made(self, i: int, struct: _Job) -> Job:
        seen = self.seen
        priority, preemptible, may_evict = self.resolved[i]
        created, started = seen.created[i], seen.started[i]
        values: dict[str, Any] = {
            "name": struct.name,
            "queue": struct.queue,
            "priority_class": struct.priority_class,
            "priority": struct.priority,
            "preemptible": struct.preemptible,
            "min_available": struct.min_available,
            "task_resources": seen.shared[i],
            "created_at": None if created is None else float(created),
            "started_at": None if started is None else float(started),
            "labels": EMPTY,
            "annotations": EMPTY,
            "requeue": None,
            "_resolved_priority": priority,
            "_resolved_preemptible": preemptible,
        }
        if not may_evict:
            values["_may_evict"] = False
        values["_task_nodes"] = [task.node for task in struct.tasks]
        values["_uniform"] = True
        # The fields a job of the common case may leave out (the others are given, or absent in all of them).
        key = (
            struct.priority_class is None,
            struct.priority is None,
            struct.preemptible is None,
            struct.min_available is None,
            struct.task_resources is _NO_MAP,
            created is None,
            started is None,
        )
        given = self.given.get(key) or self.given.setdefault(key, _given_set(struct))
        return built_model(Job, values, given)
