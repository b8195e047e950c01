"""Where pods may run, in snapshot terms (docs/kubernetes.md, "Placement"): node taints, a pod's node selector,
required node affinity and tolerations, and the topology levels and constraints of KAI-Scheduler and Kueue.

* ``spec.taints`` of a node become its taints (every effect; ``PreferNoSchedule`` keeps nothing out);
* ``spec.nodeSelector``, ``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``
  (``matchExpressions``, and ``matchFields`` on ``metadata.name``) and ``spec.tolerations`` of a pod (or a pod
  template) become the job's placement;
* preferred node affinity, pod affinity and anti-affinity and topology spread constraints are not modelled: each is
  reported (``--strict`` refuses them);
* KAI's ``Topology`` and Kueue's ``Topology`` objects declare the levels (``spec.levels[].nodeLabel``, largest
  first); a KAI ``PodGroup``'s ``spec.topologyConstraint`` (``requiredTopologyLevel``, ``preferredTopologyLevel``)
  and Kueue's ``kueue.x-k8s.io/podset-required-topology`` / ``podset-preferred-topology`` annotations (or a
  Workload's ``spec.podSets[].topologyRequest``) name a job's levels.
"""

from __future__ import annotations

from typing import Any

from gpu_preempt.models import SnapshotError
from gpu_preempt.models.errors import shown

from .core import Report
from .read import KubeObject

__all__ = [
    "EFFECTS",
    "KAI_PREFERRED",
    "KAI_REQUIRED",
    "KUEUE_PREFERRED",
    "KUEUE_REQUIRED",
    "OPERATORS",
    "REQUIRED",
    "kai_topology",
    "node_taints",
    "pod_placement",
    "pod_topology",
    "topology_levels",
    "workload_topology",
]

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
KAI_REQUIRED = "kai.scheduler/topology-required-placement"
KAI_PREFERRED = "kai.scheduler/topology-preferred-placement"


def node_taints(obj: KubeObject) -> list[dict[str, str]]:
    """The taints of a Node object, in snapshot form."""
    out = []
    for i, taint in enumerate(obj.get("spec", "taints") or []):
        where = f"spec.taints[{i}]"
        key, effect = taint.get("key"), taint.get("effect")
        if not isinstance(key, str) or not key:
            raise SnapshotError.single(obj.at(f"{where}.key"), "missing: a taint has a key")
        if effect not in EFFECTS:
            raise SnapshotError.single(
                obj.at(f"{where}.effect"), f"expected one of {', '.join(EFFECTS)}, got {shown(effect)}"
            )
        entry = {"key": key, "effect": effect}
        value = taint.get("value")
        if value:
            entry["value"] = str(value)
        out.append(entry)
    return out


