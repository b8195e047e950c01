"""The simulated cluster: its nodes and queues, the GPUs its tasks use per node, its scheduled changes, and the
snapshot each cycle decides on.

A cycle's snapshot is assembled from the active jobs' models (:func:`job_model`, rebuilt only for jobs whose tasks
changed) with :meth:`~gpu_preempt.models.Snapshot.assemble`; :meth:`ReplayCluster.document` gives the same state as
a snapshot document (``--dump-at``), which ``gpu-preempt cycle`` decides identically.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpu_preempt.models import MILLI, Job, Node, Queue, Snapshot, format_quantity
from gpu_preempt.models.config import Config
from gpu_preempt.models.decision import requeue_dict
from gpu_preempt.models.scenario import ScheduledChange

from .progress import SimJob
from .workload import EPOCH, GPU_MODEL_LABEL, ReplayInput, node_documents

__all__ = ["ReplayCluster", "job_document", "job_model"]


class ReplayCluster:
    """Nodes and queues (models, and the documents they are validated from), and GPUs used and held per node, shares
    of a GPU per device."""

    def __init__(self, workload: ReplayInput, config: Config) -> None:
        base = workload.snapshot
        self.config = config
        self.base = workload.base
        self.priority_classes = base.priority_classes
        self.nodes: list[Node] = list(base.nodes)
        self.queues: list[Queue] = list(base.queues)
        self._totals: tuple[tuple[int, int], dict[str, int]] | None = None
        self.node_docs: list[dict[str, Any]] = [dict(n) for n in workload.base["nodes"]]
        self.queue_docs: list[dict[str, Any]] = [dict(q) for q in workload.base.get("queues", [])]
        self.used: dict[str, int] = {n.name: 0 for n in self.nodes}
        """Node -> milli-GPUs its running and releasing tasks hold."""
        self.capacity = {n.name: n.resources.get("gpu", 0) for n in self.nodes}
        """Node -> its milli-GPUs."""
        self.other_used: dict[str, dict[str, int]] = {n.name: {} for n in self.nodes}
        """Node -> resource other than GPUs (CPU, memory ...) -> milli-units its running and releasing tasks hold."""
        self._resources: dict[str, dict[str, int]] | None = None
        self.shares: dict[str, dict[int, int]] = {}
        """Node -> device -> milli-GPUs the shares of its running and releasing tasks hold there."""

    def hold(self, node: str, request: dict[str, int], devices: tuple[int, ...] | None, sign: int = 1) -> None:
        """A task of ``request`` (milli-units; a share of a GPU: on ``devices``) starts (``sign`` 1) or stops holding
        ``node``."""
        milli = request.get("gpu", 0)
        self.used[node] += sign * milli
        other = self.other_used[node]
        for resource, amount in request.items():
            if resource != "gpu" and amount:
                other[resource] = other.get(resource, 0) + sign * amount
        if devices:
            on = self.shares.setdefault(node, {})
            for device in devices:
                on[device] = on.get(device, 0) + sign * milli
                if not on[device]:
                    del on[device]

    def fits_now(self, node: str, request: dict[str, int], devices: tuple[int, ...] | None) -> bool:
        """Whether a task of ``request`` (milli-units; a share of a GPU: on ``devices``) fits ``node`` as it is now,
        releasing tasks included."""
        milli = request.get("gpu", 0)
        if self.used[node] + milli > self.capacity[node]:
            return False
        other, have = self.other_used[node], self.resources[node]
        if any(other.get(r, 0) + a > have.get(r, 0) for r, a in request.items() if r != "gpu" and a):
            return False
        on = self.shares.get(node, {})
        whole = (self.used[node] - sum(on.values())) // MILLI
        if devices:
            opened = sum(1 for d in devices if not on.get(d))
            return all(on.get(d, 0) + milli <= MILLI for d in devices) and whole + len(on) + opened <= (
                self.capacity[node] // MILLI
            )
        return whole + len(on) + milli // MILLI <= self.capacity[node] // MILLI

    @property
    def resources(self) -> dict[str, dict[str, int]]:
        """Node -> its resources (milli-units), as its model gives them."""
        if self._resources is None:
            self._resources = {n.name: n.resources for n in self.nodes}
        return self._resources

    def fragmented(self) -> int:
        """Devices that carry shares of a GPU with room left: partly used, they cannot host a task of whole GPUs."""
        return sum(1 for on in self.shares.values() for amount in on.values() if 0 < amount < MILLI)

    def leaves(self) -> list[str]:
        """The leaf queues, in document order."""
        return [q.name for q in self.queues if not any(c.parent == q.name for c in self.queues)]

    def snapshot(self, now: float, jobs: Iterable[SimJob]) -> Snapshot:
        """The simulated cluster at ``now`` with the active ``jobs``, as the engine sees it."""
        return Snapshot.assemble(
            now=EPOCH + now,
            config=self.config,
            nodes=self.nodes,
            queues=self.queues,
            priority_classes=self.priority_classes,
            jobs=[job_model(job, now) for job in jobs],
        )

    def document(self, now: float, jobs: Iterable[SimJob]) -> dict[str, Any]:
        """The simulated cluster at ``now``, as a snapshot document (what ``--dump-at`` writes)."""
        out = {k: v for k, v in self.base.items() if k not in ("nodes", "queues")}
        out["now"] = EPOCH + now
        out["config"] = {**out.get("config", {}), "solver": self.config.solver.model_dump()}
        out["nodes"] = [dict(e) for e in self.node_docs]
        if self.queue_docs:
            out["queues"] = [dict(q) for q in self.queue_docs]
        out["jobs"] = [job_document(job, now) for job in jobs]
        return out

    def set_usage(self, usage: dict[str, dict[str, float]]) -> None:
        """Each queue's ``usage`` per resource (KAI's time-based fair share), in the models and the documents."""
        for doc in self.queue_docs:
            doc["usage"] = dict(usage.get(doc["name"], {}))
        self.queues = [q.model_copy(update={"usage": dict(usage.get(q.name, {}))}) for q in self.queues]

    def totals(self) -> dict[str, int]:
        """The cluster's allocatable resources, summed over its nodes (found again when the nodes change)."""
        key = (id(self.nodes), len(self.nodes))
        if self._totals is None or self._totals[0] != key:
            found: dict[str, int] = {}
            for node in self.nodes:
                for resource, amount in node.resources.items():
                    found[resource] = found.get(resource, 0) + amount
            self._totals = (key, found)
        return self._totals[1]

    def apply(self, change: ScheduledChange, now: float) -> list[float]:
        """Apply a scheduled change at ``now``: queue fields set, nodes drained, nodes added (named apart from the
        others). Returns the instants a queue's quota delay, restarted now, runs out."""
        wakes = [at for path, value in change.set.items() if (at := self._set(path, value, now)) is not None]
        drained = set(change.drain)
        for entry in self.node_docs:
            if entry["name"] in drained:
                entry["schedulable"] = False
        added = node_documents(change.add)
        taken = {e["name"] for e in self.node_docs}
        for entry in added:
            while entry["name"] in taken:
                entry["name"] += "x"
            taken.add(entry["name"])
        self.node_docs += added
        self.nodes = [Node.model_validate(e) for e in self.node_docs]
        self._resources = None
        for node in self.nodes:
            self.used.setdefault(node.name, 0)
            self.other_used.setdefault(node.name, {})
            self.capacity[node.name] = node.resources.get("gpu", 0)
        return wakes

    def _set(self, path: str, value: Any, now: float) -> float | None:
        parts = path.split(".")
        index = {q["name"]: q for q in self.queue_docs}
        if parts[0] != "queues" or len(parts) < 3 or parts[1] not in index:
            raise ValueError(f"{path}: expected queues.<name>.<field>[.<resource>] with a known queue")
        entry = index[parts[1]]
        if len(parts) == 3:
            entry[parts[2]] = value
        else:
            entry[parts[2]] = {**entry.get(parts[2], {}), parts[3]: value}
        self.queues = [Queue.model_validate(q) for q in self.queue_docs]
        # docs/rules.md, "Quota enforcement": the delay timer restarts now
        if parts[2] in ("limit", "quota_preemption_delay"):
            entry["limit_changed_at"] = EPOCH + now
            self.queues = [Queue.model_validate(q) for q in self.queue_docs]
            delay = next(q for q in self.queues if q.name == parts[1]).quota_preemption_delay
            if delay > 0:
                return now + delay
        return None


