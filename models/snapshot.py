"""The snapshot document: one instant of a cluster, validated as a whole.

Besides the field checks of each model, a snapshot checks what only the whole
document can tell: names are unique, references resolve, the queues form a
tree, jobs sit in leaf queues, and no node holds more than it has.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field, PrivateAttr, model_validator

from .config import Config
from .duration import MAX_INSTANT, format_time
from .errors import UnknownJobError
from .fields import FreeMap, Time, raise_errors
from .job import ON_NODE, Job, LazyPartsModel, Task, share_of
from .load.job_list import JobList
from .node import Node
from .priority_class import PriorityClass, Toleration
from .quantity import UNLIMITED, format_quantity
from .queue import KAI_FIELDS, KUEUE_FIELDS, Queue
from .sharing import (
    column_ledger,
    counted_apart,
    counted_job,
    device_ledger,
    has_shares,
    memory_size,
)

__all__ = ["COLUMNS_FROM", "MAX_QUEUE_DEPTH", "Loc", "Snapshot", "resolution", "topology_jobs"]

T = TypeVar("T")

if TYPE_CHECKING:
    from .columns import JobColumns, TaskColumns  # imported when first used: it brings numpy, which the command line's
    # commands that only read a snapshot do without

Loc = tuple[str | int, ...]

COLUMNS_FROM = 1000
MAX_QUEUE_DEPTH = 64
"""The deepest queue tree a snapshot may have (levels below the root): KAI's and Kueue's trees have a few; the
checks of a tree walk each queue's path to the root."""
"""Snapshots with this many jobs or more are checked, and their state counted, on task columns (numpy); smaller
ones task by task, which costs less than importing numpy (a command that only reads a small snapshot starts
faster)."""


