"""The snapshot pydantic would validate, built from a document's structs without pydantic's per-object validation.

A 100,000-node snapshot holds about a million node, job and task objects, and pydantic validates each with Python
validators (quantities, instants, the task status rule), which cost more than reading the file. Here the structs
(:mod:`.structs`) are checked as lists of values read from them, once per distinct value where it can be
(resource maps, instants, priority classes), and the models are built directly. The small parts (``now``,
``config``, queues, priority classes) are validated by pydantic as usual, and the whole-document checks
(:meth:`Snapshot._resolve`) run unchanged.

The common job gives no labels, annotations, requeue state, placement or checkpoint, and its tasks give only their
node. In a large snapshot it is made when first read, from its struct and the lists (:class:`.job_list.JobList`: a
decision reads about one job in six); in a small one, at once. Any other job is built at once.

It never decides what is wrong with a document: at the first thing it does not accept it gives up
(:class:`Refused`), and the caller validates the whole document with pydantic, which gives the error messages.
``tests/models/test_structs.py`` checks that both paths accept the same documents and build equal snapshots.

Examples
--------
>>> data = {"now": 0, "nodes": [{"name": "n", "resources": {"gpu": 8}}], "queues": [{"name": "q"}],
...     "jobs": [{"name": "j", "queue": "q", "task_resources": {"gpu": 4}, "tasks": [{"node": "n"}, {}]}]}
>>> snap = from_data(data)
>>> [(t.name, t.status) for t in snap.job("j").tasks]
[('j-0', 'running'), ('j-1', 'pending')]
>>> from_data({**data, "nodes": [{"name": "n", "resources": {"gpu": 0.5}}]}) is None  # pydantic says why
True
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from datetime import datetime
from itertools import accumulate
from operator import attrgetter
from typing import Any, TypeVar

import msgspec
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from .. import snapshot as _snapshot
from ..duration import MAX_INSTANT, MIN_INSTANT, parse_time
from ..fields import Duration, Quantity, _resource_map, bounded_depth, parsed_resource_map
from ..job import NODE_ONLY, Job, Task, set_dict, set_extra, set_given, set_private, share_of
from ..node import Node
from ..placement import Placement, Taint
from ..quantity import MAX_GPUS, MILLI, is_gpu_resource
from ..requeue import RequeueState
from ..sharing import HOLDING_DEVICES
from ..snapshot import Snapshot, resolution
from . import structs
from .document import decode_json_fast
from .job_list import JobList
from .structs import HEAD, UNSET, DataDocument, RawDocument

__all__ = [
    "EMPTY",
    "EMPTY_LIST",
    "REFUSED",
    "Made",
    "Refused",
    "Seen",
    "assembled",
    "built_model",
    "free_map",
    "from_data",
    "from_json",
    "given_set",
    "instant",
]

M = TypeVar("M", bound=BaseModel)

_STATUSES = frozenset(("running", "pending", "releasing", "nominated"))
_new = object.__new__

EMPTY: dict[str, Any] = {}
"""The ``task_resources``, ``labels`` and ``annotations`` of every model that gives none: one map, since models are
frozen and nothing changes their maps (a map each would cost tens of megabytes at 100,000 nodes)."""


class Refused(Exception):
    """Something this path does not accept; pydantic will say what."""


REFUSED = (
    Refused,
    ValidationError,
    PydanticCustomError,
    ValueError,
    TypeError,
    KeyError,
    msgspec.MsgspecError,
    RecursionError,
    OverflowError,
)
"""What decoding and building may raise when a document is not what they accept."""


def from_json(data: bytes) -> Snapshot | None:
    """The snapshot pydantic would validate from the JSON document in ``data``, or ``None`` where this path does
    not decide (a document it does not accept, or an escaped ``:`` in a string, which the check for duplicate keys
    cannot count)."""
    if b"\\u003" in data:
        return None
    try:
        document = structs.decode(data)
        # Duplicate keys are found as decode_json_fast finds them: every member of the document holds one ':'
        # outside strings, and re-encoding the structs writes back every member they kept.
        if structs.encode(document).count(b":") != data.count(b":"):
            return None
        return _build(document, parsed=True)
    except REFUSED:
        return None


def from_data(data: Any, *, parsed: bool = False) -> Snapshot | None:
    """The snapshot pydantic would validate from ``data`` (a parsed document, not changed), or ``None`` where this
    path does not decide. ``parsed``: ``data`` is what a JSON parser made, and nothing else (resource maps are then
    looked up by their encoding, :func:`~..fields.parsed_resource_map`)."""
    try:
        return _build(structs.convert(data), parsed=parsed)
    except REFUSED:
        return None


class Seen:
    """What :class:`~..columns.TaskColumns` and :class:`~..columns.JobColumns` are made of, gathered while the
    structs are checked: per job and per task, in document order."""

    def __init__(self, parsed: bool, head: Snapshot, *, raw: bool) -> None:
        self.parsed = parsed
        self.raw = raw
        """The document was decoded from bytes: its resource maps are raw JSON."""
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
        self.devices: set[int] = set()
        """Positions of the tasks that name their device (a share of a GPU, docs/snapshot-format.md)."""
        self.ordered: set[str] = set()
        """Jobs some of whose tasks give a task order."""
        self.classes: list[str | None] = []
        self.started: list[float | None] = []
        self.since: list[float | None] | None = None
        """Per job, the lost-work clock, when a job gives a checkpoint (else ``started`` says it)."""
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


def _build(document: RawDocument | DataDocument, parsed: bool) -> Snapshot:
    head = Snapshot.model_validate(
        {
            **{key: getattr(document, key) for key in HEAD if getattr(document, key) is not UNSET},
            "nodes": [],
            "jobs": [],
        }
    )
    raw: list[Any] = [] if document.jobs is UNSET else document.jobs
    from_bytes = type(document) is RawDocument
    seen = Seen(parsed, head, raw=from_bytes)
    nodes = _nodes(document.nodes, seen)
    seen.job_names = [job.name for job in raw]
    odd, tasks = _odd(raw)
    made = Made(seen)
    made.resolved = _columns(raw, seen, odd, tasks)  # the jobs out of the common case are built, in place in raw
    if len(raw) >= _snapshot.COLUMNS_FROM:
        kind = structs.RawJob if from_bytes else structs.DataJob
        jobs: list[Job] = JobList(raw, made=made.made, raw=kind, names=seen.job_names)
    else:
        jobs = [job if type(job) is Job else made.made(i, job) for i, job in enumerate(raw)]
    return assembled(head, document.jobs is not UNSET, nodes, jobs, seen)


def assembled(head: Snapshot, has_jobs: bool, nodes: list[Node], jobs: list[Job], seen: Seen) -> Snapshot:
    """The snapshot of ``head`` (validated, without nodes and jobs) with ``nodes`` and ``jobs`` (whose columns
    ``seen`` gathered), checked as a whole; ``has_jobs``: the document gives ``jobs``."""
    if not {q.name for q in head.queues if head.is_leaf(q.name)}.issuperset(seen.queues):
        raise Refused  # a job in an unknown queue, or in one with children
    fields = {**head.__dict__, "nodes": nodes, "jobs": jobs}
    given = head.model_fields_set if has_jobs else head.model_fields_set - {"jobs"}
    snapshot = Snapshot.model_construct(_fields_set=set(given), **fields)
    if len(jobs) >= _snapshot.COLUMNS_FROM:
        from ..columns import TaskColumns  # numpy: only for snapshots large enough to gain from it

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
        snapshot.__dict__["_ordered_jobs"] = (snapshot, frozenset(seen.ordered))  # Snapshot.ordered_jobs
        snapshot.__dict__["_job_lists"] = {  # Snapshot.job_columns; validation adds the resolved values
            "names": seen.job_names,
            "queues": seen.queues,
            "classes": seen.classes,
            "started": seen.started,
            "since": seen.since,
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


def _shared_map(value: object) -> dict[str, int]:
    return _resource_map(value, allow_unlimited=False, shared=True)


def built_model(cls: type[M], values: dict[str, Any], given: set[str]) -> M:
    """An instance of ``cls`` with checked ``values``, as :meth:`BaseModel.model_construct` builds it, minus its loop
    over fields (these models have no private attributes and no extra fields)."""
    model = _new(cls)
    set_dict(model, values)
    set_given(model, given)
    set_extra(model, None)
    set_private(model, None)
    return model


_GIVEN: dict[tuple[str, ...], set[str]] = {}


def given_set(fields: tuple[str, ...]) -> set[str]:
    """The set of ``fields``, one set shared by every model given the same fields.

    Sharing is safe because the models are frozen: pydantic changes a model's set of given fields only when a
    field is assigned (refused) and copies it in ``model_copy``. A million models save a few hundred megabytes.
    """
    found = _GIVEN.get(fields)
    if found is None:
        if len(_GIVEN) >= 4096:
            _GIVEN.clear()
        found = _GIVEN[fields] = set(fields)
    return found


def _unset(value: Any) -> Any:
    """``None`` for a field not given."""
    return None if value is UNSET else value


def free_map(value: object, seen: Seen) -> dict[str, Any]:
    """Labels or annotations: a mapping with string keys, nested at most :data:`~..fields.MAX_FREE_DEPTH` levels."""
    if value is UNSET:
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
    """An instant as the models keep it: seconds since the epoch (a number given, or a time in text)."""
    if value is None or value is UNSET:
        return None
    if (type(value) is int or type(value) is float) and MIN_INSTANT <= value <= MAX_INSTANT:
        return float(value)
    if type(value) is not str and type(value) is not datetime:
        raise Refused
    return parse_time(value)


def _maps(values: list[Any], seen: Seen) -> list[dict[str, int]]:
    """Each resource map parsed (:data:`UNSET`: none given): raw ones once per distinct spelling."""
    if not seen.raw:
        return [EMPTY if value is UNSET else seen.resources(value) for value in values]
    keys = [None if raw is UNSET else bytes(raw) for raw in values]
    parsed: dict[bytes | None, dict[str, int]] = {None: EMPTY}
    for key in set(keys).difference(parsed):
        parsed[key] = parsed_resource_map(_decoded(key))  # type: ignore[arg-type]
    return list(map(parsed.__getitem__, keys))


def _decoded(raw: bytes) -> Any:
    value = decode_json_fast(raw)
    if value is None:  # a duplicate key, or what msgspec leaves to the standard decoder (or a null)
        raise Refused
    return value


def _nodes(raw: list[Any], seen: Seen) -> list[Node]:
    """The node models of ``raw``."""
    nodes: list[Node] = []
    given: dict[tuple[bool, ...], set[str]] = {}
    for node, resources in zip(raw, _maps([node.resources for node in raw], seen), strict=True):
        if any(amount % MILLI for name, amount in resources.items() if is_gpu_resource(name)):
            raise Refused  # part of a device: pydantic says so (Node._whole_devices)
        labels, annotations = node.labels, node.annotations
        key = (
            node.gpu_model is UNSET,
            labels is UNSET,
            annotations is UNSET,
            node.schedulable is UNSET,
            node.taints is UNSET,
            node.gpu_memory is UNSET,
        )
        fields = given.get(key) or given.setdefault(key, given_set(structs.given(node)))
        values = {
            "name": node.name,
            "resources": resources,
            "gpu_model": _unset(node.gpu_model),
            "labels": EMPTY if labels is UNSET else free_map(labels, seen),
            "annotations": EMPTY if annotations is UNSET else free_map(annotations, seen),
            "schedulable": node.schedulable is not False,
            "taints": EMPTY_LIST if node.taints is UNSET else _taints(node.taints),
            "gpu_memory": None if node.gpu_memory is UNSET else _gpu_memory(node.gpu_memory),
        }
        nodes.append(built_model(Node, values, fields))
    return nodes


def _gpu_memory(value: object) -> int | None:
    """A node's memory per device, validated as the model validates it (pydantic says what is wrong)."""
    try:
        found: int | None = _GPU_MEMORY.validate_python(value)
    except ValidationError:
        raise Refused from None
    return found


