"""Jobs and their tasks (pods).

A job is *running* when it has running tasks and *pending* when it has pending
tasks; an elastic job that wants to grow is both. ``min_available`` is the gang
minimum: the job is elastic iff it is below the number of tasks.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .fields import (
    AmountMap,
    FreeMap,
    Int32,
    Name,
    SnapshotModel,
    Time,
    raise_errors,
)
from .quantity import Resources
from .requeue import RequeueState

TaskStatus = Literal["running", "pending", "releasing", "nominated"]
"""Status of a task in a snapshot. ``nominated`` (seed 004): promised to its node by an earlier decision,
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

    @model_validator(mode="after")
    def _check_status(self) -> Task:
        status = self.status or ("running" if self.node is not None else "pending")
        object.__setattr__(self, "status", status)
        if status in (*ON_NODE, "nominated") and self.node is None:
            raise_errors("Task", [(("node",), f"a {status} task needs a node")])
        if status == "pending" and self.node is not None:
            raise_errors("Task", [(("node",), "a pending task has no node; remove it or set the task's status")])
        return self


class Job(SnapshotModel):
    """A gang of tasks in a leaf queue."""

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
        return self

    # Resolved by the snapshot (they depend on priority classes and config).
    # Derived values, set by the snapshot that resolves them (they depend on its priority classes
    # and config). They live in the instance dict next to the fields, not in pydantic private
    # attributes, which cost a few microseconds per job to create and to read.
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
    def gang_minimum(self) -> int:
        """``min_available``, defaulting to the number of tasks."""
        return len(self.tasks) if self.min_available is None else self.min_available

    @property
    def is_elastic(self) -> bool:
        return self.gang_minimum < len(self.tasks)

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
