"""Jobs and their tasks (pods).

A job is *running* when it has running tasks and *pending* when it has pending
tasks; an elastic job that wants to grow is both. ``min_available`` is the gang
minimum: the job is elastic iff it is below the number of tasks.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, Field, model_validator

from .fields import (
    AmountMap,
    Duration,
    FreeMap,
    Int32,
    Name,
    SnapshotModel,
    Time,
    raise_errors,
)
from .placement import Placement
from .quantity import MAX_GPUS, MILLI, Resources
from .requeue import RequeueState

__all__ = [
    "NODE_ONLY",
    "ON_NODE",
    "Job",
    "LazyPartsModel",
    "Task",
    "TaskStatus",
    "running_tasks",
    "set_dict",
    "set_extra",
    "set_given",
    "set_private",
    "share_of",
]

TaskStatus = Literal["running", "pending", "releasing", "nominated"]
"""Status of a task in a snapshot. ``nominated`` (docs/rules.md, "Nominations"): promised to its node by an earlier
decision,
waiting for the capacity that releasing tasks free."""

ON_NODE: tuple[TaskStatus, ...] = ("running", "releasing")
"""Statuses whose task occupies capacity on its node."""


class Task(SnapshotModel):
    """One task (pod) of a job.

    ``status`` defaults to ``running`` when ``node`` is set and ``pending``
    otherwise; ``name`` defaults to ``<job>-<index>``.
    """

    name: Name | None = None
    node: str | None = Field(None, description="required unless pending")
    status: TaskStatus | None = Field(None, description="running | pending | releasing | nominated")
    resources: AmountMap | None = Field(None, description="overrides the job's task_resources")
    devices: list[Annotated[int, Field(ge=0, le=MAX_GPUS - 1)]] | None = Field(
        None, description="the devices (0-based, on its node) a running share of a GPU is on", max_length=MAX_GPUS
    )
    order: Int32 | None = Field(
        None, description="KAI's task order of an elastic job: surplus tasks go without an order first, then lowest"
    )

    @model_validator(mode="after")
    def _check_status(self) -> Task:
        status = self.status or ("running" if self.node is not None else "pending")
        object.__setattr__(self, "status", status)
        if status in (*ON_NODE, "nominated") and self.node is None:
            raise_errors("Task", [(("node",), f"a {status} task needs a node")])
        if status == "pending" and self.node is not None:
            raise_errors("Task", [(("node",), "a pending task has no node; remove it or set the task's status")])
        if self.devices is not None and (status == "pending" or len(set(self.devices)) < len(self.devices)):
            why = "a pending task is on no device" if status == "pending" else "a device is named twice"
            raise_errors("Task", [(("devices",), why)])
        return self


_new = object.__new__
# BaseModel's four slots, set through their descriptors (faster than object.__setattr__ looking each one up by name)
set_dict, set_given, set_extra, set_private = (
    BaseModel.__dict__[slot].__set__
    for slot in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
)
NODE_ONLY = {"node"}
"""The given fields of every task that gives only its node (one set, shared: models are frozen)."""


def share_of(requests: Resources) -> tuple[int, int] | None:
    """What a task's requests take of each device it is on: ``(fraction in milli-GPUs, memory)``, one of them 0;
    ``None`` for a task of whole GPUs, or of none (docs/snapshot-format.md, "GPU sharing").

    >>> share_of({"gpu": 500}), share_of({"gpu_memory": 20 * 2**30 * 1000}), share_of({"gpu": 2000})
    ((500, 0), (0, 21474836480000), None)
    """
    fraction, memory = requests.get("gpu", 0), requests.get("gpu_memory", 0)
    if 0 < fraction < MILLI or (memory > 0 and fraction == 0):
        return fraction, memory
    return None


def running_tasks(job: str, nodes: list[str]) -> list[Task]:
    """The tasks validation makes of ``[{"node": nodes[0]}, {"node": nodes[1]}, ...]`` for ``job``: running there,
    named ``<job>-<index>``, with only ``node`` given."""
    tasks = []
    for index, node in enumerate(nodes):
        task = _new(Task)
        set_dict(
            task,
            {
                "name": f"{job}-{index}",
                "node": node,
                "status": "running",
                "resources": None,
                "devices": None,
                "order": None,
            },
        )
        set_given(task, NODE_ONLY)
        set_extra(task, None)
        set_private(task, None)
        tasks.append(task)
    return tasks


class LazyPartsModel(SnapshotModel):
    """A model that may hold jobs, or tasks, not made yet (see :class:`Job` and :mod:`.job_list`): dumps, pickles,
    comparisons, copies and reprs read the fields directly, so they make them first (:meth:`made_tasks`)."""

    def made_tasks(self) -> object:
        raise NotImplementedError

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        self.made_tasks()
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        self.made_tasks()
        return super().model_dump_json(**kwargs)

    def __getstate__(self) -> dict[Any, Any]:
        self.made_tasks()
        return super().__getstate__()

    def __eq__(self, other: object) -> bool:
        self.made_tasks()
        if isinstance(other, LazyPartsModel):
            other.made_tasks()
        return super().__eq__(other)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        self.made_tasks()
        return super().__deepcopy__(memo)

    def __repr_args__(self) -> Any:
        self.made_tasks()
        return super().__repr_args__()


class Job(LazyPartsModel):
    """A gang of tasks in a leaf queue."""

    # The struct path (load/build.py) may leave out the tasks of a job whose every task gives only its node, keeping
    # the nodes (``_task_nodes``): they are made (running_tasks) when first read. Comparing, copying, pickling and
    # serializing a job make them first, so no one can tell.

    name: Name
    queue: Name
    priority_class: str | None = None
    priority: Int32 | None = None
    preemptible: bool | None = Field(None, description="default: priority below config.preemptible_below_priority")
    min_available: int | None = Field(None, ge=1, le=2**31 - 1, description="gang minimum; default = number of tasks")
    task_resources: AmountMap = Field(default_factory=dict, description="per task")
    created_at: Time | None = None
    started_at: Time | None = Field(None, description="last start: the min-runtime and toleration clock")
    tasks: list[Task] = Field(min_length=1)
    labels: FreeMap = Field(default_factory=dict)
    annotations: FreeMap = Field(default_factory=dict)
    requeue: RequeueState | None = Field(None, description="requeue state after evictions")
    placement: Placement | None = Field(
        None, description="where its tasks may run (docs/snapshot-format.md, Placement)"
    )
    checkpointed_at: Time | None = Field(
        None, description="its last checkpoint: an eviction or a move loses only the progress made since"
    )
    expected_end: Time | None = Field(
        None,
        description="when its running tasks are expected to finish (read by whatif; decisions ignore it)",
    )
    gpu_devices: int = Field(
        1, ge=1, le=MAX_GPUS, description="a share of a GPU is taken on each of this many devices of one node"
    )
    preemption_delay: Duration | None = Field(
        None, description="KAI's preemption delay: pending, it may not reclaim or preempt until created_at + delay"
    )

    @model_validator(mode="after")
    def _check_tasks(self) -> Job:
        for index, task in enumerate(self.tasks):
            if task.name is None:
                object.__setattr__(task, "name", f"{self.name}-{index}")
        if self.min_available is not None and self.min_available > len(self.tasks):
            raise_errors(
                "Job",
                [(("min_available",), f"min_available {self.min_available} exceeds the {len(self.tasks)} tasks")],
            )
        raise_errors("Job", self._sharing_errors())
        ordered = [i for i, task in enumerate(self.tasks) if task.order is not None]
        if ordered and self.gang_minimum >= len(self.tasks):
            why = "only an elastic job (min_available below its tasks) orders its tasks: its surplus goes in that order"
            raise_errors("Job", [(("tasks", ordered[0], "order"), why)])
        if self.preemption_delay is not None and self.created_at is None:
            raise_errors(
                "Job", [(("preemption_delay",), "the delay runs from created_at, which the job does not give")]
            )
        return self

    def _sharing_errors(self) -> list[tuple[tuple[str | int, ...], str]]:
        """What GPU sharing refuses (docs/snapshot-format.md, "GPU sharing"): a share by fraction and by memory at
        once; ``gpu_devices`` above 1 without a share; devices named by a whole-GPU task, missing on a running or
        releasing share, or not ``gpu_devices`` of them."""
        errors: list[tuple[tuple[str | int, ...], str]] = []
        for where, requests in [(("task_resources",), self.task_resources)] + [
            (("tasks", i, "resources"), t.resources) for i, t in enumerate(self.tasks) if t.resources is not None
        ]:
            if 0 < requests.get("gpu", 0) < MILLI and requests.get("gpu_memory", 0) > 0:
                errors.append(((*where, "gpu_memory"), "a share is by fraction (gpu) or by memory, never both"))
            elif requests.get("gpu_memory", 0) > 0 and requests.get("gpu", 0) >= MILLI:
                errors.append(((*where, "gpu_memory"), "a whole-GPU task takes whole devices: it asks for no memory"))
        shared = [share_of(self.requests(t)) is not None for t in self.tasks]
        if self.gpu_devices > 1 and not any(shared):
            errors.append((("gpu_devices",), "only a share of a GPU (below one, or gpu_memory) is taken on devices"))
        elif self.gpu_devices > 1 and not all(shared):
            i = shared.index(False)
            errors.append(
                (("tasks", i, "resources"), "a job on several devices (gpu_devices) asks for a share in every task")
            )
        for i, (task, share) in enumerate(zip(self.tasks, shared, strict=True)):
            if task.devices is not None and not share:
                errors.append((("tasks", i, "devices"), "a whole-GPU task holds any free devices: it names none"))
            elif share and task.status in ("running", "releasing") and task.devices is None:
                errors.append((("tasks", i, "devices"), f"a {task.status} share of a GPU names its device(s)"))
            elif share and task.devices is not None and len(task.devices) != self.gpu_devices:
                count = len(task.devices)
                errors.append((("tasks", i, "devices"), f"{count} device(s) named; the job takes {self.gpu_devices}"))
        return errors

    def __copy__(self) -> Job:
        self.made_tasks()  # so that the copy shares the tasks (a snapshot's copy shares its jobs without this)
        return super().__copy__()

    def __getattr__(self, item: str) -> Any:
        if item == "tasks" and "_task_nodes" in self.__dict__:
            return self.made_tasks()
        return super().__getattr__(item)  # type: ignore[misc]

    def made_tasks(self) -> list[Task]:
        """``tasks``, made now if the struct path left them out (in their place among the fields: dumps keep their
        order)."""
        fields = self.__dict__
        nodes = fields.pop("_task_nodes", None)
        if nodes is None:
            tasks: list[Task] = fields["tasks"]
            return tasks
        keys = list(fields)
        after = keys[keys.index("started_at") + 1 :]
        rest = {key: fields.pop(key) for key in after}
        fields["tasks"] = tasks = running_tasks(self.name, nodes)
        fields.update(rest)
        return tasks

    # Resolved by the snapshot (they depend on priority classes and config).
    # Derived values, set by the snapshot that resolves them (they depend on its priority classes
    # and config). They live in the instance dict next to the fields, not in pydantic private
    # attributes, which cost a few microseconds per job to create and to read.
    @property
    def progress_since(self) -> float | None:
        """Since when an eviction or a move would lose the job's progress: its last checkpoint after its last
        start, else its start (``None``: never started). The lost-work clock (docs/snapshot-format.md,
        "Victim choice")."""
        started, checkpoint = self.started_at, self.checkpointed_at
        if started is None or checkpoint is None:
            return started
        return max(started, checkpoint)

    @property
    def resolved_priority(self) -> int:
        """Priority value: ``priority``, else its class's value, else ``config.default_priority``."""
        value: int = self.__dict__["_resolved_priority"]
        return value

    @property
    def is_preemptible(self) -> bool:
        """``preemptible`` if given, else priority below ``config.preemptible_below_priority``."""
        value: bool = self.__dict__["_resolved_preemptible"]
        return value

    @property
    def may_evict(self) -> bool:
        """Whether the job may evict others (preempt, reclaim): not when its class says ``preemption_policy: Never``."""
        value: bool = self.__dict__.get("_may_evict", True)
        return value

    @property
    def uniform(self) -> bool:
        """Whether every task requests ``task_resources`` (no task overrides it with something else)."""
        cached: bool | None = self.__dict__.get("_uniform")
        if cached is None:
            cached = all(t.resources is None or t.resources == self.task_resources for t in self.tasks)
            self.__dict__["_uniform"] = cached
        return cached

    @property
    def task_count(self) -> int:
        """How many tasks the job has (without making the tasks the struct path left out)."""
        nodes = self.__dict__.get("_task_nodes")
        return len(self.tasks) if nodes is None else len(nodes)

    @property
    def gang_minimum(self) -> int:
        """``min_available``, defaulting to the number of tasks."""
        return self.task_count if self.min_available is None else self.min_available

    @property
    def is_elastic(self) -> bool:
        return self.gang_minimum < self.task_count

    def requests(self, task: Task) -> Resources:
        """Resources one task requests (its override, else ``task_resources``)."""
        return self.task_resources if task.resources is None else task.resources

    def tasks_with(self, *statuses: str) -> list[Task]:
        return [t for t in self.tasks if t.status in statuses]

    @property
    def running_count(self) -> int:
        return sum(1 for t in self.tasks if t.status == "running")

    @property
    def pending_count(self) -> int:
        return sum(1 for t in self.tasks if t.status == "pending")
