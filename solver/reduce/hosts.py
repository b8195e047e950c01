"""Where tasks fit once victims go: the free hosts of a shape, and the devices of a node with shares of a GPU
(docs/snapshot-format.md, "GPU sharing"), as the reductions count them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpu_preempt.formulate.rooms import node_devices
from gpu_preempt.models import MILLI, Job, Node, Resources
from gpu_preempt.problem.devices import DeviceFit
from gpu_preempt.problem.records import Devices, gpus_of, share_size
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.node_cache import NodeKey

from .losses import Loss, TooComplex

__all__ = ["EVERY_PROMISE", "DeviceHosts", "DeviceView", "FreeHosts", "device_hosts", "free_hosts", "tasks_fitting"]


def free_hosts(
    cluster: ClusterState, priority: int, request: Resources, resources: tuple[str, ...], spread: int = 1
) -> list[tuple[int, int]]:
    """Schedulable nodes (by index) with room for tasks of ``request`` now, as ``priority`` sees them, and how many
    each takes (on its devices too, where the snapshot has shares of a GPU: a share on ``spread`` devices); kept
    while the state lasts. Counted on the matrix of rooms (:meth:`ClusterState.room_matrix`), which a derived state
    updates where nodes changed."""
    kept = cluster.for_state(FreeHosts).hosts
    key = (priority, tuple(sorted(request.items())), resources, spread)
    found = kept.get(key)
    if found is not None:
        return found
    base, rooms = cluster.base_rooms(resources), cluster.rooms(priority, resources)
    counts = _every_fit(base, cluster.room_matrix(resources), request, resources)
    if rooms is not base:  # lower-priority promises on some nodes do not hold against this decision
        for n in map(cluster.node_index().__getitem__, cluster.promised_nodes()):
            counts[n] = tasks_fitting(rooms[n], request, resources)
    counts[~cluster.index.schedulable] = 0
    if cluster.has_shares():  # docs/snapshot-format.md, "GPU sharing": a node takes what its devices take
        view = DeviceView.of(cluster, priority, request, spread)
        promised = [cluster.node_index()[name] for name in cluster.promised_nodes()]
        before = {n: int(counts[n]) for n in promised}
        np.minimum(counts, device_hosts(cluster, view), out=counts)
        for n, count in before.items():  # a promise of lower priority does not hold against this decision
            counts[n] = min(count, view.hosted(n, [])) if count > 0 else 0
    at = np.flatnonzero(counts > 0)
    hosts = kept[key] = list(zip(at.tolist(), counts[at].tolist(), strict=True))
    return hosts


@dataclass(frozen=True)
class DeviceHosts(NodeKey):
    """Per node, the tasks of one shape its devices take with every promise holding (a list of ints)."""

    share: int
    gpus: int
    spread: int


EVERY_PROMISE = -(2**63)
"""A priority below every job's: a decision of it sees every promise hold."""


def device_hosts(cluster: ClusterState, view: DeviceView) -> np.ndarray:
    """:meth:`DeviceView.hosted` of every node with nothing freed, every promise holding (what ``view`` sees on the
    nodes with no promise), kept per node across the states that follow (:meth:`ClusterState.node_values`): a
    replay's cycle recounts only the nodes that changed. As an int64 array, made once per state."""
    kept = cluster.for_state(FreeHosts).devices
    key = (view.share, view.gpus, view.spread)
    found = kept.get(key)
    if found is None:
        every = DeviceView(cluster, EVERY_PROMISE, view.share, view.gpus, view.spread)

        def one(n: int, _: Node) -> int:
            return min(every.hosted(n, []), 1 << 62)

        def whole_list() -> list[int]:
            """Every node at once: a node with no share on its devices takes what its empty devices take, which
            depends only on how many there are (counted from the rooms with every promise holding)."""
            final, rooms = cluster.device_loads().final, cluster.base_rooms(("gpu",))
            by_empty: dict[int, int] = {}
            values = []
            for n, node in enumerate(cluster.snapshot.nodes):
                have = node.resources.get("gpu", 0)
                if final.get(node.name) or not have:
                    values.append(one(n, node))
                    continue
                count = have // MILLI
                empty = count - (have - rooms[n][0]) // MILLI
                found = by_empty.get(empty)
                if found is None:
                    fit = DeviceFit(Devices(count=count, whole=count - empty, shares=(), now_whole=0, now_shares=()))
                    found = by_empty[empty] = min(fit.capacity(view.share, view.gpus, view.spread), 1 << 62)
                values.append(found)
            return values

        values = cluster.node_values(DeviceHosts(*key), one, whole_list)
        found = kept[key] = np.array(values, dtype=np.int64)
    return found


@dataclass
class FreeHosts:
    """The hosts of :func:`free_hosts` of a state: (priority, request shape, resources, spread) -> (node, how many)."""

    hosts: dict[tuple[int, tuple[tuple[str, int], ...], tuple[str, ...], int], list[tuple[int, int]]] = field(
        default_factory=dict
    )
    devices: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)
    """:func:`device_hosts` by (share, whole GPUs, spread)."""


