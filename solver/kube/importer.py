"""A snapshot from Kubernetes objects (``gpu-preempt import``): nodes, queues, priority classes, jobs.

Jobs are gangs of pods (docs/kubernetes.md):

* a KAI ``PodGroup`` (pods name it in the ``pod-group-name`` annotation): ``spec.minMember`` (0 = 1),
  ``spec.queue``, ``spec.priorityClassName``, ``spec.preemptibility``; the annotation
  ``kai.scheduler/last-start-timestamp`` is the min-runtime clock; ``spec.preemptionDelay`` (or the
  ``kai.scheduler/preemption-delay`` annotation of the group or its pods) the job's ``preemption_delay``;
* a Kueue ``Workload`` (pods share its owner, e.g. the batch Job): ``spec.queueName`` names a LocalQueue, whose
  ClusterQueue is the job's queue; ``spec.podSets[].count`` / ``minCount``; ``status.requeueState``;
  ``spec.active: false`` deactivates it;
* a Volcano ``PodGroup`` (annotation ``scheduling.k8s.io/group-name``): ``spec.minMember``, ``spec.queue``;
* any other pod is a job of its own.

Members a group expects but that have no pod yet are pending tasks shaped like its pods. Pods that ask for no GPU
are CPU and memory load on their nodes (taken off the node's resources), not jobs. Job and task names are
``namespace/name``, so that a plan can name the pods to evict.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from gpu_preempt.models import Resources, SnapshotError, parse_quantity
from gpu_preempt.models.duration import format_duration, format_time, parse_duration
from gpu_preempt.models.errors import FieldError, shown
from gpu_preempt.models.quantity import add

from .core import (
    RESERVATION_NAMESPACE,
    Pod,
    Report,
    effective_requests,
    instant,
    is_share,
    node_entry,
    pod,
    priority_class_entry,
    quantities,
    replicas_of,
    share_devices,
    time_sliced,
)
from .core import scheduled_at as pod_scheduled_at
from .placement import kai_topology, node_taints, pod_placement, pod_topology, topology_levels, workload_topology
from .queues import KAI_GROUP, KUEUE_GROUP, VOLCANO_GROUP, kai_queue, kueue_cluster_queue, kueue_cohort, volcano_queue
from .read import KubeObject

__all__ = [
    "DEFAULT_QUEUE",
    "DELAY_AT",
    "HANDLED",
    "IGNORED_KINDS",
    "KAI_PRIORITY_LABEL",
    "KAI_TOPOLOGY",
    "MAX_MEMBERS",
    "PREEMPTION_DELAY",
    "QUEUE_LABELS",
    "STUCK_RELEASING",
    "TASK_ORDER",
    "Group",
    "QueueSource",
    "import_objects",
]

QueueSource = Literal["kai", "kueue", "volcano", "labels"]
DEFAULT_QUEUE = "default"
QUEUE_LABELS = ("kai.scheduler/queue", "kueue.x-k8s.io/queue-name", "scheduling.volcano.sh/queue-name")
"""Pod labels that name a queue (``--queue-source labels``)."""
KAI_PRIORITY_LABEL = "priorityClassName"
"""The pod label KAI-Scheduler reads a pod's priority class from."""

IGNORED_KINDS = {
    "Namespace", "Service", "Endpoints", "EndpointSlice", "ConfigMap", "Secret", "ServiceAccount", "Event",
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "PersistentVolumeClaim",
    "PersistentVolume", "PodDisruptionBudget", "LimitRange", "ResourceQuota", "Lease", "ControllerRevision",
    "ResourceFlavor", "WorkloadPriorityClass", "AdmissionCheck", "SchedulingShard", "BindRequest", "Topology",
}  # fmt: skip
"""Kinds a dump often holds that say nothing the snapshot keeps: counted and named in the report."""


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


