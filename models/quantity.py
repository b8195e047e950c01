"""Kubernetes-style resource quantities.

Every amount is stored as an integer number of *milli-units* (``500m`` CPU is
``500``, one GPU is ``1000``, ``1Ki`` of memory is ``1024000``), the same
convention as Kubernetes' ``MilliValue``. Integers keep the arithmetic exact:
no amount is ever rounded.

``-1`` or ``"unlimited"`` means unlimited where a field allows it; it is stored
as :data:`UNLIMITED`.

Examples
--------
>>> parse_quantity("500m")
500
>>> parse_quantity("64Gi") == 64 * 2**30 * 1000
True
>>> format_quantity("memory", parse_quantity("64Gi"))
'64Gi'
>>> format_quantity("cpu", 1500)
'1500m'
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Final

from .errors import shown

__all__ = [
    "MAX_AMOUNT",
    "MAX_GPUS",
    "MAX_QUANTITY_TEXT",
    "MILLI",
    "UNLIMITED",
    "Resources",
    "add",
    "format_quantity",
    "format_resources",
    "is_gpu_resource",
    "parse_quantity",
]

UNLIMITED: Final = -1
"""Stored value of an unlimited amount (``-1`` or ``unlimited`` in a snapshot)."""

MILLI: Final = 1000
"""Milli-units in one whole unit."""

MAX_AMOUNT: Final = 2**60
"""The largest amount, in milli-units (about 1 PiB of memory, or 10^15 CPUs): sums and products of amounts must fit
the solver's 64-bit integers."""

MAX_GPUS: Final = 16384
"""The most GPUs one node or one task may have: a task's GPUs times the longest possible running time, in
milliseconds, must fit in 63 bits (the lost-work objective)."""

Resources = dict[str, int]
"""Resource name -> amount in milli-units."""

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
MAX_QUANTITY_TEXT = 64
"""The longest quantity text read (the largest amount, 2^60 milli-units, takes 19 digits): a longer one is refused
before any arithmetic on it."""
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


def is_gpu_resource(name: str) -> bool:
    """Whether ``name`` counts whole GPU devices (``gpu`` or ``<vendor>/gpu``)."""
    return name == "gpu" or name.endswith("/gpu")


def parse_quantity(value: object, *, allow_unlimited: bool = False) -> int:
    """Parse a number or Kubernetes quantity string into milli-units.

    Raises ``ValueError`` with a message suitable for a user: negative amounts,
    precision finer than one milli-unit, and malformed strings are rejected.
    ``-1`` and ``"unlimited"`` are accepted only when ``allow_unlimited``.
    """
    if type(value) is int and 0 <= value <= MAX_AMOUNT // MILLI:  # the common case, kept fast for large snapshots
        return value * MILLI
    if isinstance(value, str):
        return _parse_text(value, allow_unlimited)
    return _parse(value, allow_unlimited)


@lru_cache(maxsize=4096)
def _parse_text(value: str, allow_unlimited: bool) -> int:
    """Quantity strings repeat a lot in a snapshot (``64Gi``, ``500m``): parse each once."""
    return _parse(value, allow_unlimited)


def _parse(value: object, allow_unlimited: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected a number or a quantity string such as '500m' or '64Gi', got {shown(value, 40)}")
    if isinstance(value, str) and value.lower() == "unlimited":
        if allow_unlimited:
            return UNLIMITED
        raise ValueError("'unlimited' is not allowed here")
    number = _to_decimal(value)
    if number == -1:
        if allow_unlimited:
            return UNLIMITED
        raise ValueError("-1 (unlimited) is not allowed here")
    if number < 0:
        raise ValueError(f"negative amount {shown(value, 40)} is not allowed")
    milli = number * MILLI
    if milli > MAX_AMOUNT:
        raise ValueError(f"{shown(value, 40)} is more than the largest amount supported, 2^60 milli-units")
    if milli != milli.to_integral_value():
        raise ValueError(f"{shown(value, 40)} is more precise than 1m (one milli-unit), which is not supported")
    return int(milli)


def _to_decimal(value: int | float | str) -> Decimal:
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{shown(value, 40)} is not a finite number")
        return Decimal(repr(value))
    if len(value) > MAX_QUANTITY_TEXT:
        raise ValueError(f"{shown(value, 40)} is longer than a quantity may be ({MAX_QUANTITY_TEXT} characters)")
    if value != value.strip():
        raise ValueError(f"{shown(value, 40)} has spaces around it, which a quantity may not have")
    match = _QUANTITY.match(value)
    if match is None:
        raise ValueError(f"{shown(value, 40)} is not a quantity (examples: 2, 500m, 1.5, 64Gi, 1Ti, unlimited)")
    try:
        number = Decimal(match["number"])
    except InvalidOperation as err:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"{shown(value, 40)} is not a quantity") from err
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = suffix[1:].lstrip("+-").lstrip("0")
    if len(exponent) > 3:
        raise ValueError(f"{shown(value, 40)} is more than the largest amount supported, 2^60 milli-units")
    return number.scaleb(int(suffix[1:]))


def format_quantity(resource: str, milli: int) -> str:
    """Render an amount the way a person would write it for ``resource``."""
    if milli == UNLIMITED:
        return "unlimited"
    if milli % MILLI:
        return f"{milli}m"
    whole = milli // MILLI
    if resource == "memory" or resource.endswith("memory"):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if whole and whole % _BINARY[suffix] == 0:
                return f"{whole // _BINARY[suffix]}{suffix}"
    return str(whole)


def format_resources(resources: Resources, *, only: tuple[str, ...] | None = None) -> str:
    """``{"gpu": 8000, "cpu": 96000}`` -> ``"gpu=8 cpu=96"`` (GPUs first, then by name)."""
    names = sorted(resources, key=lambda r: (not is_gpu_resource(r), r))
    if only is not None:
        names = [r for r in names if r in only]
    return " ".join(f"{r}={format_quantity(r, resources[r])}" for r in names)


def add(a: Resources, b: Resources, times: int = 1) -> Resources:
    """``a + times * b``, resource by resource (finite amounts only)."""
    out = dict(a)
    for name, amount in b.items():
        out[name] = out.get(name, 0) + times * amount
    return out
