"""KAI's time-based fair share (docs/snapshot-format.md, "Time-based fair share"): the snapshot's
``config.fair_share_usage`` and each queue's ``usage``."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, field_validator

from .duration import parse_duration
from .fields import MAX_WEIGHT, SnapshotModel

__all__ = ["FairShareUsage", "LongDuration", "parse_long_duration"]

_DAYS = re.compile(r"^\s*(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<unit>[dw])\s*$")


def parse_long_duration(value: object) -> float:
    """A duration in seconds, as :func:`~.duration.parse_duration` reads it or in days and weeks (``7d``, ``1w``),
    as a usage window is written.

    >>> parse_long_duration("1w"), parse_long_duration("1.5d"), parse_long_duration("168h")
    (604800.0, 129600.0, 604800.0)
    """
    if isinstance(value, str):
        found = _DAYS.match(value)
        if found is not None:
            return parse_duration(float(found["n"]) * (604800 if found["unit"] == "w" else 86400))
    return parse_duration(value)


LongDuration = Annotated[
    float,
    BeforeValidator(parse_long_duration),
    WithJsonSchema({"description": "seconds, or a duration such as 90m, 168h, 7d or 1w"}),
]


class FairShareUsage(SnapshotModel):
    """KAI's proportion plugin with a usage database: past usage moves the over-quota split. Over-quota capacity is
    split in rounds among unsatisfied queues, each weighted ``max(0, W' + k (W' - U))`` where ``W'`` is its
    over-quota weight over the sum of the unsatisfied queues' and ``U`` its usage (docs/rules.md, "Time-based fair
    share")."""

    k_value: float = Field(
        1.0, ge=0, le=MAX_WEIGHT, allow_inf_nan=False, description="how strongly past usage moves the split (0: not)"
    )
    window: LongDuration = Field(604800.0, description="the usage window (KAI's windowSize; default one week)")
    window_type: Literal["sliding", "tumbling"] = Field("sliding", description="KAI's windowType (cron: not modelled)")
    half_life: LongDuration | None = Field(None, description="decay of past usage within the window; absent: none")

    @field_validator("window")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("the window must be longer than 0")
        return value
