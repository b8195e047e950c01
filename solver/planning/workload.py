"""A scenario's starting point: the base snapshot document and the jobs of its trace (docs/scenario-format.md).

Trace jobs become snapshot jobs here:

* a job wider than one node is a gang of ``ceil(gpus / GPUs per node)`` tasks,
  GPUs shared as equally as whole GPUs allow (the first tasks take one more);
  a narrower job is one task, and a job of less than one GPU is one task that takes a share of one device
  (docs/snapshot-format.md, "GPU sharing");
* CPU and memory per task are proportional to its GPUs (``workload.per_gpu``,
  default: the first node's CPU and memory per GPU);
* fields the trace does not carry are assigned from the scenario's seed
  (:func:`draw`, a hash of the seed, the field and the job id, so a job's draw
  does not depend on the other jobs) and listed in ``synthetic``;
* submit times are shifted so the first job arrives at 0, then divided by
  ``time_scale``; durations are unchanged.

Examples
--------
Milli-GPUs per task:

>>> tasks_of(12_000, 8)
[6000, 6000]
>>> tasks_of(9_000, 8)
[5000, 4000]
>>> tasks_of(3_000, 8)
[3000]
>>> tasks_of(250, 8)
[250]
"""

from __future__ import annotations

import copy
import hashlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpu_preempt.models import MILLI, Node, RequeueState, Snapshot, SnapshotError, read_document, snapshot_from_data
from gpu_preempt.models.errors import shown
from gpu_preempt.models.scenario import (
    ClusterShape,
    NodeGroup,
    Scenario,
    ScheduledChange,
    SizeClass,
    Weighted,
    share_milli,
)

from .adapters import helios_queues, read_machines, read_quotas, read_runtimes, runtime_at
from .trace import TraceJob, read_trace

__all__ = [
    "EPOCH",
    "GPU_MODEL_LABEL",
    "JobSpec",
    "ReplayInput",
    "StartingJob",
    "draw",
    "load_workload",
    "node_documents",
    "pick",
    "starting_jobs",
    "tasks_of",
]

EPOCH = 1_767_225_600.0
"""Simulated time 0 as a snapshot instant: 2026-01-01T00:00:00Z."""

GPU_MODEL_LABEL = "nvidia.com/gpu.product"
"""The node label that names its GPU model (GPU feature discovery's), which a job's drawn model selects."""


