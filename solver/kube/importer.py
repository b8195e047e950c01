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

Members a group expects but that have no pod yet are pending tasks shaped like its pods. A group that asks for no
GPU is a job when it is the batch scheduler's (a pod group, a Workload, or a pod whose labels name its queue);
other pods without GPUs (daemons, system pods, and all of them with ``cpu_jobs`` off) are CPU and memory load on
their nodes (taken off the node's resources), not jobs. Job and task names are
``namespace/name``, so that a plan can name the pods to evict.
"""

from __future__ import annotations

import time
from typing import Any

from gpu_preempt.models import Resources, SnapshotError
from gpu_preempt.models.duration import format_time
from gpu_preempt.models.errors import FieldError, shown
from gpu_preempt.models.snapshot import MAX_QUEUE_DEPTH

from .core import (
    RESERVATION_NAMESPACE,
    Report,
    node_entry,
    pod,
    priority_class_entry,
    replicas_of,
    share_devices,
    time_sliced,
)
from .groups import DEFAULT_QUEUE, Group, QueueSource, asks_gpus, assign_pods, becomes_job, scheduler_groups
from .jobs import hold_pod, job_of, stuck_in_releasing, take_pod
from .kai_config import KaiSettings, from_shard
from .placement import node_taints, topology_levels
from .queues import KAI_GROUP, KUEUE_GROUP, VOLCANO_GROUP, kai_queue, kueue_cluster_queue, kueue_cohort, volcano_queue
from .read import KubeObject
from .times import check_times

__all__ = ["HANDLED", "IGNORED_KINDS", "KAI_TOPOLOGY", "import_objects"]


IGNORED_KINDS = {
    "Namespace", "Service", "Endpoints", "EndpointSlice", "ConfigMap", "Secret", "ServiceAccount", "Event",
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "PersistentVolumeClaim",
    "PersistentVolume", "PodDisruptionBudget", "LimitRange", "ResourceQuota", "Lease", "ControllerRevision",
    "ResourceFlavor", "WorkloadPriorityClass", "AdmissionCheck", "BindRequest", "Topology",
}  # fmt: skip
"""Kinds a dump often holds that say nothing the snapshot keeps: counted and named in the report."""


def import_objects(
    objects: list[KubeObject],
    *,
    now: float | None = None,
    queue_source: QueueSource | None = None,
    cpu_jobs: bool = True,
    settings: list[KaiSettings] | None = None,
    times: bool = True,
) -> tuple[dict[str, Any], Report]:
    """The snapshot document of ``objects`` and the report of what was guessed or left out; without ``cpu_jobs``,
    jobs without GPUs are left out (their running pods load on their nodes). ``settings``: the snapshot config a KAI
    scheduler configuration gives (a KAI snapshot's, :mod:`.kai_config`); a ``SchedulingShard`` among the objects
    gives its own. ``times``: check every timestamp against ``now`` (:mod:`.times`); an audit that rebuilds an earlier
    state passes false, since later objects are then in the future."""
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
    if times:
        check_times(objects, now, report)
    nodes = [node_entry(o, report) for o in kind("", "Node")]
    for entry, o in zip(nodes, kind("", "Node"), strict=True):
        taints = node_taints(o)
        if taints:
            entry["taints"] = taints
    _unique(kind("", "Node"))
    _unique(kind("scheduling.k8s.io", "PriorityClass"))
    classes = [priority_class_entry(o) for o in kind("scheduling.k8s.io", "PriorityClass")]
    queues, local_queues = _queues(source, kind, report)
    groups = scheduler_groups(kind, report)
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
    pods, held = stuck_in_releasing(pods, now, report)
    node_names = {n["name"] for n in nodes}
    jobs: list[dict[str, Any]] = []
    load: dict[str, Resources] = {}
    members = assign_pods(pods, groups, source, local_queues, report, cpu_jobs=cpu_jobs)
    without_gpus = {id(p) for g in members if not asks_gpus(g) and becomes_job(g, cpu_jobs) for p in g.pods}
    for p in pods:
        if p.node is not None and p.node not in node_names:
            field_name = "status.nominatedNodeName" if p.status == "nominated" else "spec.nodeName"
            raise SnapshotError.single(p.obj.at(field_name), f"names node {shown(p.node)}, which is not in the input")
        if not p.gpus and id(p) not in without_gpus:
            if p.node is not None and p.status in ("running", "releasing"):
                load[p.node] = {r: load.get(p.node, {}).get(r, 0) + a for r, a in p.requests.items()}
            else:
                report.ignore("Pod", f"{p.obj.key} (asks for no GPU and is not on a node)")
    class_names = {c["name"]: c["value"] for c in classes}
    global_default = [o for o in kind("scheduling.k8s.io", "PriorityClass") if o.get("globalDefault") is True]
    queue_names = {q["name"] for q in queues}
    if DEFAULT_QUEUE not in queue_names and any(g.queue == DEFAULT_QUEUE and becomes_job(g, cpu_jobs) for g in members):
        queues.append({"name": DEFAULT_QUEUE})
        queue_names.add(DEFAULT_QUEUE)
        report.guess("queues", f"jobs without a queue go to a top-level queue {shown(DEFAULT_QUEUE)} without quota")
    for group in members:
        job = job_of(group, class_names, queue_names, report, cpu_jobs=cpu_jobs)
        if job is not None:
            jobs.append(job)
    levels = topology_levels([*kind(KAI_TOPOLOGY, "Topology"), *kind(KUEUE_GROUP, "Topology")])
    _topology_levels(jobs, members, nodes, levels, report)
    for node in nodes:
        taken = load.get(node["name"])
        if taken:
            take_pod(node, taken, report)
        stuck = held.get(node["name"])
        if stuck:
            hold_pod(node, stuck)
    config: dict[str, Any] = {}
    if source == "kueue":  # docs/rules.md, "Kueue's preemption"
        config["policy"] = "kueue"
        report.notes.append(
            "kueue: decided by Kueue's classical preemption (its fair sharing is set in its own config)"
        )
    if levels:
        config["topology"] = levels
    _kai_settings(config, [*(settings or []), *_shards(kind(KAI_TOPOLOGY, "SchedulingShard"), report)], report)
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
    (KAI_GROUP, "Queue"), (KAI_GROUP, "PodGroup"), (KAI_TOPOLOGY, "Topology"), (KAI_TOPOLOGY, "SchedulingShard"),
    (KUEUE_GROUP, "ClusterQueue"), (KUEUE_GROUP, "LocalQueue"), (KUEUE_GROUP, "Cohort"), (KUEUE_GROUP, "Workload"),
    (KUEUE_GROUP, "Topology"),
    (VOLCANO_GROUP, "Queue"), (VOLCANO_GROUP, "PodGroup"),
}  # fmt: skip


def _shards(shards: list[KubeObject], report: Report) -> list[KaiSettings]:
    """The settings of KAI's SchedulingShard: one shard, or the one named ``default`` among several (reported)."""
    if not shards:
        return []
    shard = shards[0]
    if len(shards) > 1:
        shard = next((o for o in shards if o.name == "default"), shards[0])
        names = ", ".join(o.name for o in shards)
        report.guess("SchedulingShard", f"{len(shards)} shards ({names}): the config of {shard.name}")
    return [from_shard(shard.get("spec"), shard.at("spec"))]


def _kai_settings(config: dict[str, Any], settings: list[KaiSettings], report: Report) -> None:
    """``config`` with what KAI's configuration sets, its notes and guesses reported."""
    for found in settings:
        config.update(found.config)
        report.notes.extend(found.notes)
        for where, what in found.guesses:
            report.guess(where, what)


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
    _depth(queues, *_PARENT_FIELD.get(source, ("Queue", "parent")))
    return queues, local


_PARENT_FIELD = {"kai": ("Queue", "spec.parentQueue"), "volcano": ("Queue", "spec.parent"),
                 "kueue": ("Cohort", "spec.parentName")}  # fmt: skip


def _depth(queues: list[dict[str, Any]], kind: str, field: str) -> None:
    """Refuse a queue tree deeper than a snapshot may be (:data:`~gpu_preempt.models.snapshot.MAX_QUEUE_DEPTH`),
    naming the first queue too deep, before any work that walks the tree."""
    parents = {q["name"]: q.get("parent") for q in queues}
    depth: dict[str, int] = {}
    for name in parents:
        path: list[str] = []
        at: str | None = name
        while at is not None and at in parents and at not in depth and at not in path:
            path.append(at)
            at = parents[at]
        below = depth.get(at, 0) if at is not None and at in depth else 0
        for k, step in enumerate(reversed(path)):
            depth[step] = below + k + 1
            if depth[step] > MAX_QUEUE_DEPTH:
                why = f"{step} is more than {MAX_QUEUE_DEPTH} levels below the root"
                raise SnapshotError.single(f"{kind} {step}: {field}", why)


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
