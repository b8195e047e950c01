"""Nominations: asynchronous preemption (docs/rules.md, "Nominations", Kubernetes KEP "asynchronous preemption").

A decision that pipelines a job onto capacity that victims are still releasing
*nominates* the job's tasks for their nodes; the next snapshot carries them as
``nominated`` (:mod:`gpu_preempt.actions.next_snapshot`). A nomination holds its node's
capacity, as a pipelined task does, so two cycles never promise the same room:

* a later decision for a job of **equal or lower priority** cannot use it: it
  schedules elsewhere, or its preemption makes room for both (the seed's race
  cases 1 and 3); :meth:`gpu_preempt.state.cluster.ClusterState.room_load` leaves the
  nomination in the node's load;
* a decision for a job of **higher priority** may take its place, as if it were
  not there (cases 2 and 4). The decision lists the nominations it *overrides*
  (:func:`overrides`): their tasks go back to pending and the job tries again.

The same holds within one cycle for tasks a decision of this cycle pipelined:
they are nominations the moment they are made (as in Kubernetes, where the
next pod's scheduling already sees the nomination), so a cycle and its replay
through the next snapshot reach the same promises.

When its turn comes, the nominated job itself *claims* its nominations
(:func:`claim`): it lands on its nominated nodes without evicting anything,
``allocated`` once the victims are gone, ``pipelined`` again while they are
still releasing.
"""

from __future__ import annotations

from gpu_preempt.models import MILLI, Job, Resources, Task
from gpu_preempt.models.decision import Decision, Override
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.devices import fits_now
from gpu_preempt.state.node_loads import PROMISED

__all__ = ["claim", "held_against", "overrides"]


class _Devices:
    """The devices of ``node`` once ``decision`` is carried out with every promise kept (docs/snapshot-format.md, "GPU
    sharing"): shares per device and whole GPUs, the victims' gone and the decision's placed."""

    def __init__(self, cluster: ClusterState, node: str, decision: Decision) -> None:
        self.cluster, self.node = cluster, node
        self.count = cluster.snapshot.node(node).resources.get("gpu", 0) // MILLI
        shares = dict(cluster.device_loads().final.get(node, {}))
        whole = (cluster.final_load(node).get("gpu", 0) - sum(shares.values())) // MILLI
        placed = cluster.device_loads().placed
        owner = cluster.index.owners
        for victim in decision.victims:
            for name in victim.tasks:
                if cluster.node_of[name] != node:
                    continue
                job, task = owner[name]
                whole -= self._shift(shares, job, task, placed.get(name), -1)
        me, _ = owner[next(iter(decision.placements))]
        for name, where in decision.placements.items():
            if where == node:
                whole += self._shift(shares, me, owner[name][1], decision.devices.get(name), 1)
        self.shares, self.whole = shares, whole

    @staticmethod
    def _shift(shares: dict[int, int], job: Job, task: Task, devices: tuple[int, ...] | None, sign: int) -> int:
        """Add or take off a task's shares; its whole GPUs (0 for a share)."""
        requests = job.requests(task)
        if devices is None:
            return requests.get("gpu", 0) // MILLI
        for device in devices:  # the requests count the share on each of its devices
            shares[device] = shares.get(device, 0) + sign * requests.get("gpu", 0) // len(devices)
        return 0

    def take_off(self, job: Job, task: Task) -> None:
        """A promised task gives way."""
        self.whole -= self._shift(self.shares, job, task, self.cluster.device_loads().placed.get(str(task.name)), -1)

    def hold(self) -> bool:
        used = sum(1 for a in self.shares.values() if a)
        return all(a <= MILLI for a in self.shares.values()) and self.whole + used <= self.count


