"""The ways a victim may lose tasks, as the reductions count them: each :class:`Loss` with the room it frees and its
cost, a unit's :class:`Member`; and :class:`TooComplex`, when the reductions do not apply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_preempt.models import GpuPreemptError

__all__ = ["Cost", "Loss", "Member", "TooComplex"]


Cost = tuple[Any, ...]
"""An additive cost vector: the criteria of ``config.objective`` (priority levels expanded), then the victims as a
:class:`~gpu_preempt.rules.victim_order.Keep` (the canonical tie-break, compared last)."""


class TooComplex(GpuPreemptError):
    """The reductions do not apply (a victim's tasks differ, or a unit has too many combinations)."""


@dataclass(frozen=True)
class Loss:
    """One way a victim loses tasks: how many, where (node -> tasks), the room freed there, and the cost."""

    tasks: int
    per_node: tuple[tuple[int, int], ...]
    freed: tuple[tuple[int, tuple[int, ...]], ...]
    cost: Cost
    whole: bool
    devices: tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...] = ()
    """Where devices are counted: per node, the whole GPUs and the shares (device, milli-GPUs) it frees there."""


@dataclass(frozen=True)
class Member:
    """A candidate victim inside a unit, with every way it may lose tasks (not losing any is implicit)."""

    victim: int
    job: str
    losses: tuple[Loss, ...]
    nodes: tuple[int, ...]
