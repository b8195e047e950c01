"""KAI's node order: which of the nodes that take a task it goes to (docs/rules.md, "Node order").

KAI scores every node that passes the predicates and takes the best, task by task, ties by node name. Each plugin
adds its score (KAI's ``pkg/scheduler/plugins/scores``), and each score is below the next one's unit, so the sum
orders nodes lexicographically:

1. ``gpusharingorder`` (1,000; with the GPU strategy ``binpack``): a task asking for a share of a GPU, on a node
   where a device that already carries shares has room for it;
2. ``nodeavailability`` (100): the task fits in the node's idle room alone, without waiting for releasing tasks;
3. ``resourcetype`` (10): a task without GPUs on a node without GPUs;
4. ``nodeplacement`` (up to 9): ``binpack`` scores 9 x (1 - (free - min) / (max - min)) over the nodes, so the
   node with the least free room (idle plus releasing) of the task's resource first; ``spread`` scores free / count
   (GPU devices, or allocatable CPU), the emptiest first. GPU tasks are weighed by GPUs, others by CPU.

Sources: KAI's ``plugins/nodeplacement/pack.go`` and ``spread.go``, ``plugins/nodeavailability``,
``plugins/resourcetype``, ``plugins/gpusharingorder``; the order is applied as each task is placed
(``actions/common/allocate.go``), so a node's score changes as it fills.

>>> from gpu_preempt.problem.records import ChunkType, NodeRoom
>>> a = NodeRoom("a", room={"gpu": 6000}, now_room={"gpu": 6000}, capacity={"gpu": 8000})
>>> b = NodeRoom("b", room={"gpu": 2000}, now_room={"gpu": 2000}, capacity={"gpu": 8000})
>>> task = ChunkType({"gpu": 1000}, ("t",), 1)
>>> best([0, 1], (a, b), task, "binpack", {0: a.room, 1: b.room}, {0: a.now_room, 1: b.now_room})
1
>>> best([0, 1], (a, b), task, "spread", {0: a.room, 1: b.room}, {0: a.now_room, 1: b.now_room})
0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpu_preempt.models import MILLI, Resources, is_gpu_resource

from .devices import DeviceFit
from .records import ChunkType, NodeRoom, Problem

__all__ = ["best", "node_key", "strategy_of", "weighed"]


def weighed(requests: Resources) -> str:
    """The resource KAI weighs a task's nodes by: its GPU resource when it asks for GPUs, else CPU."""
    return next((r for r, a in requests.items() if a > 0 and is_gpu_resource(r)), "cpu")


def strategy_of(problem: Problem, chunk: ChunkType) -> str:
    """The strategy that orders the nodes for a task of ``chunk``: the GPU one when it asks for GPUs."""
    return problem.placement[0] if weighed(chunk.requests) != "cpu" else problem.placement[1]


def node_key(
    capacity: Mapping[str, int],
    chunk: ChunkType,
    strategy: str,
    room: Mapping[str, int],
    idle: Mapping[str, int],
    fit: DeviceFit | None = None,
    *,
    sharing: bool = True,
) -> tuple[int, int, int, float]:
    """KAI's score of a node (its allocatable ``capacity``) for a task of ``chunk`` as a tuple (larger first):
    ``room`` is what it has free (idle and releasing), ``idle`` what it has idle; ``sharing``: ``gpusharingorder``
    is on."""
    resource = weighed(chunk.requests)
    gpus = resource != "cpu"
    shared = int(sharing and bool(chunk.share) and fit is not None and fit.shared_room(chunk.share))
    available = int(all(idle.get(r, 0) >= a for r, a in chunk.requests.items() if a > 0))
    cpu_node = int(not gpus and not any(a > 0 and is_gpu_resource(r) for r, a in capacity.items()))
    have, free = capacity.get(resource, 0), room.get(resource, 0)
    if not have:
        fill = float("-inf")
    elif strategy == "spread":
        count = have // MILLI if gpus else have
        fill = free / max(count, 1)
    else:
        fill = -free
    return (shared, available, cpu_node, fill)


def best(
    usable: Sequence[int],
    nodes: Sequence[NodeRoom],
    chunk: ChunkType,
    strategy: str,
    room: Mapping[int, Resources],
    idle: Mapping[int, Resources],
    fits: Mapping[int, DeviceFit] | None = None,
    *,
    sharing: bool = True,
) -> int | None:
    """Of ``usable`` (nodes that take a task of ``chunk``), the one KAI places it on; ties by node name."""
    found, top = None, None
    for n in usable:
        fit = None if fits is None else fits.get(n)
        node = nodes[n]
        capacity = node.capacity if node.capacity is not None else node.room
        key = node_key(capacity, chunk, strategy, room[n], idle[n], fit, sharing=sharing)
        if top is None or key > top or (key == top and nodes[n].name < nodes[found].name):  # type: ignore[index]
            found, top = n, key
    return found