def claim(cluster: ClusterState, job: Job) -> Decision:
    """``job`` lands on its nominated nodes: ``allocated`` when they have room now, else ``pipelined`` again."""
    placements = {str(t.name): str(cluster.node_of[str(t.name)]) for t in cluster.tasks(job, "nominated")}
    now: dict[str, Resources] = {}
    for task in cluster.tasks(job, "nominated"):
        node = placements[str(task.name)]
        now[node] = add(now.get(node, {}), job.requests(task))
    fits = all(
        cluster.current_load(node).get(r, 0) + amount <= cluster.snapshot.node(node).resources.get(r, 0)
        for node, need in now.items()
        for r, amount in need.items()
    )
    devices: dict[str, tuple[int, ...]] = {}
    if cluster.has_shares():  # docs/snapshot-format.md, "GPU sharing": a share lands on the device it was promised
        placed = cluster.device_loads().placed
        shares: dict[str, dict[int, int]] = {}
        whole: dict[str, int] = {}
        for task in cluster.tasks(job, "nominated"):
            name, requests = str(task.name), job.requests(task)
            node = placements[name]
            if name in placed:
                devices[name] = placed[name]
                on = shares.setdefault(node, {})
                for device in placed[name]:
                    on[device] = on.get(device, 0) + requests.get("gpu", 0) // len(placed[name])
            else:
                whole[node] = whole.get(node, 0) + requests.get("gpu", 0) // MILLI
        fits = fits and all(fits_now(cluster, node, shares.get(node, {}), whole.get(node, 0)) for node in now)
    where = ", ".join(sorted(set(placements.values())))
    return Decision(
        job.name,
        "allocate",
        "allocated" if fits else "pipelined",
        placements=placements,
        optimal=True,
        objective={"priority": [], "jobs": 0, "tasks": 0, "lost_work": 0.0},
        reason=f"claims its nomination on {where}" + ("" if fits else " (still waiting for releasing tasks to leave)"),
        devices=devices,
    )


def overrides(cluster: ClusterState, job: Job, decision: Decision) -> list[Override]:
    """The lower-priority nominations whose capacity ``decision`` needs.

    Per node where the decision places tasks and the node would be over its
    capacity with every nomination kept, nominated jobs of lower priority give
    way, lowest priority first, then by name, until the node fits. A job gives
    way whole (all its nominated tasks, on every node): a gang with one task
    displaced cannot land anyway.
    """
    if not decision.placed:
        return []
    snapshot = cluster.snapshot
    placed: dict[str, Resources] = {}
    by_name = {str(t.name): t for t in job.tasks}
    for name, node in decision.placements.items():
        placed[node] = add(placed.get(node, {}), job.requests(by_name[name]))
    below: dict[str, list[Job]] = {}  # per node placed on, the nominated jobs that may give way there
    for node in sorted(placed, key=cluster.node_index().__getitem__):  # document order
        below[node] = sorted(
            {j.name: j for j, _ in cluster.nominations(node) if j.resolved_priority < job.resolved_priority}.values(),
            key=lambda j: (j.resolved_priority, j.name),
        )
    if not any(below.values()):
        return []  # nothing to give way (the common case: the victims' tasks need not be read)
    freed: dict[str, Resources] = {}
    for victim in decision.victims:
        owner = snapshot.job(victim.job)
        by_name = {str(t.name): t for t in owner.tasks}
        for name in victim.tasks:
            node = str(cluster.node_of[name])
            if node in placed:
                freed[node] = add(freed.get(node, {}), owner.requests(by_name[name]))
    gone: list[Job] = []
    for node, others in below.items():
        load = add(add(cluster.final_load(node), freed.get(node, {}), times=-1), placed[node])
        capacity = snapshot.node(node).resources
        devices = _Devices(cluster, node, decision) if cluster.has_shares() else None
        for other in others:
            if all(amount <= capacity.get(r, 0) for r, amount in load.items()) and (devices is None or devices.hold()):
                break
            if other not in gone:
                gone.append(other)
            for task in cluster.tasks(other, *PROMISED):
                if cluster.node_of[str(task.name)] == node:
                    load = add(load, other.requests(task), times=-1)
                    if devices is not None:
                        devices.take_off(other, task)
    return [
        Override(other.name, str(task.name), str(cluster.node_of[str(task.name)]))
        for other in gone
        for task in cluster.tasks(other, *PROMISED)
    ]


def held_against(cluster: ClusterState, job: Job) -> str | None:
    """Which promises of equal or higher priority hold capacity against ``job``, in words (for a reason)."""
    holders: dict[str, set[str]] = {}
    for node in cluster.promised_nodes():
        for other, _ in cluster.nominations(node):
            if other.name != job.name and other.resolved_priority >= job.resolved_priority:
                holders.setdefault(other.name, set()).add(node)
    if not holders:
        return None
    named = ", ".join(f"{name} on {', '.join(sorted(nodes))}" for name, nodes in sorted(holders.items())[:5])
    more = f" and {len(holders) - 5} more" if len(holders) > 5 else ""
    return f"places promised to jobs of equal or higher priority hold: {named}{more}"