@dataclass(frozen=True)
class JobSpec:
    """One job of the workload, in the snapshot's terms (resources in milli-units)."""

    name: str
    submit: float
    """Simulated seconds from the first arrival."""
    duration: float
    gpu_milli: int
    """Milli-GPUs of the whole job (below 1000: a share of one GPU, docs/snapshot-format.md, "GPU sharing")."""
    task_gpu_milli: tuple[int, ...]
    queue: str
    priority_class: str | None = None
    min_available: int | None = None
    preemptible: bool | None = None
    per_gpu: dict[str, int] = field(default_factory=dict)
    priority: int | None = None
    task_requests: tuple[dict[str, int], ...] = ()
    """Milli-units per task, when given (a snapshot's job); otherwise GPUs x ``per_gpu``."""
    gpu_model: str | None = None
    """The GPU model the trace gives or the seed draws for the job (several: separated by ``|``): it runs only on
    nodes of one of them."""
    starting: bool = False
    """A job of the cluster snapshot, there when the replay starts: ``duration`` is its remaining work, and it has
    no wait or completion time of its own."""

    @property
    def tasks(self) -> int:
        return len(self.task_gpu_milli)

    def task_resources(self, index: int) -> dict[str, int]:
        """Milli-units one task requests."""
        if self.task_requests:
            return dict(self.task_requests[index])
        milli = self.task_gpu_milli[index]
        return {"gpu": milli, **{r: a * milli // MILLI for r, a in self.per_gpu.items()}}

    @property
    def weight(self) -> int:
        """The job's width, by which its progress is counted: its milli-GPUs, or for a job without GPUs a thousand
        per task (its work advances with the share of its tasks that run)."""
        return self.gpu_milli or MILLI * self.tasks

    @property
    def task_weight(self) -> tuple[int, ...]:
        """Each task's part of :attr:`weight`."""
        return self.task_gpu_milli if self.gpu_milli else (MILLI,) * self.tasks

    @property
    def gpus(self) -> float:
        """GPUs of the whole job."""
        return self.gpu_milli / MILLI


@dataclass(frozen=True)
class StartingJob:
    """A job of the cluster snapshot as the replay starts (times in simulated seconds; the snapshot's instant is 0).

    Its tasks keep their statuses and nodes; a releasing task leaves once the grace period has passed from 0.
    """

    spec: JobSpec
    status: tuple[str, ...]
    node: tuple[str | None, ...]
    started_at: float | None
    requeue: RequeueState | None
    devices: tuple[tuple[int, ...] | None, ...] = ()
    """Per task, the devices of a share of a GPU (docs/snapshot-format.md, "GPU sharing")."""


@dataclass
class ReplayInput:
    """The base snapshot document (no jobs), its validated form, the starting jobs and the trace's jobs."""

    base: dict[str, Any]
    snapshot: Snapshot
    jobs: list[JobSpec]
    initial: list[StartingJob]
    """Jobs of a snapshot-file cluster: the starting state."""
    synthetic: list[str]
    offered_load: float
    span: float
    events: list[ScheduledChange] = field(default_factory=list)
    """Scheduled changes the workload adds (a quota file's later days), after the scenario's own."""
    until: float | None = None
    """Simulated seconds at which the replay stops (a fill-up: once its last arrival has settled)."""
    cycle_every: float | None = None
    """Seconds between cycles at least, when shorter than ``simulation.period`` (a fill-up: its interval)."""


def tasks_of(milli: int, per_node: int) -> list[int]:
    """Milli-GPUs per task of a job of ``milli`` milli-GPUs on nodes of ``per_node`` GPUs: one task for a share of
    one GPU, else tasks of whole GPUs, one per node's worth."""
    if milli < MILLI:
        return [milli]
    gpus = milli // MILLI
    count = max(1, math.ceil(gpus / per_node)) if per_node > 0 else 1
    share, extra = divmod(gpus, count)
    return [(share + (1 if i < extra else 0)) * MILLI for i in range(count)]


def draw(seed: int, what: str, job: str) -> float:
    """A number in [0, 1) fixed by the seed, the field and the job id."""
    digest = hashlib.sha256(f"{seed}\x00{what}\x00{job}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def pick(weights: dict[str, float], u: float) -> str:
    """The key whose cumulative weight interval holds ``u`` (keys in the given order)."""
    total = sum(weights.values())
    acc = 0.0
    for key, weight in weights.items():
        acc += weight / total
        if u < acc:
            return key
    return next(k for k, w in reversed(weights.items()) if w > 0)


def node_documents(groups: list[NodeGroup]) -> list[dict[str, Any]]:
    """Snapshot node entries for node groups, numbered per name across groups."""
    counters: dict[str, int] = {}
    nodes = []
    for group in groups:
        for _ in range(group.count):
            index = counters.get(group.name, 0)
            counters[group.name] = index + 1
            entry: dict[str, Any] = {
                "name": f"{group.name}-{index}",
                "resources": {"gpu": group.gpu, "cpu": f"{group.cpu}m", "memory": f"{group.memory}m"},
            }
            labels = dict(group.labels)
            if group.gpu_model is not None:
                entry["gpu_model"] = group.gpu_model
                labels.setdefault(GPU_MODEL_LABEL, group.gpu_model)
            if labels:
                entry["labels"] = labels
            if group.taints:
                entry["taints"] = [t.model_dump(exclude_defaults=True) for t in group.taints]
            nodes.append(entry)
    return nodes


def load_workload(scenario: Scenario, raw: dict[str, Any], base_dir: Path) -> ReplayInput:
    """Everything a simulation starts from; ``raw`` is the scenario as parsed (its notation is kept in dumps)."""
    base, start = _base_document(scenario, raw, base_dir)
    events: list[ScheduledChange] = []
    notes: list[str] = []
    source = scenario.queues_from
    if source is not None:
        quotas = read_quotas(base_dir / source.path, "queues_from.path")
        first = quotas.on(source.date, "queues_from.date")
        gpus = _node_gpus(base["nodes"]) if source.fit else None
        base["queues"], changes = helios_queues(quotas, first, source.days, gpus)
        events = [ScheduledChange.model_validate(c) for c in changes]
        fitted = f", scaled to the cluster's {gpus} GPUs" if gpus is not None else ""
        notes.append(
            f"queues: Helios VC quotas of {quotas.days[first]}{fitted}"
            + (f", then {len(events)} daily change(s)" if source.days else "")
        )
    try:
        snapshot = snapshot_from_data({**base, "jobs": []})
    except SnapshotError as err:
        raise SnapshotError([type(e)(f"cluster: {e.path}", e.message) for e in err.errors]) from None
    initial = [] if start is None else starting_jobs(start, scenario.cluster, snapshot)
    read = read_trace(scenario.workload.trace, base_dir)
    trace = _window(read, scenario)
    if not trace and not initial:
        within = " within workload.window" if read else ""
        raise SnapshotError.single("workload.trace", f"no job to replay: the trace has no job{within}")
    jobs, synthetic = _jobs(scenario, snapshot, trace)
    clash = sorted({j.spec.name for j in initial} & {j.name for j in jobs})
    if clash:
        message = f"job {shown(clash[0])} is both in the cluster snapshot and in the trace"
        raise SnapshotError.single("workload.trace", message)
    if initial:
        notes.append(f"{len(initial)} job(s) of the cluster snapshot at the start, {_remaining(scenario.cluster)}")
    durations = scenario.workload.durations
    if durations is not None:
        runtimes = read_runtimes(base_dir / durations.path, "workload.durations.path")
        seed = scenario.simulation.seed
        jobs = [
            replace(job, duration=max(durations.minimum, runtime_at(runtimes, draw(seed, "duration", job.name))))
            for job in jobs
        ]
        synthetic.append(
            f"duration: drawn per job from {len(runtimes):,} Philly runtimes, at least {durations.minimum:g} s"
        )
    synthetic = notes + synthetic
    until = every = None
    fill = scenario.workload.fill_up
    if fill is not None:
        from .fill_up import drawn_shapes

        capacity = sum(n.resources.get("gpu", 0) for n in snapshot.nodes)
        jobs = drawn_shapes(jobs, fill, capacity)
        synthetic.append(
            f"fill_up: {len(jobs):,} job shapes drawn from the trace (seed {fill.seed}), one every "
            f"{fill.interval:g} s, until the GPUs requested reach {fill.target:g} x capacity; none departs"
        )
        settings = scenario.simulation
        until = jobs[-1].submit + settings.grace_period + 2 * settings.period
        every = fill.interval
    gpus = sum(n.resources.get("gpu", 0) for n in snapshot.nodes) // MILLI
    span = max((j.submit for j in jobs), default=0.0)
    demand = sum(j.duration * j.gpu_milli for j in jobs) / MILLI
    load = demand / (gpus * span) if gpus and span > 0 and fill is None else math.inf  # a fill-up's jobs never end
    return ReplayInput(base, snapshot, jobs, initial, synthetic, load, span, events, until, every)


def _base_document(scenario: Scenario, raw: dict[str, Any], base_dir: Path) -> tuple[dict[str, Any], Snapshot | None]:
    """The snapshot document the replay starts from (its instant moved to simulated time 0, no jobs), and the
    validated cluster snapshot when it holds jobs (their times are moved by :func:`starting_jobs`)."""
    start = None
    if scenario.cluster.snapshot is not None:
        document = read_document(base_dir / scenario.cluster.snapshot)
        if not isinstance(document, dict):
            raise SnapshotError.single("cluster.snapshot", "the snapshot file is not a mapping")
        document = copy.deepcopy(document)
        document.pop("expect", None)
        document.pop("description", None)
        if document.get("jobs") or any("limit_changed_at" in q for q in document.get("queues", []) or ()):
            try:  # its instants are moved to the replay's clock: validate them in their own frame first
                start = snapshot_from_data(document)
            except SnapshotError as err:
                raise SnapshotError([type(e)(f"cluster: {e.path}", e.message) for e in err.errors]) from None
            for entry, queue in zip(document["queues"], start.queues, strict=True):
                if queue.limit_changed_at is not None:
                    entry["limit_changed_at"] = EPOCH + queue.limit_changed_at - start.now
        document.pop("jobs", None)
        if start is not None and not start.jobs:
            start = None
    elif scenario.cluster.machines is not None:
        table = scenario.cluster.machines
        groups = read_machines(base_dir / table.path, "cluster.machines.path", table.scale)
        document = {"nodes": node_documents([NodeGroup.model_validate(g) for g in groups])}
    else:
        document = {"nodes": node_documents(scenario.cluster.nodes)}
    for key in ("queues", "priority_classes", "config"):
        if key in raw:
            document[key] = copy.deepcopy(raw[key])
    document["now"] = EPOCH
    return document, start


def starting_jobs(start: Snapshot, shape: ClusterShape, cluster: Snapshot) -> list[StartingJob]:
    """The jobs of the cluster snapshot ``start`` as the replay starts, with the remaining work ``shape`` gives
    them; ``cluster`` is the replay's own starting snapshot (the scenario may have replaced queues or classes)."""
    names = [job.name for job in start.jobs]
    unknown = sorted(set(shape.remaining_of) - set(names))
    if unknown:
        raise SnapshotError.single("cluster.remaining_of", f"no job {shown(unknown[0])} in the cluster snapshot")
    if shape.remaining is None:
        missing = [n for n in names if n not in shape.remaining_of]
        if missing:
            listed = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            message = f"the cluster snapshot holds jobs ({listed}): give the work they have left"
            raise SnapshotError.single("cluster.remaining", message)
    shift = EPOCH - start.now
    found = start.undecided_share()
    if found is not None:
        i, why = found
        raise SnapshotError.single(f"cluster: jobs[{i}] ({start.jobs[i].name})", why)
    start = start.counted()  # shares by memory as the fractions of a device they take
    jobs = []
    for i, job in enumerate(start.jobs):
        where = f"cluster: jobs[{i}] ({job.name})"
        requests = tuple(job.requests(task) for task in job.tasks)
        gpus = [r.get("gpu", 0) for r in requests]
        if job.gpu_devices > 1:
            raise SnapshotError.single(where, "a share on several devices; the replay counts shares of one device")
        if job.preemption_delay is not None or any(t.order is not None for t in job.tasks):
            raise SnapshotError.single(where, "a preemption delay or a task order, which the replay does not carry")
        if not any(any(r.values()) for r in requests):
            raise SnapshotError.single(where, "the job asks for nothing; the replay measures work by what runs")
        if job.queue not in {q.name for q in cluster.queues} or not cluster.is_leaf(job.queue):
            raise SnapshotError.single(where, f"queue {shown(job.queue)} is not a leaf queue of the scenario")
        if job.priority_class is not None and job.priority_class not in {c.name for c in cluster.priority_classes}:
            raise SnapshotError.single(where, f"unknown priority class {shown(job.priority_class)} in the scenario")
        remaining = shape.remaining_of.get(job.name, shape.remaining)
        assert remaining is not None
        spec = JobSpec(
            name=job.name,
            submit=0.0 if job.created_at is None else job.created_at + shift - EPOCH,
            duration=remaining,
            gpu_milli=sum(gpus),
            task_gpu_milli=tuple(gpus),
            queue=job.queue,
            priority_class=job.priority_class,
            min_available=job.min_available,
            preemptible=job.preemptible,
            priority=job.priority,
            task_requests=requests,
            starting=True,
        )
        requeue = job.requeue
        if requeue is not None:
            moved = {k: getattr(requeue, k) + shift for k in ("evicted_at", "requeue_at") if getattr(requeue, k)}
            requeue = requeue.model_copy(update=moved)
        jobs.append(
            StartingJob(
                spec,
                tuple(str(t.status) for t in job.tasks),
                tuple(t.node for t in job.tasks),
                None if job.started_at is None else job.started_at + shift - EPOCH,
                requeue,
                tuple(None if t.devices is None else tuple(t.devices) for t in job.tasks),
            )
        )
    return jobs


def _remaining(shape: ClusterShape) -> str:
    given = f"{len(shape.remaining_of)} with their own remaining work" if shape.remaining_of else ""
    default = f"the others {shape.remaining:g} s of work left" if shape.remaining is not None else ""
    return ", ".join(x for x in (given, default) if x) + " (at full width)"


def _node_gpus(nodes: list[dict[str, Any]]) -> int:
    """Whole GPUs of the nodes (documents), validated as a snapshot would."""
    try:
        return sum(Node.model_validate(n).resources.get("gpu", 0) for n in nodes) // MILLI
    except ValidationError as error:
        raise SnapshotError.from_validation_error(error) from None


def _window(trace: list[TraceJob], scenario: Scenario) -> list[TraceJob]:
    window = scenario.workload.window
    kept = [
        j
        for j in trace
        if (window.start is None or j.submit >= window.start) and (window.end is None or j.submit < window.end)
    ]
    return kept if window.first is None else kept[: window.first]


def _jobs(scenario: Scenario, snapshot: Snapshot, trace: list[TraceJob]) -> tuple[list[JobSpec], list[str]]:
    workload, seed = scenario.workload, scenario.simulation.seed
    assign = workload.assign
    per_node = max((n.resources.get("gpu", 0) // MILLI for n in snapshot.nodes), default=0)
    per_gpu = dict(workload.per_gpu) or _node_ratio(snapshot)
    leaves = [q.name for q in snapshot.queues if snapshot.is_leaf(q.name)]
    queue_weights = _default_queue_weights(snapshot, leaves) if assign.queue is None else dict(assign.queue.weights)
    unknown = sorted(set(queue_weights) - set(leaves))
    if unknown:
        raise SnapshotError.single("workload.assign.queue.weights", f"not a leaf queue: {', '.join(unknown)}")
    classes = {c.name for c in snapshot.priority_classes}
    named = _class_names(assign.priority_class)
    if named - classes:
        raise SnapshotError.single(
            "workload.assign.priority_class", f"unknown priority class: {', '.join(sorted(named - classes))}"
        )
    synthetic = []
    traced_queue = any(j.queue is not None for j in trace)
    if not traced_queue:
        synthetic.append(f"queue: drawn per job with weights {queue_weights}")
    if assign.priority_class is not None:
        synthetic.append(f"priority_class: {_describe_classes(assign.priority_class)}")
    if assign.elastic:
        synthetic.append(
            f"min_available: {assign.elastic:g} of multi-task jobs elastic, min = ceil({assign.elastic_min:g} x tasks)"
        )
    if assign.preemptible is not None:
        synthetic.append(f"preemptible: {assign.preemptible:g} of jobs preemptible, the rest not")
    models = _model_widths(snapshot)
    if assign.gpu_model is not None:
        unknown = sorted(set(assign.gpu_model.weights) - set(models))
        if unknown:
            have = ", ".join(models) or "none"
            message = f"no node has GPU model {', '.join(unknown)} (the cluster's: {have})"
            raise SnapshotError.single("workload.assign.gpu_model.weights", message)
        synthetic.append(f"gpu_model: drawn per job with weights {dict(assign.gpu_model.weights)}")
    if assign.gpu_share is not None:
        synthetic.append(
            f"gpu share: jobs of one GPU drawn as shares of one GPU with weights {dict(assign.gpu_share.weights)}"
        )
    scale = workload.time_scale
    first = trace[0].submit if trace else 0.0
    jobs = []
    for t in trace:
        if assign.gpu_share is not None and t.gpus == 1:
            milli = share_milli(pick(assign.gpu_share.weights, draw(seed, "gpu_share", t.id)))
            assert milli is not None  # validated
            t = replace(t, gpus=milli / MILLI)
        queue = t.queue if t.queue is not None else pick(queue_weights, draw(seed, "queue", t.id))
        if queue not in leaves:
            raise SnapshotError.single(
                f"workload (job {t.id})", f"queue {shown(queue)} is not a leaf queue of the cluster"
            )
        pclass = t.priority_class or _class_for(assign.priority_class, t, seed)
        if pclass is not None and pclass not in classes:
            raise SnapshotError.single(f"workload (job {t.id})", f"unknown priority class {shown(pclass)}")
        if t.gpu_model is not None:
            model: str | None = "|".join(t.gpu_model)
            width = max((models[m] for m in t.gpu_model if m in models), default=0)
            if not width:
                have = ", ".join(models) or "none"
                message = f"no node has GPU model {', '.join(t.gpu_model)} (the cluster's: {have})"
                raise SnapshotError.single(f"workload (job {t.id})", message)
        elif assign.gpu_model is not None:
            model = pick(assign.gpu_model.weights, draw(seed, "gpu_model", t.id))
            width = models[model]
        else:
            model, width = None, per_node
        milli = round(t.gpus * MILLI)
        split = tuple([milli // t.tasks] * t.tasks if t.tasks else tasks_of(milli, width))
        minimum = None
        if len(split) > 1 and draw(seed, "elastic", t.id) < assign.elastic:
            minimum = max(1, math.ceil(assign.elastic_min * len(split)))
        preemptible = None if assign.preemptible is None else draw(seed, "preemptible", t.id) < assign.preemptible
        requests: tuple[dict[str, int], ...] = ()
        if t.cpu is not None or t.memory is not None or milli == 0:
            requests = tuple(_task_request(gpu, t, per_gpu) for gpu in split)
        jobs.append(
            JobSpec(
                t.id,
                (t.submit - first) / scale,
                t.duration,
                milli,
                split,
                queue,
                pclass,
                minimum,
                preemptible,
                per_gpu,
                task_requests=requests,
                gpu_model=model,
            )
        )
    return jobs, synthetic


def _task_request(gpu: int, job: TraceJob, per_gpu: dict[str, int]) -> dict[str, int]:
    """One task's request (milli-units): its GPUs, and its CPU and memory as the trace gives them, else in
    proportion to its GPUs."""
    given = {"cpu": job.cpu, "memory": job.memory}
    request = {"gpu": gpu} if gpu else {}
    for resource, amount in per_gpu.items():
        found = given.get(resource)
        request[resource] = found if found is not None else amount * gpu // MILLI
    for resource, found in given.items():
        if found is not None:
            request[resource] = found
    return request


def _model_widths(snapshot: Snapshot) -> dict[str, int]:
    """Per GPU model of the cluster's nodes, the most GPUs one such node has (how wide a task of the model may be)."""
    widths: dict[str, int] = {}
    for node in snapshot.nodes:
        if node.gpu_model is not None:
            widths[node.gpu_model] = max(widths.get(node.gpu_model, 0), node.resources.get("gpu", 0) // MILLI)
    return widths


def _node_ratio(snapshot: Snapshot) -> dict[str, int]:
    for node in snapshot.nodes:
        gpus = node.resources.get("gpu", 0) // MILLI
        if gpus:
            return {r: a // gpus for r, a in node.resources.items() if r in ("cpu", "memory")}
    return {}


def _default_queue_weights(snapshot: Snapshot, leaves: list[str]) -> dict[str, float]:
    weights = {}
    for name in leaves:
        deserved = snapshot.queue(name).guarantee("gpu")
        weights[name] = float(deserved) if 0 < deserved < 2**62 else 0.0
    if sum(weights.values()) <= 0:
        return dict.fromkeys(leaves, 1.0)
    return weights


def _class_names(rule: Weighted | list[SizeClass] | None) -> set[str]:
    if rule is None:
        return set()
    if isinstance(rule, Weighted):
        return set(rule.weights)
    return {c.priority_class for c in rule}


def _describe_classes(rule: Weighted | list[SizeClass]) -> str:
    if isinstance(rule, Weighted):
        return f"drawn per job with weights {rule.weights}"
    return "by size: " + ", ".join(
        f"<= {c.max_gpus:g} GPUs -> {c.priority_class}" if c.max_gpus is not None else f"else {c.priority_class}"
        for c in rule
    )


def _class_for(rule: Weighted | list[SizeClass] | None, job: TraceJob, seed: int) -> str | None:
    if rule is None:
        return None
    if isinstance(rule, Weighted):
        return pick(rule.weights, draw(seed, "priority_class", job.id))
    for size in rule:
        if size.max_gpus is None or job.gpus <= size.max_gpus:
            return size.priority_class
    return None