class Snapshot(LazyPartsModel):
    """A cluster at one instant (spec: snapshot format v1)."""

    now: Time = Field(description="the instant the decision is made")
    config: Config = Field(default_factory=Config)
    nodes: list[Node]
    queues: list[Queue]
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)
    description: str | None = Field(None, description="free text (fixtures describe their scenario here)")
    expect: FreeMap | None = Field(None, description="a fixture's expected outcome; ignored by the engine")

    _nodes: dict[str, Node] = PrivateAttr(default_factory=dict)
    _queues: dict[str, Queue] = PrivateAttr(default_factory=dict)
    _classes: dict[str, PriorityClass] = PrivateAttr(default_factory=dict)
    _jobs: Mapping[str, Job] = PrivateAttr(default_factory=dict)
    _children: dict[str, list[str]] = PrivateAttr(default_factory=dict)
    _shared_jobs: list[int] = PrivateAttr(default_factory=list)

    # -- lookups -------------------------------------------------------------

    # Lookups read the private-attribute dict directly: pydantic's __getattr__ is slow and these are hot.
    def node(self, name: str) -> Node:
        return self.__pydantic_private__["_nodes"][name]  # type: ignore[index,no-any-return]

    def queue(self, name: str) -> Queue:
        return self.__pydantic_private__["_queues"][name]  # type: ignore[index,no-any-return]

    def job(self, name: str) -> Job:
        """The job named ``name``; :class:`UnknownJobError` (a :class:`KeyError`) when there is none."""
        try:
            return self.__pydantic_private__["_jobs"][name]  # type: ignore[index,no-any-return]
        except KeyError:
            raise UnknownJobError(name) from None

    def jobs_by_name(self) -> Mapping[str, Job]:
        """Job name -> job (the index lookups use; for loops over many jobs)."""
        return self.__pydantic_private__["_jobs"]  # type: ignore[index,no-any-return]

    def priority_class(self, name: str) -> PriorityClass:
        return self.__pydantic_private__["_classes"][name]  # type: ignore[index,no-any-return]

    def children(self, queue: str | None) -> list[str]:
        """Child queue names of ``queue`` (``None`` = the top-level queues), in document order."""
        return self._children.get(queue or "", [])

    def is_leaf(self, queue: str) -> bool:
        return not self._children.get(queue)

    def built_columns(self) -> TaskColumns | None:
        """The task columns if they exist already (validation builds them for large snapshots), else ``None``."""
        found: TaskColumns | None = self.__dict__.get("_columns")
        return found

    def task_columns(self) -> TaskColumns:
        """Every task as columns (job, node, status, requests), built once (:mod:`.columns`).

        Kept in the instance dict next to the fields, as derived values of jobs are: not compared, not dumped.
        """
        found = self.built_columns()
        if found is None:
            from .columns import TaskColumns

            found = self.__dict__["_columns"] = TaskColumns.of(self.nodes, self.jobs)
        return found

    def job_columns(self) -> JobColumns:
        """Every job as columns (queue, class, resolved priority and preemptibility, start, gang minimum), built once
        (:class:`.columns.JobColumns`): from what the struct path gathered while it built a large snapshot, else from
        the models."""
        found: JobColumns | None = self.__dict__.get("_job_columns")
        if found is None:
            from .columns import JobColumns

            gathered = self.__dict__.pop("_job_lists", None)
            if gathered is not None and len(gathered["priority"]) == len(self.jobs):
                found = JobColumns.assemble(**gathered)
            else:
                found = JobColumns.of(self.jobs)
            self.__dict__["_job_columns"] = found
        return found

    def made_tasks(self) -> None:
        """Make every job the struct path left out (see :mod:`.load.job_list`), and every job's tasks it left
        out (see :class:`.job.Job`): serializing reads them directly."""
        for job in self.jobs:  # iterating a JobList makes every job
            if "_task_nodes" in job.__dict__:
                job.made_tasks()

    def toleration_of(self, job: Job) -> Toleration | None:
        """The preemption toleration policy of ``job``'s priority class (docs/rules.md, "Preemption toleration"), if
        any."""
        return None if job.priority_class is None else self.priority_class(job.priority_class).toleration

    # -- whole-document checks ------------------------------------------------

    @model_validator(mode="after")
    def _check_document(self) -> Snapshot:
        self._resolve(fitted=False)
        return self

    @classmethod
    def assemble(
        cls,
        *,
        now: float,
        config: Config,
        nodes: list[Node],
        queues: list[Queue],
        priority_classes: list[PriorityClass],
        jobs: list[Job],
    ) -> Snapshot:
        """A snapshot of parts that are valid models already, whose tasks are known to fit their nodes and to have
        unique names (the replay's state, kept by its own ledger). References, the queue tree and priorities are
        checked and resolved as in validation, except for jobs an earlier assembled snapshot with the same priority
        classes and config resolved; node capacity and task names are not re-checked.
        """
        snapshot = cls.model_construct(
            now=now, config=config, nodes=nodes, queues=queues, priority_classes=priority_classes, jobs=jobs
        )
        snapshot._resolve(fitted=True)
        snapshot.__dict__["_ordered_jobs"] = (snapshot.jobs, frozenset())  # the replay's tasks give no task order
        return snapshot

    def _resolve(self, *, fitted: bool) -> None:
        errors: list[tuple[Loc, str]] = []
        self._nodes = _index("nodes", self.nodes, errors)
        self._queues = _index("queues", self.queues, errors)
        self._classes = _index("priority_classes", self.priority_classes, errors)
        jobs = self.jobs
        by_name = jobs.by_name() if isinstance(jobs, JobList) else None
        self._jobs = _index("jobs", jobs, errors) if by_name is None else by_name
        columnar = not fitted and ("_columns" in self.__dict__ or len(self.jobs) >= COLUMNS_FROM)
        if not fitted:
            names = self.task_columns().names if columnar else [t.name for j in self.jobs for t in j.tasks]
            _check_task_names(names, self.jobs, errors)
        self._check_queue_tree(errors)
        self._check_policy(errors)
        self._check_limit_clocks(errors)
        self._check_jobs(errors, fitted, columnar)
        self._check_topology(errors)
        if not fitted:
            self._check_devices(errors)
        else:  # the replay keeps its own device ledger
            self._shared_jobs = [i for i, job in enumerate(self.jobs) if has_shares(job)]
        if not fitted and (errors or not columnar or self._over_capacity()):
            self._check_node_capacity(errors)
        raise_errors("Snapshot", errors)

    def _own(self, key: str, compute: Callable[[], T]) -> T:
        """A value derived from this snapshot, found once and kept in its instance dict beside the snapshot it
        belongs to: ``model_copy`` copies the dict, and a copy finds its own."""
        found = self.__dict__.get(key)
        if found is None or found[0] is not self:
            found = self.__dict__[key] = (self, compute())
        return found[1]

    def ordered_jobs(self) -> frozenset[str]:
        """The jobs some of whose tasks give a task order (docs/rules.md, "Task order"), found once per list of jobs
        (a copy with other settings shares it): the struct path and the replay note them as they build the
        snapshot; jobs whose tasks give only their node give none."""
        found = self.__dict__.get("_ordered_jobs")
        if found is None or found[0] is not self.jobs:
            ordered = frozenset(
                job.name
                for job in self.jobs
                if "_task_nodes" not in job.__dict__ and any(t.order is not None for t in job.tasks)
            )
            found = self.__dict__["_ordered_jobs"] = (self.jobs, ordered)
        return found[1]

    def shared_jobs(self) -> list[int]:
        """The positions of the jobs that ask for a share of a GPU (docs/snapshot-format.md, "GPU sharing")."""
        return self._shared_jobs

    def undecided_share(self) -> tuple[int, str] | None:
        """The first job whose shares decisions do not count, and why: a share by memory on a cluster whose GPU
        devices differ in memory, or that asks for more than a device has (docs/snapshot-format.md, "GPU sharing");
        ``None`` when there is none. Found once per snapshot."""
        return self._own("_undecided", self._undecided_share)

    def _undecided_share(self) -> tuple[int, str] | None:
        size: tuple[int | None, str | None] | None = None
        for i in self._counted_jobs():
            job = self.jobs[i]
            memory = max((job.requests(t).get("gpu_memory", 0) for t in job.tasks), default=0)
            if not memory:
                continue
            size = size or memory_size(self.nodes)
            if size[0] is None and size[1] is None:
                continue  # no node has a GPU: the job's decisions are infeasible (sharing.unknown_device_size)
            if size[0] is None:
                why = size[1]
                return i, f"asks for GPU memory, and {why}: decisions count shares by memory on devices of one size"
            if memory > size[0] or (memory == size[0] and job.gpu_devices > 1):
                shown = format_quantity("gpu_memory", size[0])
                if memory > size[0]:
                    return i, f"asks for more GPU memory than a device has ({shown})"
                return i, f"asks for all {shown} of {job.gpu_devices} devices: that is gpu: {job.gpu_devices}"
        return None

    def _counted_jobs(self) -> list[int]:
        """The positions of the jobs whose requests decisions count otherwise than they give them (a share by memory
        or on several devices: :func:`.sharing.counted_apart`), found once per snapshot."""
        return self._own("_apart", lambda: [i for i in self._shared_jobs if counted_apart(self.jobs[i])])

    def counted(self) -> Snapshot:
        """This snapshot as decisions count it: every share by memory written as the fraction of a device it takes
        (on the devices' one memory size), and every share on several devices as the GPUs of all of them
        (:func:`.sharing.counted_job`); the snapshot itself when it has neither. Made once; call
        :meth:`undecided_share` first."""
        if self.__dict__.get("_is_counted"):  # counted already (or a copy of one: model_copy copies the flag)
            return self
        return self._own("_counted", self._counted_copy)

    def _counted_copy(self) -> Snapshot:
        changed = self._counted_jobs()
        if not changed:
            return self
        size = memory_size(self.nodes)[0]
        jobs = list(self.jobs)
        for i in changed:
            jobs[i] = counted_job(jobs[i], size)
        copy = self.model_copy(update={"jobs": jobs})
        for derived in ("_columns", "_job_columns", "_job_lists", "_counted", "_undecided", "_apart", "_ordered_jobs"):
            copy.__dict__.pop(derived, None)
        private = dict(self.__pydantic_private__ or {})
        private["_jobs"] = {job.name: job for job in jobs}
        copy.__pydantic_private__ = private
        if "_columns" in self.__dict__:  # a large snapshot: counted from columns, as the snapshot given would be
            copy.task_columns()
        copy.__dict__["_is_counted"] = True
        return copy

    def _check_devices(self, errors: list[tuple[Loc, str]]) -> None:
        """The shares of running and releasing tasks fit their devices (:func:`.sharing.device_ledger`)."""
        columns = self.__dict__.get("_columns")
        if columns is not None and not any(share_of(r) is not None for r in columns.requests):
            return  # a large snapshot without a share: its jobs are not made to find out
        lists = self.__dict__.get("_job_lists")
        if columns is not None and lists is not None:  # found on the lists: the jobs are not made to find out
            self._shared_jobs = shared = _sharing_jobs(columns, lists["resources"])
        else:
            self._shared_jobs = shared = [i for i, job in enumerate(self.jobs) if has_shares(job)]
        if not shared:
            return
        if columns is None:
            device_ledger(self.jobs, self._nodes, errors)
            return
        column_ledger(columns, [node.name for node in self.nodes], self._nodes, errors)  # the jobs not made

    def _check_policy(self, errors: list[tuple[Loc, str]]) -> None:
        """The fields of the other policy are refused (docs/snapshot-format.md, "Peer semantics"): Kueue's under
        ``policy: kai``, KAI's quota fields under ``policy: kueue``; preemption policies belong to ClusterQueues
        (leaves)."""
        policy = self.config.policy
        given = self.config.model_fields_set
        if policy == "kai":
            for name in ("fair_sharing", "fair_sharing_strategies"):
                if name in given:
                    errors.append((("config", name), "a kueue field: set config.policy: kueue to use it"))
        elif "fair_sharing_strategies" in given and not self.config.fair_sharing:
            errors.append((("config", "fair_sharing_strategies"), "the strategies of fair sharing, which is off"))
        refused, why = (KUEUE_FIELDS, "a kueue field") if policy == "kai" else (KAI_FIELDS, "a kai field")
        for i, queue in enumerate(self.queues):
            for name in refused:
                if name in queue.model_fields_set:
                    hint = "set config.policy: kueue" if policy == "kai" else "under policy kueue, give nominal"
                    errors.append((("queues", i, name), f"{why}: {hint}"))
            for resource, amount in queue.nominal.items():
                if amount == UNLIMITED:
                    errors.append((("queues", i, "nominal", resource), "a nominal quota is a finite amount"))
            if policy == "kueue" and queue.preemption is not None and self._children.get(queue.name):
                errors.append(
                    (("queues", i, "preemption"), "a Cohort (a queue with children) has no preemption policy")
                )

    def _check_queue_tree(self, errors: list[tuple[Loc, str]]) -> None:
        for i, queue in enumerate(self.queues):
            if queue.parent is not None and queue.parent not in self._queues:
                errors.append((("queues", i, "parent"), f"unknown queue '{queue.parent}'"))
                continue
            key = queue.parent or ""
            self._children.setdefault(key, []).append(queue.name)
        for i, queue in enumerate(self.queues):
            seen, member = [queue.name], {queue.name}
            parent = queue.parent
            while parent is not None and parent in self._queues:
                if parent in member:
                    cycle = " -> ".join([*seen[seen.index(parent) :], parent])
                    errors.append((("queues", i, "parent"), f"the queues form a cycle: {cycle}"))
                    break
                seen.append(parent)
                member.add(parent)
                if len(seen) > MAX_QUEUE_DEPTH:
                    why = f"queue '{queue.name}' is more than {MAX_QUEUE_DEPTH} levels below the root"
                    errors.append((("queues", i, "parent"), why))
                    return  # one such error says it: the queues below it are deeper still
                parent = self._queues[parent].parent

    def _check_topology(self, errors: list[tuple[Loc, str]]) -> None:
        """A job's topology names levels of ``config.topology``, the preferred one no coarser than the required one,
        and a required level some node carries (docs/snapshot-format.md, "Placement")."""
        levels = self.config.topology
        carried: set[str] | None = None
        for i, job in topology_jobs(self.jobs):
            topology = job.placement.topology if job.placement is not None else None
            if topology is None:
                continue
            at = ("jobs", i, "placement", "topology")
            for field in ("required", "preferred"):
                level = getattr(topology, field)
                if level is not None and level not in levels:
                    known = ", ".join(levels) if levels else "none"
                    errors.append(((*at, field), f"unknown topology level '{level}' (config.topology: {known})"))
            required, preferred = topology.required, topology.preferred
            if required in levels and preferred in levels and levels.index(preferred) < levels.index(required):
                errors.append(((*at, "preferred"), f"'{preferred}' is coarser than the required level '{required}'"))
            if required in levels:
                if carried is None:
                    carried = {key for node in self.nodes for key in node.labels if key in levels}
                if required not in carried:
                    errors.append(((*at, "required"), f"no node carries the label '{required}'"))

    def _check_limit_clocks(self, errors: list[tuple[Loc, str]]) -> None:
        """A limit cannot have changed after the snapshot's instant (the delay timer of docs/rules.md, "Quota
        enforcement"); the instant leaves room for the longest requeue backoff before the end of the year 9999, so
        that every requeue time a decision writes is one a snapshot can hold (docs/rules.md, "Requeue with
        backoff")."""
        room = 2 * self.config.requeue.backoff_max  # the backoff and its jitter, with room to spare
        if self.now + room > MAX_INSTANT:
            latest = format_time(MAX_INSTANT - room)
            why = f"leaves less than twice config.requeue.backoff_max before the year 10000: at most {latest}"
            errors.append((("now",), why))
        for i, queue in enumerate(self.queues):
            if queue.limit_changed_at is not None and queue.limit_changed_at > self.now:
                errors.append(
                    (
                        ("queues", i, "limit_changed_at"),
                        f"{format_time(queue.limit_changed_at)} is after now ({format_time(self.now)})",
                    )
                )

    def _check_jobs(self, errors: list[tuple[Loc, str]], fitted: bool = False, columnar: bool = False) -> None:
        config = self.config
        queues, classes, nodes, children = self._queues, self._classes, self._nodes, self._children
        known = False  # every task names a known node (checked at once: the common case on large snapshots)
        if columnar:
            columns = self.task_columns()  # a task has no node iff it is pending (Task validation)
            known = columns.count(columns.node < 0) == columns.count(columns.chosen(("pending",)))
        elif not fitted:
            used = {task.node for job in self.jobs for task in job.tasks}
            used.discard(None)
            known = used.issubset(nodes)
        gathered = self.__dict__.get("_job_lists") if columnar else None  # see job_columns
        if gathered is not None and len(gathered["priority"]) == len(self.jobs):
            # The struct path resolved every job, with every queue a known leaf and every class known and agreeing.
            if not known:
                for i, job in enumerate(self.jobs):
                    _check_task_nodes(i, job, nodes, errors)
            return
        resolved_priorities: list[int] = [] if gathered is None else gathered["priority"]
        resolved_preemptible: list[bool] = [] if gathered is None else gathered["preemptible"]
        for i, job in enumerate(self.jobs):
            if fitted and "_resolved_priority" in job.__dict__:
                continue  # resolved by an earlier assembled snapshot (see assemble)
            if job.queue not in queues:
                errors.append((("jobs", i, "queue"), f"unknown queue '{job.queue}'"))
            elif children.get(job.queue):
                below = ", ".join(self.children(job.queue))
                errors.append((("jobs", i, "queue"), f"queue '{job.queue}' is not a leaf (it has children: {below})"))
            priority = job.priority
            if job.priority_class is not None:
                pclass = classes.get(job.priority_class)
                if pclass is None:
                    errors.append((("jobs", i, "priority_class"), f"unknown priority class '{job.priority_class}'"))
                elif priority is not None and priority != pclass.value:
                    errors.append(
                        (
                            ("jobs", i, "priority"),
                            f"priority {priority} disagrees with priority class '{pclass.name}' "
                            f"(value {pclass.value}); name one or make them agree",
                        )
                    )
                else:
                    priority = pclass.value
                if pclass is not None and pclass.preemption_policy == "Never":
                    job.__dict__["_may_evict"] = False
            resolved, preemptible = resolution(config, priority, job.preemptible)
            job.__dict__["_resolved_priority"] = resolved
            job.__dict__["_resolved_preemptible"] = preemptible
            job.__dict__.pop("_columns_row", None)  # read with the resolution (JobColumns.of)
            if gathered is not None:
                resolved_priorities.append(resolved)
                resolved_preemptible.append(preemptible)
            if not known:
                _check_task_nodes(i, job, nodes, errors)

    def _over_capacity(self) -> bool:
        """Whether some node may hold more than it has (:meth:`_check_node_capacity` says which and how), checked on
        every node at once."""
        columns = self.task_columns()
        running = columns.node_sums(("running",))
        releasing, nominated = columns.node_sums(("releasing",)), columns.node_sums(("nominated",))
        if running is None or releasing is None or nominated is None:
            return True  # sums too large for numpy: checked in Python
        have = columns.allocatable
        return bool((running + releasing > have).any() or (running + nominated > have).any())

    def _check_node_capacity(self, errors: list[tuple[Loc, str]]) -> None:
        """Running and releasing tasks fit their node now; running and nominated ones fit once releasing ones leave."""
        running: dict[str, dict[str, int]] = {}
        releasing: dict[str, dict[str, int]] = {}
        nominated: dict[str, dict[str, int]] = {}
        by_status = {"running": running, "releasing": releasing, "nominated": nominated}
        nodes = self._nodes
        for job in self.jobs:
            shared = tuple(job.task_resources.items())
            for task in job.tasks:
                loads = by_status.get(task.status)  # type: ignore[arg-type]
                host = task.node
                if loads is None or host not in nodes:
                    continue
                load = loads.get(host)
                if load is None:
                    load = loads[host] = {}
                for r, a in shared if task.resources is None else task.resources.items():
                    if r != "gpu_memory":  # held per device (_check_devices), not by the node
                        load[r] = load.get(r, 0) + a
        used = _plus(running, releasing)
        promised = _plus(running, nominated)
        for i, node in enumerate(self.nodes):
            for resource, amount in sorted(used.get(node.name, {}).items()):
                capacity = node.resources.get(resource, 0)
                if amount > capacity:
                    names = [str(t.name) for _, t in self.tasks_on(node.name)]
                    errors.append(
                        (
                            ("nodes", i, "resources", resource),
                            f"node {node.name} is over-committed: running and releasing tasks use "
                            f"{format_quantity(resource, amount)} "
                            f"{resource} but the node has {format_quantity(resource, capacity)} "
                            f"(tasks: {_shown(names)})",
                        )
                    )
            for resource, amount in sorted(promised.get(node.name, {}).items() if nominated else ()):
                capacity = node.resources.get(resource, 0)
                if amount > capacity:
                    names = [str(t.name) for _, t in self.tasks_on(node.name, "nominated")]
                    errors.append(
                        (
                            ("nodes", i, "resources", resource),
                            f"node {node.name} is over-promised: running and nominated tasks would use "
                            f"{format_quantity(resource, amount)} "
                            f"{resource} once releasing tasks leave, but the node has "
                            f"{format_quantity(resource, capacity)} (nominated: {_shown(names)})",
                        )
                    )

    # -- derived views --------------------------------------------------------

    def tasks_on(self, node: str, *statuses: str) -> list[tuple[Job, Task]]:
        """(job, task) pairs on ``node`` whose status is in ``statuses`` (default: occupying ones)."""
        wanted = statuses or ON_NODE
        return [(j, t) for j in self.jobs for t in j.tasks if t.node == node and t.status in wanted]


