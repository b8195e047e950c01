"""Scheduler groups read from a dump (docs/kubernetes.md): KAI's and Volcano's PodGroups, Kueue's Workloads, and a
plain pod alone; each pod assigned to its group, and each group to its leaf queue."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gpu_preempt.models import Resources, SnapshotError
from gpu_preempt.models.duration import parse_duration
from gpu_preempt.models.errors import shown

from .core import (
    Pod,
    Report,
    effective_requests,
    instant,
)
from .placement import kai_topology, pod_placement, workload_topology
from .queues import KAI_GROUP, KUEUE_GROUP, VOLCANO_GROUP
from .read import KubeObject
from .times import LAST_START

__all__ = [
    "DEFAULT_QUEUE",
    "DELAY_AT",
    "KAI_PRIORITY_LABEL",
    "MAX_MEMBERS",
    "PREEMPTION_DELAY",
    "QUEUE_LABELS",
    "Group",
    "QueueSource",
    "asks_gpus",
    "assign_pods",
    "becomes_job",
    "leaf_queue",
    "member_count",
    "preemption_delay",
    "scheduler_groups",
]


QueueSource = Literal["kai", "kueue", "volcano", "labels"]


DEFAULT_QUEUE = "default"


QUEUE_LABELS = ("kai.scheduler/queue", "kueue.x-k8s.io/queue-name", "scheduling.volcano.sh/queue-name")
"""Pod labels that name a queue (``--queue-source labels``)."""


KAI_PRIORITY_LABEL = "priorityClassName"
"""The pod label KAI-Scheduler reads a pod's priority class from."""


@dataclass
class Group:
    """A gang of pods: what its scheduler object says, and its pods."""

    name: str
    queue: str | None = None
    priority_class: str | None = None
    min_member: int | None = None
    expected: int = 0
    preemptible: bool | None = None
    started_at: float | None = None
    created_at: float | None = None
    preemption_delay: str | None = None
    """KAI's preemption delay (``spec.preemptionDelay``, or the ``kai.scheduler/preemption-delay`` annotation)."""
    requeue: dict[str, Any] | None = None
    template: Resources | None = None
    placement: dict[str, Any] = field(default_factory=dict)
    """A pod template's placement (a Workload's), used when no pod says where it may run."""
    topology: dict[str, str] = field(default_factory=dict)
    topology_at: str = ""
    """The field the topology was read from (for errors)."""
    source: KubeObject | None = None
    pods: list[Pod] = field(default_factory=list)
    labelled: bool = False
    """A pod of no group whose labels name its queue: the batch scheduler's, as a group's pods are."""


PREEMPTION_DELAY = "kai.scheduler/preemption-delay"


DELAY_AT = f"metadata.annotations.{PREEMPTION_DELAY}"


def preemption_delay(o: KubeObject, value: object, at: str) -> str | None:
    """A KAI preemption delay as given (a Kubernetes duration such as ``10m`` or ``1h30m``), or ``None``."""
    if value is None:
        return None
    try:
        parse_duration(value)
    except ValueError as error:
        raise SnapshotError.single(o.at(at), str(error)) from None
    return str(value)


MAX_MEMBERS = 100_000
"""The most members a group may ask for: each one not yet a pod becomes a pending task, and no gang of a real
cluster comes near it (a number beyond is a broken object, not a workload)."""