def job_document(job: SimJob, now: float) -> dict[str, Any]:
    """``job`` as a snapshot's job entry."""
    spec = job.spec
    entry: dict[str, Any] = {"name": spec.name, "queue": spec.queue, "created_at": EPOCH + spec.submit}
    if spec.priority_class is not None:
        entry["priority_class"] = spec.priority_class
    if spec.preemptible is not None:
        entry["preemptible"] = spec.preemptible
    if spec.min_available is not None:
        entry["min_available"] = spec.min_available
    if spec.priority is not None:
        entry["priority"] = spec.priority
    if spec.gpu_model is not None and "|" in spec.gpu_model:  # one of several models
        expression = {"key": GPU_MODEL_LABEL, "operator": "In", "values": spec.gpu_model.split("|")}
        entry["placement"] = {"node_affinity": [[expression]]}
    elif spec.gpu_model is not None:
        entry["placement"] = {"node_selector": {GPU_MODEL_LABEL: spec.gpu_model}}
    if job.started_at is not None and "running" in job.status:
        entry["started_at"] = EPOCH + job.started_at
        checkpoint = _checkpoint(job, now)
        if checkpoint is not None:
            entry["checkpointed_at"] = checkpoint
    requests = [spec.task_resources(i) for i in range(spec.tasks)]
    uniform = all(r == requests[0] for r in requests)
    entry["task_resources"] = _quantities(requests[0])
    tasks = []
    for i, (status, node) in enumerate(zip(job.status, job.node, strict=True)):
        task: dict[str, Any] = {"name": f"{spec.name}-{i}", "status": status}
        if node is not None:
            task["node"] = node
            devices = job.devices[i] if job.devices else None
            if devices is not None:
                task["devices"] = list(devices)
        if not uniform:
            task["resources"] = _quantities(requests[i])
        tasks.append(task)
    entry["tasks"] = tasks
    if job.requeue is not None:
        entry["requeue"] = requeue_dict(job.requeue)
    return entry


def job_model(job: SimJob, now: float) -> Job:
    """``job``'s snapshot model at ``now``, kept until its tasks change (:meth:`.progress.SimJob.changed`) or it
    reaches a checkpoint."""
    model = job.model
    if model is None:
        model = job.model = Job.model_validate(job_document(job, now))
    elif now >= job.model_until:  # a checkpoint since: set in place (a running job's only field that moves)
        model.__dict__["checkpointed_at"] = _checkpoint(job, now)
        model.__pydantic_fields_set__.add("checkpointed_at")
    else:
        return model
    job.model_until = job.next_checkpoint(now) if job.every else float("inf")
    return model


def _checkpoint(job: SimJob, now: float) -> float | None:
    """What ``checkpointed_at`` of ``job``'s model says at ``now`` (:func:`job_document`)."""
    if job.started_at is None or "running" not in job.status:
        return None
    checkpoint = job.last_checkpoint(now)
    return EPOCH + checkpoint if checkpoint is not None and checkpoint > job.started_at else None


def _quantities(resources: dict[str, int]) -> dict[str, Any]:
    return {r: a // MILLI if r == "gpu" and not a % MILLI else format_quantity(r, a) for r, a in resources.items()}