def _taints(value: object) -> list[Taint]:
    """A node's taints, validated as the model validates them."""
    return _TAINTS.validate_python(value, strict=True)


_TAINTS = TypeAdapter(list[Taint])
_GPU_MEMORY: TypeAdapter[int | None] = TypeAdapter(Quantity | None)
_DURATION: TypeAdapter[float] = TypeAdapter(Duration)
EMPTY_LIST: list[Any] = []
"""The ``taints`` of every node that gives none (one list, as :data:`EMPTY`)."""


def _odd(raw: list[Any]) -> tuple[set[int], tuple[list[list[Any]], list[Any]]]:
    """The positions of the jobs out of the common case (a task that gives more than its node, or no node; labels,
    annotations or requeue state), and every job's tasks, alone and in one list."""
    tasks = [job.tasks for job in raw]
    flat = [task for job_tasks in tasks for task in job_tasks]
    at = _missing_at([task.node for task in flat])  # no node given, or a null
    given = list(map(_TASK_EXTRAS, flat))  # one pass in C for every field a task may give besides its node
    at += _given_at(given, _NONE_GIVEN)
    starts = list(accumulate(map(len, tasks), initial=0))
    odd = {bisect_right(starts, position) - 1 for position in at}
    for column in (
        [job.labels for job in raw],
        [job.annotations for job in raw],
        [job.requeue for job in raw],
        [job.placement for job in raw],
        [job.checkpointed_at for job in raw],
        [job.gpu_devices for job in raw],
        [job.preemption_delay for job in raw],
    ):
        odd.update(_given_at(column))
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