def member_count(o: KubeObject, value: object, at: str, default: int) -> int:
    """A member count (a pod set's count, a group's ``minMember``): a whole number from 0 to :data:`MAX_MEMBERS`,
    ``default`` when absent or null (the API's default)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MEMBERS:
        raise SnapshotError.single(o.at(at), f"expected a whole number from 0 to {MAX_MEMBERS:,}, got {shown(value)}")
    return value


_PREEMPTIBLE = {"preemptible": True, "non-preemptible": False}


def scheduler_groups(kind: Any, report: Report) -> dict[str, Group]:
    """Scheduler groups by ``namespace/name`` (Kueue: by the uid of the workload's owner, see :func:`assign_pods`)."""
    groups: dict[str, Group] = {}
    for o in [*kind(KAI_GROUP, "PodGroup"), *kind(VOLCANO_GROUP, "PodGroup")]:
        body, key = o.body, o.key
        spec = body.get("spec") or {}
        metadata = body.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        minimum = spec.get("minMember")
        if minimum is not None:
            minimum = member_count(o, minimum, "spec.minMember", 0)
        preemptibility = spec.get("preemptibility")
        group = groups[key] = Group(
            name=key,
            queue=spec.get("queue"),
            priority_class=spec.get("priorityClassName"),
            min_member=max(1, minimum or 0) if minimum is not None else None,
            expected=minimum or 0,
            preemptible=_PREEMPTIBLE.get(preemptibility or ""),
            started_at=instant(o, f"metadata.annotations.{LAST_START}", annotations.get(LAST_START)),
            created_at=instant(o, "metadata.creationTimestamp", metadata.get("creationTimestamp")),
            preemption_delay=preemption_delay(o, spec.get("preemptionDelay"), "spec.preemptionDelay")
            or preemption_delay(o, annotations.get(PREEMPTION_DELAY), f"metadata.annotations.{PREEMPTION_DELAY}"),
            source=o,
        )
        if spec.get("topologyConstraint"):
            topology, at = kai_topology(o)
            if topology:
                group.topology, group.topology_at = topology, o.at(at)
    for o in kind(KUEUE_GROUP, "Workload"):
        spec = o.get("spec") or {}
        count = minimum = 0
        template: Resources | None = None
        placement: dict[str, Any] = {}
        for i, podset in enumerate(spec.get("podSets") or []):
            if not isinstance(podset, dict):
                raise SnapshotError.single(o.at(f"spec.podSets[{i}]"), f"expected a pod set, got {shown(podset)}")
            n = member_count(o, podset.get("count"), f"spec.podSets[{i}].count", 1)
            count += n
            minimum += member_count(o, podset.get("minCount"), f"spec.podSets[{i}].minCount", n)
            pod_spec = (podset.get("template") or {}).get("spec")
            if template is None and isinstance(pod_spec, dict):
                template = effective_requests(o, report, pod_spec)
                placement = pod_placement(o, pod_spec, f"spec.podSets[{i}].template.spec", report)
        requeue = None
        state = o.get("status", "requeueState") or {}
        if state or spec.get("active") is False:
            requeue = {"count": state.get("count", 0)}
            if state.get("requeueAt"):
                requeue["requeue_at"] = state["requeueAt"]
            if spec.get("active") is False:
                requeue["active"] = False
        priority_class = spec.get("priorityClassName") or (spec.get("priorityClassRef") or {}).get("name")
        group = Group(
            name=o.key,
            queue=spec.get("queueName"),
            priority_class=priority_class,
            min_member=minimum or None,
            expected=count,
            created_at=instant(o, "metadata.creationTimestamp", o.get("metadata", "creationTimestamp")),
            requeue=requeue,
            template=template,
            placement=placement,
            topology=workload_topology(o),
            topology_at=o.at("spec.podSets[].topologyRequest"),
            source=o,
        )
        groups[o.key] = group
    return groups


def assign_pods(
    pods: list[Pod],
    groups: dict[str, Group],
    source: QueueSource,
    local: dict[str, str],
    report: Report,
    *,
    cpu_jobs: bool = True,
) -> list[Group]:
    """Every pod in its group (a group of its own when it has none), with each group's leaf queue resolved
    (``cpu_jobs``: see :func:`becomes_job`)."""
    by_owner: dict[str, Group] = {}
    for workload in groups.values():
        assert workload.source is not None
        if workload.source.group == KUEUE_GROUP:
            for owner in workload.source.get("metadata", "ownerReferences") or []:
                if isinstance(owner, dict) and owner.get("uid"):
                    by_owner[owner["uid"]] = workload
    order: list[Group] = list(groups.values())
    for p in pods:
        namespace = p.obj.namespace or "default"
        named = p.obj.annotations.get("pod-group-name") or p.obj.annotations.get("scheduling.k8s.io/group-name")
        group: Group | None = groups.get(f"{namespace}/{named}") if named else None
        if named and group is None:
            raise SnapshotError.single(
                p.obj.at("metadata.annotations"), f"names pod group {shown(named)}, not in the input"
            )
        if group is None:
            for owner in p.obj.get("metadata", "ownerReferences") or []:
                if isinstance(owner, dict) and owner.get("uid") in by_owner:
                    group = by_owner[owner["uid"]]
                    break
        if group is None:
            group = Group(
                name=p.obj.key,
                created_at=instant(p.obj, "metadata.creationTimestamp", p.obj.get("metadata", "creationTimestamp")),
            )
            labels = p.obj.labels
            group.queue = next((labels[k] for k in QUEUE_LABELS if labels.get(k)), None)
            group.labelled = group.queue is not None
            group.priority_class = p.obj.get("spec", "priorityClassName") or labels.get(KAI_PRIORITY_LABEL)
            order.append(group)
        group.pods.append(p)
    for group in order:
        group.queue = leaf_queue(group, source, local, report, cpu_jobs=cpu_jobs)
    return [group for group in order if group.queue is not None]


def leaf_queue(
    group: Group, source: QueueSource, local: dict[str, str], report: Report, *, cpu_jobs: bool = True
) -> str | None:
    """The job's leaf queue: a Workload's LocalQueue resolved to its ClusterQueue, else the queue its group or its
    pods' labels name, else :data:`DEFAULT_QUEUE` (reported); ``None`` (reported) for a LocalQueue not in the
    input: the job is left out."""
    if group.source is not None and group.source.group == KUEUE_GROUP:
        namespace = group.source.namespace or "default"
        if not group.queue:
            raise SnapshotError.single(group.source.at("spec.queueName"), "missing: a Workload names its LocalQueue")
        cluster_queue = local.get(f"{namespace}/{group.queue}")
        if cluster_queue is None and becomes_job(group, cpu_jobs):
            where = group.source.at("spec.queueName")
            report.guess(where, f"LocalQueue {shown(group.queue)} is not in namespace {namespace}: job left out")
        return cluster_queue
    if group.queue and source == "kueue" and group.source is None:  # a plain pod names its LocalQueue by label
        namespace = group.pods[0].obj.namespace or "default" if group.pods else "default"
        cluster_queue = local.get(f"{namespace}/{group.queue}")
        if cluster_queue is None and becomes_job(group, cpu_jobs):
            where = f"Pod {group.name}: metadata.labels.kueue.x-k8s.io/queue-name"
            report.guess(where, f"LocalQueue {shown(group.queue)} is not in namespace {namespace}: job left out")
        return cluster_queue
    if group.queue:
        return group.queue
    if source != "labels" and becomes_job(group, cpu_jobs):
        where = group.source.ref if group.source is not None else f"Pod {group.name}"
        report.guess(where, f"names no queue: queue {shown(DEFAULT_QUEUE)}")
    return DEFAULT_QUEUE


def asks_gpus(group: Group) -> bool:
    """Whether a pod of the group, or its template, asks for GPUs."""
    return any(p.gpus for p in group.pods) or bool(group.template and group.template.get("gpu"))


def becomes_job(group: Group, cpu_jobs: bool = True) -> bool:
    """Whether the group becomes a job: it asks for GPUs, or (``cpu_jobs``) it is the batch scheduler's and asks for
    CPU or memory: a pod group or a Workload, or a pod whose labels name its queue (docs/kubernetes.md, "Jobs
    without GPUs"). Other pods without GPUs (daemons, system pods) are load on their nodes."""
    if asks_gpus(group):
        return True
    asked = any(any(p.requests.values()) for p in group.pods) or bool(group.template and any(group.template.values()))
    return cpu_jobs and (group.source is not None or group.labelled) and asked
