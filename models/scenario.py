"""Scenarios for capacity planning (docs/scenario-format.md): a cluster, a policy, a workload, and how to replay it.

A scenario is validated like a snapshot: unknown fields are errors, every error
names its field path. Durations and quantities use the snapshot's notation.

Examples
--------
>>> s = Scenario.model_validate({
...     "cluster": {"nodes": [{"count": 2, "gpu": 8}]},
...     "queues": [{"name": "team", "deserved": {"gpu": 16}}],
...     "workload": {"trace": {"format": "itp", "path": "cluster10.csv"}},
... })
>>> s.simulation.period, s.workload.time_scale
(10.0, 1.0)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, WithJsonSchema, field_validator, model_validator

from .config import Config
from .errors import SnapshotError, kind_of
from .fields import QUANTITY_SCHEMA, AmountMap, Duration, FreeMap, Name, SnapshotModel, raise_errors
from .placement import Taint
from .priority_class import PriorityClass
from .quantity import MAX_GPUS, parse_quantity
from .queue import Queue

__all__ = [
    "Assignment",
    "ClusterShape",
    "Durations",
    "FillUp",
    "MachineTable",
    "NodeGroup",
    "Quantity",
    "QueueSource",
    "Restart",
    "Scenario",
    "ScheduledChange",
    "Simulation",
    "SizeClass",
    "TraceFormat",
    "TraceSpec",
    "Weighted",
    "Window",
    "Workload",
    "scenario_from_data",
    "share_milli",
]

TraceFormat = Literal["itp", "csv"]


Quantity = Annotated[int, BeforeValidator(parse_quantity), WithJsonSchema(QUANTITY_SCHEMA)]
"""One Kubernetes quantity (milli-units)."""


class NodeGroup(SnapshotModel):
    """``count`` identical nodes named ``<name>-<i>`` (numbered across groups of the same name). A ``gpu_model`` is
    also the nodes' ``nvidia.com/gpu.product`` label, as GPU feature discovery labels real nodes."""

    count: int = Field(ge=1, le=1_000_000)
    gpu: int = Field(ge=0, le=MAX_GPUS, description="GPUs per node")
    cpu: Quantity = Field(64_000, description="default 64 cores")
    memory: Quantity = Field(512 * 1024**3 * 1000, description="default 512Gi")
    gpu_model: str | None = None
    name: Name = "node"
    labels: dict[str, str] = Field(default_factory=dict, description="node labels (docs/snapshot-format.md, Placement)")
    taints: list[Taint] = Field(default_factory=list, description="node taints (docs/snapshot-format.md, Placement)")


class MachineTable(SnapshotModel):
    """Node groups read from a table of machines (``pai``: Alibaba PAI's pai_machine_spec.csv, one row per machine:
    id, GPU type, CPUs, memory in GB, GPUs): one group per kind of machine with GPUs, its GPU type the model."""

    format: Literal["pai"]
    path: str = Field(description="relative to the scenario file")
    scale: float = Field(1.0, gt=0, le=1, description="keep this share of each kind of machine (at least one)")


class ClusterShape(SnapshotModel):
    """A snapshot file (its nodes, queues, classes, config and jobs), node groups, or a machine table."""

    snapshot: str | None = Field(None, description="a snapshot file, relative to the scenario")
    nodes: list[NodeGroup] = Field(default_factory=list)
    machines: MachineTable | None = Field(None, description="node groups read from a table of machines")
    remaining: Duration | None = Field(
        None,
        description="a snapshot's jobs: work each has left, at full width (running ones from the snapshot's "
        "instant, waiting ones once they start); required when the snapshot holds jobs",
    )
    remaining_of: dict[str, Duration] = Field(
        default_factory=dict, description="a snapshot's jobs: work left per job name, instead of `remaining`"
    )

    @model_validator(mode="after")
    def _one_source(self) -> ClusterShape:
        if (self.snapshot is not None) + bool(self.nodes) + (self.machines is not None) != 1:
            raise_errors("ClusterShape", [((), "give one of snapshot, nodes (node groups) or machines")])
        if self.snapshot is None and (self.remaining is not None or self.remaining_of):
            raise_errors("ClusterShape", [(("remaining",), "only a snapshot's jobs have remaining work")])
        return self


class TraceSpec(SnapshotModel):
    """Where the trace is and how to read it (``csv``: ``columns`` maps canonical names to the file's headers)."""

    format: TraceFormat
    path: str = Field(description="relative to the scenario file")
    columns: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "csv: canonical column (id, submit, duration, gpus, queue, priority_class, tasks, cpu, memory, "
            "gpu_model) -> header in the file"
        ),
    )
    units: dict[Literal["cpu", "memory"], str] = Field(
        default_factory=dict,
        description="csv: the unit of plain numbers in the cpu or memory column, a quantity suffix (m, Mi, Gi ...)",
    )

    @field_validator("units")
    @classmethod
    def _suffixes(cls, units: dict[str, str]) -> dict[str, str]:
        for column, unit in units.items():
            try:
                parse_quantity(f"1{unit}")
            except ValueError:
                raise ValueError(f"{column}: {unit!r} is not a quantity suffix (m, k, M, G, Ki, Mi, Gi ...)") from None
        return units


