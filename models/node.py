"""Nodes: the machines whose GPUs are shared out."""

from __future__ import annotations

from pydantic import Field, field_validator

from .fields import AmountMap, FreeMap, Name, Quantity, SnapshotModel, raise_errors
from .placement import Taint
from .quantity import MILLI, is_gpu_resource

__all__ = ["Node"]


class Node(SnapshotModel):
    """A node with allocatable resources (``resources``, milli-units)."""

    name: Name
    resources: AmountMap = Field(description="allocatable amount per resource")
    gpu_model: str | None = None
    labels: FreeMap = Field(default_factory=dict)
    annotations: FreeMap = Field(default_factory=dict)
    schedulable: bool = Field(True, description="false = nothing new is placed here; running work stays")
    taints: list[Taint] = Field(
        default_factory=list, description="Kubernetes taints (docs/snapshot-format.md, Placement)"
    )
    gpu_memory: Quantity | None = Field(None, description="memory of each GPU device: needed for gpu_memory requests")

    @field_validator("resources")
    @classmethod
    def _whole_devices(cls, resources: dict[str, int]) -> dict[str, int]:
        errors: list[tuple[tuple[str | int, ...], str]] = [
            ((name,), f"a node has whole GPU devices, not {amount / MILLI:g}")
            for name, amount in resources.items()
            if is_gpu_resource(name) and amount % MILLI
        ]
        raise_errors("resources", errors)
        return resources
