"""Scheduler-wide (node-pool) settings: the snapshot's ``config`` block."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, WithJsonSchema, field_validator

from .fair_share_usage import FairShareUsage
from .fields import MAX_WEIGHT, Duration, Int32, Name, SnapshotModel
from .requeue import RequeueConfig

__all__ = [
    "DEFAULT_OBJECTIVE",
    "Config",
    "Criterion",
    "PlacementStrategy",
    "QuotaMiss",
    "RankedCriterion",
    "ReclaimLine",
    "SolverConfig",
    "SolverName",
    "Strategy",
    "criteria",
]

Criterion = Literal["priority", "jobs", "tasks", "lost_work", "moves"]
"""A victim-choice criterion (docs/snapshot-format.md, "Rules", *Victim choice*)."""

DEFAULT_OBJECTIVE: tuple[Criterion, ...] = ("priority", "jobs", "tasks", "lost_work")

RankedCriterion = Literal["priority", "jobs", "tasks", "lost_work", "lost_cpu_work", "moves"]
"""A criterion as the solver ranks victims: the listed ones, with ``lost_cpu_work`` right after ``lost_work``."""


def criteria(objective: tuple[Criterion, ...]) -> tuple[RankedCriterion, ...]:
    """``objective`` as the solver ranks it: ``lost_cpu_work`` (the CPU-seconds a victim without GPUs loses) right
    after ``lost_work``, which counts GPU-seconds only (docs/snapshot-format.md, "Victim choice").

    >>> criteria(("priority", "lost_work", "jobs"))
    ('priority', 'lost_work', 'lost_cpu_work', 'jobs')
    """
    out: list[RankedCriterion] = []
    for criterion in objective:
        out.append(criterion)
        if criterion == "lost_work":
            out.append("lost_cpu_work")
    return tuple(out)


ReclaimLine = Literal["last_chunk", "strict"]
"""How far a reclaim may take a victim queue (docs/snapshot-format.md, "Rules", *Reclaim*): ``last_chunk`` (KAI) or
``strict``."""


def _quota_miss(value: Any) -> float | str:
    if value == "best_effort":
        return "best_effort"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a valid number in [0, 1), or best_effort")
    if not math.isfinite(value) or value < 0:
        raise ValueError("Input should be greater than or equal to 0")
    if value >= 1:
        raise ValueError("Input should be less than 1 (or best_effort)")
    return float(value)


QuotaMiss = Annotated[
    float | str,
    BeforeValidator(_quota_miss),
    WithJsonSchema(
        {
            "anyOf": [{"type": "number", "minimum": 0, "exclusiveMaximum": 1}, {"const": "best_effort"}],
            "description": "a fraction in [0, 1), or best_effort",
        }
    ),
]


SolverName = Literal["cpsat", "greedy"]
"""Who decides: CP-SAT (exact, proved) or the greedy baseline (the peer's own search)."""


class SolverConfig(SnapshotModel):
    """CP-SAT limits. ``workers: 0`` means all cores."""

    time_limit: Duration = Field(1.0, description="budget of one decision, on the clock `clock` names")
    workers: int = Field(0, ge=0, le=1024, description="CP-SAT search workers; 0 = all cores")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="CP-SAT random seed")
    clock: Literal["wall", "work"] = Field(
        "wall",
        description="wall: time_limit in seconds of wall clock; work: in CP-SAT's deterministic time (a count of "
        "work) with one worker, so that the answer is the same on any machine under any load (replays use it)",
    )

    @field_validator("time_limit")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("time_limit must be positive")
        return value


Strategy = Literal["binpack", "spread"]
"""Where tasks go among the nodes that take them: the fullest first (binpack) or the emptiest (spread)."""


class PlacementStrategy(SnapshotModel):
    """KAI's ``nodeplacement`` plugin (and, for GPUs, ``gpupack`` or ``gpuspread``): the node order per kind of task,
    GPU tasks by their GPUs, tasks without GPUs by their CPU (docs/rules.md, "Node order")."""

    gpu: Strategy = Field("binpack", description="tasks that ask for GPUs: binpack or spread on GPUs")
    cpu: Strategy = Field("binpack", description="tasks without GPUs: binpack or spread on CPU")


