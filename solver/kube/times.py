"""The timestamps of a dump, checked as the API server writes them (RFC 3339, years 1 to 9999) and against the
snapshot's instant: a time that decides when a job was created, started or began to leave is an error when it is
malformed or after ``now``; any other is kept out and reported as a guess (``--strict`` refuses it).

Examples
--------
>>> from .read import KubeObject
>>> from .core import Report
>>> pod = KubeObject("Pod", "", "v1", "ns", "p", {"status": {"phase": "Running", "conditions": [
...     {"type": "Ready", "lastTransitionTime": "yesterday at noon"}]}}, "dump.json")
>>> report = Report()
>>> check_times([pod], 0.0, report)
>>> report.guesses
["Pod ns/p: status.conditions[0].lastTransitionTime: 'yesterday at noon' is not an RFC 3339 time such as \
'2026-01-01T12:00:00Z': not read"]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from gpu_preempt.models import SnapshotError, format_time
from gpu_preempt.models.errors import FieldError, shown

from .core import Report, moment_of
from .read import KubeObject

__all__ = ["DECIDING", "LAST_START", "check_times"]

LAST_START = "kai.scheduler/last-start-timestamp"

DECIDING = ("metadata.creationTimestamp", "metadata.deletionTimestamp", "status.startTime", "PodScheduled", LAST_START)
"""The times that decide a job's creation, start (the min-runtime clock) or departure: the object's creation and
deletion, a pod's start and its ``PodScheduled`` condition, KAI's last start of a pod group."""

_READ = {("", "Pod"), ("scheduling.run.ai", "PodGroup"), ("scheduling.volcano.sh", "PodGroup"),
         ("kueue.x-k8s.io", "Workload"), ("", "Node")}  # fmt: skip
"""The kinds whose times are checked: those whose times decide a job's clocks, and nodes (whose times decide
nothing)."""


def check_times(objects: Iterable[KubeObject], now: float, report: Report) -> None:
    """Refuse the deciding times (:data:`DECIDING`) of ``objects`` that are malformed, outside years 1 to 9999, or
    after ``now``, naming each; report the others as guesses. Finished pods are not read."""
    errors: list[FieldError] = []
    for obj in objects:
        if (obj.group, obj.kind) not in _READ or obj.get("status", "phase") in ("Succeeded", "Failed"):
            continue
        for where, value, deciding in _times(obj):
            deciding = deciding and obj.kind != "Node"
            try:
                if not isinstance(value, str):
                    raise ValueError(f"expected an RFC 3339 time (a string), got {shown(value)}")
                moment = moment_of(value)
            except ValueError as error:
                why = str(error)
            else:
                if moment <= now:
                    continue
                why = f"{value} is after the snapshot's instant ({format_time(now)})"
            if deciding:
                errors.append(FieldError(obj.at(where), why))
            else:
                report.guess(obj.at(where), f"{why}: not read")
    if errors:
        raise SnapshotError(errors)


def _times(obj: KubeObject) -> Iterator[tuple[str, Any, bool]]:
    """Every timestamp of ``obj`` the API server writes: (field path, value, whether it decides)."""
    metadata, status = obj.body.get("metadata"), obj.body.get("status")
    if isinstance(metadata, dict):
        for name in ("creationTimestamp", "deletionTimestamp"):
            value = metadata.get(name)
            if value is not None:
                yield f"metadata.{name}", value, True
        annotations = metadata.get("annotations")
        started = annotations.get(LAST_START) if isinstance(annotations, dict) else None
        if started is not None:
            yield f"metadata.annotations.{LAST_START}", started, True
    if not isinstance(status, dict):
        return
    value = status.get("startTime")
    if value is not None:
        yield "status.startTime", value, True
    conditions = status.get("conditions")
    for i, condition in enumerate(conditions if isinstance(conditions, list) else []):
        if isinstance(condition, dict):
            for name in ("lastTransitionTime", "lastProbeTime", "lastUpdateTime", "lastHeartbeatTime"):
                value = condition.get(name)
                if value is not None:
                    deciding = name == "lastTransitionTime" and condition.get("type") == "PodScheduled"
                    yield f"status.conditions[{i}].{name}", value, deciding