def _every_fit(
    rooms: list[tuple[int, ...]], matrix: np.ndarray | None, request: Resources, resources: tuple[str, ...]
) -> np.ndarray:
    """:func:`fits` of every room (int64), one resource at a time over all of them (on ``matrix``, the rooms as a
    matrix, if there is one)."""
    counts: np.ndarray | None = None
    for i, r in enumerate(resources):
        amount = request.get(r, 0)
        if amount > 0:
            if matrix is not None and amount < 2**63:
                column = matrix[:, i] // amount
            else:
                column = np.fromiter((room[i] // amount for room in rooms), dtype=np.int64, count=len(rooms))
            counts = column if counts is None else np.minimum(counts, column)
    if counts is None:
        return np.zeros(len(rooms), dtype=np.int64)
    found: np.ndarray = np.maximum(counts, 0)
    return found


@dataclass
class DeviceView:
    """The devices of a cluster with shares of a GPU, as a decision of ``priority`` sees them (docs/snapshot-format.md,
    "GPU sharing"): what each node holds, and what a victim's tasks free there. The reductions stay exact on it: a
    node's devices only lower what it hosts, so the node-level bounds stay bounds, and each option is counted on the
    devices (:meth:`hosted`)."""

    cluster: ClusterState
    priority: int
    share: int
    """Milli-GPUs of the chunk's share of each of its devices (0: whole GPUs)."""
    gpus: int
    """Whole GPUs of one task of the chunk."""
    spread: int = 1
    """Devices a task's share is taken on."""
    _bases: dict[int, Devices | None] = field(default_factory=dict)

    @classmethod
    def of(cls, cluster: ClusterState, priority: int, request: Resources, spread: int = 1) -> DeviceView:
        """The view for a chunk of tasks asking ``request`` (a share: on ``spread`` devices)."""
        share = share_size(request, spread)
        return cls(cluster, priority, share, 0 if share else gpus_of(request), spread)

    def base(self, n: int) -> Devices | None:
        if n not in self._bases:
            self._bases[n] = node_devices(self.cluster, self.cluster.snapshot.nodes[n], self.priority)
        return self._bases[n]

    def freed(self, job: Job, split: dict[int, int]) -> tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...]:
        """What ``job`` losing ``split`` (node -> tasks, its newest there first) frees per node: whole GPUs, and
        shares per device. Raises :class:`TooComplex` when which tasks go would matter (shares on several devices
        of a node, some of them kept)."""
        cluster = self.cluster
        placed = cluster.device_loads().placed
        index = cluster.node_index()
        on: dict[int, list[str]] = {}
        for task in cluster.tasks(job, "running"):
            on.setdefault(index[str(cluster.node_of[str(task.name)])], []).append(str(task.name))
        by_name = {str(t.name): t for t in job.tasks}
        out = []
        for n, k in sorted(split.items()):
            names = on.get(n, [])
            devices = {placed[name] for name in names if name in placed}
            if len(devices) > 1 and k < len(names):
                raise TooComplex(f"{job.name} holds shares on several devices of a node")
            whole, shares = 0, dict[int, int]()
            for name in names[len(names) - k :]:  # the newest k
                requests = job.requests(by_name[name])
                if name in placed:
                    for d in placed[name]:  # the requests count the share on each of its devices
                        shares[d] = shares.get(d, 0) + requests.get("gpu", 0) // len(placed[name])
                else:
                    whole += requests.get("gpu", 0) // MILLI
            out.append((n, whole, tuple(sorted(shares.items()))))
        return tuple(out)

    def hosted(self, n: int, lost: list[Loss], extra: Sequence[tuple[int, tuple[tuple[int, int], ...]]] = ()) -> int:
        """Tasks of the chunk node ``n``'s devices take once the losses ``lost`` (and ``extra``: whole GPUs and
        shares freed there by victims spanning nodes) are gone."""
        base = self.base(n)
        if base is None:
            return 0 if self.share or self.gpus else 1 << 62
        whole, shares = 0, dict[int, int]()
        for freed in (*(x for loss in lost for x in loss.devices), *((n, w, s) for w, s in extra)):
            if freed[0] != n:
                continue
            whole += freed[1]
            for d, amount in freed[2]:
                shares[d] = shares.get(d, 0) + amount
        return DeviceFit(base, shares, whole).capacity(self.share, self.gpus, self.spread)


def tasks_fitting(room: tuple[int, ...], request: Resources, resources: tuple[str, ...]) -> int:
    """Tasks of ``request`` that fit in ``room``."""
    counts = [room[i] // request[r] for i, r in enumerate(resources) if request.get(r, 0) > 0]
    return max(0, min(counts)) if counts else 0