class Config(SnapshotModel):
    """Node-pool defaults; every field is optional."""

    preempt_min_runtime: Duration = Field(0.0, description="node-pool preempt-min-runtime")
    reclaim_min_runtime: Duration = Field(0.0, description="node-pool reclaim-min-runtime")
    min_runtime_resolve: Literal["lca", "queue"] = Field("lca", description="how reclaim-min-runtime is resolved")
    preemptible_below_priority: Int32 = Field(
        100, description="a job without an explicit `preemptible` is preemptible iff its priority is below this"
    )
    default_priority: Int32 = Field(50, description="priority of a job naming neither priority nor priority_class")
    reclaimer_saturation_multiplier: float = Field(
        1.0,
        ge=1.0,
        le=MAX_WEIGHT,
        allow_inf_nan=False,
        description="parent-level saturation rule of reclaim (KAI proportion plugin)",
    )
    objective: tuple[Criterion, ...] = Field(DEFAULT_OBJECTIVE, min_length=1, description="most important first")
    solver: SolverConfig = Field(default_factory=SolverConfig)
    quota_preemption_enabled: bool = Field(
        False, description="switch of quota enforcement through preemption; off by default"
    )
    quota_miss: QuotaMiss = Field(
        0.0,
        description="fraction over the limit a best-effort quota enforcement may leave; 0 = none; "
        "best_effort = evict the best partial set whatever remains (YuniKorn)",
    )
    policy: Literal["kai", "kueue"] = Field(
        "kai", description="kai: KAI-Scheduler's queues (deserved, fair share); kueue: ClusterQueues and Cohorts"
    )
    fair_sharing: bool | None = Field(None, description="kueue: Kueue's fair sharing (dominant resource share)")
    fair_sharing_strategies: list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]] | None = Field(
        None, min_length=1, description="kueue with fair_sharing: the preemption strategies, in order"
    )
    quota_overshoot: Literal["allow", "never"] = Field(
        "allow",
        description="allow: quota enforcement brings usage within the limit, freeing more if it must; never: it frees "
        "at most the excess, the closest set below it (YuniKorn)",
    )
    reclaim_guarantee: ReclaimLine = Field(
        "last_chunk",
        description="last_chunk: a victim queue may be reclaimed while it is above its line in some resource before "
        "its last chunk (KAI); strict: never below its line",
    )
    actions: tuple[Literal["allocate", "reclaim", "preempt"], ...] = Field(
        ("allocate", "reclaim", "preempt"),
        min_length=1,
        description="the job actions a cycle runs, in this order (KAI's `actions`; quota enforcement has its switch)",
    )
    placement_strategy: PlacementStrategy = Field(
        default_factory=PlacementStrategy, description="KAI's node order: binpack (default) or spread, per kind of task"
    )
    fair_share_usage: FairShareUsage | None = Field(
        None, description="KAI's time-based fair share: past usage (each queue's usage) moves the over-quota split"
    )
    moves: bool = Field(True, description="a victim task may be moved to free room on another node instead of evicted")
    requeue: RequeueConfig = Field(default_factory=RequeueConfig, description="requeue with backoff after eviction")
    topology: tuple[Name, ...] = Field(
        (), description="topology levels, largest first: each is a node label key (docs/snapshot-format.md, Placement)"
    )

    @property
    def best_effort(self) -> bool:
        """``quota_miss: best_effort``: a partial enforcement is always taken (as YuniKorn does; docs/rules.md, "Quota
        enforcement")."""
        return self.quota_miss == "best_effort"

    @property
    def miss_fraction(self) -> float | None:
        """``quota_miss`` as a fraction; ``None`` for ``best_effort`` (no bound on what remains)."""
        return None if isinstance(self.quota_miss, str) else self.quota_miss

    @field_validator("objective", "topology", "actions", mode="before")
    @classmethod
    def _as_tuple(cls, value: object) -> object:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("objective", "topology", "actions")
    @classmethod
    def _unique(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        repeated = sorted({c for c in value if value.count(c) > 1})
        if repeated:
            what = {"objective": "criterion", "topology": "level"}.get(info.field_name or "", "action")
            raise ValueError(f"{what} listed twice: {', '.join(repeated)}")
        return value
