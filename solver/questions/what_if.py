"""Will a job fit if I submit it, and if not, what would: the decision a new job would get now, and its nearest
variants that run.

The job joins the snapshot's pending jobs and gets the decision ``solve --action auto`` gives it (allocate, then
reclaim, then preempt), on the cluster as it is: nothing else changes. When it would not run, each variant is a real
decision of the engine on the same cluster, never a guess:

* **fewer GPUs a task**: the largest whole number of GPUs a task below the request that runs (one more does not);
* **fewer tasks**: the largest number of tasks below the request that runs (the gang minimum lowered with it);
* **another queue**: each other leaf queue in which it runs;
* **another GPU model**: when it selects nodes by the ``nvidia.com/gpu.product`` label, each other model the nodes
  carry in which it runs;
* **without its topology requirement**: when it asks for one;
* **later**: the earliest time, among those when a protection that shields a running job now ends and those when a
  running job is expected to end (its ``expected_end``: it is gone then), at which it runs on the cluster otherwise
  as it is.

>>> from gpu_preempt.models import Job, load_snapshot
>>> snapshot = load_snapshot("fixtures/example-cluster.yaml")
>>> big = Job.model_validate({"name": "big", "queue": "vision", "task_resources": {"gpu": 8}, "tasks": [{}]})
>>> answer = whatif(snapshot, big)
>>> answer.decision.placed, [(v.change, v.decision.outcome) for v in answer.variants]
(False, [('queue serving', 'pipelined')])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpu_preempt.actions.cycle import final_decision, solve_one
from gpu_preempt.models import MILLI, Job, Snapshot, format_time
from gpu_preempt.models.decision import Decision
from gpu_preempt.state.cluster import ClusterState

__all__ = ["MODEL_LABEL", "Variant", "WhatIf", "whatif", "with_job", "with_jobs"]

MODEL_LABEL = "nvidia.com/gpu.product"
"""The node label that names a node's GPU model (NVIDIA GPU feature discovery)."""