def import_objects(
    objects: list[KubeObject], *, now: float | None = None, queue_source: QueueSource | None = None
) -> tuple[dict[str, Any], Report]:
    """The snapshot document of ``objects`` and the report of what was guessed or left out."""
    report = Report()
    by_kind: dict[tuple[str, str], list[KubeObject]] = {}
    unknown: list[FieldError] = []
    for obj in objects:
        known = (obj.group, obj.kind) in HANDLED
        if known and not obj.name:
            unknown.append(FieldError(f"{obj.origin}.metadata.name", f"missing: every {obj.kind} has a name"))
        elif not known and obj.kind in IGNORED_KINDS:
            report.ignore(obj.kind, obj.key or f"(unnamed, {obj.origin})")
        elif not known:
            message = f"unknown kind {obj.kind} (apiVersion {obj.group + '/' if obj.group else ''}{obj.version})"
            unknown.append(FieldError(obj.ref, message))
        else:
            by_kind.setdefault((obj.group, obj.kind), []).append(obj)
    if unknown:
        raise SnapshotError(unknown)

    def kind(group: str, name: str) -> list[KubeObject]:
        return by_kind.get((group, name), [])

    source = queue_source or _detect(by_kind)
    if now is None:
        now = time.time()
        report.guess("now", "not given (--now): the current time")
    nodes = [node_entry(o, report) for o in kind("", "Node")]
    for entry, o in zip(nodes, kind("", "Node"), strict=True):
        taints = node_taints(o)
        if taints:
            entry["taints"] = taints
    _unique(kind("", "Node"))
    _unique(kind("scheduling.k8s.io", "PriorityClass"))
    classes = [priority_class_entry(o) for o in kind("scheduling.k8s.io", "PriorityClass")]
    queues, local_queues = _queues(source, kind, report)
    groups = _groups(kind, report)
    reserving = [o for o in kind("", "Pod") if o.namespace == RESERVATION_NAMESPACE]
    if reserving:
        report.notes.append(
            f"{len(reserving)} KAI reservation pod(s) in {RESERVATION_NAMESPACE} hold shared devices: their shares "
            "stand for them"
        )
    pods = [p for p in (pod(o, report) for o in kind("", "Pod") if o.namespace != RESERVATION_NAMESPACE) if p]
    gpu_nodes = [o for o in kind("", "Node") if (o.get("status", "allocatable") or {}).get("nvidia.com/gpu")]
    time_sliced(pods, {o.name: replicas_of(o) for o in gpu_nodes}, report)
    share_devices(pods)
    pods, held = _stuck_in_releasing(pods, now, report)
    node_names = {n["name"] for n in nodes}
    jobs: list[dict[str, Any]] = []
    load: dict[str, Resources] = {}
    members = _assign(pods, groups, source, local_queues, report)
    for p in pods:
        if p.node is not None and p.node not in node_names:
            field_name = "status.nominatedNodeName" if p.status == "nominated" else "spec.nodeName"
            raise SnapshotError.single(p.obj.at(field_name), f"names node {shown(p.node)}, which is not in the input")
        if not p.gpus:
            if p.node is not None and p.status in ("running", "releasing"):
                load[p.node] = {r: load.get(p.node, {}).get(r, 0) + a for r, a in p.requests.items()}
            else:
                report.ignore("Pod", f"{p.obj.key} (asks for no GPU and is not on a node)")
    class_names = {c["name"]: c["value"] for c in classes}
    global_default = [o for o in kind("scheduling.k8s.io", "PriorityClass") if o.get("globalDefault") is True]
    queue_names = {q["name"] for q in queues}
    if DEFAULT_QUEUE not in queue_names and any(g.queue == DEFAULT_QUEUE and _asks_gpus(g) for g in members):
        queues.append({"name": DEFAULT_QUEUE})
        queue_names.add(DEFAULT_QUEUE)
        report.guess("queues", f"jobs without a queue go to a top-level queue {shown(DEFAULT_QUEUE)} without quota")
    for group in members:
        job = _job(group, class_names, queue_names, report)
        if job is not None:
            jobs.append(job)
    levels = topology_levels([*kind(KAI_TOPOLOGY, "Topology"), *kind(KUEUE_GROUP, "Topology")])
    _topology_levels(jobs, members, nodes, levels, report)
    for node in nodes:
        taken = load.get(node["name"])
        if taken:
            _take(node, taken, report)
        stuck = held.get(node["name"])
        if stuck:
            _hold(node, stuck)
    config: dict[str, Any] = {}
    if source == "kueue":  # docs/rules.md, "Kueue's preemption"
        config["policy"] = "kueue"
        report.notes.append(
            "kueue: decided by Kueue's classical preemption (its fair sharing is set in its own config)"
        )
    if levels:
        config["topology"] = levels
    if global_default:
        config["default_priority"] = global_default[0].get("value")
    else:
        config["default_priority"] = 0
        report.guess("config.default_priority", "no globalDefault PriorityClass: 0, as Kubernetes gives such pods")
    if source != "kai":
        # only KAI marks jobs non-preemptible (priority 100 and up, or spec.preemptibility); Kubernetes, Kueue and
        # Volcano may preempt any pod of lower priority
        highest = max([*class_names.values(), *(j.get("priority", 0) for j in jobs), config["default_priority"]])
        config["preemptible_below_priority"] = highest + 1
        report.notes.append(f"{source}: every job is preemptible (no non-preemptible jobs outside KAI)")
    document: dict[str, Any] = {
        "now": format_time(now),
        "config": config,
        "nodes": nodes,
        "queues": queues,
        "priority_classes": classes,
        "jobs": jobs,
    }
    return document, report


