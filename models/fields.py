"""Field types shared by the snapshot models.

Each type parses the snapshot's human notation (quantities, durations, instants)
into the exact stored value and describes that notation in the JSON Schema.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from .duration import MAX_DURATION, MAX_INSTANT, MIN_INSTANT, parse_duration, parse_time
from .errors import shown
from .quantity import MAX_AMOUNT, MAX_GPUS, MILLI, UNLIMITED, is_gpu_resource, parse_quantity

__all__ = [
    "MAX_FREE_DEPTH",
    "MAX_WEIGHT",
    "QUANTITY_SCHEMA",
    "AmountMap",
    "BoundMap",
    "Count",
    "Duration",
    "DurationOrForever",
    "FreeMap",
    "Int32",
    "Name",
    "Quantity",
    "SnapshotModel",
    "Time",
    "bounded_depth",
    "parsed_resource_map",
    "raise_errors",
]

QUANTITY_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": MAX_AMOUNT // MILLI},
        {"type": "string", "pattern": r"^[0-9.]+([numkMGTPE]|[KMGTPE]i)?$"},
    ],
    "description": "a number or Kubernetes quantity (500m, 2, 64Gi, 1Ti), at most 2^60 milli-units (about 1 PiB); "
    f"GPUs whole (or a share below one GPU: 500m, 0.5), at most {MAX_GPUS} on one node or task",
}
_BOUND_SCHEMA = {
    "anyOf": [*QUANTITY_SCHEMA["anyOf"], {"const": -1}, {"const": "unlimited"}],
    "description": "a quantity, or -1 / 'unlimited'",
}
_DURATION_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": MAX_DURATION},
        {"type": "string", "pattern": r"^([0-9.]+(h|m|s|ms))+$|^[0-9.]+$"},
    ],
    "description": "seconds, or a duration such as 90s, 10m, 1h30m; at most 10,000 years",
}
_FOREVER_SCHEMA = {
    "anyOf": [*_DURATION_SCHEMA["anyOf"], {"const": -1}, {"const": "-1"}],
    "description": "seconds, a duration such as 10m, or -1 for forever",
}
_TIME_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": MIN_INSTANT, "maximum": MAX_INSTANT},
        {"type": "string", "format": "date-time"},
    ],
    "description": "an RFC 3339 time or seconds since the epoch, in the years 1 to 9999 (UTC)",
}


Duration = Annotated[float, BeforeValidator(parse_duration), WithJsonSchema(_DURATION_SCHEMA)]
"""A non-negative duration in seconds."""

DurationOrForever = Annotated[
    float,
    BeforeValidator(lambda v: parse_duration(v, allow_forever=True)),
    WithJsonSchema(_FOREVER_SCHEMA),
]
"""A non-negative duration in seconds, or ``-1`` for forever."""

Time = Annotated[float, BeforeValidator(parse_time), WithJsonSchema(_TIME_SCHEMA)]
"""An instant, in seconds since the epoch."""

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
"""A priority or another signed whole number that Kubernetes keeps in 32 bits."""

Count = Annotated[int, Field(ge=0, le=2**31 - 1)]
"""A count: whole, from 0 to 2^31 - 1."""

MAX_WEIGHT = 1e6
"""The largest weight or multiplier (fair-share arithmetic stays well inside a float's range)."""

Name = Annotated[str, Field(min_length=1)]
"""A non-empty name."""

MAX_FREE_DEPTH = 32
"""How deeply free content (labels, annotations, a fixture's ``expect``) may nest."""


def bounded_depth(value: object) -> object:
    """``value`` unchanged if it nests at most :data:`MAX_FREE_DEPTH` levels (checked without recursion)."""
    level = [value]
    for _ in range(MAX_FREE_DEPTH):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
            if isinstance(child, (dict, list))
        ]
        if not level:
            return value
    raise PydanticCustomError("depth", "nested more than {depth} levels deep", {"depth": MAX_FREE_DEPTH})


FreeMap = Annotated[dict[str, Any], BeforeValidator(bounded_depth)]
"""Content under ``labels``/``annotations``: free, never checked beyond a bounded depth."""


def raise_errors(title: str, errors: list[tuple[tuple[str | int, ...], str]]) -> None:
    """Raise one ``ValidationError`` carrying every ``(loc, message)`` pair, if any."""
    if errors:
        details = [
            InitErrorDetails(type=PydanticCustomError("snapshot", "{message}", {"message": msg}), loc=loc, input=None)
            for loc, msg in errors
        ]
        raise ValidationError.from_exception_data(title, details)


_PARSED: dict[tuple[object, ...], dict[str, int]] = {}
"""Resource maps already parsed, by their entries: a snapshot repeats a few shapes thousands of times."""


