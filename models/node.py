"""Nodes: the machines whose GPUs are shared out."""

from __future__ import annotations

from pydantic import Field

from .fields import AmountMap, FreeMap, Name, SnapshotModel
from .placement import Taint


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
