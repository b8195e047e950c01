"""What shares of a GPU hold on each device of a node, in the final and current loads (docs/snapshot-format.md,
"GPU sharing").

A task of a share names its device(s): from the snapshot (a running, releasing or nominated share), or from the
decision that placed it (:attr:`.cluster.ClusterState.task_devices`). A nominated share the snapshot gives no device
is put on the first device where it fits, in task order, so that the ledger is whole. Tasks of whole GPUs hold any
devices without shares: only their count matters, the node's GPU load less its shares.

Built only for states whose snapshot has shares (:meth:`.cluster.ClusterState.device_loads`), from the tasks of the
jobs that have them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpu_preempt.models import MILLI, Job, Task
from gpu_preempt.models.sharing import counted_share

from .node_loads import CURRENT, FINAL, PROMISED

if TYPE_CHECKING:
    from .cluster import ClusterState

__all__ = ["DeviceLoads", "Entry", "Holding", "SnapshotDevices", "device_loads", "fits_now"]


@dataclass
class DeviceLoads:
    """Per node, the shares on each device (milli-GPUs): ``final`` counts the statuses of the final load, ``now``
    those of the current load; ``promised`` lists the promised shares (priority, device, milli-GPUs), which a
    decision of higher priority does not count (docs/rules.md, "Nominations")."""

    final: dict[str, dict[int, int]] = field(default_factory=dict)
    now: dict[str, dict[int, int]] = field(default_factory=dict)
    promised: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)
    placed: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Task -> its devices, for every share on a device (the snapshot's, the decisions', the first-fit ones)."""

    def shares(self, node: str, priority: int | None = None) -> dict[int, int]:
        """The final shares on ``node``'s devices as a decision of ``priority`` sees them (``None``: every promise
        holds)."""
        found = self.final.get(node, {})
        below = [p for p in self.promised.get(node, ()) if priority is not None and p[0] < priority]
        if not below:
            return found
        seen = dict(found)
        for _, device, amount in below:
            seen[device] -= amount
        return {d: a for d, a in seen.items() if a}


@dataclass
class SnapshotDevices:
    """The ledger of a snapshot's own statuses, shared by every state of that snapshot that changed nothing (never
    changed in place: a derived ledger copies what it moves)."""

    loads: DeviceLoads | None = None


def device_loads(cluster: ClusterState) -> DeviceLoads:
    """The device ledger of ``cluster`` (see the module docstring): from the ledger of the state it was derived from
    when there is one (:attr:`.cluster.ClusterState.devices_from`), the changed tasks moved; else counted anew."""
    source = cluster.devices_from
    if source is not None:
        found = _updated(*source, cluster)
        if found is not None:
            return found
    loads = DeviceLoads()
    jobs = cluster.snapshot.jobs
    status, chosen, final, now, placed = cluster.status, cluster.task_devices, loads.final, loads.now, loads.placed
    unplaced: list[
        tuple[str, str, int, int, int]
    ] = []  # promised shares without devices: task, node, share, k, priority
    for i in cluster.snapshot.shared_jobs():
        job = jobs[i]
        for task in job.tasks:
            share = counted_share(job, job.requests(task))
            if share is None:
                continue
            name = str(task.name)
            if task.status == "running" and status[name] == "running" and name not in chosen and task.devices:
                on, there = final.setdefault(str(task.node), {}), now.setdefault(str(task.node), {})
                for device in task.devices:  # running as given, the common case: on its own devices
                    on[device] = on.get(device, 0) + share
                    there[device] = there.get(device, 0) + share
                placed[name] = tuple(task.devices)
                continue
            held = _holding(cluster, job, task, share)
            if held is None:
                name = str(task.name)
                unplaced.append((name, str(cluster.node_of[name]), share, job.gpu_devices, job.resolved_priority))
            else:
                _shift(loads, str(task.name), *held, 1)
    for name, node, amount, spread, priority in unplaced:
        count = cluster.snapshot.node(node).resources.get("gpu", 0) // MILLI
        on_node = loads.final.get(node, {})
        fitting = [d for d in range(count) if on_node.get(d, 0) + amount <= MILLI]
        devices = tuple((fitting + [d for d in range(count) if d not in fitting])[:spread])
        entries = _entries(cluster.status[name], node, devices, amount, priority)
        _shift(loads, name, entries, devices, 1)
    return loads


