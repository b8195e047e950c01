"""A scheduler group as a snapshot job (docs/kubernetes.md): its tasks with their statuses, devices and task order,
its placement, priority class, and the pods stuck in releasing."""

from __future__ import annotations

from typing import Any

from gpu_preempt.models import Resources, parse_quantity
from gpu_preempt.models.duration import format_duration, format_time
from gpu_preempt.models.errors import shown
from gpu_preempt.models.quantity import add

from .core import (
    Pod,
    Report,
    instant,
    is_share,
    quantities,
)
from .core import scheduled_at as pod_scheduled_at
from .groups import DELAY_AT, KAI_PRIORITY_LABEL, PREEMPTION_DELAY, Group, asks_gpus, becomes_job, preemption_delay
from .placement import pod_placement, pod_topology

__all__ = ["EXPECTED_END", "STUCK_RELEASING", "TASK_ORDER", "hold_pod", "job_of", "stuck_in_releasing", "take_pod"]


TASK_ORDER = "kai.scheduler/task-priority"
"""KAI's task-order label (pkg/scheduler/constants/labels/labels.go): an elastic job's tasks of a higher value are
kept longest."""


def _task_order(p: Pod, report: Report) -> int | None:
    """A pod's task order (KAI's ``kai.scheduler/task-priority`` label), or ``None``."""
    value = p.obj.labels.get(TASK_ORDER)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:  # KAI orders such a pod last too
        report.guess(
            f"Pod {p.obj.key}: metadata.labels.{TASK_ORDER}", f"{shown(value)} is not a whole number: no order"
        )
        return None


EXPECTED_END = "gpu-preempt/expected-end"
"""The annotation (RFC 3339) that says when a running job is expected to finish."""


def job_of(
    group: Group, classes: dict[str, int], queues: set[str], report: Report, *, cpu_jobs: bool = True
) -> dict[str, Any] | None:
    """``group`` as a snapshot job, or ``None`` (reported) when it is none (:func:`~.groups.becomes_job`): its pods
    that ask for GPUs, or all of them for a job without GPUs."""
    if not becomes_job(group, cpu_jobs):
        if group.source is not None and not group.pods:
            report.ignore(group.source.kind, f"{group.name} (no pods and no GPU request)")
        return None
    members = sorted((p for p in group.pods if p.gpus or not asks_gpus(group)), key=lambda p: p.obj.key)
    where = group.source.ref if group.source is not None else f"Pod {group.name}"
    assert group.queue is not None
    if group.queue not in queues:
        path = group.source.at("spec.queue") if group.source is not None else f"Pod {group.name}: metadata.labels"
        report.guess(path, f"queue {shown(group.queue)} is not in the input: job left out")
        return None
    tasks: list[dict[str, Any]] = []
    for p in members:
        task: dict[str, Any] = {"name": p.obj.key, "status": p.status, "resources": quantities(p.requests)}
        if p.node is not None:
            task["node"] = p.node
        if p.on_devices is not None:
            task["devices"] = p.on_devices
        order = _task_order(p, report)
        if order is not None:
            task["order"] = order
        tasks.append(task)
    shape = members[0].requests if members else group.template or {}
    for i in range(len(tasks), group.expected):
        tasks.append({"name": f"{group.name}/member-{i}", "status": "pending", "resources": quantities(shape)})
    if not tasks:  # a group of zero members (a pod set's count of 0) with no pod: nothing to schedule
        report.ignore(group.source.kind if group.source is not None else "Pod", f"{group.name} (no pods and 0 members)")
        return None
    if len(tasks) > len(members):
        report.notes.append(f"{where}: {len(tasks) - len(members)} member(s) without a pod yet are pending tasks")
    job: dict[str, Any] = {"name": group.name, "queue": group.queue}
    devices = max((p.devices for p in members if is_share(p)), default=1)
    if devices > 1:
        job["gpu_devices"] = devices
    if all(t["resources"] == tasks[0]["resources"] for t in tasks):
        job["task_resources"] = tasks[0]["resources"]
        for t in tasks:
            del t["resources"]
    first = members[0].obj if members else None
    pclass = group.priority_class or (
        (first.get("spec", "priorityClassName") or first.labels.get(KAI_PRIORITY_LABEL)) if first is not None else None
    )
    if pclass in classes:
        job["priority_class"] = pclass
    else:
        priority = first.get("spec", "priority") if first is not None else None
        if isinstance(priority, int) and not isinstance(priority, bool):
            job["priority"] = priority
        if pclass:
            report.guess(where, f"priority class {shown(pclass)} is not in the input: the pods' priority used")
    if group.preemptible is not None:
        job["preemptible"] = group.preemptible
    if group.min_member is not None and group.min_member < len(tasks):
        job["min_available"] = group.min_member
    elif any("order" in t for t in tasks):  # docs/rules.md, "Task order": only an elastic job's surplus has an order
        for t in tasks:
            t.pop("order", None)
        report.notes.append(f"{where}: {TASK_ORDER} left out: the job is not elastic")
    created = group.created_at
    if created is None and members:
        found = [
            instant(p.obj, "metadata.creationTimestamp", p.obj.get("metadata", "creationTimestamp")) for p in members
        ]
        created = min((c for c in found if c is not None), default=None)
    if created is not None:
        job["created_at"] = format_time(created)
    delay = group.preemption_delay or next(
        (d for p in members if (d := preemption_delay(p.obj, p.obj.annotations.get(PREEMPTION_DELAY), DELAY_AT))), None
    )
    if delay is not None and created is not None:
        job["preemption_delay"] = delay
    running = [p for p in members if p.status == "running"]
    started = group.started_at
    if started is None and running:
        times = [t for t in (pod_scheduled_at(p.obj) for p in running) if t is not None]
        started = min(times, default=None)
        if started is None:
            report.guess(where, "running, but no start time: not protected by any min-runtime")
    if started is not None and running:
        job["started_at"] = format_time(started)
    if group.requeue is not None:
        job["requeue"] = group.requeue
    end = _expected_end(group, running, started)
    if end is not None:
        job["expected_end"] = format_time(end)
    placement = _placement(group, members, where, report)
    if placement:
        job["placement"] = placement
    job["tasks"] = tasks
    uids = {p.obj.key: p.obj.get("metadata", "uid") for p in members if p.obj.get("metadata", "uid")}
    if uids:
        job["annotations"] = {"pod-uids": uids}
    return job


