"""Queue trees from scheduler objects (docs/kubernetes.md).

* KAI ``Queue`` (``scheduling.run.ai``): ``spec.parentQueue``, ``spec.priority``,
  ``spec.resources.{gpu,cpu,memory}.{quota,limit,overQuotaWeight}`` in devices, millicores and MB (10^6 bytes),
  ``-1`` = unlimited; ``spec.preemptMinRuntime`` / ``spec.reclaimMinRuntime``. An absent limit is taken as
  unlimited (reported): KAI has no CRD default, and a zero limit under a positive quota is not a tree we accept.
* Kueue (the snapshot's ``config.policy: kueue``, docs/rules.md, "Kueue's preemption"): a ``ClusterQueue`` is a
  leaf with ``nominal``, ``borrowing_limit`` and ``lending_limit`` summed over its flavors, its ``spec.preemption``
  policies and ``spec.fairSharing.weight``; its cohort (``spec.cohortName``, v1beta1 ``spec.cohort``) is its
  parent; a ``Cohort`` object may name its own parent and give quotas of its own.
* Volcano ``Queue`` (``scheduling.volcano.sh``): ``spec.parent``, ``spec.deserved``, ``spec.capability`` (limit),
  ``spec.weight``. Volcano's implicit ``root`` queue is not a queue of the snapshot.
"""

from __future__ import annotations

import math
from typing import Any

from gpu_preempt.models import MILLI, Resources, SnapshotError, format_quantity
from gpu_preempt.models.errors import shown

from .core import Report, amount, resource_map
from .read import KubeObject

__all__ = [
    "KAI_GROUP",
    "KAI_UNITS",
    "KUEUE_GROUP",
    "KUEUE_RESOURCES",
    "PREEMPTION_FIELDS",
    "VOLCANO_GROUP",
    "kai_queue",
    "kueue_cluster_queue",
    "kueue_cohort",
    "kueue_quotas",
    "volcano_queue",
]

KAI_GROUP = "scheduling.run.ai"
KUEUE_GROUP = "kueue.x-k8s.io"
VOLCANO_GROUP = "scheduling.volcano.sh"
KAI_UNITS = {"gpu": MILLI, "cpu": 1, "memory": 10**6 * MILLI}
"""Milli-units of one unit of a KAI queue amount: GPU devices, CPU millicores, memory MB."""


def _amounts(resources: Resources) -> dict[str, str | int]:
    return {
        r: "unlimited" if a < 0 else a // MILLI if r == "gpu" else format_quantity(r, a) for r, a in resources.items()
    }


def kai_queue(obj: KubeObject, report: Report) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    entry: dict[str, Any] = {"name": obj.name}
    if spec.get("parentQueue"):
        entry["parent"] = spec["parentQueue"]
    deserved: Resources = {}
    limit: Resources = {}
    weights: dict[str, float] = {}
    for resource, unit in KAI_UNITS.items():
        given = (spec.get("resources") or {}).get(resource)
        if given is None:
            continue
        if not isinstance(given, dict):
            raise SnapshotError.single(obj.at(f"spec.resources.{resource}"), "expected quota, limit, overQuotaWeight")
        for key, target in (("quota", deserved), ("limit", limit)):
            value = given.get(key)
            if value is None:
                if key == "limit":
                    report.guess(obj.at(f"spec.resources.{resource}.limit"), "absent: taken as unlimited")
                continue
            target[resource] = _kai_amount(obj, f"spec.resources.{resource}.{key}", value, resource, unit)
        weight = given.get("overQuotaWeight")
        if weight is not None:
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
                raise SnapshotError.single(
                    obj.at(f"spec.resources.{resource}.overQuotaWeight"), "expected a weight >= 0"
                )
            weights[resource] = weight
    if deserved:
        entry["deserved"] = _amounts(deserved)
    if limit:
        entry["limit"] = _amounts(limit)
    if weights:
        entry["over_quota_weight"] = weights
    if spec.get("priority") is not None:
        entry["priority"] = spec["priority"]
    for key, name in (("preemptMinRuntime", "preempt_min_runtime"), ("reclaimMinRuntime", "reclaim_min_runtime")):
        if spec.get(key) is not None:
            entry[name] = spec[key]
    return entry