def _missing_at(column: list[Any]) -> list[int]:
    """The positions of :data:`UNSET` and ``None`` in ``column`` (rare: looked for in C)."""
    found = []
    for missing in (UNSET, None):
        start = 0
        for _ in range(column.count(missing)):
            start = column.index(missing, start) + 1
            found.append(start - 1)
    return found


def _columns(
    raw: list[Any], seen: Seen, odd: set[int], read: tuple[list[list[Any]], list[Any]]
) -> list[tuple[int, bool, bool]]:
    """Check every job of ``raw``, gathering the lists into ``seen``; the jobs at positions ``odd`` are built now, in
    place in ``raw``. Returns each job's resolved priority, preemptibility, and whether it may evict."""
    tasks, flat = read
    count = len(raw)
    names = seen.job_names
    seen.counts = counts = list(map(len, tasks))
    seen.queues = [job.queue for job in raw]
    seen.classes = classes = _nones([job.priority_class for job in raw])
    gang = _nones([job.min_available for job in raw])
    if any(m is not None and m > c for m, c in zip(gang, counts, strict=True)):
        raise Refused
    seen.minimum = [c if m is None else m for m, c in zip(gang, counts, strict=True)]
    seen.shared = _maps([job.task_resources for job in raw], seen)
    if any(map(_mixed_share, {id(m): m for m in seen.shared}.values())):
        raise Refused
    seen.created = _times([job.created_at for job in raw], seen)
    seen.started = _times([job.started_at for job in raw], seen)
    priorities = _nones([job.priority for job in raw])
    preemptible = _nones([job.preemptible for job in raw])
    resolve = seen.resolve
    by_class = {name: resolve((name, None, None)) for name in set(classes)}  # most jobs: the class says it all
    resolved = list(map(by_class.__getitem__, classes))
    for i in _given_at(priorities, missing=None) + _given_at(preemptible, missing=None):
        resolved[i] = resolve((classes[i], priorities[i], preemptible[i]))
    seen.priority = [r[0] for r in resolved]
    seen.preemptible = [r[1] for r in resolved]
    seen.marked = [flag is False for flag in preemptible]
    seen.uniform = [True] * count
    seen.nodes = [task.node if type(task.node) is str else None for task in flat]
    suffixes = [f"-{index}" for index in range(max(counts, default=0))]
    seen.names = [name + suffix for name, n in zip(names, counts, strict=True) for suffix in suffixes[:n]]
    seen.statuses = ["running"] * len(flat)
    if odd:
        _built_now(sorted(odd), raw, seen, resolved)
    _refuse_running_shares(seen)
    for job in raw:  # a raw map is a view of the document's bytes: kept, it would keep them all
        if type(job) is structs.RawJob and job.task_resources is not UNSET:
            job.task_resources = _PARSED_MAP
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


