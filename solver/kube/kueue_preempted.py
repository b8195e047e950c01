"""What Kueue did: the preemptions a dump of Workloads records, and the state before each, as far as the dump says.

Kueue marks each workload it preempts with a condition ``Preempted`` (status ``True``; reason ``InClusterQueue``,
``InCohortReclamation``, ``InCohortFairSharing`` or ``InCohortReclaimWhileBorrowing``) whose message names the
preemptor: ``Preempted to accommodate a workload (UID: <uid>, JobUID: ...) due to ...`` (Kueue's
``pkg/scheduler/preemption/preemption.go``, ``preemptionMessage``); Kueue before the ``Preempted`` condition wrote
the same message on ``Evicted`` with reason ``Preempted``. The victims of one preemptor are those whose message
names its UID.

The state before a preemption at time *t* (the earliest of its conditions) is the imported snapshot with:

* the preemptor pending (its pods, if it has run since, taken off their nodes);
* its victims, and the victims of every later preemption, running: their pods still on a node (terminating) run
  again; members without a pod are left for the audit to place, since the dump no longer says where they ran;
* workloads created after *t* left out, and those whose quota was reserved after *t* pending.

Whatever the dump cannot say is a note: victims placed anew, start times unknown, jobs finished since.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from gpu_preempt.models import SnapshotError
from gpu_preempt.models.duration import format_time
from gpu_preempt.models.errors import shown

from .core import instant
from .queues import KUEUE_GROUP
from .read import KubeObject

__all__ = ["REASONS", "Preemption", "Rebuilt", "kueue_preemptions", "state_before"]

REASONS = ("InClusterQueue", "InCohortReclamation", "InCohortFairSharing", "InCohortReclaimWhileBorrowing")
"""The reasons of Kueue's ``Preempted`` condition (``kueue.InClusterQueueReason`` and the cohort ones)."""

_UID = re.compile(r"\(UID: ([^,)\s]+)")


