"""Every node's room: its allocatable resources minus its final load, as a decision of a given priority sees it.

Only nodes with promised tasks see a load that depends on the priority (docs/rules.md, "Nominations": promises of
lower-priority jobs
do not hold against a decision); every other node's room is the same for every priority, computed once per state
and passed on to derived states for the nodes that did not change (:mod:`.node_cache`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from gpu_preempt.models import Node, Resources

from .node_cache import NodeKey

if TYPE_CHECKING:
    from .cluster import ClusterState

__all__ = ["BaseRooms", "RoomMatrix", "RoomsAt", "base_rooms", "room", "room_matrix", "rooms"]

_NAME, _RESOURCES = attrgetter("name"), attrgetter("resources")


@dataclass(frozen=True)
class BaseRooms(NodeKey):
    """Every node's room in ``resources`` with every promise holding (a list of tuples)."""

    resources: tuple[str, ...]


@dataclass(frozen=True)
class RoomsAt(NodeKey):
    """Every node's room in ``resources`` as a decision of ``priority`` sees it."""

    resources: tuple[str, ...]
    priority: int


@dataclass(frozen=True)
class RoomMatrix(NodeKey):
    """:class:`BaseRooms` as an int64 matrix (nodes x resources), or ``None`` if a room does not fit 64 bits."""

    resources: tuple[str, ...]


def rooms(cluster: ClusterState, priority: int, resources: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Every node's room in ``resources`` (document order) as a decision of ``priority`` sees it."""
    cache = cluster.node_cache
    key = RoomsAt(resources, priority)
    found = cache.get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    values = base_rooms(cluster, resources)
    index, nodes = cluster.node_index(), cluster.snapshot.nodes
    for name in cluster.promised_nodes():
        load = cluster.room_load(name, priority)
        if load is not cluster.final_load(name):  # lower-priority promises do not hold their capacity
            if values is cache.get(BaseRooms(resources)):
                values = list(values)
            values[index[name]] = room(nodes[index[name]], load, resources)
    cache.put(key, values)
    return values


def base_rooms(cluster: ClusterState, resources: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Every node's room in ``resources`` with every promise holding: what :func:`rooms` gives on the nodes with no
    promise, whatever the priority."""
    snapshot = cluster.snapshot
    return cluster.node_cache.values(
        BaseRooms(resources),
        snapshot.nodes,
        cluster.node_index(),
        lambda _, node: room(node, cluster.final_load(node.name), resources),
        lambda: _column_rooms(cluster, resources) or _rooms(snapshot.nodes, cluster.loads.final, resources),
    )


def room_matrix(cluster: ClusterState, resources: tuple[str, ...]) -> np.ndarray | None:
    """:func:`base_rooms` as a matrix (nodes x ``resources``, int64), or ``None`` if a room does not fit 64 bits; a
    derived state copies its predecessor's and writes the rows of the nodes that changed."""
    cache, key = cluster.node_cache, RoomMatrix(resources)
    if key in cache:
        found: np.ndarray | None = cache.get(key)
        return found
    base, nodes = base_rooms(cluster, resources), cluster.snapshot.nodes
    if key in cache:  # made with the rooms (see _column_rooms)
        made: np.ndarray | None = cache.get(key)
        return made
    before = cache.before(key)
    if before is not None and before[0] is not None and len(before[1]) < len(nodes) // 2:
        found = before[0].copy()
        index = cluster.node_index()
        for name in before[1]:
            found[index[name]] = base[index[name]]
    else:
        try:
            found = np.array(base, dtype=np.int64).reshape(len(nodes), len(resources))
        except OverflowError:
            found = None
    cache.put(key, found)
    return found


def _column_rooms(cluster: ClusterState, resources: tuple[str, ...]) -> list[tuple[int, ...]] | None:
    """:func:`base_rooms` of every node at once, on the task columns the state's loads were summed from (none for a
    derived state, or a sum too large for int64); its :func:`room_matrix` too."""
    columns = cluster.loads.columns
    if columns is None or not cluster.snapshot.nodes:
        return None
    held = columns.node_sums(("running", "nominated"))  # the final load of a snapshot's tasks
    if held is None:
        return None
    free = columns.allocatable - held  # both within int64, neither negative
    matrix = np.zeros((len(free), len(resources)), dtype=np.int64)
    for j, r in enumerate(resources):
        if r in columns.resources:  # else no node has it and no task asks for it: 0
            matrix[:, j] = free[:, columns.resources.index(r)]
    cluster.node_cache.put(RoomMatrix(resources), matrix)
    return list(map(tuple, matrix.tolist()))


def room(node: Node, load: Resources, resources: tuple[str, ...]) -> tuple[int, ...]:
    """``node``'s allocatable minus ``load``, in ``resources``."""
    have = node.resources
    return tuple(have.get(r, 0) - load.get(r, 0) for r in resources)


def _rooms(nodes: list[Node], final: Mapping[str, Resources], resources: tuple[str, ...]) -> list[tuple[int, ...]]:
    """:func:`room` of every node (one pass, for large clusters)."""
    loads = map(final.get, map(_NAME, nodes), repeat({}))
    haves = map(_RESOURCES, nodes)
    if len(resources) == 1:
        (r,) = resources
        return [(have.get(r, 0) - load.get(r, 0),) for have, load in zip(haves, loads, strict=True)]
    return [
        tuple([have.get(r, 0) - load.get(r, 0) for r in resources]) for have, load in zip(haves, loads, strict=True)
    ]