def _refuse_running_shares(seen: Seen) -> None:
    """Refuse a snapshot where a running or releasing share of a GPU names no device, or a task that is no share
    names one (docs/snapshot-format.md, "GPU sharing"; pydantic says which). The device ledger itself is checked
    with the snapshot (:meth:`Snapshot._check_devices`)."""
    shares = {id(m) for m in seen.shared if share_of(m) is not None}
    own = {position: r for position, r in seen.own if share_of(r) is not None or position in seen.devices}
    if not shares and not seen.devices and not own:
        return
    own = dict(seen.own)
    starts = list(accumulate(seen.counts, initial=0))
    for i, requests in enumerate(seen.shared):
        if id(requests) not in shares and not (seen.devices or own):
            continue
        for position in range(starts[i], starts[i + 1]):
            share = share_of(own.get(position, requests)) is not None
            if share and seen.statuses[position] in HOLDING_DEVICES and position not in seen.devices:
                raise Refused
            if not share and position in seen.devices:
                raise Refused


_PARSED_MAP = msgspec.Raw(b"{}")
"""What a job's raw map is replaced with once parsed (into the lists)."""


def _nones(column: list[Any]) -> list[Any]:
    """``column`` with ``None`` for :data:`UNSET` (a field not given)."""
    missing = column.count(UNSET)
    if not missing:
        return column
    if missing == len(column):
        return [None] * missing
    return [None if value is UNSET else value for value in column]


