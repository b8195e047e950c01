"""The types of every field the importer reads, checked before it reads any: a dump's wrong type is an error naming
the object and the field, never a crash deep in the importer.

A path is dotted; ``[]`` stands for every item of a list and ``*`` for every value of a mapping. Absent fields and
``null`` are left to the importer (most are optional), but not a ``null`` item of a list or value of a map. The
types are those of the Kubernetes API (``kubectl get -o json``): labels and annotations are strings, priorities
whole numbers, resource lists maps of quantities.

Examples
--------
>>> wrong_types({"spec": {"containers": 5}}, "", "Pod")
[('spec.containers', 'expected a list, got 5')]
>>> wrong_types({"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}, "", "Pod")
[]
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Annotated, Any

import msgspec

from gpu_preempt.models.errors import shown

__all__ = ["KAI", "KUEUE", "SHAPES", "VOLCANO", "walked_types", "wrong_types"]

KAI = "scheduling.run.ai"
KUEUE = "kueue.x-k8s.io"
VOLCANO = "scheduling.volcano.sh"

_MAP, _LIST, _TEXT, _WHOLE, _NUMBER, _QUANTITY, _BOOL = "map", "list", "text", "whole", "number", "quantity", "bool"

_METADATA = {
    "metadata.labels": _MAP,
    "metadata.labels.*": _TEXT,
    "metadata.annotations": _MAP,
    "metadata.annotations.*": _TEXT,
    "metadata.uid": _TEXT,
    "metadata.creationTimestamp": _TEXT,
    "metadata.ownerReferences": _LIST,
    "metadata.ownerReferences[]": _MAP,
    "metadata.ownerReferences[].uid": _TEXT,
}


def _pod_spec(prefix: str) -> dict[str, str]:
    shape = {prefix: _MAP}
    for containers in ("containers", "initContainers"):
        at = f"{prefix}.{containers}"
        shape |= {
            at: _LIST,
            f"{at}[]": _MAP,
            f"{at}[].resources": _MAP,
            f"{at}[].resources.requests": _MAP,
            f"{at}[].resources.requests.*": _QUANTITY,
            f"{at}[].resources.limits": _MAP,
            f"{at}[].resources.limits.*": _QUANTITY,
        }
    terms = f"{prefix}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    for match in ("matchExpressions", "matchFields"):
        at = f"{terms}[].{match}"
        shape |= {at: _LIST, f"{at}[]": _MAP, f"{at}[].key": _TEXT, f"{at}[].operator": _TEXT}
        shape |= {f"{at}[].values": _LIST, f"{at}[].values[]": _TEXT}
    return shape | {
        f"{prefix}.overhead": _MAP,
        f"{prefix}.overhead.*": _QUANTITY,
        f"{prefix}.nodeSelector": _MAP,
        f"{prefix}.nodeSelector.*": _TEXT,
        f"{prefix}.tolerations": _LIST,
        f"{prefix}.tolerations[]": _MAP,
        f"{prefix}.tolerations[].key": _TEXT,
        f"{prefix}.tolerations[].operator": _TEXT,
        f"{prefix}.tolerations[].value": _TEXT,
        f"{prefix}.tolerations[].effect": _TEXT,
        f"{prefix}.tolerations[].tolerationSeconds": _WHOLE,
        f"{prefix}.affinity": _MAP,
        f"{prefix}.affinity.nodeAffinity": _MAP,
        f"{prefix}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": _MAP,
        terms: _LIST,
        f"{terms}[]": _MAP,
        f"{prefix}.topologySpreadConstraints": _LIST,
    }


_LEVELS = {"spec": _MAP, "spec.levels": _LIST, "spec.levels[]": _MAP, "spec.levels[].nodeLabel": _TEXT}


SHAPES: dict[tuple[str, str], dict[str, str]] = {
    ("", "Node"): {
        "spec": _MAP,
        "spec.unschedulable": _BOOL,
        "spec.taints": _LIST,
        "spec.taints[]": _MAP,
        "spec.taints[].key": _TEXT,
        "spec.taints[].value": _TEXT,
        "spec.taints[].effect": _TEXT,
        "status": _MAP,
        "status.allocatable": _MAP,
        "status.allocatable.*": _QUANTITY,
        "status.conditions": _LIST,
        "status.conditions[]": _MAP,
    },
    ("", "Pod"): {
        **_pod_spec("spec"),
        "spec.nodeName": _TEXT,
        "spec.priority": _WHOLE,
        "spec.priorityClassName": _TEXT,
        "status": _MAP,
        "status.phase": _TEXT,
        "status.nominatedNodeName": _TEXT,
        "status.startTime": _TEXT,
        "status.conditions": _LIST,
        "status.conditions[]": _MAP,
        "status.conditions[].lastTransitionTime": _TEXT,
    },
    ("scheduling.k8s.io", "PriorityClass"): {"value": _WHOLE, "preemptionPolicy": _TEXT, "globalDefault": _BOOL},
    (KAI, "Queue"): {
        "spec": _MAP,
        "spec.parentQueue": _TEXT,
        "spec.resources": _MAP,
        "spec.resources.*": _MAP,
        "spec.priority": _WHOLE,
    },
    (KAI, "PodGroup"): {
        "spec": _MAP,
        "spec.minMember": _WHOLE,
        "spec.queue": _TEXT,
        "spec.priorityClassName": _TEXT,
        "spec.preemptibility": _TEXT,
        "spec.topologyConstraint": _MAP,
        "spec.topologyConstraint.requiredTopologyLevel": _TEXT,
        "spec.topologyConstraint.preferredTopologyLevel": _TEXT,
    },
    ("kai.scheduler", "Topology"): _LEVELS,
    (KUEUE, "Topology"): _LEVELS,
    (KUEUE, "ClusterQueue"): {
        "spec": _MAP,
        "spec.resourceGroups": _LIST,
        "spec.resourceGroups[]": _MAP,
        "spec.resourceGroups[].flavors": _LIST,
        "spec.resourceGroups[].flavors[]": _MAP,
        "spec.resourceGroups[].flavors[].resources": _LIST,
        "spec.resourceGroups[].flavors[].resources[]": _MAP,
        "spec.resourceGroups[].flavors[].resources[].name": _TEXT,
        "spec.resourceGroups[].flavors[].resources[].nominalQuota": _QUANTITY,
        "spec.resourceGroups[].flavors[].resources[].borrowingLimit": _QUANTITY,
        "spec.fairSharing": _MAP,
        "spec.fairSharing.weight": _QUANTITY,
        "spec.cohort": _TEXT,
        "spec.cohortName": _TEXT,
    },
    (KUEUE, "Cohort"): {"spec": _MAP, "spec.parentName": _TEXT},
    (KUEUE, "LocalQueue"): {"spec": _MAP, "spec.clusterQueue": _TEXT},
    (KUEUE, "Workload"): {
        "spec": _MAP,
        "spec.podSets": _LIST,
        "spec.podSets[]": _MAP,
        "spec.podSets[].count": _WHOLE,
        "spec.podSets[].minCount": _WHOLE,
        "spec.podSets[].template": _MAP,
        "spec.podSets[].topologyRequest": _MAP,
        "spec.podSets[].topologyRequest.required": _TEXT,
        "spec.podSets[].topologyRequest.preferred": _TEXT,
        **_pod_spec("spec.podSets[].template.spec"),
        "spec.active": _BOOL,
        "spec.queueName": _TEXT,
        "spec.priorityClassName": _TEXT,
        "spec.priorityClassRef": _MAP,
        "spec.priorityClassRef.name": _TEXT,
        "status": _MAP,
        "status.requeueState": _MAP,
        "status.requeueState.count": _WHOLE,
        "status.requeueState.requeueAt": _TEXT,
    },
    (VOLCANO, "Queue"): {
        "spec": _MAP,
        "spec.parent": _TEXT,
        "spec.deserved": _MAP,
        "spec.deserved.*": _QUANTITY,
        "spec.capability": _MAP,
        "spec.capability.*": _QUANTITY,
        "spec.weight": _NUMBER,
        "spec.priority": _WHOLE,
    },
    (VOLCANO, "PodGroup"): {
        "spec": _MAP,
        "spec.minMember": _WHOLE,
        "spec.queue": _TEXT,
        "spec.priorityClassName": _TEXT,
    },
}

_EXPECTED = {
    _MAP: "a mapping",
    _LIST: "a list",
    _TEXT: "a string",
    _WHOLE: "a whole number",
    _NUMBER: "a finite number",
    _QUANTITY: "a quantity (a string or a number)",
    _BOOL: "true or false",
}


def _fits(value: Any, kind: str) -> bool:
    if kind == _MAP:
        return isinstance(value, dict)
    if kind == _LIST:
        return isinstance(value, list)
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _BOOL:
        return isinstance(value, bool)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == _WHOLE:
        return number and float(value).is_integer() and abs(value) < 2**63
    if kind == _NUMBER:
        return number and math.isfinite(value)
    return isinstance(value, str) or (number and math.isfinite(value))  # a quantity


def _found(value: Any, steps: list[str], at: str) -> Iterator[tuple[str, Any]]:
    """Every ``(path, value)`` that ``steps`` reach from ``value`` (absent and ``null`` ones are skipped)."""
    if value is None:
        return
    if not steps:
        yield at, value
        return
    step, rest = steps[0], steps[1:]
    many = step.endswith("[]")
    key = step.removesuffix("[]")
    if key == "*":
        if isinstance(value, dict):
            for name, child in value.items():
                where = f"{at}.{name}" if at else str(name)
                yield from _found(child, rest, where) if rest else iter([(where, child)])  # a null value is wrong
        return
    if not isinstance(value, dict):
        return
    child = value.get(key)
    where = f"{at}.{key}" if at else key
    if not many:
        yield from _found(child, rest, where)
    elif isinstance(child, list):
        for i, item in enumerate(child):
            yield from _found(item, rest, f"{where}[{i}]") if rest else iter([(f"{where}[{i}]", item)])


def wrong_types(body: dict[str, Any], group: str, kind: str) -> list[tuple[str, str]]:
    """``(field path, message)`` for each field of an object that has the wrong type (empty when all is well).

    Checked first in C, on a msgspec type made from the shape (:func:`_typed`), which accepts no more than the walk
    below: only an object it refuses is walked, to say where and why."""
    typed = _TYPED.get((group, kind))
    if typed is None:
        typed = _TYPED[(group, kind)] = _typed({**_METADATA, **SHAPES.get((group, kind), {})})
    try:
        msgspec.convert(body, typed, strict=True)
        return []
    except msgspec.ValidationError:
        return walked_types(body, group, kind)


def walked_types(body: dict[str, Any], group: str, kind: str) -> list[tuple[str, str]]:
    """:func:`wrong_types`, found by walking every path of the shape (the reference the typed check agrees with)."""
    shape = {**_METADATA, **SHAPES.get((group, kind), {})}
    problems: list[tuple[str, str]] = []
    bad: list[str] = []
    for path in sorted(shape, key=lambda p: p.count(".") + p.count("[]")):
        for where, value in _found(body, path.split("."), ""):
            if any(where.startswith(b + ".") or where.startswith(b + "[") for b in bad):
                continue
            if not _fits(value, shape[path]):
                bad.append(where)
                problems.append((where, f"expected {_EXPECTED[shape[path]]}, got {shown(value, 40)}"))
    return problems


_TYPED: dict[tuple[str, str], Any] = {}
"""The msgspec type of each kind's shape, made when first needed."""

