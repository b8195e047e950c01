"""Where a task may run: node taints, and a job's node selector, required node affinity, taint tolerations and
topology (docs/snapshot-format.md, "Placement").

The matching rules are Kubernetes': a node selector's every pair must equal a node label; the required node affinity
matches a node when any of its terms does, a term when all of its expressions do (``metadata.name`` is the node's
name, as ``matchFields``); a taint of effect ``NoSchedule`` or ``NoExecute`` keeps out every job that does not
tolerate it (``PreferNoSchedule`` keeps out none).

>>> taint = Taint(key="dedicated", value="gpu", effect="NoSchedule")
>>> TaintToleration(key="dedicated", value="gpu", effect="NoSchedule").tolerates(taint)
True
>>> TaintToleration(key="dedicated", operator="Exists").tolerates(taint), TaintToleration(key="other").tolerates(taint)
(True, False)
>>> NodeRequirement(key="gpu-type", operator="In", values=["H100", "H200"]).matches({"gpu-type": "H100"}, "n0")
True
>>> NodeRequirement(key="gpus", operator="Gt", values=["4"]).matches({"gpus": "8"}, "n0")
True
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .fields import Name, SnapshotModel, raise_errors

__all__ = [
    "KEEPS_OUT",
    "NODE_NAME",
    "NO_PLACEMENT",
    "NodeRequirement",
    "Operator",
    "Placement",
    "Taint",
    "TaintEffect",
    "TaintToleration",
    "TopologyRequest",
]

TaintEffect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]
KEEPS_OUT: tuple[TaintEffect, ...] = ("NoSchedule", "NoExecute")
"""Taint effects that keep an untolerating job off a node (``PreferNoSchedule`` is a preference, ignored)."""

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
NODE_NAME = "metadata.name"
"""The key that matches the node's name (Kubernetes ``matchFields``)."""


class Taint(SnapshotModel):
    """A node taint (Kubernetes ``spec.taints[]``)."""

    key: Name
    value: str = ""
    effect: TaintEffect

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class TaintToleration(SnapshotModel):
    """A job's toleration of taints (Kubernetes ``tolerations[]``): ``Equal`` matches key, value and effect;
    ``Exists`` any value of the key, or every taint when the key is empty; an empty effect matches every effect."""

    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["NoSchedule", "NoExecute", "PreferNoSchedule", ""] = ""

    @model_validator(mode="after")
    def _check(self) -> TaintToleration:
        if self.operator == "Exists" and self.value:
            raise_errors("TaintToleration", [(("value",), "an Exists toleration has no value")])
        if not self.key and self.operator != "Exists":
            raise_errors(
                "TaintToleration", [(("key",), "an empty key needs operator Exists (it tolerates every taint)")]
            )
        return self

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return True
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


class NodeRequirement(SnapshotModel):
    """One expression of a node affinity term (Kubernetes ``NodeSelectorRequirement``)."""

    key: Name
    operator: Operator
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> NodeRequirement:
        op, values = self.operator, self.values
        if op in ("In", "NotIn") and not values:
            raise_errors("NodeRequirement", [(("values",), f"{op} needs at least one value")])
        if op in ("Exists", "DoesNotExist") and values:
            raise_errors("NodeRequirement", [(("values",), f"{op} takes no values")])
        if op in ("Gt", "Lt"):
            if len(values) != 1:
                raise_errors("NodeRequirement", [(("values",), f"{op} takes exactly one value")])
            if _integer(values[0]) is None:
                raise_errors("NodeRequirement", [(("values", 0), f"{op} needs an integer, not {values[0]!r}")])
        return self

    def matches(self, labels: dict[str, object], name: str) -> bool:
        """Whether a node with ``labels``, named ``name``, satisfies the expression."""
        return self.matches_value(name if self.key == NODE_NAME else labels.get(self.key))

    def matches_value(self, value: object) -> bool:
        """Whether a node whose value of the key is ``value`` (``None``: no such label) satisfies the expression."""
        op = self.operator
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op == "In":
            return value is not None and str(value) in self.values
        if op == "NotIn":
            return value is None or str(value) not in self.values
        number = _integer(value) if isinstance(value, str | int) else None
        if number is None:
            return False
        bound = _integer(self.values[0])
        assert bound is not None
        return number > bound if op == "Gt" else number < bound

    def __str__(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        return f"{self.key} {self.operator} {','.join(self.values)}"


def _integer(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value), 10)
    except ValueError:
        return None


class TopologyRequest(SnapshotModel):
    """Where the job's tasks lie together: ``required``, inside one domain of that level; ``preferred``, in as few
    domains of that level as possible. Levels are the keys of ``config.topology``."""

    required: Name | None = None
    preferred: Name | None = None

    @model_validator(mode="after")
    def _check(self) -> TopologyRequest:
        if self.required is None and self.preferred is None:
            raise_errors("TopologyRequest", [((), "name a required level, a preferred level, or both")])
        return self


class Placement(SnapshotModel):
    """Where every task of a job may run (docs/snapshot-format.md, "Placement")."""

    node_selector: dict[str, str] = Field(default_factory=dict, description="every pair must equal a node label")
    node_affinity: list[list[NodeRequirement]] = Field(
        default_factory=list, description="required terms: a node matches if any term matches, a term if all do"
    )
    tolerations: list[TaintToleration] = Field(default_factory=list)
    topology: TopologyRequest | None = None

    def keeps_out(self, taint: Taint) -> bool:
        """Whether ``taint`` keeps this job off its node."""
        return taint.effect in KEEPS_OUT and not any(t.tolerates(taint) for t in self.tolerations)

    def selects(self, labels: dict[str, object]) -> bool:
        return all(labels.get(key) == value for key, value in self.node_selector.items())

    def term_matches(self, term: list[NodeRequirement], labels: dict[str, object], name: str) -> bool:
        return bool(term) and all(expression.matches(labels, name) for expression in term)

    def affinity_matches(self, labels: dict[str, object], name: str) -> bool:
        return not self.node_affinity or any(self.term_matches(t, labels, name) for t in self.node_affinity)


NO_PLACEMENT = Placement()
"""The placement of a job that names none: every schedulable node without a taint that keeps it out."""
