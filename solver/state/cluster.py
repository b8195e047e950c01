"""The state of a cluster during a scheduling session.

A :class:`ClusterState` starts from a snapshot and tracks what decisions change: the
status and node of every task. Statuses are those of the snapshot (``running``,
``pending``, ``releasing``, ``nominated``) plus the two a session creates:
``allocated`` (placed on free capacity) and ``pipelined`` (placed on capacity
that releasing tasks will free). A ``nominated`` task is a pipelined task of an
earlier cycle (docs/rules.md, "Nominations"). Both are *promised* a place: they hold their node's
capacity, except against a decision of higher priority (:meth:`ClusterState.room_load`).

Two loads are kept per node (:mod:`.node_loads`):

* the *final* load, ``running + allocated + pipelined + nominated``: what the node holds
  once every releasing task is gone. New work must fit under the node's
  resources in the final load; this is how pipelined tasks may use releasing
  capacity, and how two decisions never promise the same capacity.
* the *current* load, ``running + allocated + releasing``: what the node holds
  now. A placement that also fits here starts at once (``allocated``). A task
  moved to another node (a running task that becomes pipelined elsewhere, seed
  004's moves) still holds its old node now, until its old pod is gone.

Queue usage counts ``running``, ``allocated``, ``pipelined`` and ``nominated`` tasks. Fair
shares are computed once, from the snapshot, and stay fixed for the session (as
in KAI, where a session computes them when it opens).

The rooms of this package: the two full counts (:mod:`.scan`), node loads (:mod:`.node_loads`), who runs where
(:mod:`.running`), rooms per priority (:mod:`.rooms`), derived states (:mod:`.derive`), per-node results passed on
between states (:mod:`.node_cache`), and what depends on the snapshot alone (:mod:`.snapshot_index`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from itertools import compress
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np

from gpu_preempt.models import Job, Node, Resources, Snapshot, SnapshotError, Task
from gpu_preempt.models.columns import CODES, JobColumns, grouped
from gpu_preempt.models.load.job_list import JobIndex

from . import rooms
from .caches import Caches
from .derive import changed_nodes, derived
from .devices import DeviceLoads, SnapshotDevices, device_loads
from .fair_share import cluster_capacity, fair_shares
from .layered import Layered
from .node_cache import NodeCache, NodeKey
from .node_loads import NodeLoads, shift
from .queue_tree import QueueTree
from .queue_usage import HOLDING, QueueUsage
from .running import Running, counted, host_pairs, one_node, patched
from .scan import Count, count_columns, count_since, count_tasks, job_statuses
from .snapshot_index import SnapshotIndex

__all__ = ["GROUPED_IN_NUMPY", "ClusterState", "decidable"]

T = TypeVar("T")
K = TypeVar("K")
_QUEUE_OF = attrgetter("queue")
_STATUSES = {code: status for status, code in CODES.items()}
GROUPED_IN_NUMPY = 4096
"""Past this many running jobs, :meth:`ClusterState.running_by_queue` groups them in numpy."""


def decidable(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` as decisions count it (:meth:`Snapshot.counted`: shares by memory as the fractions of a device
    they take, shares on several devices as the GPUs of all of them). Raises :class:`SnapshotError` naming the first
    job whose shares decisions do not count: a share by memory on devices of different memory sizes, or above a
    device's memory (docs/snapshot-format.md, "GPU sharing")."""
    found = snapshot.undecided_share()
    if found is not None:
        i, why = found
        raise SnapshotError.single(f"jobs[{i}]", f"job {snapshot.jobs[i].name} {why}")
    return snapshot.counted()


