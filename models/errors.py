"""The errors gpu-preempt raises: one root, :class:`GpuPreemptError`; those a user can cause are tied to the path of
the offending field."""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass

from pydantic import ValidationError

__all__ = [
    "MAX_MESSAGE",
    "FieldError",
    "GpuPreemptError",
    "SnapshotError",
    "UnknownJobError",
    "format_loc",
    "kind_of",
    "shown",
]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")

MAX_MESSAGE: int = 1000
"""The most characters an error's path or message keeps; the rest is cut, saying how much."""


_MESSAGES = {
    "extra_forbidden": "unknown field",
    "missing": "required field is missing",
}


@dataclass(frozen=True)
class FieldError:
    """One problem: where (``jobs[3].tasks[1].node``) and what."""

    path: str
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", _cut(self.path))
        object.__setattr__(self, "message", _cut(self.message))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class GpuPreemptError(Exception):
    """The root of every error gpu-preempt raises on purpose: ``except GpuPreemptError`` catches them all."""


class UnknownJobError(GpuPreemptError, KeyError):
    """A job name the snapshot does not hold (a :class:`KeyError` too, as a mapping's lookup raises).

    >>> str(UnknownJobError("nope"))
    "'nope': no such job in the snapshot"
    """

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)

    def __str__(self) -> str:
        return f"{self.name!r}: no such job in the snapshot"


class SnapshotError(GpuPreemptError):
    """A snapshot (or a scenario, a sweep, a trace, a Kubernetes dump) that cannot be used; ``errors`` lists every
    problem found."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))

    @classmethod
    def single(cls, path: str, message: str) -> SnapshotError:
        return cls([FieldError(path, message)])

    @classmethod
    def from_validation_error(cls, error: ValidationError) -> SnapshotError:
        found: list[FieldError] = []
        for item in error.errors(include_url=False):
            message = _MESSAGES.get(item["type"]) or _clean(item["msg"])
            if item["type"].endswith("_type") and item["input"] is not None:
                message = f"{message} (got {shown(item['input'])})"
            found.append(FieldError(format_loc(item["loc"]), message))
        return cls(_unique(found))


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)``, bounded: long strings and deep or long containers are abbreviated with ``...``.

    >>> shown("x" * 100)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'"
    >>> shown([[[[1]]]])
    '[[[[...]]]]'
    """
    if isinstance(value, str) and len(value) <= limit:
        return repr(value)
    bounded = reprlib.Repr()  # attributes, not keywords: Python 3.11
    bounded.maxlevel, bounded.maxlist, bounded.maxtuple, bounded.maxdict, bounded.maxset = 3, 6, 6, 6, 6
    bounded.maxstring, bounded.maxother, bounded.maxlong = limit, limit, limit
    return bounded.repr(value)


def kind_of(data: object) -> str:
    """What a document holds instead of a mapping, for messages: ``a list`` or ``a single value (3)``."""
    return "a list" if isinstance(data, list) else f"a single value ({shown(data, 40)})"


def _cut(text: str) -> str:
    if len(text) <= MAX_MESSAGE:
        return text
    return f"{text[: MAX_MESSAGE - 40]}... ({len(text) - MAX_MESSAGE + 40:,} more characters)"


def format_loc(loc: tuple[str | int, ...]) -> str:
    """``("jobs", 3, "tasks", 1, "node")`` -> ``"jobs[3].tasks[1].node"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


def _clean(message: str) -> str:
    message = message.removeprefix("Value error, ")
    return message.replace("Input should be", "should be")


def _unique(errors: list[FieldError]) -> list[FieldError]:
    seen: set[FieldError] = set()
    return [e for e in errors if not (e in seen or seen.add(e))]  # type: ignore[func-returns-value]