def _times(values: list[Any], seen: Seen) -> list[float | int | None]:
    """Instants in seconds: numbers as given (a raw document's structs checked them), text and datetimes parsed."""
    if not seen.raw:
        return list(map(instant, values))
    values = _nones(values)
    if not set(map(type, values)) - _NUMBERS:
        return values
    return [value if type(value) in _NUMBERS else instant(value) for value in values]


_NUMBERS = frozenset((int, float, type(None)))


def _given_at(column: list[Any], missing: Any = UNSET) -> list[int]:
    """The positions in ``column`` of values other than ``missing`` (a tuple of them: equal to it)."""
    if column.count(missing) == len(column):  # the common case, in C
        return []
    return [i for i, value in enumerate(column) if value is not missing and value != missing]


def _built_now(odd: list[int], raw: list[Any], seen: Seen, resolved: list[tuple[int, bool, bool]]) -> None:
    """Build the jobs at positions ``odd`` (ascending) at once, in place in ``raw``, and put what their tasks hold
    into ``seen``."""
    starts = list(accumulate(seen.counts, initial=0))
    for i in odd:
        struct = raw[i]
        first = starts[i]
        own = len(seen.own)
        tasks = [_task(t, struct.name, index, first + index, seen) for index, t in enumerate(struct.tasks)]
        values = _job_values(struct, seen, i, resolved[i])
        values["tasks"] = tasks
        values["labels"] = free_map(struct.labels, seen)
        values["annotations"] = free_map(struct.annotations, seen)
        values["requeue"] = None if struct.requeue in (None, UNSET) else RequeueState.model_validate(struct.requeue)
        values["placement"] = None if struct.placement in (None, UNSET) else Placement.model_validate(struct.placement)
        values["checkpointed_at"] = None if struct.checkpointed_at in (None, UNSET) else instant(struct.checkpointed_at)
        values["gpu_devices"] = _gpu_devices(struct.gpu_devices)
        values["preemption_delay"] = _delay(struct.preemption_delay)
        uniform = len(seen.own) == own
        if uniform:
            values["_uniform"] = True
        job = raw[i] = built_model(Job, values, given_set(structs.given(struct)))
        if (
            job._sharing_errors()
            or (job.preemption_delay is not None and job.created_at is None)
            or (job.gang_minimum >= len(job.tasks) and any(t.order is not None for t in job.tasks))
        ):
            raise Refused  # pydantic says why (its devices, for one)
        seen.uniform[i] = uniform or job.uniform
        if job.checkpointed_at is not None:
            if seen.since is None:
                seen.since = list(seen.started)
            seen.since[i] = job.progress_since


