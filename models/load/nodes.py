"""Nodes built from their structs (docs/snapshot-format.md, "nodes"), their resource maps, taints and GPU memory
checked as lists."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..fields import Quantity
from ..node import Node
from ..placement import Taint
from ..quantity import MILLI, is_gpu_resource
from . import structs
from .checked import EMPTY, Gathered, Refused, built_model, free_map, given_set, none_if_unset, resource_maps
from .structs import UNSET

__all__ = ["EMPTY_LIST", "built_nodes"]


_GPU_MEMORY: TypeAdapter[int | None] = TypeAdapter(Quantity | None)


def built_nodes(raw: list[Any], gathered: Gathered) -> list[Node]:
    """The node models of ``raw``."""
    nodes: list[Node] = []
    given: dict[tuple[bool, ...], set[str]] = {}
    maps = resource_maps([node.resources for node in raw], gathered)
    for resources in {id(m): m for m in maps}.values():  # one map per spelling
        if any(amount % MILLI for name, amount in resources.items() if is_gpu_resource(name)):
            raise Refused  # part of a device: pydantic says so (Node._whole_devices)
    for node, resources in zip(raw, maps, strict=True):
        labels, annotations = node.labels, node.annotations
        key = (
            node.gpu_model is UNSET,
            labels is UNSET,
            annotations is UNSET,
            node.schedulable is UNSET,
            node.taints is UNSET,
            node.gpu_memory is UNSET,
        )
        fields = given.get(key) or given.setdefault(key, given_set(structs.given(node)))
        values = {
            "name": node.name,
            "resources": resources,
            "gpu_model": none_if_unset(node.gpu_model),
            "labels": EMPTY if labels is UNSET else free_map(labels, gathered),
            "annotations": EMPTY if annotations is UNSET else free_map(annotations, gathered),
            "schedulable": node.schedulable is not False,
            "taints": EMPTY_LIST if node.taints is UNSET else _taints(node.taints),
            "gpu_memory": None if node.gpu_memory is UNSET else _gpu_memory(node.gpu_memory),
        }
        nodes.append(built_model(Node, values, fields))
    return nodes


def _gpu_memory(value: object) -> int | None:
    """A node's memory per device, validated as the model validates it (pydantic says what is wrong)."""
    try:
        found: int | None = _GPU_MEMORY.validate_python(value)
    except ValidationError:
        raise Refused from None
    return found


def _taints(value: object) -> list[Taint]:
    """A node's taints, validated as the model validates them."""
    return _TAINTS.validate_python(value, strict=True)


_TAINTS = TypeAdapter(list[Taint])


EMPTY_LIST: list[Any] = []
"""The ``taints`` of every node that gives none (one list, as :data:`EMPTY`)."""