class Weighted(SnapshotModel):
    """A choice drawn per job from a seeded hash of its id, with these weights."""

    weights: dict[str, float] = Field(min_length=1)

    @model_validator(mode="after")
    def _positive(self) -> Weighted:
        bad: list[tuple[tuple[str | int, ...], str]] = [
            (("weights", k), "a weight must be a finite number >= 0")
            for k, w in self.weights.items()
            if not 0 <= w < 1e300
        ]
        if not bad and sum(self.weights.values()) <= 0:
            bad = [(("weights",), "at least one weight must be positive")]
        raise_errors("Weighted", bad)
        return self


class SizeClass(SnapshotModel):
    """Jobs with at most ``max_gpus`` GPUs (the first class that fits) get ``priority_class``."""

    max_gpus: float | None = Field(
        None, ge=0, le=2**31 - 1, description="null = any size; 0.5: shares up to half a GPU"
    )
    priority_class: Name


class Assignment(SnapshotModel):
    """Fields the trace does not carry, assigned from the scenario's seed and listed as synthetic in every output."""

    queue: Weighted | None = Field(
        None, description="default: the leaf queues, weighted by their GPU deserved (Kueue: nominal)"
    )
    priority_class: Weighted | list[SizeClass] | None = Field(
        None, description="weights per class, or size classes in order; default: none (config.default_priority)"
    )
    elastic: float = Field(0.0, ge=0, le=1, description="share of multi-task jobs made elastic")
    elastic_min: float = Field(0.5, gt=0, le=1, description="an elastic job's min_available = ceil(tasks x this)")
    preemptible: float | None = Field(
        None, ge=0, le=1, description="share of jobs marked preemptible (the rest not); null = by priority"
    )
    gpu_model: Weighted | None = Field(
        None, description="a GPU model per job, weights per model of the cluster; the job runs only on such nodes"
    )
    gpu_share: Weighted | None = Field(
        None,
        description="for jobs of one GPU, the share of one GPU each takes, weights per share ('1' whole, '0.5', "
        "'0.25', in thousandths): a share goes on one device beside others (docs/snapshot-format.md, GPU sharing)",
    )

    @model_validator(mode="after")
    def _shares(self) -> Assignment:
        if self.gpu_share is not None:
            bad: list[tuple[tuple[str | int, ...], str]] = [
                (("gpu_share", "weights", key), "a share of one GPU: a number above 0, at most 1, in thousandths")
                for key in self.gpu_share.weights
                if share_milli(key) is None
            ]
            raise_errors("Assignment", bad)
        return self


def share_milli(text: str) -> int | None:
    """The milli-GPUs of a share written ``text`` (``"0.25"`` -> 250, ``"1"`` -> 1000), or ``None`` if it is not a
    share of one GPU in thousandths.

    >>> share_milli("0.25"), share_milli("1"), share_milli("1.5"), share_milli("0.0001")
    (250, 1000, None, None)
    """
    try:
        value = float(text) * 1000
    except ValueError:
        return None
    if not 0 < value <= 1000 or abs(value - round(value)) > 1e-6:
        return None
    return round(value)


class Window(SnapshotModel):
    """Which jobs of the trace: submitted in [start, end) (trace seconds, before time_scale), then the first N."""

    start: Duration | None = None
    end: Duration | None = None
    first: int | None = Field(None, ge=1, le=2**31 - 1)


class Durations(SnapshotModel):
    """Job durations drawn from another trace's runtimes instead of the trace's own (``philly``: the Philly trace's
    task runtimes, one ``runtime`` column of seconds). Each job draws a quantile from the seed and its id."""

    format: Literal["philly"]
    path: str = Field(description="relative to the scenario file")
    minimum: Duration = Field(1.0, description="shorter runtimes (Philly has zeros) are raised to this")

    @model_validator(mode="after")
    def _positive(self) -> Durations:
        if self.minimum <= 0:
            raise_errors("Durations", [(("minimum",), "must be positive")])
        return self


class QueueSource(SnapshotModel):
    """Leaf queues read from a file of per-tenant GPU quotas (``helios``: SenseTime Helios' cluster_gpu_number.csv,
    one column per virtual cluster, one row per day): one queue per VC, deserved = its GPUs on ``date``."""

    format: Literal["helios"]
    path: str = Field(description="relative to the scenario file")
    date: str | None = Field(None, description="the day whose quotas are used (YYYY-MM-DD); default the first")
    days: int = Field(0, ge=0, description="later days replayed as scheduled quota changes, one per simulated day")
    fit: bool = Field(True, description="scale the quotas so that they add up to the cluster's GPUs")