Entry = tuple[str, str, int, int, int]
"""Where a share holds: (ledger: final, now or promised; node; device; milli-GPUs; the job's priority)."""
Holding = tuple[list[Entry], tuple[int, ...] | None]
"""A share's ledger entries, and its devices (``None``: it holds none)."""


def _holding(cluster: ClusterState, job: Job, task: Task, amount: int) -> Holding | None:
    """What the share ``task`` holds in ``cluster``; ``None`` for a promised share that names no device (placed by
    :func:`device_loads`)."""
    name = str(task.name)
    state, node = cluster.status[name], cluster.node_of[name]
    if node is None or (state not in FINAL and state not in CURRENT):
        return [], None
    entries: list[Entry] = []
    priority = job.resolved_priority
    if task.status == "running" and state in PROMISED and task.devices is not None and task.node is not None:
        entries += [("now", task.node, d, amount, priority) for d in task.devices]  # moved: its old pod holds it
    devices = cluster.task_devices.get(name)
    if devices is None:
        devices = tuple(task.devices) if task.devices is not None and task.node == node else None
    if devices is None:
        return None
    return entries + _entries(state, node, devices, amount, priority), devices


def _entries(state: str, node: str, devices: tuple[int, ...], amount: int, priority: int) -> list[Entry]:
    out: list[Entry] = []
    for device in devices:
        if state in FINAL:
            out.append(("final", node, device, amount, priority))
        if state in CURRENT:
            out.append(("now", node, device, amount, priority))
        if state in PROMISED:
            out.append(("promised", node, device, amount, priority))
    return out


def _shift(loads: DeviceLoads, task: str, entries: list[Entry], devices: tuple[int, ...] | None, sign: int) -> None:
    """Add (``sign`` 1) or take off (-1) a share's ``entries``; its devices recorded or forgotten."""
    if sign > 0 and devices is not None:
        loads.placed[task] = devices
    elif sign < 0:
        loads.placed.pop(task, None)
    for kind, node, device, amount, priority in entries:
        if kind == "promised":
            held = loads.promised.setdefault(node, [])
            if sign > 0:
                held.append((priority, device, amount))
            else:
                held.remove((priority, device, amount))
            continue
        on = (loads.final if kind == "final" else loads.now).setdefault(node, {})
        on[device] = on.get(device, 0) + sign * amount
        if not on[device]:
            del on[device]


def _updated(
    old: DeviceLoads, parent: ClusterState, tasks: frozenset[str], cluster: ClusterState
) -> DeviceLoads | None:
    """``old`` (the ledger of ``parent``) with the shares among ``tasks`` moved to where they are in ``cluster``;
    ``None`` when one of them is a promised share naming no device (the ledger is counted anew)."""
    owner = cluster.index.owners
    moves: list[tuple[str, Holding, Holding]] = []
    for name in sorted(tasks):
        job, task = owner[name]
        share = counted_share(job, job.requests(task))
        if share is None:
            continue
        before, after = _holding(parent, job, task, share), _holding(cluster, job, task, share)
        if before is None or after is None:
            return None
        moves.append((name, before, after))
    nodes = {entry[1] for _, before, after in moves for entry in (*before[0], *after[0])}
    loads = DeviceLoads(
        {**old.final, **{n: dict(old.final[n]) for n in nodes if n in old.final}},
        {**old.now, **{n: dict(old.now[n]) for n in nodes if n in old.now}},
        {**old.promised, **{n: list(old.promised[n]) for n in nodes if n in old.promised}},
        dict(old.placed),
    )
    for name, before, after in moves:
        _shift(loads, name, *before, -1)
        _shift(loads, name, *after, 1)
    return loads


def fits_now(cluster: ClusterState, node: str, shares: dict[int, int], whole: int) -> bool:
    """Whether ``shares`` (device -> milli-GPUs) and ``whole`` more whole GPUs fit ``node``'s devices as they are
    now (a releasing share still holds its device)."""
    now = dict(cluster.device_loads().now.get(node, {}))
    for device, amount in shares.items():
        now[device] = now.get(device, 0) + amount
    count = cluster.snapshot.node(node).resources.get("gpu", 0) // MILLI
    held_whole = (
        cluster.current_load(node).get("gpu", 0) - sum(cluster.device_loads().now.get(node, {}).values())
    ) // MILLI
    return all(a <= MILLI for a in now.values()) and held_whole + whole + sum(1 for a in now.values() if a) <= count