def _expected_end(group: Group, running: list[Pod], started: float | None) -> float | None:
    """When the running pods are expected to finish (docs/kubernetes.md, "Expected end"): the annotation
    :data:`EXPECTED_END` on the pod group or a running pod, else ``activeDeadlineSeconds`` from the start."""
    if not running:
        return None
    sources = [*([group.source] if group.source is not None else []), *(p.obj for p in running)]
    for obj in sources:
        value = obj.annotations.get(EXPECTED_END)
        if value is not None:
            found = instant(obj, f"metadata.annotations.{EXPECTED_END}", value)
            if found is not None:
                return found
    deadlines = [d for p in running if isinstance(d := p.obj.get("spec", "activeDeadlineSeconds"), int)]
    if deadlines and started is not None:
        return started + min(deadlines)
    return None


def _placement(group: Group, pods: list[Pod], where: str, report: Report) -> dict[str, Any]:
    """The job's placement: its first pod's (the others', if they differ, reported), else its template's; with the
    topology its group or its first pod asks for."""
    placement = dict(group.placement)
    if pods:
        first = pods[0].obj
        placement = pod_placement(first, first.get("spec"), "spec", report)
        if any(pod_placement(p.obj, p.obj.get("spec"), "spec", Report()) != placement for p in pods[1:]):
            report.guess(where, f"its pods differ in where they may run: the placement of {first.ref} is used")
    topology, at = group.topology, group.topology_at
    if not topology and pods:
        topology, at = pod_topology(pods[0].obj), pods[0].obj.at("metadata.annotations")
    if topology:
        placement["topology"] = topology
        group.topology_at = at
    return placement


STUCK_RELEASING = 120.0
"""KAI's ``--stuck-in-releasing-threshold`` default (``DefaultStuckInReleasingThreshold``, 2 minutes)."""


def stuck_in_releasing(pods: list[Pod], now: float, report: Report) -> tuple[list[Pod], dict[str, Resources]]:
    """The pods that stay tasks, and per node what pods stuck in releasing hold (docs/kubernetes.md): a pod whose
    deletion began more than :data:`STUCK_RELEASING` before ``now`` is KAI's StuckInReleasing, whose room nothing is
    pipelined onto any more; it holds its room as capacity taken off its node, not as a releasing task. A stuck
    share of a GPU stays releasing (part of a device cannot be taken off), with a note."""
    kept: list[Pod] = []
    held: dict[str, Resources] = {}
    for p in pods:
        stuck = p.status == "releasing" and p.deleted_at is not None and now - p.deleted_at > STUCK_RELEASING
        if not stuck or p.node is None:
            kept.append(p)
            continue
        since = f"its deletion began {format_duration(now - (p.deleted_at or now))} ago"
        if is_share(p):
            report.guess(f"Pod {p.obj.key}", f"{since}, stuck in releasing: a share of a GPU, kept releasing")
            kept.append(p)
            continue
        held[p.node] = add(held.get(p.node, {}), p.requests)
        report.notes.append(
            f"Pod {p.obj.key}: {since}, past KAI's stuck-in-releasing threshold (2m): its room on {p.node} is held, "
            "taken off the node, not promised to anyone"
        )
    return kept, held


def hold_pod(node: dict[str, Any], load: Resources) -> None:
    """Take what pods stuck in releasing hold off the node's resources (GPUs included: whole devices)."""
    resources = node["resources"]
    left = {r: max(0, parse_quantity(v) - load.get(r, 0)) for r, v in resources.items()}
    node["resources"] = {r: quantities({r: a})[r] for r, a in left.items()}


def take_pod(node: dict[str, Any], load: Resources, report: Report) -> None:
    """Take pods without GPUs off the node's resources."""
    resources = node["resources"]
    left: dict[str, Any] = {}
    for resource, value in resources.items():
        milli = parse_quantity(value)
        if resource == "gpu":
            left[resource] = value
            continue
        remaining = milli - load.get(resource, 0)
        if remaining < 0:
            report.guess(f"Node {node['name']}", f"pods without GPUs ask for more {resource} than it has: 0 left")
            remaining = 0
        left[resource] = quantities({resource: remaining})[resource]
    node["resources"] = left
    shown = ", ".join(f"{r} {v}" for r, v in quantities({r: a for r, a in load.items() if r != "gpu"}).items())
    report.notes.append(f"Node {node['name']}: {shown} taken by pods without GPUs")
