"""Priority classes, with the preemption toleration of scheduler-plugins (docs/rules.md, "Preemption toleration").

The toleration may be written in the structured form::

    preemption_toleration: {minimum_preemptable_priority: 10000, toleration_seconds: 600}

or as the annotations of the design (docs/rules.md, "Preemption toleration")::

    annotations:
      preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority: "10000"
      preemption-toleration.scheduling.x-k8s.io/toleration-seconds: "600"

Both forms resolve to one :class:`Toleration`; naming both is an error unless
they agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, PrivateAttr, model_validator

from .duration import FOREVER, parse_duration
from .errors import shown
from .fields import DurationOrForever, FreeMap, Int32, Name, SnapshotModel, raise_errors

__all__ = [
    "ANNOTATION_PREFIX",
    "MINIMUM_ANNOTATION",
    "SECONDS_ANNOTATION",
    "PreemptionPolicy",
    "PreemptionToleration",
    "PriorityClass",
    "Toleration",
]

ANNOTATION_PREFIX = "preemption-toleration.scheduling.x-k8s.io/"
MINIMUM_ANNOTATION = ANNOTATION_PREFIX + "minimum-preemptable-priority"
SECONDS_ANNOTATION = ANNOTATION_PREFIX + "toleration-seconds"


@dataclass(frozen=True)
class Toleration:
    """A resolved preemption toleration policy.

    A victim of this class tolerates preemptors whose priority is below
    ``minimum_preemptable_priority`` for ``toleration_seconds`` after it
    started (:data:`~gpu_preempt.models.duration.FOREVER` = always).
    """

    minimum_preemptable_priority: int
    toleration_seconds: float

    @property
    def forever(self) -> bool:
        return self.toleration_seconds == FOREVER


class PreemptionToleration(SnapshotModel):
    """Structured form of the preemption toleration policy (as the annotations of scheduler-plugins)."""

    minimum_preemptable_priority: Int32 | None = Field(None, description="default: the class value + 1")
    toleration_seconds: DurationOrForever = Field(0.0, description="0 = no toleration; -1 = forever")


PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]
"""Kubernetes ``PriorityClass.preemptionPolicy``: ``Never`` = may be placed, never evicts anything."""


class PriorityClass(SnapshotModel):
    """A named priority value, optionally with a preemption toleration policy."""

    name: Name
    value: Int32
    preemption_policy: PreemptionPolicy = Field(
        "PreemptLowerPriority",
        description="Never: jobs of this class are placed on free capacity but never evict (Kubernetes)",
    )
    preemption_toleration: PreemptionToleration | None = None
    annotations: FreeMap = Field(default_factory=dict)
    labels: FreeMap = Field(default_factory=dict)

    _toleration: Toleration | None = PrivateAttr(None)

    @property
    def toleration(self) -> Toleration | None:
        """The resolved policy, or ``None`` when the class declares none (plain priority rules)."""
        value: Toleration | None = self.__pydantic_private__["_toleration"]  # type: ignore[index]
        return value

    @model_validator(mode="after")
    def _resolve_toleration(self) -> PriorityClass:
        errors: list[tuple[tuple[str | int, ...], str]] = []
        from_annotations = self._annotation_policy(errors)
        structured = self.preemption_toleration
        if (
            structured is not None
            and from_annotations is not None
            and (structured.minimum_preemptable_priority, structured.toleration_seconds) != from_annotations
        ):
            errors.append(
                (("annotations",), "the toleration annotations disagree with preemption_toleration; keep one form")
            )
        raise_errors("PriorityClass", errors)
        if structured is not None:
            minimum, seconds = structured.minimum_preemptable_priority, structured.toleration_seconds
        elif from_annotations is not None:
            minimum, seconds = from_annotations
        else:
            return self
        self.__pydantic_private__["_toleration"] = Toleration(  # type: ignore[index]
            self.value + 1 if minimum is None else minimum, seconds
        )
        return self

    def _annotation_policy(self, errors: list[tuple[tuple[str | int, ...], str]]) -> tuple[int | None, float] | None:
        present = [k for k in (MINIMUM_ANNOTATION, SECONDS_ANNOTATION) if k in self.annotations]
        if not present:
            return None
        minimum: int | None = None
        seconds = 0.0
        if MINIMUM_ANNOTATION in self.annotations:
            raw = self.annotations[MINIMUM_ANNOTATION]
            try:
                minimum = _parse_int(raw)
            except ValueError:
                errors.append((("annotations", MINIMUM_ANNOTATION), f"{shown(raw)} is not a whole number"))
        if SECONDS_ANNOTATION in self.annotations:
            raw = self.annotations[SECONDS_ANNOTATION]
            try:
                seconds = parse_duration(_parse_int(raw), allow_forever=True)
            except ValueError:
                errors.append(
                    (
                        ("annotations", SECONDS_ANNOTATION),
                        f"{shown(raw)} is not a whole number of seconds (-1 = forever)",
                    )
                )
        return minimum, seconds


def _parse_int(raw: object) -> int:
    if isinstance(raw, bool):
        raise ValueError(raw)
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
        return int(raw.strip())
    raise ValueError(raw)