@dataclass(frozen=True)
class Preemption:
    """One preemptor and the workloads Kueue preempted for it."""

    preemptor: str | None
    """The preemptor's Workload, ``namespace/name`` (``None``: no Workload of the dump has its UID, as when it
    finished and was deleted; the preemption cannot be audited)."""
    uid: str
    victims: tuple[str, ...]
    reasons: tuple[str, ...]
    """Each victim's condition reason, in the order of ``victims``."""
    at: float
    """When: the earliest transition time of the victims' conditions."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "preemptor": self.preemptor,
            "uid": self.uid,
            "victims": list(self.victims),
            "reasons": list(self.reasons),
            "at": format_time(self.at),
        }


@dataclass
class Rebuilt:
    """The snapshot document of the state before a preemption, and what of it the dump could not say."""

    document: dict[str, Any]
    preemption: Preemption
    unplaced: tuple[str, ...] = ()
    """Victims with members the dump no longer places: the audit places them as allocate would."""
    notes: list[str] = field(default_factory=list)


def kueue_preemptions(objects: list[KubeObject]) -> list[Preemption]:
    """The preemptions the Workloads of ``objects`` record, earliest first (ties by preemptor)."""
    workloads = [o for o in objects if o.group == KUEUE_GROUP and o.kind == "Workload"]
    by_uid = {str(o.get("metadata", "uid")): o for o in workloads if o.get("metadata", "uid")}
    found: dict[str, list[tuple[float, str, str]]] = {}
    for o in workloads:
        marked = _preempted(o)
        if marked is None:
            continue
        uid, reason, at = marked
        found.setdefault(uid, []).append((at, o.key, reason))
    out = []
    for uid, marks in found.items():
        preemptor = by_uid.get(uid)
        marks.sort(key=lambda m: m[1])
        out.append(
            Preemption(
                preemptor=None if preemptor is None else preemptor.key,
                uid=uid,
                victims=tuple(key for _, key, _ in marks),
                reasons=tuple(reason for _, _, reason in marks),
                at=min(at for at, _, _ in marks),
            )
        )
    return sorted(out, key=lambda p: (p.at, p.preemptor or "", p.uid))


def _preempted(o: KubeObject) -> tuple[str, str, float] | None:
    """The preemptor's UID, the reason and the time of a Workload's ``Preempted`` condition (else of ``Evicted``
    with reason ``Preempted``), or ``None`` when it has neither with status ``True``."""
    conditions = o.get("status", "conditions") or []
    if not isinstance(conditions, list):
        raise SnapshotError.single(o.at("status.conditions"), f"expected a list, got {shown(conditions)}")
    chosen = None
    for i, c in enumerate(conditions):
        if not isinstance(c, dict) or c.get("status") != "True":
            continue
        if c.get("type") == "Preempted":
            chosen = (i, c)
            break
        if c.get("type") == "Evicted" and c.get("reason") == "Preempted" and chosen is None:
            chosen = (i, c)
    if chosen is None:
        return None
    i, c = chosen
    at = f"status.conditions[{i}]"
    match = _UID.search(str(c.get("message") or ""))
    if match is None:
        raise SnapshotError.single(o.at(f"{at}.message"), "names no preemptor: expected '(UID: ...)' as Kueue writes")
    when = instant(o, f"{at}.lastTransitionTime", c.get("lastTransitionTime"))
    if when is None:
        raise SnapshotError.single(o.at(f"{at}.lastTransitionTime"), "missing: when the workload was preempted")
    reason = str(c.get("reason") or "") if c.get("type") == "Preempted" else "Preempted"
    return match.group(1), reason, when


def state_before(
    document: dict[str, Any], objects: list[KubeObject], preemption: Preemption, preemptions: list[Preemption]
) -> Rebuilt:
    """The imported ``document`` as it stood just before ``preemption`` (``preemptions``: all the dump records)."""
    t = preemption.at
    out = copy.deepcopy(document)
    out["now"] = format_time(t)
    rebuilt = Rebuilt(out, preemption)
    workloads = {o.key: o for o in objects if o.group == KUEUE_GROUP and o.kind == "Workload"}
    pods = {o.key: o for o in objects if o.group == "" and o.kind == "Pod"}
    running_then = {v for p in preemptions if p.at >= t for v in p.victims}
    kept, unplaced = [], []
    for job in out.get("jobs", []):
        name = job["name"]
        o = workloads.get(name)
        created = _created(o)
        if created is not None and created > t and name not in running_then:
            rebuilt.notes.append(f"{name}: created after the preemption, left out")
            continue
        if name == preemption.preemptor:
            _pending(job)
        elif name in running_then:
            if _run_again(job, name, rebuilt, pods):
                unplaced.append(name)
        elif o is not None and _reserved_after(o, t) and _any_placed(job):
            _pending(job)
            rebuilt.notes.append(f"{name}: its quota was reserved after the preemption: pending then")
        kept.append(job)
    out["jobs"] = kept
    rebuilt.unplaced = tuple(unplaced)
    if unplaced:
        rebuilt.notes.append(
            "placed as allocate would, the dump no longer saying where they ran: " + ", ".join(unplaced)
        )
    rebuilt.notes.append("jobs that finished and were deleted since the preemption are not in the dump")
    return rebuilt


def _created(o: KubeObject | None) -> float | None:
    if o is None:
        return None
    return instant(o, "metadata.creationTimestamp", o.get("metadata", "creationTimestamp"))


def _reserved_after(o: KubeObject, t: float) -> bool:
    """Whether the Workload's quota is reserved (condition ``QuotaReserved`` true) since after ``t``."""
    for i, c in enumerate(o.get("status", "conditions") or []):
        if isinstance(c, dict) and c.get("type") == "QuotaReserved" and c.get("status") == "True":
            when = instant(o, f"status.conditions[{i}].lastTransitionTime", c.get("lastTransitionTime"))
            return when is not None and when > t
    return False


def _any_placed(job: dict[str, Any]) -> bool:
    return any(task.get("node") for task in job.get("tasks", []))


def _pending(job: dict[str, Any]) -> None:
    """The job as it was before it ran: every task pending, no start."""
    job["tasks"] = [{k: v for k, v in task.items() if k not in ("node", "devices", "status")} for task in job["tasks"]]
    for key in ("started_at", "expected_end", "checkpointed_at"):
        job.pop(key, None)


def _run_again(job: dict[str, Any], name: str, rebuilt: Rebuilt, pods: dict[str, KubeObject]) -> bool:
    """A victim running again: its pods on a node run, from the earliest start of its pods (when the import gave
    none: they were all terminating); ``True`` when members remain to be placed."""
    tasks = []
    for task in job["tasks"]:
        task = dict(task)
        if task.get("node"):
            task["status"] = "running"
        tasks.append(task)
    job["tasks"] = tasks
    job.pop("requeue", None)  # the state its eviction gave it
    starts = [
        instant(o, "status.startTime", o.get("status", "startTime"))
        for task in tasks
        if (o := pods.get(str(task.get("name")))) is not None and o.get("status", "startTime")
    ]
    if "started_at" not in job and starts:
        job["started_at"] = format_time(min(t for t in starts if t is not None))
    if "started_at" not in job:
        rebuilt.notes.append(
            f"{name}: when it started is not in the dump: taken as the preemption's time (no progress lost)"
        )
        job["started_at"] = rebuilt.document["now"]
    return any(not task.get("node") for task in tasks)