class FillUp(SnapshotModel):
    """A fill-up experiment (docs/scenario-format.md, "Fill-up"): job shapes drawn from the trace (seeded) arrive
    one per ``interval`` until the GPUs they ask for reach ``target`` x the cluster's GPUs; none departs."""

    target: float = Field(1.05, gt=0, le=100, description="GPUs requested at the end, as a multiple of capacity")
    seed: int = Field(0, ge=0, description="which shapes are drawn")
    interval: Duration = Field(1.0, description="seconds between two arrivals")

    @model_validator(mode="after")
    def _positive(self) -> FillUp:
        if self.interval <= 0:
            raise_errors("FillUp", [(("interval",), "must be positive")])
        return self


class Workload(SnapshotModel):
    trace: TraceSpec
    durations: Durations | None = Field(None, description="durations drawn from another trace's runtimes")
    assign: Assignment = Field(default_factory=Assignment)
    time_scale: float = Field(1.0, gt=0, le=1e6, description="submit times are divided by this (k > 1 compresses)")
    window: Window = Field(default_factory=Window)
    per_gpu: AmountMap = Field(
        default_factory=dict, description="CPU and memory per GPU of a task; default: the first node's ratio"
    )
    fill_up: FillUp | None = Field(None, description="replay drawn shapes until the GPUs requested reach a target")


class Restart(SnapshotModel):
    """What an evicted job loses: ``restart`` = all progress, ``checkpoint`` = progress since the last checkpoint."""

    model: Literal["restart", "checkpoint"] = "restart"
    interval: Duration | None = Field(None, description="checkpoint: seconds of progress between checkpoints")
    overhead: Duration = Field(0.0, description="extra seconds of work every restart costs")

    @model_validator(mode="after")
    def _interval(self) -> Restart:
        if self.model == "checkpoint" and not self.interval:
            raise_errors("Restart", [(("interval",), "checkpoint needs a positive interval")])
        return self


class Simulation(SnapshotModel):
    period: Duration = Field(10.0, description="a cycle runs at most this often, and only after a change")
    grace_period: Duration = Field(30.0, description="evicted tasks hold their GPUs this long (releasing)")
    restart: Restart = Field(default_factory=Restart)
    solver: Literal["cpsat", "greedy"] = "cpsat"
    time_limit: Duration = Field(1.0, description="per decision")
    seed: int = Field(0, ge=0)
    sample_every: Duration = Field(600.0, description="time-series sample interval")
    check: bool = Field(False, description="check invariants and verify every decision, every cycle")

    @model_validator(mode="after")
    def _positive(self) -> Simulation:
        errors: list[tuple[tuple[str | int, ...], str]] = []
        for name in ("period", "time_limit", "sample_every"):
            if getattr(self, name) <= 0:
                errors.append(((name,), "must be positive"))
        raise_errors("Simulation", errors)
        return self


class ScheduledChange(SnapshotModel):
    """At ``at`` seconds of simulated time (from the first arrival): set queue fields, drain or add nodes."""

    at: Duration
    set: FreeMap = Field(
        default_factory=dict, description="queues.<name>.<field>[.<resource>]: value, e.g. queues.a.limit.gpu: 16"
    )
    drain: list[str] = Field(default_factory=list, description="nodes made unschedulable (running work stays)")
    add: list[NodeGroup] = Field(default_factory=list)


class Scenario(SnapshotModel):
    """A capacity-planning scenario (docs/scenario-format.md)."""

    cluster: ClusterShape
    queues: list[Queue] = Field(default_factory=list, description="default: the snapshot's")
    queues_from: QueueSource | None = Field(None, description="leaf queues from a quota file (instead of queues)")
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    config: Config | None = Field(None, description="default: the snapshot's, else the defaults")
    workload: Workload
    simulation: Simulation = Field(default_factory=Simulation)
    events: list[ScheduledChange] = Field(default_factory=list)
    description: str | None = None
    labels: FreeMap = Field(default_factory=dict)

    @model_validator(mode="after")
    def _has_queues(self) -> Scenario:
        if self.queues_from is not None and self.queues:
            raise_errors("Scenario", [(("queues_from",), "give queues or queues_from, not both")])
        if self.cluster.snapshot is None and not self.queues and self.queues_from is None:
            raise_errors("Scenario", [(("queues",), "a cluster given by node groups needs queues (or queues_from)")])
        return self


def scenario_from_data(data: Any) -> Scenario:
    """Validate already-parsed data (a mapping) as a scenario; errors name field paths."""
    if not isinstance(data, dict):
        raise SnapshotError.single(
            "", f"a scenario is a mapping with cluster, queues, workload, ...; the file holds {kind_of(data)}"
        )
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise SnapshotError.from_validation_error(err) from None