@dataclass(frozen=True)
class Variant:
    """A change to the submitted job (or to when it is submitted) under which it runs, with its decision."""

    change: str
    job: Job
    decision: Decision
    at: float | None = None
    """For a later submission, the time."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"change": self.change, "decision": self.decision.to_dict(timing=False)}
        if self.at is not None:
            out["at"] = format_time(self.at)
        return out


@dataclass
class WhatIf:
    """The decision a submitted job gets now (every action tried), and when it would not run, the variants that do."""

    job: str
    tried: list[Decision]
    variants: list[Variant] = field(default_factory=list)

    @property
    def decision(self) -> Decision:
        return final_decision(self.tried)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "runs": self.decision.placed,
            "decision": self.decision.to_dict(timing=False),
            "attempts": [d.to_dict(timing=False) for d in self.tried],
            "variants": [v.to_dict() for v in self.variants],
        }


def with_job(snapshot: Snapshot, job: Job, *, now: float | None = None) -> Snapshot:
    """``snapshot`` with ``job`` added to its jobs (at ``now`` when given); raises :class:`ValueError` when a job
    or a task of that name exists already, or the job's references do not resolve (pydantic's error)."""
    if any(t.node is not None or t.status != "pending" for t in job.tasks):
        raise ValueError("tasks: a submitted job's tasks are pending, on no node")
    names = {t.name for j in snapshot.jobs for t in j.tasks}
    if any(j.name == job.name for j in snapshot.jobs):
        raise ValueError(f"name: a job named '{job.name}' is in the snapshot already")
    clash = next((t.name for t in job.tasks if t.name in names), None)
    if clash is not None:
        raise ValueError(f"tasks: a task named '{clash}' is in the snapshot already")
    return with_jobs(snapshot, [*snapshot.jobs, job], now=now)


def with_jobs(snapshot: Snapshot, jobs: list[Job], *, now: float | None = None) -> Snapshot:
    """``snapshot`` with ``jobs`` for its jobs (at ``now`` when given); the rest as it is."""
    return Snapshot.assemble(
        now=snapshot.now if now is None else now,
        config=snapshot.config,
        nodes=list(snapshot.nodes),
        queues=list(snapshot.queues),
        priority_classes=list(snapshot.priority_classes),
        jobs=jobs,
    )


def whatif(snapshot: Snapshot, job: Job, *, variants: bool = True) -> WhatIf:
    """The decision ``job`` (pending, not in ``snapshot``) would get now, and with ``variants`` the nearest variants
    that run when it would not."""
    answer = WhatIf(job.name, _tried(snapshot, job))
    if answer.decision.placed or not variants:
        return answer
    for change, variant, at in _variants(snapshot, job, answer.tried):
        tried = _tried(snapshot, variant, now=at)
        decision = final_decision(tried)
        if decision.placed:
            answer.variants.append(Variant(change, variant, decision, at))
    answer.variants = _nearest(answer.variants)
    return answer


def _tried(snapshot: Snapshot, job: Job, *, now: float | None = None) -> list[Decision]:
    """Every attempt of ``job`` in ``snapshot`` (at ``now``, without the running jobs expected to end by then)."""
    if now is not None and any(j.expected_end is not None and j.expected_end <= now for j in snapshot.jobs):
        left = [j for j in snapshot.jobs if j.expected_end is None or j.expected_end > now]
        snapshot = with_jobs(snapshot, left)
    state = with_job(snapshot, job, now=now)
    return solve_one(ClusterState.of(state), state.job(job.name), "auto")


def _variants(snapshot: Snapshot, job: Job, tried: list[Decision]) -> Iterator[tuple[str, Job, float | None]]:
    """Every variant to try, in the order the answer lists them: for each kind the nearest first."""
    gpus = job.task_resources.get("gpu", 0)
    if gpus > MILLI and gpus % MILLI == 0 and job.uniform:
        for whole in range(gpus // MILLI - 1, 0, -1):
            resources = {**job.task_resources, "gpu": whole * MILLI}
            yield f"fewer GPUs a task: {whole}", _changed(job, task_resources=resources), None
    for count in range(len(job.tasks) - 1, 0, -1):
        minimum = None if job.min_available is None else min(job.min_available, count)
        fewer = _changed(job, tasks=job.tasks[:count], min_available=minimum)
        yield f"fewer tasks: {count}", fewer, None
    leaves = [q.name for q in snapshot.queues if snapshot.is_leaf(q.name)]
    for queue in leaves:
        if queue != job.queue:
            yield f"queue {queue}", _changed(job, queue=queue), None
    placement = job.placement
    if placement is not None and MODEL_LABEL in placement.node_selector:
        models = sorted({str(n.labels[MODEL_LABEL]) for n in snapshot.nodes if MODEL_LABEL in n.labels})
        for model in models:
            if model != placement.node_selector[MODEL_LABEL]:
                selector = {**placement.node_selector, MODEL_LABEL: model}
                moved = placement.model_copy(update={"node_selector": selector})
                yield f"GPU model {model}", _changed(job, placement=moved), None
    if placement is not None and placement.topology is not None and placement.topology.required is not None:
        loose = placement.model_copy(update={"topology": None})
        yield "without its topology requirement", _changed(job, placement=loose), None
    now = snapshot.now
    times: dict[float, str] = {}
    for until in sorted({p.until for d in tried for p in d.protected if p.until is not None and p.until > now}):
        times.setdefault(until, "when a protection ends")
    for other in sorted(snapshot.jobs, key=lambda j: (j.expected_end or 0.0, j.name)):
        if other.expected_end is not None and other.expected_end > now and any(t.node for t in other.tasks):
            times.setdefault(other.expected_end, f"when {other.name} is expected to end")
    for at in sorted(times):
        yield f"at {format_time(at)}, {times[at]}", job, at


def _changed(job: Job, **update: Any) -> Job:
    """A copy of ``job`` with ``update``, without what the original kept of its resolution and its tasks."""
    copy = job.model_copy(update=update)
    for key in [k for k in copy.__dict__ if k.startswith("_")]:
        del copy.__dict__[key]
    return copy


def _nearest(found: list[Variant]) -> list[Variant]:
    """The first variant of each kind (the largest size, the earliest time); every queue and model that runs."""
    kept: list[Variant] = []
    seen: set[str] = set()
    for variant in found:
        kind = variant.change.split(":")[0] if ":" in variant.change else variant.change
        if variant.at is not None:
            kind = "later"
        if kind in ("fewer GPUs a task", "fewer tasks", "later"):
            if kind in seen:
                continue
            seen.add(kind)
        kept.append(variant)
    return kept
