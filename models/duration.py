"""Instants and durations of the snapshot format.

An *instant* is an RFC 3339 string (``2026-01-01T12:00:00Z``) or a number of
seconds since the epoch; it is stored as float seconds since the epoch (UTC).

A *duration* is a number of seconds or a string such as ``90s``, ``10m``,
``1h30m`` or ``0``; it is stored as float seconds. ``-1`` means *forever* where
a field says so, and is stored as :data:`FOREVER`.

Examples
--------
>>> parse_duration("1h30m")
5400.0
>>> parse_duration(90)
90.0
>>> format_time(parse_time("2026-01-01T12:00:00Z"))
'2026-01-01T12:00:00Z'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Final

from .errors import shown

__all__ = [
    "FOREVER",
    "MAX_DURATION",
    "MAX_INSTANT",
    "MIN_INSTANT",
    "format_duration",
    "format_end",
    "format_time",
    "parse_duration",
    "parse_time",
]

FOREVER: Final = -1.0
"""Stored value of a duration of ``-1`` (forever)."""

MIN_INSTANT: Final = -62135596800.0
"""0001-01-01T00:00:00Z, the earliest instant a snapshot may hold."""

MAX_INSTANT: Final = 253402300799.0
"""9999-12-31T23:59:59Z, the latest instant a snapshot may hold; a protection or backoff that would end later
lasts forever."""

MAX_DURATION: Final = MAX_INSTANT - MIN_INSTANT
"""The longest duration (10,000 years): longer ones are refused (write -1 where a field allows forever)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:h|ms|m|s))+$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?$")


def parse_duration(value: object, *, allow_forever: bool = False) -> float:
    """Parse a duration into seconds; ``ValueError`` with a user-facing message on bad input."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected seconds or a duration such as '90s' or '1h30m', got {shown(value)}")
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.match(text):
            seconds = float(text)
        elif _DURATION.match(text):
            seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(text))
        else:
            raise ValueError(f"{shown(value)} is not a duration (examples: 90, 90s, 10m, 1h30m, 0)")
    else:
        seconds = float(value)
        if seconds != seconds or seconds in (float("inf"), float("-inf")):
            raise ValueError(f"{shown(value)} is not a finite duration")
    if seconds > MAX_DURATION:
        hint = "; use -1 for forever" if allow_forever else ""
        raise ValueError(f"{shown(value, 40)} is longer than the longest duration supported, 10,000 years{hint}")
    if seconds == FOREVER:
        if allow_forever:
            return FOREVER
        raise ValueError("-1 (forever) is not allowed here")
    if seconds < 0:
        hint = "; use -1 for forever" if allow_forever else ""
        raise ValueError(f"negative duration {shown(value)} is not allowed{hint}")
    return seconds


def parse_time(value: object) -> float:
    """Parse an instant into float seconds since the epoch (UTC)."""
    if type(value) is str:
        return _parse_instant(value)
    if isinstance(value, bool):
        raise ValueError(f"expected an RFC 3339 time or seconds since the epoch, got {shown(value)}")
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{shown(value)} is not a finite time")
        return _in_range(float(value), value)
    if isinstance(value, datetime):  # YAML turns unquoted timestamps into datetimes
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError as err:
            raise ValueError(f"{shown(value)} is not an RFC 3339 time such as '2026-01-01T12:00:00Z'") from err
    else:
        raise ValueError(f"expected an RFC 3339 time or seconds since the epoch, got {shown(value)}")
    if moment.tzinfo is None:
        raise ValueError(f"{shown(value)} has no time zone; write it as '...Z' or with an offset such as '+02:00'")
    return _in_range((moment - _EPOCH).total_seconds(), value)


@lru_cache(maxsize=65536)
def _parse_instant(text: str) -> float:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as err:
        raise ValueError(f"{shown(text)} is not an RFC 3339 time such as '2026-01-01T12:00:00Z'") from err
    if moment.tzinfo is None:
        raise ValueError(f"{shown(text)} has no time zone; write it as '...Z' or with an offset such as '+02:00'")
    return _in_range((moment - _EPOCH).total_seconds(), text)


def _in_range(seconds: float, value: object) -> float:
    if not MIN_INSTANT <= seconds <= MAX_INSTANT:
        raise ValueError(f"{shown(value, 40)} is outside the years 1 to 9999")
    return seconds


def format_time(seconds: float) -> str:
    """Render seconds since the epoch as RFC 3339 in UTC (``...Z``), within the years 1 to 9999.

    An instant after :data:`MAX_INSTANT` (a protection that ends after the year 9999) is shown as
    ``9999-12-31T23:59:59Z``, one before :data:`MIN_INSTANT` as ``0001-01-01T00:00:00Z``.

    >>> format_time(1e300)
    '9999-12-31T23:59:59Z'
    """
    seconds = min(max(seconds, MIN_INSTANT), MAX_INSTANT)
    moment = _EPOCH + timedelta(seconds=seconds)
    text = moment.isoformat(timespec="milliseconds" if moment.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def format_end(seconds: float) -> str | None:
    """When something ends, as :func:`format_time`; ``None`` (never) when that is after the year 9999."""
    return None if seconds > MAX_INSTANT else format_time(seconds)


def format_duration(seconds: float) -> str:
    """Render seconds compactly: ``5400`` -> ``"1h30m"``; :data:`FOREVER` -> ``"forever"``."""
    if seconds == FOREVER:
        return "forever"
    if seconds != int(seconds):
        return f"{seconds:g}s"
    whole = int(seconds)
    if whole == 0:
        return "0s"
    parts = []
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(parts)