KAI_TOPOLOGY = "kai.scheduler"
"""The API group of KAI-Scheduler's Topology objects."""

HANDLED = {
    ("", "Node"), ("", "Pod"), ("scheduling.k8s.io", "PriorityClass"),
    (KAI_GROUP, "Queue"), (KAI_GROUP, "PodGroup"), (KAI_TOPOLOGY, "Topology"),
    (KUEUE_GROUP, "ClusterQueue"), (KUEUE_GROUP, "LocalQueue"), (KUEUE_GROUP, "Cohort"), (KUEUE_GROUP, "Workload"),
    (KUEUE_GROUP, "Topology"),
    (VOLCANO_GROUP, "Queue"), (VOLCANO_GROUP, "PodGroup"),
}  # fmt: skip


def _unique(objects: list[KubeObject]) -> None:
    """Two objects of one kind with one name are an error naming both input items."""
    seen: dict[str, KubeObject] = {}
    for obj in objects:
        first = seen.setdefault(obj.key, obj)
        if first is not obj:
            message = f"{obj.ref} is given twice: here and at {first.origin}"
            raise SnapshotError.single(f"{obj.origin}.metadata.name", message)


def _topology_levels(
    jobs: list[dict[str, Any]], groups: list[Group], nodes: list[dict[str, Any]], levels: list[str], report: Report
) -> None:
    """Check the jobs' topology levels against the declared ``levels`` (adding, reported, one no Topology declares)
    and the nodes' labels (a required level no node carries is an error naming where the job asks for it)."""
    carried = {key for node in nodes for key in node.get("labels", {})}
    by_name = {g.name: g for g in groups}
    for job in jobs:
        topology = job.get("placement", {}).get("topology")
        if not topology:
            continue
        group = by_name[job["name"]]
        where = group.topology_at
        for level in (topology.get("required"), topology.get("preferred")):
            if level and level not in levels:
                levels.append(level)
                report.guess(where, f"topology level {shown(level)} is in no Topology object: a level of its own")
        required, preferred = topology.get("required"), topology.get("preferred")
        if required and required not in carried:
            raise SnapshotError.single(where, f"required topology level {shown(required)}: no node carries that label")
        if required and preferred and levels.index(preferred) < levels.index(required):
            raise SnapshotError.single(where, f"preferred level {shown(preferred)} is coarser than {shown(required)}")