def resolution(config: Config, priority: int | None, preemptible: bool | None) -> tuple[int, bool]:
    """A job's resolved priority and preemptibility, from its priority (given, or its class's value, or ``None``)
    and its ``preemptible`` field: ``config.default_priority`` when it has none, and preemptible when it says so or,
    if it does not say, when its priority is below ``config.preemptible_below_priority``."""
    resolved = config.default_priority if priority is None else priority
    return resolved, preemptible if preemptible is not None else resolved < config.preemptible_below_priority


def topology_jobs(jobs: list[Job]) -> list[tuple[int, Job]]:
    """The jobs whose placement names a topology, with their positions (of a large snapshot's jobs not made yet,
    those the struct path found one in: :attr:`.job_list.JobList.topology`)."""
    if isinstance(jobs, JobList):
        return [(i, jobs[i]) for i in jobs.topology]
    return [(i, job) for i, job in enumerate(jobs) if job.placement is not None and job.placement.topology is not None]


def _sharing_jobs(columns: TaskColumns, shared: list[dict[str, int]]) -> list[int]:
    """The positions of the jobs some task of which asks for a share of a GPU, or whose ``task_resources`` is one
    (:func:`.sharing.has_shares`), from the task columns and each job's ``task_resources``."""
    import numpy as np

    rows = [k for k, requests in enumerate(columns.requests) if share_of(requests) is not None]
    found = set(np.unique(columns.job[np.isin(columns.row, rows)]).tolist()) if rows else set()
    maps = {id(m): m for m in shared}
    shares = {key for key, m in maps.items() if share_of(m) is not None}
    if shares:
        found.update(i for i, m in enumerate(shared) if id(m) in shares)
    return sorted(found)


