"""GPU sharing: what shares of a GPU hold on each device of a node (docs/snapshot-format.md, "GPU sharing").

A task that asks for less than one GPU (``gpu: 500m``), or for GPU memory (``gpu_memory: 20Gi``), takes a share of
each of ``gpu_devices`` devices of its node; a running share names them (``devices``). On every device the shares
sum to at most one GPU, a memory share counting as its part of the device's memory (``gpu_memory`` of the node,
rounded up to a milli-GPU); a task of whole GPUs takes devices that carry no share.

>>> from gpu_preempt.models import parse_snapshot
>>> snapshot = parse_snapshot('''
... now: 0
... nodes: [{name: n0, resources: {gpu: 2}, gpu_memory: 80Gi}]
... queues: [{name: q}]
... jobs:
... - {name: a, queue: q, task_resources: {gpu: 600m}, tasks: [{node: n0, devices: [0]}]}
... - {name: b, queue: q, task_resources: {gpu_memory: 40Gi}, tasks: [{node: n0, devices: [0]}]}
... ''')
Traceback (most recent call last):
...
gpu_preempt.models.errors.SnapshotError: ... device 0 of node n0 holds 1.1 GPUs of shares ...
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .job import Job, share_of
from .node import Node
from .quantity import MILLI, Resources, format_quantity

if TYPE_CHECKING:
    from .columns import TaskColumns

__all__ = [
    "HOLDING_DEVICES",
    "DeviceLedger",
    "HeldTask",
    "Loc",
    "as_counted",
    "column_ledger",
    "counted_apart",
    "counted_job",
    "counted_share",
    "device_ledger",
    "fraction_on",
    "has_shares",
    "ledger_of",
    "memory_size",
    "unknown_device_size",
]

HOLDING_DEVICES = ("running", "releasing")
"""Statuses whose shares hold their devices now."""


def fraction_on(node: Node, share: tuple[int, int]) -> int | None:
    """A share's part of one device of ``node``, in milli-GPUs; ``None`` for a memory share on a node that does not
    say its devices' memory.

    >>> node = Node(name="n", resources={"gpu": 8}, gpu_memory="80Gi")
    >>> fraction_on(node, (250, 0)), fraction_on(node, (0, 20 * 2**30 * 1000))
    (250, 250)
    """
    fraction, memory = share
    if memory == 0:
        return fraction
    if node.gpu_memory is None:
        return None
    return -(-memory * MILLI // node.gpu_memory)


def as_counted(requests: Resources, device_memory: int | None, spread: int = 1) -> Resources:
    """``requests`` as decisions count them: a share by memory written as the fraction of a device of
    ``device_memory`` it takes (rounded up to a milli-GPU), and a share taken on ``spread`` devices as the GPUs of
    all of them (queues and nodes count the whole; :func:`counted_share` gives each device's part).

    >>> as_counted({"gpu_memory": 20 * 2**30 * 1000, "cpu": 4000}, 80 * 2**30 * 1000)
    {'cpu': 4000, 'gpu': 250}
    >>> as_counted({"gpu": 500}, None, spread=2)
    {'gpu': 1000}
    """
    memory = requests.get("gpu_memory", 0)
    if memory and not requests.get("gpu", 0) and device_memory:
        requests = {r: a for r, a in requests.items() if r != "gpu_memory"}
        requests["gpu"] = -(-memory * MILLI // device_memory)
    if spread > 1 and requests.get("gpu", 0):
        requests = {**requests, "gpu": requests["gpu"] * spread}
    return requests


def counted_job(job: Job, device_memory: int | None) -> Job:
    """A copy of ``job`` with every task's requests as decisions count them (:func:`as_counted`); its tasks are the
    same objects unless they give resources of their own."""
    spread = job.gpu_devices
    tasks = [
        task
        if task.resources is None
        else task.model_copy(update={"resources": as_counted(task.resources, device_memory, spread)})
        for task in job.tasks
    ]
    return job.model_copy(
        update={"task_resources": as_counted(job.task_resources, device_memory, spread), "tasks": tasks}
    )


def counted_share(job: Job, requests: Resources) -> int | None:
    """The milli-GPUs a task of ``job`` takes on each of its devices, read from its requests as decisions count them
    (:func:`as_counted`); ``None`` for a task of whole GPUs, or of none.

    >>> from gpu_preempt.models import Job
    >>> job = Job(name="j", queue="q", task_resources={"gpu": "500m"}, gpu_devices=2, tasks=[{}])
    >>> counted_share(job, {"gpu": 1000}), counted_share(job.model_copy(update={"gpu_devices": 1}), {"gpu": 1000})
    (500, None)
    """
    amount = requests.get("gpu", 0)
    if job.gpu_devices > 1:
        return amount // job.gpu_devices
    return amount if 0 < amount < MILLI else None


def unknown_device_size(job: Job, nodes: Iterable[Node]) -> str | None:
    """Why a decision cannot place ``job``, a share by memory, when no node has a GPU: the memory of a device, which
    such a share is counted on, is unknown (docs/snapshot-format.md, "GPU sharing"); ``None`` otherwise."""
    if not any(job.requests(t).get("gpu_memory", 0) for t in job.tasks):
        return None
    if any(node.resources.get("gpu", 0) >= MILLI for node in nodes):
        return None
    return (
        "asks for GPU memory, and no node has a GPU: the memory of a device, which a share by memory is part of, "
        "is unknown"
    )


def memory_size(nodes: Iterable[Node]) -> tuple[int | None, str | None]:
    """The memory of every GPU device of ``nodes`` when they all say the same, else ``(None, why not)``."""
    sizes: dict[int, str] = {}
    for node in nodes:
        if node.resources.get("gpu", 0) < MILLI:
            continue
        if node.gpu_memory is None:
            return None, f"node {node.name} does not say its devices' gpu_memory"
        sizes.setdefault(node.gpu_memory, node.name)
        if len(sizes) > 1:
            (a, first), (b, second) = sizes.items()
            shown = f"{format_quantity('gpu_memory', a)} on {first}, {format_quantity('gpu_memory', b)} on {second}"
            return None, f"the nodes' devices differ in memory ({shown})"
    return (next(iter(sizes)) if sizes else None), None


def counted_apart(job: Job) -> bool:
    """Whether decisions count ``job``'s requests otherwise than it gives them (:func:`as_counted`): a share by
    memory, or on several devices."""
    if job.gpu_devices > 1 or job.task_resources.get("gpu_memory"):
        return True
    return not job.uniform and any(t.resources is not None and t.resources.get("gpu_memory") for t in job.tasks)


def has_shares(job: Job) -> bool:
    """Whether some task of ``job`` asks for a share of a GPU."""
    if share_of(job.task_resources) is not None:
        return True
    return not job.uniform and any(t.resources is not None and share_of(t.resources) is not None for t in job.tasks)


@dataclass
class DeviceLedger:
    """Per node, what shares hold on each device (milli-GPUs) and the whole devices tasks of whole GPUs hold."""

    shares: dict[str, dict[int, int]] = field(default_factory=dict)
    whole: dict[str, int] = field(default_factory=dict)

    def free_devices(self, node: Node) -> int:
        """Devices of ``node`` with nothing on them."""
        count = node.resources.get("gpu", 0) // MILLI
        return count - self.whole.get(node.name, 0) - len(self.shares.get(node.name, {}))


Loc = tuple[str | int, ...]


def device_ledger(jobs: list[Job], nodes: dict[str, Node], errors: list[tuple[Loc, str]]) -> DeviceLedger:
    """The ledger of the running and releasing tasks of ``jobs`` on ``nodes``; what does not fit is added to
    ``errors`` with its field path: a device the node does not have, a memory share on a node that does not say its
    devices' memory, a device holding more than one GPU, a node whose whole GPUs and shared devices exceed its
    devices."""
    tasks = (
        (i, k, task.node, task.status, job.requests(task), task.devices, task.name)
        for i, job in enumerate(jobs)
        for k, task in enumerate(job.tasks)
    )
    return ledger_of(tasks, nodes, errors, whole=None)


def column_ledger(
    columns: TaskColumns, names: list[str], nodes: dict[str, Node], errors: list[tuple[Loc, str]]
) -> DeviceLedger:
    """:func:`device_ledger` read on a large snapshot's task columns, its jobs not made: the whole GPUs of every node
    summed at once, the tasks of shares read one by one. ``names``: the nodes' names, in the order the columns
    number them."""
    import numpy as np  # a large snapshot only

    share = np.array([share_of(r) is not None for r in columns.requests], dtype=bool)
    gpus = np.array(
        [0 if s else r.get("gpu", 0) // MILLI for s, r in zip(share.tolist(), columns.requests, strict=True)]
    )
    holding = (columns.node >= 0) & columns.chosen(HOLDING_DEVICES)
    per_task = gpus[columns.row] * holding
    held = np.bincount(columns.node[per_task > 0], weights=per_task[per_task > 0], minlength=len(names))
    whole = {names[n]: int(held[n]) for n in np.flatnonzero(held).tolist()}
    at = np.flatnonzero(share[columns.row] & holding)
    jobs = columns.job[at]
    positions = at.tolist()
    tasks = zip(
        jobs.tolist(),
        (at - np.searchsorted(columns.job, jobs)).tolist(),  # the index in its job: a job's tasks are consecutive
        map(columns.nodes.__getitem__, positions),
        map(columns.statuses.__getitem__, positions),
        map(columns.requests.__getitem__, columns.row[at].tolist()),
        map(columns.devices.get, positions),
        map(columns.names.__getitem__, positions),
        strict=True,
    )
    return ledger_of(tasks, nodes, errors, whole=whole)


HeldTask = tuple[int, int, "str | None", "str | None", dict[str, int], "list[int] | None", "str | None"]
"""A task as the ledger reads it: its job's position, its index in the job, node, status, requests, devices, name."""


def ledger_of(
    tasks: Iterable[HeldTask], nodes: dict[str, Node], errors: list[tuple[Loc, str]], *, whole: dict[str, int] | None
) -> DeviceLedger:
    """:func:`device_ledger` of ``tasks`` (of every job, or with ``whole`` counted already, of the jobs with
    shares)."""
    ledger = DeviceLedger()
    if whole is not None:
        ledger.whole = dict(whole)
    holders: dict[tuple[str, int], list[str]] = {}
    for i, k, node_name, status, requests, devices, task_name in tasks:
        node = nodes.get(node_name or "")
        if status not in HOLDING_DEVICES or node is None:
            continue
        share = share_of(requests)
        if share is None:
            gpus = requests.get("gpu", 0) // MILLI
            if gpus and whole is None:
                ledger.whole[node.name] = ledger.whole.get(node.name, 0) + gpus
            continue
        fraction = fraction_on(node, share)
        if fraction is None:
            errors.append((("jobs", i, "tasks", k, "node"), f"node {node.name} does not say its gpu_memory"))
            continue
        count = node.resources.get("gpu", 0) // MILLI
        for device in devices or []:
            if device >= count:
                where = f"0-{count - 1}" if count else "none"
                errors.append((("jobs", i, "tasks", k, "devices"), f"node {node.name} has devices {where}"))
                continue
            on = ledger.shares.setdefault(node.name, {})
            on[device] = on.get(device, 0) + fraction
            holders.setdefault((node.name, device), []).append(str(task_name))
    for (name, device), names in holders.items():
        held = ledger.shares[name][device]
        if held > MILLI:
            position = next(i for i, n in enumerate(nodes) if n == name)
            errors.append(
                (
                    ("nodes", position),
                    f"device {device} of node {name} holds {held / MILLI:g} GPUs of shares (tasks {', '.join(names)})",
                )
            )
    whole_held, shares = ledger.whole, ledger.shares
    for position, (name, node) in enumerate(nodes.items()):
        if node.resources.get("gpu", 0) // MILLI < whole_held.get(name, 0) + len(shares.get(name, ())):  # free < 0
            held, shared = ledger.whole.get(name, 0), len(ledger.shares.get(name, {}))
            count = node.resources.get("gpu", 0) // MILLI
            errors.append(
                (
                    ("nodes", position),
                    f"node {name}: {held} whole GPU(s) and {shared} device(s) with shares exceed its {count} devices",
                )
            )
    return ledger