def pod_placement(obj: KubeObject, spec: Any, where: str, report: Report) -> dict[str, Any]:
    """The placement of a pod (``spec``: its spec or a template's, at ``where``), in snapshot form (empty: none)."""
    if not isinstance(spec, dict):
        return {}
    placement: dict[str, Any] = {}
    selector = spec.get("nodeSelector")
    if selector:
        placement["node_selector"] = {str(k): str(v) for k, v in selector.items()}
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get(REQUIRED)
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        placement["node_affinity"] = [
            _term(obj, f"{where}.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[{i}]", term)
            for i, term in enumerate(terms)
        ]
    for name, present in (
        ("preferred node affinity", node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")),
        ("pod affinity", affinity.get("podAffinity")),
        ("pod anti-affinity", affinity.get("podAntiAffinity")),
        ("topology spread constraints", spec.get("topologySpreadConstraints")),
    ):
        if present:
            report.guess(obj.ref, f"not modelled, ignored: {name}")
    tolerations = [
        _toleration(obj, f"{where}.tolerations[{i}]", t) for i, t in enumerate(spec.get("tolerations") or [])
    ]
    if tolerations:
        placement["tolerations"] = tolerations
    return placement


def _term(obj: KubeObject, where: str, term: Any) -> list[dict[str, Any]]:
    if not isinstance(term, dict):
        raise SnapshotError.single(obj.at(where), "expected a node selector term (a mapping)")
    out = []
    for field in ("matchExpressions", "matchFields"):
        for i, expression in enumerate(term.get(field) or []):
            at = f"{where}.{field}[{i}]"
            key, operator = expression.get("key"), expression.get("operator")
            if not isinstance(key, str) or not key:
                raise SnapshotError.single(obj.at(f"{at}.key"), "missing: an expression has a key")
            if field == "matchFields" and key != "metadata.name":
                raise SnapshotError.single(obj.at(f"{at}.key"), f"matchFields supports metadata.name only, not {key}")
            if operator not in OPERATORS:
                raise SnapshotError.single(
                    obj.at(f"{at}.operator"), f"expected one of {', '.join(OPERATORS)}, got {shown(operator)}"
                )
            entry: dict[str, Any] = {"key": key, "operator": operator}
            values = expression.get("values") or []
            if values:
                entry["values"] = [str(v) for v in values]
            out.append(entry)
    return out


def _toleration(obj: KubeObject, where: str, toleration: Any) -> dict[str, str]:
    if not isinstance(toleration, dict):
        raise SnapshotError.single(obj.at(where), "expected a toleration (a mapping)")
    entry: dict[str, str] = {}
    operator = toleration.get("operator") or "Equal"
    if operator not in ("Equal", "Exists"):
        raise SnapshotError.single(obj.at(f"{where}.operator"), f"expected Equal or Exists, got {shown(operator)}")
    effect = toleration.get("effect") or ""
    if effect and effect not in EFFECTS:
        raise SnapshotError.single(
            obj.at(f"{where}.effect"), f"expected one of {', '.join(EFFECTS)}, got {shown(effect)}"
        )
    for name, value in (("key", toleration.get("key")), ("value", toleration.get("value")), ("effect", effect)):
        if value:
            entry[name] = str(value)
    if operator == "Exists":
        entry["operator"] = "Exists"
        if entry.pop("value", None):
            raise SnapshotError.single(obj.at(f"{where}.value"), "an Exists toleration has no value")
    elif not entry.get("key"):
        raise SnapshotError.single(obj.at(f"{where}.key"), "an empty key needs operator Exists")
    return entry


def topology_levels(objects: list[KubeObject]) -> list[str]:
    """The levels of every Topology object (KAI's and Kueue's), in order, each once."""
    levels: list[str] = []
    for obj in objects:
        for i, level in enumerate(obj.get("spec", "levels") or []):
            label = level.get("nodeLabel") if isinstance(level, dict) else None
            if not isinstance(label, str) or not label:
                raise SnapshotError.single(obj.at(f"spec.levels[{i}].nodeLabel"), "missing: a level names a node label")
            if label not in levels:
                levels.append(label)
    return levels


def kai_topology(obj: KubeObject) -> tuple[dict[str, str], str]:
    """A KAI PodGroup's topology constraint (snapshot form; empty: none), and where it is read."""
    constraint = obj.get("spec", "topologyConstraint") or {}
    found = {}
    if constraint.get("requiredTopologyLevel"):
        found["required"] = constraint["requiredTopologyLevel"]
    if constraint.get("preferredTopologyLevel"):
        found["preferred"] = constraint["preferredTopologyLevel"]
    return found, "spec.topologyConstraint"


def pod_topology(obj: KubeObject) -> dict[str, str]:
    """The topology a pod's annotations ask for (Kueue's, or KAI's on the workload)."""
    notes = obj.annotations
    found = {}
    required = notes.get(KUEUE_REQUIRED) or notes.get(KAI_REQUIRED)
    preferred = notes.get(KUEUE_PREFERRED) or notes.get(KAI_PREFERRED)
    if required:
        found["required"] = required
    if preferred:
        found["preferred"] = preferred
    return found


def workload_topology(obj: KubeObject) -> dict[str, str]:
    """A Kueue Workload's topology request (its first pod set's ``topologyRequest``)."""
    for podset in obj.get("spec", "podSets") or []:
        request = podset.get("topologyRequest") or {}
        found = {k: request[k] for k in ("required", "preferred") if request.get(k)}
        if found:
            return found
    return {}