def _task(struct: Any, job: str, index: int, position: int, seen: Seen) -> Task:
    """A task that may give more than its node, checked as its model checks it; its name, node and status written
    into ``seen``'s lists at ``position``."""
    node, name, status, resources = _unset(struct.node), struct.name, struct.status, struct.resources
    if _plain_task(struct):  # the common case, {"node": ...}: a running task, named by its job
        name, status, resources, given = f"{job}-{index}", "running", None, NODE_ONLY
    else:
        given = given_set(structs.given(struct))
        if status is UNSET or status is None:
            status = "pending" if node is None else "running"
        elif type(status) is not str or status not in _STATUSES:
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
            seen.own.append((position, resources))
    devices = _devices(struct.devices, status)
    if devices is not None:
        seen.devices.add(position)
    order = struct.order
    if order is UNSET or order is None:
        order = None
    elif type(order) is not int or not -(2**31) <= order < 2**31:
        raise Refused  # pydantic says why
    else:
        seen.ordered.add(job)
    seen.names[position], seen.nodes[position], seen.statuses[position] = name, node, status
    task = _new(Task)
    set_dict(
        task,
        {"name": name, "node": node, "status": status, "resources": resources, "devices": devices, "order": order},
    )
    set_given(task, given)
    set_extra(task, None)
    set_private(task, None)
    return task


def _job_values(struct: Any, seen: Seen, i: int, resolved: tuple[int, bool, bool]) -> dict[str, Any]:
    """The fields of the job model of ``struct`` (the ``i``-th job) but its tasks, labels, annotations and requeue
    state, with the values the snapshot resolves for it."""
    priority, preemptible, may_evict = resolved
    created, started = seen.created[i], seen.started[i]
    values: dict[str, Any] = {
        "name": struct.name,
        "queue": struct.queue,
        "priority_class": _unset(struct.priority_class),
        "priority": _unset(struct.priority),
        "preemptible": _unset(struct.preemptible),
        "min_available": _unset(struct.min_available),
        "task_resources": seen.shared[i],
        "created_at": None if created is None else float(created),
        "started_at": None if started is None else float(started),
        "tasks": None,
        "labels": EMPTY,
        "annotations": EMPTY,
        "requeue": None,
        "placement": None,
        "checkpointed_at": None,
        "gpu_devices": 1,  # a job that gives it is built by _built_now
        "preemption_delay": None,
        "_resolved_priority": priority,  # resolved by the snapshot (Snapshot._check_jobs), known here
        "_resolved_preemptible": preemptible,
    }
    if not may_evict:
        values["_may_evict"] = False
    return values


class Made:
    """Job models made from the structs of the common case, with what the lists hold for them."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen
        self.resolved: list[tuple[int, bool, bool]] = []
        """Per job: resolved priority, preemptibility, and whether it may evict (set by :func:`_columns`)."""
        self.given: dict[tuple[bool, ...], set[str]] = {}

    def made(self, i: int, struct: Any) -> Job:
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