def _kai_amount(obj: KubeObject, where: str, value: Any, resource: str, unit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value > 2**50:
        raise SnapshotError.single(obj.at(where), f"expected a number up to 2^50, got {shown(value, 40)}")
    if value == -1:
        return -1
    if value < 0:
        raise SnapshotError.single(obj.at(where), f"expected -1 (unlimited) or an amount >= 0, got {value}")
    milli = value * unit
    if milli != int(milli) or (resource == "gpu" and int(milli) % MILLI):
        raise SnapshotError.single(obj.at(where), f"{value} is not a whole number of {resource} units")
    return int(milli)


KUEUE_RESOURCES = {"nvidia.com/gpu": "gpu", "cpu": "cpu", "memory": "memory"}
PREEMPTION_FIELDS = {"withinClusterQueue": "within_cluster_queue", "reclaimWithinCohort": "reclaim_within_cohort"}


def kueue_quotas(obj: KubeObject) -> dict[str, Any]:
    """A ClusterQueue's or Cohort's ``spec.resourceGroups`` as ``nominal``, ``borrowing_limit`` and
    ``lending_limit``, each summed over the flavors per resource. A resource is unlimited in borrowing when some
    flavor gives no borrowing limit; a flavor without a lending limit lends all its nominal quota."""
    spec = obj.get("spec") or {}
    nominal: Resources = {}
    borrow: Resources = {}
    lend: Resources = {}
    unlimited: set[str] = set()
    limited_lending: set[str] = set()
    for g, group in enumerate(spec.get("resourceGroups") or []):
        for f, flavor in enumerate(group.get("flavors") or []):
            for r, item in enumerate(flavor.get("resources") or []):
                where = f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                kept = KUEUE_RESOURCES.get(item.get("name"))
                if kept is None:
                    continue
                quota = amount(obj, f"{where}.nominalQuota", item.get("nominalQuota", 0), kept)
                nominal[kept] = nominal.get(kept, 0) + quota
                if item.get("borrowingLimit") is None:
                    unlimited.add(kept)
                else:
                    borrow[kept] = borrow.get(kept, 0) + amount(
                        obj, f"{where}.borrowingLimit", item["borrowingLimit"], kept
                    )
                if item.get("lendingLimit") is None:
                    lend[kept] = lend.get(kept, 0) + quota
                else:
                    limited_lending.add(kept)
                    lent = amount(obj, f"{where}.lendingLimit", item["lendingLimit"], kept)
                    if lent > quota:
                        raise SnapshotError.single(obj.at(f"{where}.lendingLimit"), "above the flavor's nominalQuota")
                    lend[kept] = lend.get(kept, 0) + lent
    entry: dict[str, Any] = {}
    if nominal:
        entry["nominal"] = _amounts(nominal)
    limits = {r: a for r, a in borrow.items() if r not in unlimited}
    if limits:
        entry["borrowing_limit"] = _amounts(limits)
    lending = {r: a for r, a in lend.items() if r in limited_lending}
    if lending:
        entry["lending_limit"] = _amounts(lending)
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        entry["fair_sharing_weight"] = float(amount(obj, "spec.fairSharing.weight", weight, "weight")) / MILLI
    return entry


def kueue_cluster_queue(obj: KubeObject, report: Report) -> tuple[dict[str, Any], str | None]:
    """The leaf queue of a ClusterQueue (quotas, preemption policies), and its cohort."""
    spec = obj.get("spec") or {}
    entry: dict[str, Any] = {"name": obj.name, **kueue_quotas(obj)}
    given = spec.get("preemption")
    if given is not None:
        if not isinstance(given, dict):
            raise SnapshotError.single(obj.at("spec.preemption"), "expected a mapping")
        preemption: dict[str, Any] = {
            ours: given[theirs] for theirs, ours in PREEMPTION_FIELDS.items() if theirs in given
        }
        borrow = given.get("borrowWithinCohort")
        if isinstance(borrow, dict):
            preemption["borrow_within_cohort"] = {
                "policy": borrow.get("policy", "Never"),
                **(
                    {"max_priority_threshold": borrow["maxPriorityThreshold"]}
                    if borrow.get("maxPriorityThreshold") is not None
                    else {}
                ),
            }
        entry["preemption"] = preemption
    cohort = spec.get("cohortName") or spec.get("cohort")
    return entry, cohort


def kueue_cohort(obj: KubeObject, report: Report) -> dict[str, Any]:
    """A Cohort: its parent (``spec.parentName``, v1alpha1 ``spec.parent``) and quotas of its own."""
    entry: dict[str, Any] = {"name": obj.name, **kueue_quotas(obj)}
    parent = obj.get("spec", "parentName") or obj.get("spec", "parent")
    if parent:
        entry["parent"] = parent
    return entry


def volcano_queue(obj: KubeObject, report: Report) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    entry: dict[str, Any] = {"name": obj.name}
    if spec.get("parent") and spec["parent"] != "root":
        entry["parent"] = spec["parent"]
    deserved = resource_map(obj, "spec.deserved", spec.get("deserved"), report)
    if deserved:
        entry["deserved"] = _amounts(deserved)
    limit = resource_map(obj, "spec.capability", spec.get("capability"), report)
    if limit:
        entry["limit"] = _amounts(limit)
    if spec.get("weight") is not None:
        entry["over_quota_weight"] = spec["weight"]
    if spec.get("priority") is not None:
        entry["priority"] = spec["priority"]
    return entry
