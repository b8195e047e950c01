"""A snapshot document as typed msgspec structs: decoded from JSON bytes, or converted from data already parsed.

msgspec checks in C what the structs say: field names (an unknown one is refused), the types of names, priorities,
flags, gang minimums and instants, and their bounds. What only a model can tell (quantities, instants in text,
gang minimums against the number of tasks, priority classes, leaf queues) is left to :mod:`.build`.

A field not given is :data:`~msgspec.UNSET`; ``None`` is a ``null`` the document spells out (pydantic counts it as
given). Two families differ only in their resource maps: decoded from bytes, a map is kept as its raw JSON
(:class:`msgspec.Raw`) and parsed once per distinct spelling; converted, it is the parsed value.

>>> document = decode(b'{"now": 0, "nodes": [], "queues": [], "jobs": [{"name": "j", "queue": "q", "tasks": [{}]}]}')
>>> document.jobs[0].priority is UNSET, document.jobs[0].tasks[0].node is UNSET
(True, True)
>>> convert({"now": 0, "nodes": [{"name": "n", "resources": {"gpu": 8}}]}).nodes[0].resources
{'gpu': 8}
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from ..duration import MAX_INSTANT, MIN_INSTANT
from ..job import TaskStatus

__all__ = [
    "HEAD",
    "UNSET",
    "DataDocument",
    "DataJob",
    "DataNode",
    "Instant",
    "Minimum",
    "Name",
    "Priority",
    "RawDocument",
    "RawJob",
    "RawNode",
    "Task",
    "convert",
    "decode",
    "encode",
    "given",
]

Name = Annotated[str, Meta(min_length=1)]
Priority = Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)]
Minimum = Annotated[int, Meta(ge=1)]
Instant = (
    Annotated[int, Meta(ge=int(MIN_INSTANT), le=int(MAX_INSTANT))]
    | Annotated[float, Meta(ge=MIN_INSTANT, le=MAX_INSTANT)]
)
"""Seconds since the epoch (kept as given: the models make them floats)."""


class Task(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    node: str | UnsetType | None = UNSET
    name: Any = UNSET
    status: TaskStatus | UnsetType | None = UNSET  # one string per status, however many tasks give it
    resources: Any = UNSET
    devices: Any = UNSET
    order: Any = UNSET


class _Job(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    name: Name
    queue: Name
    tasks: Annotated[list[Task], Meta(min_length=1)]
    priority_class: str | UnsetType | None = UNSET
    priority: Priority | UnsetType | None = UNSET
    preemptible: bool | UnsetType | None = UNSET
    min_available: Minimum | UnsetType | None = UNSET
    created_at: Instant | str | UnsetType | None = UNSET
    started_at: Instant | str | UnsetType | None = UNSET
    labels: Any = UNSET
    annotations: Any = UNSET
    requeue: Any = UNSET
    placement: Any = UNSET
    checkpointed_at: Any = UNSET  # rare: such a job is built by its model (build._odd)
    expected_end: Any = UNSET  # rare too
    gpu_devices: Any = UNSET  # rare too
    preemption_delay: Any = UNSET


class RawJob(_Job, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    task_resources: msgspec.Raw | UnsetType = UNSET  # parsed once per spelling


class DataJob(_Job, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    task_resources: Any = UNSET
    created_at: Any = UNSET  # YAML reads a timestamp as a datetime, which msgspec cannot tell from text in a union:
    started_at: Any = UNSET  # checked by build.instant


class _Node(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    name: Name
    gpu_model: str | UnsetType | None = UNSET
    labels: Any = UNSET
    annotations: Any = UNSET
    schedulable: bool | UnsetType = UNSET
    taints: Any = UNSET
    gpu_memory: Any = UNSET


class RawNode(_Node, forbid_unknown_fields=True, omit_defaults=True, gc=False, kw_only=True):
    resources: msgspec.Raw


class DataNode(_Node, forbid_unknown_fields=True, omit_defaults=True, gc=False, kw_only=True):
    resources: Any


class _Head(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False, kw_only=True):
    """The document's small parts, validated by pydantic (:data:`HEAD`)."""

    now: Any = UNSET
    config: Any = UNSET
    queues: Any = UNSET
    priority_classes: Any = UNSET
    description: Any = UNSET
    expect: Any = UNSET


class RawDocument(_Head, forbid_unknown_fields=True, omit_defaults=True, gc=False, kw_only=True):
    nodes: list[RawNode]
    jobs: list[RawJob] | UnsetType = UNSET


class DataDocument(_Head, forbid_unknown_fields=True, omit_defaults=True, gc=False, kw_only=True):
    nodes: list[DataNode]
    jobs: list[DataJob] | UnsetType = UNSET


HEAD = ("now", "config", "queues", "priority_classes", "description", "expect")
"""The document's small parts, validated by pydantic."""


class _Skeleton(_Head, forbid_unknown_fields=True, omit_defaults=True, gc=False, kw_only=True):
    """A document with its jobs left as JSON, to be decoded once the names they may give are known."""

    nodes: list[RawNode]
    jobs: msgspec.Raw | UnsetType = UNSET


_skeleton = msgspec.json.Decoder(_Skeleton).decode


def decode(data: bytes) -> RawDocument:
    """JSON bytes -> :class:`RawDocument` (raises :class:`msgspec.MsgspecError` where the structs refuse).

    A job's queue and priority class are decoded as one of the names the document's queues and priority classes
    give: one string per name, however many jobs give it (a name given nowhere else is refused here, and judged by
    the caller's other path).
    """
    skeleton = _skeleton(data)
    fields = {name: getattr(skeleton, name) for name in skeleton.__struct_fields__}
    if skeleton.jobs is not UNSET:
        jobs = _jobs_decoder(_names(skeleton.queues), _names(skeleton.priority_classes))
        fields["jobs"] = jobs.decode(skeleton.jobs)
    return RawDocument(**fields)


def _names(section: Any) -> tuple[str, ...]:
    """The distinct names the items of a document's ``queues`` or ``priority_classes`` give."""
    if type(section) is not list:
        return ()
    return tuple(dict.fromkeys(i["name"] for i in section if type(i) is dict and type(i.get("name")) is str))


@lru_cache(maxsize=16)
def _jobs_decoder(queues: tuple[str, ...], classes: tuple[str, ...]) -> msgspec.json.Decoder[list[RawJob]]:
    """A decoder of jobs whose queues are among ``queues`` and priority classes among ``classes``."""
    job = msgspec.defstruct(
        "RawJob",
        [
            ("queue", Literal[queues] if queues else Name),
            ("priority_class", (Literal[classes] if classes else str) | UnsetType | None, UNSET),
        ],
        bases=(RawJob,),
        module=__name__,
        forbid_unknown_fields=True,
        omit_defaults=True,
        gc=False,
    )
    return msgspec.json.Decoder(list[job])  # type: ignore[valid-type]


encode = msgspec.json.Encoder().encode


def convert(data: Any) -> DataDocument:
    """Parsed data -> :class:`DataDocument` (raises :class:`msgspec.MsgspecError` where the structs refuse)."""
    return msgspec.convert(data, DataDocument, strict=True)


def given(struct: Struct) -> tuple[str, ...]:
    """The names of the fields ``struct`` was given (in field order)."""
    return tuple(name for name in struct.__struct_fields__ if getattr(struct, name) is not UNSET)
