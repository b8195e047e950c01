"""The sizes a dump's objects may have, checked on each object before the importer reads it (docs/kubernetes.md,
"Limits"): Kubernetes' own where it has them (names, labels, annotations, the size of an object), else bounds far
above what a cluster writes, which keep every step of an import short.

Examples
--------
>>> over_limits({"metadata": {"name": "x" * 300}})
[('metadata.name', 'is 300 characters long; a name has at most 253')]
>>> over_limits({"spec": {"tolerations": [{}] * 2000}})
[('spec.tolerations', 'has 2000 items; at most 1000 are read')]
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MAX_ANNOTATIONS",
    "MAX_ITEMS",
    "MAX_LABEL_KEY",
    "MAX_LABEL_VALUE",
    "MAX_NAME",
    "MAX_NAMESPACE",
    "MAX_OBJECT",
    "bounded_list",
    "over_limits",
]

MAX_NAME = 253
"""Characters in an object's name (a DNS subdomain, Kubernetes' ``validation.IsDNS1123Subdomain``)."""
MAX_NAMESPACE = 63
"""Characters in a namespace's name (a DNS label)."""
MAX_LABEL_KEY = 253 + 1 + 63
"""Characters in a label key: a prefix of at most 253, ``/``, a name of at most 63."""
MAX_LABEL_VALUE = 63
"""Characters in a label value (Kubernetes' ``validation.IsValidLabelValue``)."""
MAX_ANNOTATIONS = 256 * 1024
"""Characters in all of an object's annotations, keys and values (Kubernetes' ``TotalAnnotationSizeLimitB``)."""
MAX_OBJECT = 3 * 1024 * 1024
"""Bytes of one object of a JSON List: twice etcd's default request limit (1.5 MiB), which no stored object
exceeds."""
MAX_ITEMS = 1000
"""Items of a list the importer walks: tolerations, containers, node-selector terms, their expressions and values,
conditions, owner references, a ClusterQueue's resource groups (Kubernetes sets no bound; a cluster writes a
few)."""

_LISTS = {
    "spec": ("tolerations", "containers", "initContainers", "topologySpreadConstraints", "resourceGroups", "podSets",
             "levels", "taints"),
    "status": ("conditions",),
    "metadata": ("ownerReferences",),
}  # fmt: skip
"""The lists :data:`MAX_ITEMS` bounds, by the part of an object they are in (the node-selector terms besides)."""


def over_limits(body: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field path, message)`` for each limit ``body`` exceeds (empty when none); cheap: lengths only."""
    problems: list[tuple[str, str]] = []
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        for field, most in (("name", MAX_NAME), ("namespace", MAX_NAMESPACE)):
            value = metadata.get(field)
            if isinstance(value, str) and len(value) > most:
                what = "a name" if field == "name" else "a namespace"
                problems.append((f"metadata.{field}", f"is {len(value)} characters long; {what} has at most {most}"))
        labels = metadata.get("labels")
        if isinstance(labels, dict) and labels:
            for key, value in labels.items():
                if isinstance(key, str) and len(key) > MAX_LABEL_KEY:
                    problems.append(
                        ("metadata.labels", f"a key is {len(key)} characters long; at most {MAX_LABEL_KEY}")
                    )
                    break
                if isinstance(value, str) and len(value) > MAX_LABEL_VALUE:
                    why = f"is {len(value)} characters long; a label value has at most {MAX_LABEL_VALUE}"
                    problems.append((f"metadata.labels.{key}", why))
                    break
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict) and annotations:
            size = sum(len(k) + len(v) for k, v in annotations.items() if isinstance(k, str) and isinstance(v, str))
            if size > MAX_ANNOTATIONS:
                why = f"hold {size} characters; an object's annotations hold at most {MAX_ANNOTATIONS}"
                problems.append(("metadata.annotations", why))
    for part, names in _LISTS.items():
        section = body.get(part)
        if not isinstance(section, dict) or section.keys().isdisjoint(names):  # most hold none: one test in C
            continue
        for name in names:
            value = section.get(name)
            if isinstance(value, list) and len(value) > MAX_ITEMS:
                problems.append((f"{part}.{name}", f"has {len(value)} items; at most {MAX_ITEMS} are read"))
    spec = body.get("spec")
    affinity = spec.get("affinity") if isinstance(spec, dict) else None
    if isinstance(affinity, dict):
        terms: Any = affinity
        for step in _TERMS:
            terms = terms.get(step) if isinstance(terms, dict) else None
        if isinstance(terms, list):
            at = "spec.affinity." + ".".join(_TERMS)
            if len(terms) > MAX_ITEMS:
                problems.append((at, f"has {len(terms)} items; at most {MAX_ITEMS} are read"))
            else:
                problems += _terms(terms, at)
    return problems


_TERMS = ("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")


def _terms(terms: list[Any], at: str) -> list[tuple[str, str]]:
    """The node-selector terms' expressions and their values, each list at most :data:`MAX_ITEMS` long."""
    for i, term in enumerate(terms):
        if not isinstance(term, dict):
            continue
        for match in ("matchExpressions", "matchFields"):
            expressions = term.get(match)
            if not isinstance(expressions, list):
                continue
            where = f"{at}[{i}].{match}"
            if len(expressions) > MAX_ITEMS:
                return [(where, f"has {len(expressions)} items; at most {MAX_ITEMS} are read")]
            for k, expression in enumerate(expressions):
                values = expression.get("values") if isinstance(expression, dict) else None
                if isinstance(values, list) and len(values) > MAX_ITEMS:
                    return [(f"{where}[{k}].values", f"has {len(values)} items; at most {MAX_ITEMS} are read")]
    return []


def bounded_list(steps: list[Any]) -> str | None:
    """The field path of the list at ``steps`` (keys and indexes from an object's root) if :data:`MAX_ITEMS` bounds
    it, else ``None``.

    >>> bounded_list(["spec", "tolerations"])
    'spec.tolerations'
    >>> bounded_list(["spec", "containers", 0, "env"]) is None
    True
    """
    if len(steps) == 2 and steps[1] in _LISTS.get(steps[0], ()):
        return f"{steps[0]}.{steps[1]}"
    terms = ["spec", "affinity", *_TERMS]
    if steps[: len(terms)] != terms:
        return None
    rest = steps[len(terms) :]
    at = ".".join(terms)
    if not rest:
        return at
    if len(rest) == 2 and isinstance(rest[0], int) and rest[1] in ("matchExpressions", "matchFields"):
        return f"{at}[{rest[0]}].{rest[1]}"
    if len(rest) == 4 and rest[1] in ("matchExpressions", "matchFields") and rest[3] == "values":
        return f"{at}[{rest[0]}].{rest[1]}[{rest[2]}].values"
    return None
