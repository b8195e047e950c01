"""Core Kubernetes kinds in snapshot terms: nodes, pods (effective requests and task status), priority classes.

Field paths follow docs/kubernetes.md:

* a node offers ``status.allocatable`` (``nvidia.com/gpu`` as ``gpu``, ``cpu``, ``memory``); it keeps its labels
  (its taints are read by :mod:`.placement`) and is schedulable unless ``spec.unschedulable`` or not Ready; its
  GPU model is the ``nvidia.com/gpu.product`` label; a time-sliced node (``nvidia.com/gpu.replicas`` > 1) counts
  its devices, and a request of its replicas is read as a share of a device (:func:`time_sliced`);
* a pod's KAI GPU sharing annotations (``gpu-fraction``, ``gpu-memory``, ``gpu-fraction-num-devices``) make it a
  share of a GPU, on the devices its ``runai-gpu-group`` labels name (:func:`share_devices`);
* a pod's effective request is ``max(sum of containers, largest init container) + overhead`` (sidecar init
  containers, ``restartPolicy: Always``, add to the sum and to every later init container); requests default to
  limits;
* a pod's task status is KAI's: Running or Pending with a ``deletionTimestamp`` is releasing, Pending on a node is
  running (bound), Pending with ``status.nominatedNodeName`` is nominated there, other Pending is pending,
  Succeeded and Failed pods are finished (dropped), Unknown is running (reported).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from gpu_preempt.models import MILLI, Resources, SnapshotError, format_quantity, parse_quantity
from gpu_preempt.models.duration import parse_time
from gpu_preempt.models.errors import shown
from gpu_preempt.models.job import share_of

from .read import KubeObject

__all__ = [
    "GPU",
    "GPU_GROUP",
    "KEPT",
    "MIG",
    "RESERVATION_NAMESPACE",
    "TOLERATION",
    "Pod",
    "Report",
    "amount",
    "effective_requests",
    "instant",
    "is_share",
    "moment_of",
    "node_entry",
    "pod",
    "priority_class_entry",
    "quantities",
    "replicas_of",
    "resource_map",
    "scheduled_at",
    "share_devices",
    "time_sliced",
]

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-"
"""MIG slices (``nvidia.com/mig-1g.10gb``, ...): each profile a resource of its own, kept under its name (a slice is
a device of its own: a count, as KAI and the device plugin's mixed strategy give them)."""
KEPT = {GPU: "gpu", "cpu": "cpu", "memory": "memory"}
"""Kubernetes resource names the snapshot keeps, and their snapshot names."""

TOLERATION = "preemption-toleration.scheduling.x-k8s.io/"


@dataclass
class Report:
    """What an import had to guess or leave out: printed on stderr, and refused under ``--strict``."""

    guesses: list[str] = field(default_factory=list)
    ignored: dict[str, list[str]] = field(default_factory=dict)
    """Kind -> the objects (or resources) left out on purpose."""
    notes: list[str] = field(default_factory=list)
    asked: dict[tuple[int, ...], tuple[tuple[Any, ...], Resources]] = field(
        default_factory=dict, repr=False, compare=False
    )
    """What the containers, init containers and overhead of a pod spec ask for, by the parts' identity: the pods of
    a job share them once read (:mod:`.read`), and each is then summed once."""

    def guess(self, where: str, what: str) -> None:
        self.guesses.append(f"{where}: {what}")

    def ignore(self, kind: str, name: str) -> None:
        self.ignored.setdefault(kind, []).append(name)


def amount(obj: KubeObject, where: str, value: Any, resource: str) -> int:
    """A quantity of a Kubernetes resource in milli-units (whole GPUs only)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SnapshotError.single(obj.at(where), f"expected a quantity, got {shown(value)}")
    try:
        milli = parse_quantity(value)
    except ValueError as err:
        raise SnapshotError.single(obj.at(where), str(err)) from None
    if resource == "gpu" and milli % MILLI:
        raise SnapshotError.single(obj.at(where), f"a fraction of a GPU ({value}); the snapshot counts whole GPUs")
    return milli


def resource_map(obj: KubeObject, where: str, values: Any, report: Report) -> Resources:
    """The kept resources of a Kubernetes resource list (``{"cpu": "2", "nvidia.com/gpu": "1", ...}``)."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise SnapshotError.single(obj.at(where), f"expected a map of resource quantities, got {shown(values)}")
    out: Resources = {}
    for name, value in values.items():
        kept = KEPT.get(name) or (name if name.startswith(MIG) else None)
        if kept is None:
            continue
        out[kept] = amount(obj, f"{where}.{name}", value, kept)
    return out


def quantities(resources: Resources) -> dict[str, str | int]:
    """Snapshot notation of milli-unit amounts."""
    return {
        r: a // MILLI if r == "gpu" and a % MILLI == 0 else format_quantity(r, a) for r, a in sorted(resources.items())
    }


def instant(obj: KubeObject, where: str, value: Any) -> float | None:
    if value is None:
        return None
    try:
        return moment_of(value) if isinstance(value, str) else parse_time(value)
    except ValueError as err:
        raise SnapshotError.single(obj.at(where), str(err)) from None


@lru_cache(maxsize=1 << 16)
def moment_of(value: str) -> float:
    """:func:`~gpu_preempt.models.duration.parse_time`, each text parsed once (a dump repeats its times: objects
    made in the same second)."""
    return parse_time(value)


# -- nodes ---------------------------------------------------------------------------------------------------


def replicas_of(obj: KubeObject) -> int:
    """How many replicas of each GPU a node advertises (``nvidia.com/gpu.replicas``, time slicing): 1 if none."""
    value = obj.labels.get("nvidia.com/gpu.replicas")
    if value in (None, "0", "1"):
        return 1
    if not (isinstance(value, str) and value.isdecimal()):
        raise SnapshotError.single(obj.at("metadata.labels"), f"nvidia.com/gpu.replicas: not a count: {shown(value)}")
    return int(value)


def node_entry(obj: KubeObject, report: Report) -> dict[str, Any]:
    """The snapshot node of a Node object (a time-sliced node's GPUs counted in devices, not replicas)."""
    labels = obj.labels
    if obj.get("status", "allocatable") is None:
        report.guess(obj.ref, "no status.allocatable: it offers nothing")
    offered = resource_map(obj, "status.allocatable", obj.get("status", "allocatable"), report)
    replicas = replicas_of(obj)
    if replicas > 1 and offered.get("gpu", 0) % (replicas * MILLI):
        what = f"{offered['gpu'] // MILLI} nvidia.com/gpu is not a whole number of devices of {replicas} replicas"
        raise SnapshotError.single(obj.at("status.allocatable"), what)
    if replicas > 1 and "gpu" in offered:
        offered["gpu"] //= replicas
    entry: dict[str, Any] = {"name": obj.name, "resources": quantities(offered)}
    product = labels.get("nvidia.com/gpu.product")
    if product:
        entry["gpu_model"] = product
    memory = labels.get("nvidia.com/gpu.memory")  # MiB per device (GPU feature discovery)
    if isinstance(memory, str) and memory.isdecimal() and int(memory) > 0:
        entry["gpu_memory"] = f"{memory}Mi"
    if labels:
        entry["labels"] = dict(labels)  # what node selectors, affinities and topology levels match
    why = _unschedulable(obj)
    if why:
        entry["schedulable"] = False
        report.notes.append(f"{obj.ref} is not schedulable ({why}): running work stays, nothing new goes there")
    return entry


def _unschedulable(obj: KubeObject) -> str | None:
    if obj.get("spec", "unschedulable") is True:
        return "cordoned"
    conditions = obj.get("status", "conditions") or []
    ready = [c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"]
    if ready and ready[0].get("status") != "True":
        return "not Ready"
    return None


# -- pods ----------------------------------------------------------------------------------------------------


@dataclass
class Pod:
    """A pod that is (or will be) a task: its effective request, status and node; a share of a GPU (KAI's GPU
    sharing) adds the devices it takes and the groups that name them on its node."""

    obj: KubeObject
    requests: Resources
    status: str
    node: str | None
    devices: int = 1
    """``gpu-fraction-num-devices``: how many devices a share is taken on."""
    groups: tuple[str, ...] = ()
    """The GPU groups of a bound share (``runai-gpu-group`` labels): one device of its node each."""
    on_devices: list[int] | None = None
    """The devices of its node a bound share is on (set by :func:`share_devices`)."""
    deleted_at: float | None = None
    """When its deletion began (``metadata.deletionTimestamp``), for a releasing pod."""

    @property
    def gpus(self) -> int:
        """Milli-GPUs asked for; a share by memory, or MIG slices, count as asking for a GPU."""
        if self.requests.get("gpu", 0):
            return self.requests["gpu"]
        return 1 if self.requests.get("gpu_memory") or any(r.startswith(MIG) for r in self.requests) else 0


def pod(obj: KubeObject, report: Report) -> Pod | None:
    """The task a Pod object is, or ``None`` for a finished pod."""
    phase = obj.get("status", "phase")
    if phase in ("Succeeded", "Failed"):
        report.ignore("Pod", f"{obj.key} ({phase})")
        return None
    node = obj.get("spec", "nodeName") or None
    deleting = obj.get("metadata", "deletionTimestamp") is not None
    nominated = obj.get("status", "nominatedNodeName") or None
    if phase == "Unknown":
        report.guess(obj.ref, "phase Unknown: taken as running")
    if phase not in ("Running", "Pending", "Unknown", None):
        raise SnapshotError.single(obj.at("status.phase"), f"unknown phase {shown(phase)}")
    if node is not None:
        status = "releasing" if deleting else "running"
    elif deleting:
        report.ignore("Pod", f"{obj.key} (being deleted before it ran)")
        return None
    elif nominated is not None:
        status, node = "nominated", nominated
    else:
        status = "pending"
    requests = effective_requests(obj, report)
    share, devices = _share(obj)
    if share:
        if requests.get("gpu"):
            raise SnapshotError.single(obj.at("metadata.annotations"), "a share of a GPU beside whole nvidia.com/gpu")
        requests = {**requests, **share}
    groups = tuple(v for k, v in sorted(obj.labels.items()) if k == GPU_GROUP or k.startswith(GPU_GROUP + "/"))
    found = Pod(obj, requests, status, node, devices, groups if share else ())
    if status == "releasing":
        where = "metadata.deletionTimestamp"
        found.deleted_at = instant(obj, where, obj.get("metadata", "deletionTimestamp"))
    return found


GPU_GROUP = "runai-gpu-group"
"""KAI's label on a bound share and on the reservation pod that holds its device (``runai-gpu-group/<i>`` for each
device of a share of several)."""
RESERVATION_NAMESPACE = "runai-reservation"
"""Where KAI's reservation pods run: each holds one device (``nvidia.com/gpu: 1``) for the shares of its group."""


def time_sliced(pods: list[Pod], replicas: dict[str, int], report: Report) -> None:
    """Read the GPU requests of pods on time-sliced nodes (``replicas``: node -> replicas of each device) in
    devices: ``k`` replicas of ``R`` are ``k / R`` of a device (a share when below one), whole devices when ``k``
    is a multiple of ``R``. A pending pod is read by the replicas of every time-sliced node, when they agree and
    every node with GPUs is time-sliced. Time slicing records no device: a node's bound shares are packed onto its
    devices in the order of their pods (a guess, reported)."""
    sliced = {r for r in replicas.values() if r > 1}
    if not sliced:
        return
    everywhere = next(iter(sliced)) if len(sliced) == 1 and all(r > 1 for r in replicas.values()) else None
    packed: dict[str, list[int]] = {}
    for p in sorted(pods, key=lambda p: p.obj.key):
        asked = p.requests.get("gpu", 0)
        count = replicas.get(p.node, 1) if p.node is not None else everywhere
        if not asked or count is None or count == 1:
            if asked and p.node is None and sliced:
                where = p.obj.at("spec.containers")
                raise SnapshotError.single(where, "nvidia.com/gpu on a cluster of time-sliced and whole GPUs: which?")
            continue
        k = asked // MILLI
        if k % count == 0:
            p.requests = {**p.requests, "gpu": k // count * MILLI}
            continue
        if k > count or (MILLI * k) % count:
            what = f"{k} of {count} replicas is neither whole devices nor an exact share of one"
            raise SnapshotError.single(p.obj.at("spec.containers"), what)
        share = MILLI * k // count
        p.requests = {**p.requests, "gpu": share}
        if p.node is not None and p.status in ("running", "releasing"):
            loads = packed.setdefault(p.node, [])
            device = next((d for d, held in enumerate(loads) if held + share <= MILLI), len(loads))
            if device == len(loads):
                loads.append(0)
            loads[device] += share
            p.on_devices = [device]
    for node in sorted(packed):
        report.guess(f"Node {node}", "time slicing records no device: its shares packed onto devices in pod order")


def share_devices(pods: list[Pod]) -> None:
    """Give every bound share the devices of its node its GPU groups stand for: on each node, its groups in order of
    name are devices 0, 1, ... (a snapshot names devices by index; tasks of whole GPUs take the others). A bound
    share without its groups is refused: its devices cannot be told."""
    groups: dict[str, set[str]] = {}
    bound = [
        p
        for p in pods
        if p.node is not None and p.status in ("running", "releasing") and is_share(p) and p.on_devices is None
    ]
    for p in bound:
        if len(p.groups) != p.devices:
            what = f"{len(p.groups)} {GPU_GROUP} label(s) for {p.devices} device(s)"
            raise SnapshotError.single(p.obj.at("metadata.labels"), f"a bound share of a GPU with {what}")
        groups.setdefault(p.node, set()).update(p.groups)  # type: ignore[arg-type]
    index = {node: {g: i for i, g in enumerate(sorted(names))} for node, names in groups.items()}
    for p in bound:
        p.on_devices = sorted(index[p.node][g] for g in p.groups)  # type: ignore[index]


def is_share(p: Pod) -> bool:
    """Whether the pod asks for a share of a GPU."""
    return share_of(p.requests) is not None


def _share(obj: KubeObject) -> tuple[Resources, int]:
    """A pod's share of a GPU from KAI's annotations (``gpu-fraction``, ``gpu-memory`` in MiB,
    ``gpu-fraction-num-devices``): ``({"gpu": milli} or {"gpu_memory": milli-bytes}, devices)``, or ``({}, 1)``."""
    annotations = obj.annotations
    fraction, memory = annotations.get("gpu-fraction"), annotations.get("gpu-memory")
    if fraction is None and memory is None:
        return {}, 1
    if fraction is not None and memory is not None:
        raise SnapshotError.single(obj.at("metadata.annotations"), "gpu-fraction and gpu-memory: a share is one")
    count = annotations.get("gpu-fraction-num-devices", "1")
    if not (isinstance(count, str) and count.isdecimal() and int(count) >= 1):
        where = obj.at("metadata.annotations.gpu-fraction-num-devices")
        raise SnapshotError.single(where, f"expected a whole number of devices, got {shown(count)}")
    if fraction is not None:
        try:
            milli = parse_quantity(fraction)
        except ValueError as err:
            raise SnapshotError.single(obj.at("metadata.annotations.gpu-fraction"), str(err)) from None
        if not 0 < milli < MILLI:
            raise SnapshotError.single(obj.at("metadata.annotations.gpu-fraction"), f"not below one GPU: {fraction}")
        return {"gpu": milli}, int(count)
    if not (isinstance(memory, str) and memory.isdecimal() and int(memory) > 0):
        raise SnapshotError.single(obj.at("metadata.annotations.gpu-memory"), f"expected MiB, got {shown(memory)}")
    return {"gpu_memory": int(memory) * 2**20 * MILLI}, int(count)


def effective_requests(obj: KubeObject, report: Report, spec: Any = None) -> Resources:
    """What the pod (or a pod template's ``spec``) asks for: containers, init containers, sidecars, overhead."""
    spec = obj.get("spec") if spec is None else spec
    where = "spec" if spec is obj.get("spec") else "spec.template.spec"
    if not isinstance(spec, dict):
        raise SnapshotError.single(obj.at(where), "missing: a pod has a spec")
    parts = (spec.get("containers"), spec.get("initContainers"), spec.get("overhead"))
    known = report.asked.get(key := tuple(map(id, parts)))
    if known is not None and all(a is b for a, b in zip(known[0], parts, strict=True)):
        return known[1]
    total: Resources = {}
    for i, container in enumerate(spec.get("containers") or []):
        total = _plus(total, _container(obj, f"{where}.containers[{i}]", container, report))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for i, container in enumerate(spec.get("initContainers") or []):
        asks = _container(obj, f"{where}.initContainers[{i}]", container, report)
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            sidecars = _plus(sidecars, asks)  # a sidecar runs beside everything after it
            continue
        init_peak = _max(init_peak, _plus(asks, sidecars))
    total = _max(_plus(total, sidecars), init_peak)
    overhead = resource_map(obj, f"{where}.overhead", spec.get("overhead"), report)
    asked = report.asked[key] = parts, {r: a for r, a in _plus(total, overhead).items() if a}
    return asked[1]


def _container(obj: KubeObject, where: str, container: Any, report: Report) -> Resources:
    if not isinstance(container, dict):
        raise SnapshotError.single(obj.at(where), "not an object")
    resources = container.get("resources") or {}
    requests = resource_map(obj, f"{where}.resources.requests", resources.get("requests"), report)
    limits = resource_map(obj, f"{where}.resources.limits", resources.get("limits"), report)
    return {**limits, **requests}  # a resource with a limit and no request requests its limit


def _plus(a: Resources, b: Resources) -> Resources:
    return {r: a.get(r, 0) + b.get(r, 0) for r in {*a, *b}}


def _max(a: Resources, b: Resources) -> Resources:
    return {r: max(a.get(r, 0), b.get(r, 0)) for r in {*a, *b}}


def scheduled_at(obj: KubeObject) -> float | None:
    """When the pod was bound (its ``PodScheduled`` condition), else its start time."""
    for i, condition in enumerate(obj.get("status", "conditions") or []):
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            return instant(obj, f"status.conditions[{i}].lastTransitionTime", condition.get("lastTransitionTime"))
    return instant(obj, "status.startTime", obj.get("status", "startTime"))


# -- priority classes ----------------------------------------------------------------------------------------


def priority_class_entry(obj: KubeObject) -> dict[str, Any]:
    """The snapshot priority class of a PriorityClass object (with its preemption-toleration annotations)."""
    value = obj.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotError.single(obj.at("value"), f"expected a whole number, got {shown(value)}")
    entry: dict[str, Any] = {"name": obj.name, "value": value}
    policy = obj.get("preemptionPolicy")
    if policy is not None:
        if policy not in ("PreemptLowerPriority", "Never"):
            raise SnapshotError.single(
                obj.at("preemptionPolicy"), f"expected PreemptLowerPriority or Never, got {shown(policy)}"
            )
        entry["preemption_policy"] = policy
    tolerations = {k: v for k, v in obj.annotations.items() if k.startswith(TOLERATION)}
    seconds = tolerations.get(TOLERATION + "toleration-seconds")
    if isinstance(seconds, str) and seconds.strip().startswith("-"):
        tolerations[TOLERATION + "toleration-seconds"] = "-1"  # the plugin reads any negative value as forever
    if tolerations:
        entry["annotations"] = tolerations
    return entry
