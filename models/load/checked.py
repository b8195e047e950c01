"""What the struct path checks on the way, shared by nodes and jobs: :class:`Refused` (pydantic will say what), the
columns gathered while checking (:class:`Gathered`), and the values read from the structs, checked once per
distinct value where they can be."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from itertools import compress, repeat
from operator import is_, ne
from typing import Any, TypeVar

import msgspec
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from ..duration import MAX_INSTANT, MIN_INSTANT, parse_time
from ..fields import _resource_map, bounded_depth, parsed_resource_map
from ..job import set_dict, set_extra, set_given, set_private
from ..snapshot import Snapshot, resolution
from .document import decode_json_fast
from .structs import UNSET

__all__ = [
    "EMPTY",
    "LARGE_COLUMN",
    "NUMBERS",
    "REFUSED",
    "STATUSES",
    "Gathered",
    "Refused",
    "built_model",
    "decoded",
    "free_map",
    "given_at",
    "given_set",
    "instant",
    "instants",
    "missing_at",
    "none_if_unset",
    "nones",
    "resource_maps",
    "shared_map",
    "uninitialised",
    "unset_mask",
]


M = TypeVar("M", bound=BaseModel)


STATUSES = frozenset(("running", "pending", "releasing", "nominated"))


uninitialised = object.__new__


EMPTY: dict[str, Any] = {}
"""The ``task_resources``, ``labels`` and ``annotations`` of every model that gives none: one map, since models are
frozen and nothing changes their maps (a map each would cost tens of megabytes at 100,000 nodes)."""


_GIVEN: dict[tuple[str, ...], set[str]] = {}
"""The fields given, per set of fields (see :func:`given_set`)."""


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


class Gathered:
    """What :class:`~..columns.TaskColumns` and :class:`~..columns.JobColumns` are made of, gathered while the
    structs are checked: per job and per task, in document order."""

    def __init__(self, parsed: bool, head: Snapshot, *, raw: bool) -> None:
        self.parsed = parsed
        self.raw = raw
        """The document was decoded from bytes: its resource maps are raw JSON."""
        self.head = head
        self.resources: Callable[[object], dict[str, int]] = parsed_resource_map if parsed else shared_map
        """A node's or a job's resource map, parsed (or found already parsed)."""
        self.job_names: list[str] = []
        self.queues: list[str] = []
        self.names: list[str] = []
        self.nodes: list[str | None] = []
        self.statuses: list[str] = []
        self.shared: list[dict[str, int]] = []
        self.counts: list[int] = []
        self.own: list[tuple[int, dict[str, int]]] = []
        self.devices: dict[int, list[int]] = {}
        """The devices of the tasks that name theirs (shares of a GPU, docs/snapshot-format.md), by position."""
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


def shared_map(value: object) -> dict[str, int]:
    return _resource_map(value, allow_unlimited=False, shared=True)


def built_model(cls: type[M], values: dict[str, Any], given: set[str]) -> M:
    """An instance of ``cls`` with checked ``values``, as :meth:`BaseModel.model_construct` builds it, minus its loop
    over fields (these models have no private attributes and no extra fields)."""
    model = uninitialised(cls)
    set_dict(model, values)
    set_given(model, given)
    set_extra(model, None)
    set_private(model, None)
    return model


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


def none_if_unset(value: Any) -> Any:
    """``None`` for a field not given."""
    return None if value is UNSET else value


def free_map(value: object, gathered: Gathered) -> dict[str, Any]:
    """Labels or annotations: a mapping with string keys, nested at most :data:`~..fields.MAX_FREE_DEPTH` levels."""
    if value is UNSET:
        return EMPTY
    if type(value) is not dict:
        raise Refused
    if gathered.parsed:  # JSON keys are strings; string values (most labels) nest nothing, and join checks them in C
        try:
            "".join(value.values())
            return value if gathered.raw else dict(value)  # decoded from bytes, a map is no one else's: kept
        except TypeError:
            pass
    if any(type(key) is not str for key in value):
        raise Refused
    if value:
        bounded_depth(value)
    return value if gathered.raw else dict(value)


def instant(value: object) -> float | None:
    """An instant as the models keep it: seconds since the epoch (a number given, or a time in text)."""
    if value is None or value is UNSET:
        return None
    if (type(value) is int or type(value) is float) and MIN_INSTANT <= value <= MAX_INSTANT:
        return float(value)
    if type(value) is not str and type(value) is not datetime:
        raise Refused
    return parse_time(value)


def resource_maps(values: list[Any], gathered: Gathered) -> list[dict[str, int]]:
    """Each resource map parsed (:data:`UNSET`: none given): raw ones once per distinct spelling."""
    if not gathered.raw:
        return [EMPTY if value is UNSET else gathered.resources(value) for value in values]
    keys = [None if raw is UNSET else bytes(raw) for raw in values]
    parsed: dict[bytes | None, dict[str, int]] = {None: EMPTY}
    for key in set(keys).difference(parsed):
        parsed[key] = parsed_resource_map(decoded(key))  # type: ignore[arg-type]
    return list(map(parsed.__getitem__, keys))


def decoded(raw: bytes) -> Any:
    value = decode_json_fast(raw)
    if value is None:  # a duplicate key, or what msgspec leaves to the standard decoder (or a null)
        raise Refused
    return value


def missing_at(column: list[Any]) -> list[int]:
    """The positions of :data:`UNSET` and ``None`` in ``column`` (rare: looked for in C)."""
    found = []
    for missing in (UNSET, None):
        start = 0
        for _ in range(column.count(missing)):
            start = column.index(missing, start) + 1
            found.append(start - 1)
    return found


def nones(column: list[Any]) -> list[Any]:
    """``column`` with ``None`` for :data:`UNSET` (a field not given)."""
    missing = column.count(UNSET)
    if not missing:
        return column
    if missing == len(column):
        return [None] * missing
    return [None if value is UNSET else value for value in column]


def instants(values: list[Any], gathered: Gathered) -> list[float | int | None]:
    """Instants in seconds: numbers as given (a raw document's structs checked them), text and datetimes parsed."""
    if not gathered.raw:
        return list(map(instant, values))
    values = nones(values)
    if not set(map(type, values)) - NUMBERS:
        return values
    return [value if type(value) in NUMBERS else instant(value) for value in values]


NUMBERS = frozenset((int, float, type(None)))


LARGE_COLUMN = 4096
"""A column longer than this is read with numpy where it helps (numpy is not loaded for small snapshots)."""


def unset_mask(column: list[Any], missing: Any = UNSET) -> Any:
    """Where a large ``column`` holds ``missing`` (:data:`UNSET` or ``None``): ``False`` nowhere, ``True``
    everywhere (counted in C), else a numpy mask."""
    import numpy as np  # a large column only

    absent = column.count(missing)
    if not absent or absent == len(column):
        return absent > 0
    if absent * 8 < len(column):  # a few: found in C
        return _few(column, missing, absent)
    return np.fromiter(map(is_, column, repeat(missing)), dtype=bool, count=len(column))


def _few(column: list[Any], missing: Any, absent: int) -> Any:
    """The numpy mask of the ``absent`` places of ``missing`` in ``column``, found in C (``list.index`` compares as
    ``list.count`` does)."""
    import numpy as np

    mask, start = np.zeros(len(column), dtype=bool), 0
    for _ in range(absent):
        start = column.index(missing, start) + 1
        mask[start - 1] = True
    return mask


def given_at(column: list[Any], missing: Any = UNSET) -> list[int]:
    """The positions in ``column`` of values other than ``missing`` (a tuple of them: equal to it)."""
    absent = column.count(missing)
    if absent == len(column):  # the common case, in C
        return []
    if not absent and (missing is UNSET or missing is None):  # every value given (UNSET and None equal only themselves)
        return list(range(len(column)))
    if absent * 8 < len(column) > LARGE_COLUMN:  # a few left out (a large column only: numpy)
        import numpy as np

        found: list[int] = np.flatnonzero(~_few(column, missing, absent)).tolist()
        return found
    return list(compress(range(len(column)), map(ne, column, repeat(missing))))  # ne: identity first, in C