class ClusterState:
    """Snapshot + queue tree + fair shares (fixed) + task statuses, usage and node loads (live)."""

    snapshot: Snapshot
    tree: QueueTree
    shares: dict[str, Resources]
    """Fair share of every queue, fixed for the session."""
    capacity: Resources
    """Allocatable resources summed over the nodes."""
    index: SnapshotIndex
    """What depends on the snapshot alone (shared by every state derived from this one)."""
    _status: MutableMapping[str, str] | Callable[[], dict[str, str]]
    _node_of: MutableMapping[str, str | None] | Callable[[], dict[str, str | None]]
    usage: dict[str, QueueUsage]
    running: Running
    loads: NodeLoads
    leaving: dict[str, Resources]
    """Node -> the requests of the old pods of tasks moved away from it (they hold it now, until gone)."""
    promised: dict[str, list[str]]
    """Node -> the tasks promised a place there (pipelined or nominated), in the order promised."""
    node_cache: NodeCache
    counted: Count | None
    """The count of the snapshot's own statuses this state started from (shared by the states derived from it),
    from which a later snapshot's is counted (:meth:`of` with ``previous``); ``None`` when counted otherwise."""
    _waiting: list[Job] | None
    changed_jobs: frozenset[str]
    """Jobs whose task statuses differ from the snapshot's (a derived state's changes): the others are as given."""
    job_counts: dict[str, dict[str, int]]
    """Job -> its tasks per status, counted when first asked for (a derived state keeps its parent's counts of the
    jobs it did not change)."""
    _kept: Caches
    nodes_kept: Caches
    """Caches of what depends on the node models alone (capacities, labels, taints): shared by the states of
    every snapshot with the same node models (a replay's cycles while no node changes)."""
    task_devices: dict[str, tuple[int, ...]]
    """Task -> the devices the decisions of this session put a share of a GPU on (docs/snapshot-format.md, "GPU
    sharing"); the snapshot's own are on its tasks."""
    _devices: DeviceLoads | None
    devices_from: tuple[DeviceLoads, ClusterState, frozenset[str]] | None
    """The device ledger of the state this one was derived from, that state, and the tasks changed since."""

    def __init__(
        self,
        snapshot: Snapshot,
        tree: QueueTree,
        shares: dict[str, Resources],
        status: MutableMapping[str, str],
        node_of: MutableMapping[str, str | None],
    ) -> None:
        """The state of ``snapshot`` with the task statuses and nodes ``status`` and ``node_of``, counted task by
        task (``tree`` and ``shares``: the session's queue tree and fair shares)."""
        snapshot = decidable(snapshot)
        self.snapshot, self.tree, self.shares = snapshot, tree, shares
        self.capacity = cluster_capacity(snapshot)
        self.index = SnapshotIndex(snapshot)
        self._take(count_tasks(snapshot, tree, status, node_of, fill=False))
        self.changed_jobs = frozenset(job.name for job in snapshot.jobs)  # statuses given apart from the snapshot's
        self.node_cache = NodeCache()
        self.nodes_kept = Caches()

    @classmethod
    def of(cls, snapshot: Snapshot, previous: ClusterState | None = None) -> ClusterState:
        """The state of ``snapshot``. With ``previous``, a state of an earlier snapshot of the same nodes (a
        replay's last cycle), per-node results of the nodes whose loads and promises are unchanged are kept.
        Decides on :func:`decidable` of ``snapshot`` (the snapshot itself unless it has shares by memory or on
        several devices), and raises :class:`SnapshotError` as it does."""
        snapshot = decidable(snapshot)
        same_queues = previous is not None and previous.tree.source is snapshot.queues
        tree = previous.tree if previous is not None and same_queues else QueueTree(snapshot)
        same_nodes = previous is not None and _same_nodes(previous.snapshot.nodes, snapshot.nodes)
        cluster = cls.__new__(cls)
        cluster.snapshot, cluster.tree, cluster.index = snapshot, tree, SnapshotIndex(snapshot)
        cluster.capacity = previous.capacity if previous is not None and same_nodes else cluster_capacity(snapshot)
        columns = snapshot.built_columns()  # built by validation of a large snapshot; not by assemble()
        if columns is not None:
            cluster._take(count_columns(snapshot, tree, columns, cluster.index))
        else:
            since = (
                None if previous is None or previous.counted is None else count_since(snapshot, tree, previous.counted)
            )
            cluster._take(since or count_tasks(snapshot, tree, {}, {}, fill=True))
        cluster.shares = fair_shares(snapshot, tree, cluster.usage, cluster.capacity)
        cluster.node_cache = NodeCache()
        cluster.nodes_kept = Caches()
        if previous is not None and same_nodes:
            cluster.node_cache = previous.node_cache.passed_on(changed_nodes(cluster, previous))
            cluster.nodes_kept = previous.nodes_kept
        return cluster

    @property
    def status(self) -> MutableMapping[str, str]:
        """Task name -> status (in a derived state, a :class:`.layered.Layered` map over its parent's)."""
        found = self._status
        if callable(found):  # counted on columns: the map made when first read
            found = self._status = found()
        return found

    @status.setter
    def status(self, value: MutableMapping[str, str]) -> None:
        self._status = value

    @property
    def node_of(self) -> MutableMapping[str, str | None]:
        """Task name -> node (likewise)."""
        found = self._node_of
        if callable(found):
            found = self._node_of = found()
        return found

    @node_of.setter
    def node_of(self, value: MutableMapping[str, str | None]) -> None:
        self._node_of = value

    def _take(self, count: Count) -> None:
        self.counted = count if count.jobs is not None else None
        self._status, self._node_of, self.usage = count.status, count.node_of, count.usage
        self.running, self.loads, self.promised, self._waiting = (
            count.running,
            count.loads,
            count.promised,
            count.waiting,
        )
        self.leaving = {}
        self.changed_jobs = frozenset()
        self.job_counts = {}
        self._kept = Caches()
        self.task_devices = {}
        self._devices = None
        self.devices_from = None

    def with_changes(
        self, changes: Iterable[tuple[str, str, str | None]], devices: Mapping[str, tuple[int, ...]] | None = None
    ) -> ClusterState:
        """A new state where each ``(task, status, node)`` is applied (``node`` None: keep it), shares of a GPU
        placed on their ``devices`` (task -> devices); fair shares stay.

        Only what the changed tasks touch is recomputed (:mod:`.derive`): their nodes' loads, their jobs' running
        counts, and the usage of their queues and ancestors.
        """
        return derived(self, changes, devices or {})

    def has_shares(self) -> bool:
        """Whether some job of the snapshot asks for a share of a GPU (docs/snapshot-format.md, "GPU sharing")."""
        return bool(self.snapshot.shared_jobs())

    def device_loads(self) -> DeviceLoads:
        """The shares on every device (:mod:`.devices`), kept while this state lasts."""
        if self._devices is None:
            if self.devices_from is None and not self.changed_jobs and not self.task_devices:
                as_given = self.for_snapshot(SnapshotDevices)  # the snapshot's own statuses: one ledger for them all
                if as_given.loads is None:
                    as_given.loads = device_loads(self)
                self._devices = as_given.loads
            else:
                self._devices = device_loads(self)
            self.devices_from = None  # the parent state is not needed any more
        return self._devices

    def for_snapshot(self, kind: type[K]) -> K:
        """The one instance of ``kind`` (a class made with no arguments) kept for this snapshot and shared by every
        state derived from it: a cache of a layer above, named, typed and owned by the module that defines ``kind``
        (results that depend on the snapshot, its queue tree and config only)."""
        return self.index.kept.of(kind)

    def for_nodes(self, kind: type[K]) -> K:
        """The one instance of ``kind`` kept for this snapshot's node models: shared with the states of later
        snapshots of the same node models (:meth:`of` with ``previous``). For results that depend on the nodes as
        given (capacities, labels, taints, schedulable) and on job models as given."""
        return self.nodes_kept.of(kind)

    def for_state(self, kind: type[K]) -> K:
        """The one instance of ``kind`` kept while this state lasts (a derived state starts without it)."""
        return self._kept.of(kind)

    def node_values(
        self, key: NodeKey, compute: Callable[[int, Node], T], every: Callable[[], list[T]] | None = None
    ) -> list[T]:
        """``compute(index, node)`` for every node in document order, kept under ``key`` while this state lasts.

        ``compute`` must depend only on that node's loads and promises (and on what stays fixed for the session):
        a state derived from another (or a replay's next cycle) then recomputes only the nodes that changed.
        ``every``, if given, computes the whole list at once (the same values), when nothing can be reused.
        """
        return self.node_cache.values(key, self.snapshot.nodes, self.node_index(), compute, every)

    def node_map(self, key: NodeKey) -> dict[str, Any]:
        """A per-node map under ``key``, filled by the caller node by node (values of one node's loads and promises
        only), started from an earlier state's entries for the nodes that have not changed since."""
        return self.node_cache.map(key)

    @property
    def now(self) -> float:
        return self.snapshot.now

    # -- tasks -----------------------------------------------------------------

    def tasks(self, job: Job, *statuses: str) -> list[Task]:
        """Tasks of ``job`` whose current status is one of ``statuses``, in document order."""
        start = self._column_start(job) if callable(self._status) else None
        if start is not None:
            assert self.loads.columns is not None
            wanted = [CODES.get(s, -1) for s in statuses]
            codes = self.loads.columns.status[start : start + len(job.tasks)].tolist()
            return [t for t, code in zip(job.tasks, codes, strict=True) if code in wanted]
        status = self.status
        if type(status) is Layered:  # read inline: a few changes over the snapshot's map
            base, own = status.base_and_changes()
            return [t for t in job.tasks if (own[n] if (n := str(t.name)) in own else base[n]) in statuses]
        return [t for t in job.tasks if status[str(t.name)] in statuses]

    def task_nodes(self, job: Job) -> Mapping[str, str | None]:
        """Task name -> node, for ``job``'s tasks at least (:attr:`node_of`, read on the columns while its map is not
        made)."""
        start = self._column_start(job) if callable(self._node_of) else None
        if start is None:
            return self.node_of
        assert self.loads.columns is not None
        nodes = self.loads.columns.nodes[start : start + len(job.tasks)]
        return dict(zip((str(t.name) for t in job.tasks), nodes, strict=True))

    def task_statuses(self, job: Job) -> Mapping[str, str]:
        """Task name -> status, for ``job``'s tasks at least (:attr:`status`, read on the columns likewise)."""
        start = self._column_start(job) if callable(self._status) else None
        if start is None:
            return self.status
        assert self.loads.columns is not None
        codes = self.loads.columns.status[start : start + len(job.tasks)].tolist()
        return dict(zip((str(t.name) for t in job.tasks), map(_STATUSES.__getitem__, codes), strict=True))

    def _column_start(self, job: Job) -> int | None:
        """Where ``job``'s tasks start in the snapshot's task columns, in a state counted from them (the caller
        reads them only while this state's map of what it reads is not made: then it is the snapshot's, and a
        decision that reads a few jobs' tasks does not make the maps of every task); ``None`` otherwise."""
        if self.loads.columns is None:
            return None
        index = self.snapshot.jobs_by_name()
        if not isinstance(index, JobIndex) or job.name not in index:
            return None
        position = index.position(job.name)
        if self.snapshot.jobs[position] is not job:  # a job model of another snapshot: read through the maps
            return None
        kept = self.for_state(_ColumnStarts)
        if kept.starts is None:
            counts = np.bincount(self.loads.columns.job, minlength=len(self.snapshot.jobs))
            kept.starts = np.concatenate(([0], np.cumsum(counts)))  # an array: a list of ints weighs ten times more
        return int(kept.starts[position])

    def waiting_jobs(self) -> list[Job]:
        """Jobs with a pending or nominated task, in snapshot order."""
        if self._waiting is None:
            self._waiting = [j for j in self.snapshot.jobs if self.count(j, "pending", "nominated")]
        return list(self._waiting)

    def count(self, job: Job, *statuses: str) -> int:
        """How many of the job's tasks are in one of ``statuses``."""
        counts = self.job_counts.get(job.name)
        if counts is None:
            if job.name not in self.changed_jobs:  # as given: counted once per job model (a replay keeps them)
                counts = self.job_counts[job.name] = job_statuses(job)
            else:
                counts = self.job_counts[job.name] = {}
                status = self.status
                for task in job.tasks:
                    state = status[str(task.name)]
                    counts[state] = counts.get(state, 0) + 1
        if len(statuses) == 1:
            return counts.get(statuses[0], 0)
        return sum(counts.get(state, 0) for state in statuses)

    def status_counts(self, status: str) -> tuple[int, int]:
        """Jobs with a task in ``status``, and tasks in it: on the snapshot's columns when this state is the
        snapshot's own (no job model read), else task by task."""
        columns = self.loads.columns
        if columns is not None:
            chosen = columns.status == CODES[status]
            jobs = columns.job[chosen]
            return (int(np.count_nonzero(np.bincount(jobs))) if len(jobs) else 0), len(jobs)
        counts = [self.count(job, status) for job in self.snapshot.jobs]
        return sum(1 for c in counts if c), sum(counts)

    def active_count(self, job: Job) -> int:
        """Tasks that hold or are promised capacity: running, allocated or pipelined."""
        return self.count(job, *HOLDING)

    def job_columns(self) -> JobColumns:
        """The snapshot's jobs as columns (:meth:`Snapshot.job_columns`)."""
        return self.snapshot.job_columns()

    def job_positions(self, names: Iterable[str]) -> list[int]:
        """The positions in the snapshot of the jobs ``names``."""
        return self.index.job_positions(names)

    # -- who runs where ----------------------------------------------------------

    def running_count(self, job: Job) -> int:
        return self.running.counts[job.name]

    def running_counts(self) -> Mapping[str, int]:
        """Job name -> :meth:`running_count`, for loops over many jobs; read only."""
        return self.running.counts

    def surplus(self, job: Job) -> int:
        """Running tasks above ``min_available``: what an elastic peel may take."""
        return max(0, self.running_count(job) - job.gang_minimum)

    def running_on(self, job: Job) -> dict[str, int]:
        """Node -> number of ``job``'s running tasks there (read only: jobs may share one map)."""
        on = self.running.on
        if on is None:
            return self.count_hosts(job)
        return on.get(job.name, {})

    def running_pairs(self, rows: list[int]) -> list[tuple[tuple[int, int], ...]] | None:
        """Per job at ``rows`` (document positions), its running tasks' (node index, tasks) pairs, by node: read on
        the task columns at once in a state counted from them; ``None`` in any other (ask :meth:`running_on`)."""
        running = self.running
        if running.hosts_from is None:
            return None
        return host_pairs(*running.hosts_from, rows, len(self.index.node_names))

    def running_hosts(self) -> dict[str, dict[str, int]]:
        """Job name -> :meth:`running_on` (jobs with running tasks only), for loops over many jobs; read only.

        Built when first asked for: a decision needs the maps of the few jobs that run on several nodes
        (:meth:`running_nodes` tells which), and asks :meth:`running_on` for them.
        """
        running = self.running
        if running.on is None:
            if running.hosts_from is not None:
                running.on = counted(*running.hosts_from, self.job_columns().names, self.index.node_names)
            else:
                found = {job.name: self.count_hosts(job) for job in self.snapshot.jobs}
                running.on = {name: hosts for name, hosts in found.items() if hosts}
        return running.on

    def count_hosts(self, job: Job) -> dict[str, int]:
        """:meth:`running_on`, counted from ``job``'s tasks."""
        start = self._column_start(job) if callable(self._status) and callable(self._node_of) else None
        if start is not None:
            columns = self.loads.columns
            assert columns is not None
            end = start + len(job.tasks)
            nodes = columns.node[start:end][columns.status[start:end] == CODES["running"]].tolist()
            if -1 not in nodes:  # each on a node of the snapshot
                names, found = self.index.node_names, dict[str, int]()
                for n in nodes:
                    found[names[n]] = found.get(names[n], 0) + 1
                return found
        hosts: dict[str, int] = {}
        for item in self.tasks(job, "running"):
            host = self.node_of[str(item.name)]
            if host is not None:
                hosts[host] = hosts.get(host, 0) + 1
        return hosts

    def running_jobs(self) -> list[Job]:
        """Jobs with a running task, in snapshot order, kept while this state lasts (with :meth:`running_by_queue`,
        which derived states update cheaply)."""
        running = self.running
        if running.jobs is None:
            # running_array() has every job, in snapshot order
            running.jobs = list(compress(self.snapshot.jobs, self.running_array().tolist()))
            self.running_by_queue()
        return running.jobs

    def running_by_queue(self) -> dict[str, list[Job]]:
        """:meth:`running_jobs` by leaf queue (queues in the order of their first running job), kept while this
        state lasts; a state derived by stopping jobs filters only their queues' lists."""
        if self.running.by_queue is not None:
            return self.running.by_queue
        jobs = self.running_jobs()
        if len(jobs) <= GROUPED_IN_NUMPY:
            found: dict[str, list[Job]] = {}
            for job in jobs:
                found.setdefault(job.queue, []).append(job)
            self.running.by_queue = found
            return found
        queues = list(map(_QUEUE_OF, jobs))
        position = {queue: i for i, queue in enumerate(dict.fromkeys(queues))}
        codes = np.fromiter(map(position.__getitem__, queues), dtype=np.int64, count=len(queues))
        names = list(position)
        found = {names[code]: list(map(jobs.__getitem__, at.tolist())) for code, at in grouped(codes)}
        self.running.by_queue = found
        return found

    def running_array(self) -> np.ndarray:
        """:meth:`running_count` of every job, in document order (int64), kept while this state lasts."""
        running = self.running
        if running.array is None:
            counts = running.counts  # every job, in document order
            if isinstance(counts, Layered):  # the base's values in C, then the few changed ones
                base, changes = counts.base_and_changes()
                array = np.fromiter(base.values(), dtype=np.int64, count=len(base))
                running.array = patched(array, counts, changes, self.job_positions)
            else:
                running.array = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
        return running.array

    def running_nodes(self) -> np.ndarray:
        """Per job (document order), the node (index) all its running tasks are on: -1 when none runs, -2 when they
        run on several nodes (int64); kept while this state lasts. A derived state updates its parent's."""
        running = self.running
        if running.nodes is not None:
            return running.nodes
        index = self.node_index()
        if running.moved is not None:
            before, moved = running.moved
            found, names, job = before.copy(), sorted(moved), self.snapshot.job
            for name, at in zip(names, self.job_positions(names), strict=True):
                found[at] = one_node(self.running_on(job(name)), index)
        else:
            on, counts = self.running_hosts(), running.counts
            found = np.fromiter((one_node(on.get(name), index) for name in counts), np.int64, len(counts))
        running.nodes = found
        return found

    # -- nodes -----------------------------------------------------------------

    def node_index(self) -> dict[str, int]:
        """Node name -> its position in the snapshot."""
        return self.index.node_index

    def final_load(self, node: str) -> Resources:
        """What ``node`` holds once releasing tasks are gone (running + allocated + pipelined)."""
        return self.loads.of(node)[0]

    def current_load(self, node: str) -> Resources:
        """What ``node`` holds now (running + allocated + releasing, and the old pods of tasks moved away)."""
        load = self.loads.of(node)[1]
        leaving = self.leaving.get(node)
        if leaving:
            load = dict(load)
            shift(load, leaving, 1)
        return load

    def load_nodes(self, names: Iterable[str]) -> None:
        """Sum the loads of the nodes ``names`` at once, before a decision reads them node by node
        (:meth:`.node_loads.NodeLoads.load_nodes`)."""
        self.loads.load_nodes(names)

    def nominations(self, node: str) -> list[tuple[Job, Task]]:
        """The promised (pipelined or nominated) tasks on ``node`` (docs/rules.md, "Nominations"), in the order they
        were promised."""
        names = self.promised.get(node)
        if not names:
            return []  # without the owners map, built over every task
        owner = self.index.owners
        return [owner[name] for name in names]

    def promised_nodes(self) -> list[str]:
        """Nodes where some task is promised a place (pipelined or nominated), in the order promised."""
        return [node for node, tasks in self.promised.items() if tasks]

    def room_load(self, node: str, priority: int) -> Resources:
        """The final load as a decision of ``priority`` sees it (docs/rules.md, "Nominations").

        Promises (pipelined or nominated tasks) of jobs with equal or higher
        priority hold their capacity; those of lower priority do not: a
        higher-priority job may take their place (and its decision lists them
        as overridden).
        """
        load = self.final_load(node)
        if not self.promised.get(node):  # the common case, kept cheap: nothing promised on this node
            return load
        below = [(j, t) for j, t in self.nominations(node) if j.resolved_priority < priority]
        if not below:
            return load
        load = dict(load)
        for job, task in below:
            shift(load, job.requests(task), -1)
        return load

    def rooms(self, priority: int, resources: tuple[str, ...]) -> list[tuple[int, ...]]:
        """Every node's room in ``resources`` (document order; allocatable minus :meth:`room_load`) as a decision of
        ``priority`` sees it, kept while this state lasts (:mod:`.rooms`)."""
        return rooms.rooms(self, priority, resources)

    def base_rooms(self, resources: tuple[str, ...]) -> list[tuple[int, ...]]:
        """Every node's room in ``resources`` with every promise holding: what :meth:`rooms` gives on the nodes of no
        :meth:`promised_nodes`, whatever the priority."""
        return rooms.base_rooms(self, resources)

    def room_matrix(self, resources: tuple[str, ...]) -> np.ndarray | None:
        """:meth:`base_rooms` as a matrix (nodes x ``resources``, int64), or ``None`` if a room does not fit 64 bits."""
        return rooms.room_matrix(self, resources)


def _same_nodes(before: list[Node], after: list[Node]) -> bool:
    return len(before) == len(after) and all(a is b for a, b in zip(before, after, strict=True))


class _ColumnStarts:
    """Where each job's tasks start in the snapshot's task columns (:meth:`ClusterState._column_start`)."""

    def __init__(self) -> None:
        self.starts: np.ndarray | None = None