def _detect(by_kind: dict[tuple[str, str], list[KubeObject]]) -> QueueSource:
    if (KAI_GROUP, "Queue") in by_kind or (KAI_GROUP, "PodGroup") in by_kind:
        return "kai"
    if (KUEUE_GROUP, "ClusterQueue") in by_kind or (KUEUE_GROUP, "Workload") in by_kind:
        return "kueue"
    if (VOLCANO_GROUP, "Queue") in by_kind or (VOLCANO_GROUP, "PodGroup") in by_kind:
        return "volcano"
    return "labels"


def _queues(source: QueueSource, kind: Any, report: Report) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The queue tree, and for Kueue each LocalQueue (``namespace/name``) -> its ClusterQueue."""
    local: dict[str, str] = {}
    if source == "kai":
        queues = [kai_queue(o, report) for o in kind(KAI_GROUP, "Queue")]
    elif source == "volcano":
        queues = [volcano_queue(o, report) for o in kind(VOLCANO_GROUP, "Queue")]
    elif source == "kueue":
        queues = _kueue_tree(kind, report)
        for o in kind(KUEUE_GROUP, "LocalQueue"):
            target = o.get("spec", "clusterQueue")
            if not isinstance(target, str) or not target:
                raise SnapshotError.single(o.at("spec.clusterQueue"), "missing: a LocalQueue names its ClusterQueue")
            local[o.key] = target
    else:
        queues = []
    if not queues:
        report.guess("queues", f"none in the input: one queue {shown(DEFAULT_QUEUE)} without quota holds every job")
        queues = [{"name": DEFAULT_QUEUE}]
    return queues, local


def _kueue_tree(kind: Any, report: Report) -> list[dict[str, Any]]:
    leaves: list[dict[str, Any]] = []
    for o in kind(KUEUE_GROUP, "ClusterQueue"):
        entry, cohort = kueue_cluster_queue(o, report)
        if cohort:
            entry["parent"] = cohort
        leaves.append(entry)
    cohorts = {o.name: kueue_cohort(o, report) for o in kind(KUEUE_GROUP, "Cohort")}
    for entry in leaves:
        cohort = entry.get("parent")
        if cohort and cohort not in cohorts:
            cohorts[cohort] = {"name": cohort}
            report.guess(f"cohort {cohort}", "no Cohort object: a parent queue without a quota of its own")
    for entry in list(cohorts.values()):
        if entry.get("parent") and entry["parent"] not in cohorts:
            cohorts[entry["parent"]] = {"name": entry["parent"]}
    return [*cohorts.values(), *leaves]


PREEMPTION_DELAY = "kai.scheduler/preemption-delay"
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


DELAY_AT = f"metadata.annotations.{PREEMPTION_DELAY}"


def _delay(o: KubeObject, value: object, at: str) -> str | None:
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


def _count(o: KubeObject, value: object, at: str, default: int) -> int:
    """A member count (a pod set's count, a group's ``minMember``): a whole number from 0 to :data:`MAX_MEMBERS`,
    ``default`` when absent or null (the API's default)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MEMBERS:
        raise SnapshotError.single(o.at(at), f"expected a whole number from 0 to {MAX_MEMBERS:,}, got {shown(value)}")
    return value


def _groups(kind: Any, report: Report) -> dict[str, Group]:
    """Scheduler groups by ``namespace/name`` (Kueue: by the uid of the workload's owner, see :func:`_assign`)."""
    groups: dict[str, Group] = {}
    for o in [*kind(KAI_GROUP, "PodGroup"), *kind(VOLCANO_GROUP, "PodGroup")]:
        spec = o.get("spec") or {}
        minimum = spec.get("minMember")
        if minimum is not None:
            minimum = _count(o, minimum, "spec.minMember", 0)
        preemptibility = spec.get("preemptibility")
        started = o.annotations.get("kai.scheduler/last-start-timestamp")
        groups[o.key] = Group(
            name=o.key,
            queue=spec.get("queue"),
            priority_class=spec.get("priorityClassName"),
            min_member=max(1, minimum or 0) if minimum is not None else None,
            expected=minimum or 0,
            preemptible={"preemptible": True, "non-preemptible": False}.get(preemptibility or ""),
            started_at=instant(o, "metadata.annotations.kai.scheduler/last-start-timestamp", started),
            created_at=instant(o, "metadata.creationTimestamp", o.get("metadata", "creationTimestamp")),
            preemption_delay=_delay(o, spec.get("preemptionDelay"), "spec.preemptionDelay")
            or _delay(o, o.annotations.get(PREEMPTION_DELAY), f"metadata.annotations.{PREEMPTION_DELAY}"),
            source=o,
        )
        topology, at = kai_topology(o)
        if topology:
            groups[o.key].topology, groups[o.key].topology_at = topology, o.at(at)
    for o in kind(KUEUE_GROUP, "Workload"):
        spec = o.get("spec") or {}
        count = minimum = 0
        template: Resources | None = None
        placement: dict[str, Any] = {}
        for i, podset in enumerate(spec.get("podSets") or []):
            if not isinstance(podset, dict):
                raise SnapshotError.single(o.at(f"spec.podSets[{i}]"), f"expected a pod set, got {shown(podset)}")
            n = _count(o, podset.get("count"), f"spec.podSets[{i}].count", 1)
            count += n
            minimum += _count(o, podset.get("minCount"), f"spec.podSets[{i}].minCount", n)
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


def _assign(
    pods: list[Pod], groups: dict[str, Group], source: QueueSource, local: dict[str, str], report: Report
) -> list[Group]:
    """Every pod in its group (a group of its own when it has none), with each group's leaf queue resolved."""
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
            group.priority_class = p.obj.get("spec", "priorityClassName") or labels.get(KAI_PRIORITY_LABEL)
            order.append(group)
        group.pods.append(p)
    for group in order:
        group.queue = _leaf(group, source, local, report)
    return [group for group in order if group.queue is not None]


def _leaf(group: Group, source: QueueSource, local: dict[str, str], report: Report) -> str | None:
    """The job's leaf queue: a Workload's LocalQueue resolved to its ClusterQueue, else the queue its group or its
    pods' labels name, else :data:`DEFAULT_QUEUE` (reported); ``None`` (reported) for a LocalQueue not in the
    input: the job is left out."""
    if group.source is not None and group.source.group == KUEUE_GROUP:
        namespace = group.source.namespace or "default"
        if not group.queue:
            raise SnapshotError.single(group.source.at("spec.queueName"), "missing: a Workload names its LocalQueue")
        cluster_queue = local.get(f"{namespace}/{group.queue}")
        if cluster_queue is None and _asks_gpus(group):
            where = group.source.at("spec.queueName")
            report.guess(where, f"LocalQueue {shown(group.queue)} is not in namespace {namespace}: job left out")
        return cluster_queue
    if group.queue and source == "kueue" and group.source is None:  # a plain pod names its LocalQueue by label
        namespace = group.pods[0].obj.namespace or "default" if group.pods else "default"
        cluster_queue = local.get(f"{namespace}/{group.queue}")
        if cluster_queue is None and _asks_gpus(group):
            where = f"Pod {group.name}: metadata.labels.kueue.x-k8s.io/queue-name"
            report.guess(where, f"LocalQueue {shown(group.queue)} is not in namespace {namespace}: job left out")
        return cluster_queue
    if group.queue:
        return group.queue
    if source != "labels" and _asks_gpus(group):
        where = group.source.ref if group.source is not None else f"Pod {group.name}"
        report.guess(where, f"names no queue: queue {shown(DEFAULT_QUEUE)}")
    return DEFAULT_QUEUE


def _asks_gpus(group: Group) -> bool:
    """Whether the group becomes a job: a pod of it, or its template, asks for GPUs."""
    return any(p.gpus for p in group.pods) or bool(group.template and group.template.get("gpu"))


def _job(group: Group, classes: dict[str, int], queues: set[str], report: Report) -> dict[str, Any] | None:
    gpu_pods = sorted((p for p in group.pods if p.gpus), key=lambda p: p.obj.key)
    if not gpu_pods and not (group.template and group.template.get("gpu")):
        if group.source is not None and not group.pods:
            report.ignore(group.source.kind, f"{group.name} (no pods and no GPU request)")
        return None
    where = group.source.ref if group.source is not None else f"Pod {group.name}"
    assert group.queue is not None
    if group.queue not in queues:
        path = group.source.at("spec.queue") if group.source is not None else f"Pod {group.name}: metadata.labels"
        report.guess(path, f"queue {shown(group.queue)} is not in the input: job left out")
        return None
    tasks: list[dict[str, Any]] = []
    for p in gpu_pods:
        task: dict[str, Any] = {"name": p.obj.key, "status": p.status, "resources": quantities(p.requests)}
        if p.node is not None:
            task["node"] = p.node
        if p.on_devices is not None:
            task["devices"] = p.on_devices
        order = _task_order(p, report)
        if order is not None:
            task["order"] = order
        tasks.append(task)
    shape = gpu_pods[0].requests if gpu_pods else group.template or {}
    for i in range(len(tasks), group.expected):
        tasks.append({"name": f"{group.name}/member-{i}", "status": "pending", "resources": quantities(shape)})
    if not tasks:  # a group of zero members (a pod set's count of 0) with no pod: nothing to schedule
        report.ignore(group.source.kind if group.source is not None else "Pod", f"{group.name} (no pods and 0 members)")
        return None
    if len(tasks) > len(gpu_pods):
        report.notes.append(f"{where}: {len(tasks) - len(gpu_pods)} member(s) without a pod yet are pending tasks")
    job: dict[str, Any] = {"name": group.name, "queue": group.queue}
    devices = max((p.devices for p in gpu_pods if is_share(p)), default=1)
    if devices > 1:
        job["gpu_devices"] = devices
    if all(t["resources"] == tasks[0]["resources"] for t in tasks):
        job["task_resources"] = tasks[0]["resources"]
        for t in tasks:
            del t["resources"]
    first = gpu_pods[0].obj if gpu_pods else None
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
    if created is None and gpu_pods:
        found = [
            instant(p.obj, "metadata.creationTimestamp", p.obj.get("metadata", "creationTimestamp")) for p in gpu_pods
        ]
        created = min((c for c in found if c is not None), default=None)
    if created is not None:
        job["created_at"] = format_time(created)
    delay = group.preemption_delay or next(
        (d for p in gpu_pods if (d := _delay(p.obj, p.obj.annotations.get(PREEMPTION_DELAY), DELAY_AT))), None
    )
    if delay is not None and created is not None:
        job["preemption_delay"] = delay
    running = [p for p in gpu_pods if p.status == "running"]
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
    placement = _placement(group, gpu_pods, where, report)
    if placement:
        job["placement"] = placement
    job["tasks"] = tasks
    uids = {p.obj.key: p.obj.get("metadata", "uid") for p in gpu_pods if p.obj.get("metadata", "uid")}
    if uids:
        job["annotations"] = {"pod-uids": uids}
    return job


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


def _stuck_in_releasing(pods: list[Pod], now: float, report: Report) -> tuple[list[Pod], dict[str, Resources]]:
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


def _hold(node: dict[str, Any], load: Resources) -> None:
    """Take what pods stuck in releasing hold off the node's resources (GPUs included: whole devices)."""
    resources = node["resources"]
    left = {r: max(0, parse_quantity(v) - load.get(r, 0)) for r, v in resources.items()}
    node["resources"] = {r: quantities({r: a})[r] for r, a in left.items()}


def _take(node: dict[str, Any], load: Resources, report: Report) -> None:
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
