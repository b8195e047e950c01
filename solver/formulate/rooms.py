"""The nodes of a decision: where the chunk may go, where victims run and where moved tasks may land, each with its
room (and its devices, with shares of a GPU)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpu_preempt.models import MILLI, Job, Node, Resources, Task
from gpu_preempt.problem.records import (
    Devices,
    NodeRoom,
)
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.node_cache import NodeKey

__all__ = ["NodeRooms", "node_devices", "node_rooms"]


@dataclass(frozen=True)
class NodeRooms(NodeKey):
    """Per node, its :class:`NodeRoom` for a decision of ``priority`` asking for the resources ``asked``, with its
    devices when the snapshot has ``shares`` of a GPU (a replay's next cycle may have them where this one has none)."""

    priority: int
    asked: frozenset[str]
    shares: bool


def node_rooms(
    cluster: ClusterState,
    job: Job,
    chunk: list[tuple[Task, bool]],
    hosting: set[str],
    allowed: np.ndarray,
    only: set[str] | None = None,
    *,
    moves: bool = False,
) -> tuple[tuple[NodeRoom, ...], dict[str, int]]:
    """Nodes eligible for the job (``allowed``; or ``only`` those), nodes where a candidate victim runs
    (``hosting``), and, when ``moves``, every schedulable node (a moved task's destination), in document order."""
    asked = frozenset(r for t, _ in chunk for r in job.requests(t))
    every = cluster.node_map(
        NodeRooms(job.resolved_priority, asked, cluster.has_shares())
    )  # the same for every such job
    rooms = []
    nodes = cluster.snapshot.nodes
    if only is not None:  # visit only those nodes and the hosting ones, in document order
        index = cluster.node_index()
        nodes = [nodes[i] for i in sorted({index[name] for name in (*only, *hosting) if name in index})]
        cluster.load_nodes(node.name for node in nodes if node.name not in every)
    positions = cluster.node_index()
    ok = None if allowed is cluster.index.schedulable else allowed.tolist()  # None: the schedulable nodes
    for node in nodes:
        fine = node.schedulable if ok is None else ok[positions[node.name]]
        if node.name not in hosting and (
            not (fine or (moves and node.schedulable)) or (only is not None and node.name not in only)
        ):
            continue
        room = every.get(node.name)
        if room is None:
            room = every[node.name] = _node_room(cluster, node, job.resolved_priority, asked)
        if not fine and room.eligible:
            room = replace(room, eligible=False)
        rooms.append(room)
    return tuple(rooms), {room.name: i for i, room in enumerate(rooms)}


def _node_room(cluster: ClusterState, node: Node, priority: int, asked: frozenset[str]) -> NodeRoom:
    name, have = node.name, node.resources
    final, current = cluster.room_load(name, priority), cluster.current_load(name)
    promised = cluster.final_load(name)
    names = sorted({*have, *final, *promised, *asked})
    room = {r: have.get(r, 0) - final.get(r, 0) for r in names}
    free = None
    if promised is not final:  # a lower-priority promise sits there: room counts it out, free room does not
        free = {r: have.get(r, 0) - promised.get(r, 0) for r in names}
    now_room = {r: have.get(r, 0) - current.get(r, 0) for r in names}
    return NodeRoom(
        name=name,
        room=room,
        now_room=now_room,
        free=None if free == room else free,
        eligible=node.schedulable,
        devices=node_devices(cluster, node, priority, room, now_room) if cluster.has_shares() else None,
        capacity=have,
    )


def node_devices(
    cluster: ClusterState, node: Node, priority: int, room: Resources | None = None, now_room: Resources | None = None
) -> Devices | None:
    """``node``'s devices as a decision of ``priority`` sees them (docs/snapshot-format.md, "GPU sharing"), for a
    snapshot with shares of a GPU; ``None`` for a node without GPUs. ``room`` and ``now_room``: its GPU room in the
    final and current loads (found here if not given)."""
    count = node.resources.get("gpu", 0) // MILLI
    if not count:
        return None
    if room is None:
        room = {"gpu": node.resources.get("gpu", 0) - cluster.room_load(node.name, priority).get("gpu", 0)}
    if now_room is None:
        now_room = {"gpu": node.resources.get("gpu", 0) - cluster.current_load(node.name).get("gpu", 0)}
    loads = cluster.device_loads()
    seen, now = loads.shares(node.name, priority), loads.now.get(node.name, {})
    shares = tuple(seen.get(d, 0) for d in range(count))
    now_shares = tuple(now.get(d, 0) for d in range(count))
    have = node.resources.get("gpu", 0)
    return Devices(
        count=count,
        whole=(have - room.get("gpu", 0) - sum(shares)) // MILLI,
        shares=shares,
        now_whole=(have - now_room.get("gpu", 0) - sum(now_shares)) // MILLI,
        now_shares=now_shares,
    )