def _check_task_nodes(i: int, job: Job, nodes: dict[str, Node], errors: list[tuple[Loc, str]]) -> None:
    for t, task in enumerate(job.tasks):
        if task.node is not None and task.node not in nodes:
            errors.append((("jobs", i, "tasks", t, "node"), f"unknown node '{task.node}'"))


def _plus(base: dict[str, dict[str, int]], extra: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Per-node loads ``base + extra`` (``base`` itself where ``extra`` adds nothing)."""
    if not extra:
        return base
    total = dict(base)
    for node, load in extra.items():
        merged = dict(total.get(node, {}))
        for r, a in load.items():
            merged[r] = merged.get(r, 0) + a
        total[node] = merged
    return total


def _shown(names: list[str]) -> str:
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def _index(section: str, items: list[Any], errors: list[tuple[Loc, str]]) -> dict[str, Any]:
    index: dict[str, Any] = {item.name: item for item in items}
    if len(index) == len(items):  # no duplicate: the common case, kept cheap on large snapshots
        return index
    index = {}
    for i, item in enumerate(items):
        if item.name in index:
            first = f"{section}[{_pos(items, item.name)}]"
            errors.append(((section, i, "name"), f"duplicate name '{item.name}' (first used at {first})"))
        else:
            index[item.name] = item
    return index


def _pos(items: list[Any], name: str) -> int:
    return next(i for i, item in enumerate(items) if item.name == name)


def _check_task_names(names: Sequence[str | None], jobs: list[Job], errors: list[tuple[Loc, str]]) -> None:
    if len(set(names)) == len(names):  # the common case, kept cheap on large snapshots
        return
    counts: Counter[str | None] = Counter(names)
    for i, job in enumerate(jobs):
        for t, task in enumerate(job.tasks):
            if counts[task.name] > 1:
                errors.append((("jobs", i, "tasks", t, "name"), f"duplicate task name '{task.name}'"))
