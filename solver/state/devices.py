"""What shares of a GPU hold on each device of a node, in the final and current loads (docs/snapshot-format.md,
"GPU sharing").

A task of a share names its device: from the snapshot (a running, releasing or nominated share), or from the
decision that placed it (:attr:`.cluster.ClusterState.task_devices`). A nominated share the snapshot gives no device
is put on the first device where it fits, in task order, so that the ledger is whole. Tasks of whole GPUs hold any
devices without shares: only their count matters, the node's GPU load less its shares.

Built only for states whose snapshot has shares (:meth:`.cluster.ClusterState.device_loads`), from the tasks of the
jobs that have them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpu_preempt.models import MILLI
from gpu_preempt.models.job import share_of

from .node_loads import CURRENT, FINAL, PROMISED

if TYPE_CHECKING:
    from .cluster import ClusterState


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


def device_loads(cluster: ClusterState) -> DeviceLoads:
    """The device ledger of ``cluster`` (see the module docstring)."""
    loads = DeviceLoads()
    status, node_of, chosen = cluster.status, cluster.node_of, cluster.task_devices
    jobs = cluster.snapshot.jobs
    unplaced: list[tuple[str, str, int, int]] = []  # nominated shares without a device: (task, node, share, priority)
    for i in cluster.snapshot.shared_jobs():
        job = jobs[i]
        for task in job.tasks:
            share = share_of(job.requests(task))
            if share is None:
                continue
            name = str(task.name)
            state, node = status[name], node_of[name]
            if node is None or (state not in FINAL and state not in CURRENT):
                continue
            amount = share[0]
            if task.status == "running" and state in PROMISED and task.devices is not None and task.node is not None:
                now = loads.now.setdefault(task.node, {})  # moved this session: its old pod holds its device now
                for device in task.devices:
                    now[device] = now.get(device, 0) + amount
            devices = chosen.get(name)
            if devices is None:
                devices = tuple(task.devices) if task.devices is not None and task.node == node else None
            if devices is None:
                unplaced.append((name, node, amount, job.resolved_priority))
                continue
            _hold(loads, name, node, devices, amount, state, job.resolved_priority)
    for name, node, amount, priority in unplaced:
        count = cluster.snapshot.node(node).resources.get("gpu", 0) // MILLI
        held = loads.final.get(node, {})
        device = next((d for d in range(count) if held.get(d, 0) + amount <= MILLI), 0)
        _hold(loads, name, node, (device,), amount, status[name], priority)
    return loads


def _hold(
    loads: DeviceLoads, task: str, node: str, devices: tuple[int, ...], amount: int, state: str, priority: int
) -> None:
    loads.placed[task] = devices
    for device in devices:
        if state in FINAL:
            on = loads.final.setdefault(node, {})
            on[device] = on.get(device, 0) + amount
        if state in CURRENT:
            on = loads.now.setdefault(node, {})
            on[device] = on.get(device, 0) + amount
        if state in PROMISED:
            loads.promised.setdefault(node, []).append((priority, device, amount))


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