_FINITE = Annotated[float, msgspec.Meta(ge=-1.7976931348623157e308, le=1.7976931348623157e308)]
_LEAVES: dict[str, Any] = {
    _TEXT: str,
    _BOOL: bool,
    _WHOLE: Annotated[int, msgspec.Meta(ge=-(2**63 - 1), le=2**63 - 1)],
    _NUMBER: int | _FINITE,
    _QUANTITY: str | int | _FINITE,
}


def _typed(shape: dict[str, str], prefix: str = "", name: str = "Shape") -> Any:
    """The msgspec type of the object (or the field at ``prefix``) ``shape`` describes: a struct of the fields it
    names (others ignored, each optional and nullable), a map of the values ``*`` describes, a list of the items
    ``[]`` describes; a leaf's type is its kind's."""
    fields: dict[str, Any] = {}
    for path in shape:
        rest = path[len(prefix) + 1 :] if prefix else path
        if prefix and not path.startswith(prefix + "."):
            continue
        step = rest.split(".")[0]
        key = step.removesuffix("[]")
        if key in fields:
            continue
        at = f"{prefix}.{step}" if prefix else step
        if step.endswith("[]"):
            fields[key] = list[_node(shape, at, f"{name}_{key}")]  # type: ignore[misc]
        elif key == "*":
            fields[key] = _node(shape, at, f"{name}_values")
        else:
            own = shape.get(f"{prefix}.{key}" if prefix else key)
            if own == _LIST and f"{at}[]" in shape:
                continue  # typed by its items
            fields[key] = _node(shape, at, f"{name}_{key}")
    if "*" in fields:
        values = fields["*"]
        return dict[str, values]  # type: ignore[valid-type]
    return msgspec.defstruct(name, [(key, value | None, None) for key, value in fields.items()])


def _node(shape: dict[str, str], at: str, name: str) -> Any:
    """The type of the field at ``at``."""
    own = shape.get(at)
    nested = any(p.startswith(at + ".") for p in shape)
    if own == _LIST:
        return list[_node(shape, at + "[]", name) if f"{at}[]" in shape else Any]  # type: ignore[misc]
    if nested:
        return _typed(shape, at, name)
    if own == _MAP:
        return dict
    return _LEAVES[own] if own is not None else Any