def _resource_map(value: object, *, allow_unlimited: bool, shared: bool = False) -> dict[str, int]:
    """Parse ``{resource: quantity}``, collecting every bad entry; GPUs whole, or a share below one GPU
    (docs/snapshot-format.md, "GPU sharing"), but in a bound (``allow_unlimited``: a quota), any amount.

    A map seen before (same entries, same ``allow_unlimited``) is not parsed again: a copy of its result is
    returned, or with ``shared`` the result itself (for frozen models that never change it: one dict for thousands
    of jobs of one shape, which the solver then tells apart by identity). Only valid maps are kept, at most 4,096.
    """
    if type(value) is dict:
        try:
            key = (allow_unlimited, *value.items(), *map(type, value.values()))  # True is not 1 here
            found = _PARSED.get(key)
        except TypeError:  # an unhashable amount: parsed (and refused) below
            key, found = (), None
        if found is not None:
            return found if shared else dict(found)
        parsed = _parse_resource_map(value, allow_unlimited=allow_unlimited)
        if key:
            if len(_PARSED) >= 4096:
                _PARSED.clear()
            _PARSED[key] = parsed if shared else dict(parsed)
        return parsed
    return _parse_resource_map(value, allow_unlimited=allow_unlimited)


_PACKED: dict[bytes, dict[str, int]] = {}
_pack = msgspec.msgpack.Encoder().encode


def parsed_resource_map(value: object) -> dict[str, int]:
    """``_resource_map(value, allow_unlimited=False, shared=True)`` for a map that a JSON parser made.

    Such a map holds only strings, numbers, booleans, ``None``, lists and maps with string keys. Their MessagePack
    encoding tells each of these types apart (``True``, ``1`` and ``1.0`` differ there), so it is an exact key for
    the maps already parsed, and several times cheaper to make than a tuple of entries and types. Other values do
    not always keep their type there (a ``Decimal`` or a YAML date is written as a string): they must go through
    :func:`_resource_map`.

    >>> parsed_resource_map({"gpu": 8}), parsed_resource_map({"gpu": 8.0})
    ({'gpu': 8000}, {'gpu': 8000})
    >>> parsed_resource_map({"gpu": True})  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ValidationError: expected a number or a quantity string such as '500m' or '64Gi', got True
    """
    try:
        key = _pack(value)
    except (TypeError, ValueError, OverflowError):  # not what a parser makes: parsed (or refused) as usual
        return _resource_map(value, allow_unlimited=False, shared=True)
    found = _PACKED.get(key)
    if found is None:
        found = _resource_map(value, allow_unlimited=False, shared=True)  # raises if the map is wrong
        if len(_PACKED) >= 4096:
            _PACKED.clear()
        _PACKED[key] = found
    return found


def _parse_resource_map(value: object, *, allow_unlimited: bool) -> dict[str, int]:
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "resources", "expected a mapping of resource name to amount, got {got}", {"got": shown(value)}
        )
    parsed: dict[str, int] = {}
    errors: list[tuple[tuple[str | int, ...], str]] = []
    for name, raw in value.items():
        if not isinstance(name, str) or not name:
            errors.append(((shown(name),), "a resource name must be a non-empty string"))
            continue
        try:
            amount = parse_quantity(raw, allow_unlimited=allow_unlimited)
        except ValueError as err:
            errors.append(((name,), str(err)))
            continue
        if amount != UNLIMITED and is_gpu_resource(name):
            if amount % MILLI and amount > MILLI and not allow_unlimited:  # a bound (a quota) may be any fraction
                whole = f"a share of a GPU is below one GPU; more must be whole GPUs (got {amount / MILLI:g})"
                errors.append(((name,), whole))
                continue
            if not allow_unlimited and amount > MAX_GPUS * MILLI:
                errors.append(((name,), f"{amount // MILLI} GPUs: a node or a task has at most {MAX_GPUS}"))
                continue
        parsed[name] = amount
    raise_errors("resources", errors)
    return parsed


def _quantity(value: object) -> int:
    try:
        amount = parse_quantity(value)
    except ValueError as err:
        raise PydanticCustomError("quantity", str(err)) from None
    if amount <= 0:
        raise PydanticCustomError("quantity", "must be above zero")
    return amount


Quantity = Annotated[int, BeforeValidator(_quantity), WithJsonSchema(QUANTITY_SCHEMA)]
"""One positive amount (milli-units), a number or a Kubernetes quantity."""

AmountMap = Annotated[
    dict[str, int],
    BeforeValidator(lambda v: _resource_map(v, allow_unlimited=False)),
    WithJsonSchema({"type": "object", "additionalProperties": QUANTITY_SCHEMA}),
]
"""Resource name -> finite amount (milli-units); GPUs whole."""

BoundMap = Annotated[
    dict[str, int],
    BeforeValidator(lambda v: _resource_map(v, allow_unlimited=True)),
    WithJsonSchema({"type": "object", "additionalProperties": _BOUND_SCHEMA}),
]
"""Resource name -> amount or :data:`UNLIMITED` (milli-units); GPUs whole."""


class SnapshotModel(BaseModel):
    """Base of every snapshot model: unknown fields are errors, types are strict, instances are frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
