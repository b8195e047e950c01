"""The state of a cluster during a scheduling session.

A :class:`Cluster` starts from a snapshot and tracks what decisions change: the
status and node of every task. Statuses are those of the snapshot (``running``,
``pending``, ``releasing``, ``nominated``) plus the two a session creates:
``allocated`` (placed on free capacity) and ``pipelined`` (placed on capacity
that releasing tasks will free). A ``nominated`` task is a pipelined task of an
earlier cycle (seed 004). Both are *promised* a place: they hold their node's
capacity, except against a decision of higher priority (:meth:`Cluster.room_load`).

Two loads are kept per node:

* the *final* load, ``running + allocated + pipelined + nominated``: what the node holds
  once every releasing task is gone. New work must fit under the node's
  resources in the final load; this is how pipelined tasks may use releasing
  capacity, and how two decisions never promise the same capacity.
* the *current* load, ``running + allocated + releasing``: what the node holds
  now. A placement that also fits here starts at once (``allocated``). A task
  moved to another node (a running task that becomes pipelined elsewhere, spec
  "Moves") still holds its old node now, until its old pod is gone.

Queue usage counts ``running``, ``allocated``, ``pipelined`` and ``nominated`` tasks. Fair
shares are computed once, from the snapshot, and stay fixed for the session (as
in KAI, where a session computes them when it opens).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from itertools import compress, repeat
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np

from gpu_preempt.models import Job, Node, Resources, Snapshot, Task
from gpu_preempt.models.collector import paused_collection
from gpu_preempt.models.columns import CODES, JobColumns, TaskColumns, grouped
from gpu_preempt.models.job_list import JobIndex

from .fair_share import cluster_capacity, fair_shares
from .layered import Layered
from .queue_tree import QueueTree
from .queue_usage import HOLDING, QueueUsage, roll_up

FINAL = ("running", "allocated", "pipelined", "nominated")
PROMISED = ("pipelined", "nominated")
"""Statuses of tasks promised a place that releasing tasks free (seed 004): a higher-priority decision may take it."""
"""Statuses that hold node capacity once releasing tasks are gone."""
CURRENT = ("running", "allocated", "releasing")
"""Statuses that hold node capacity now."""

T = TypeVar("T")
_SCANNED = 8
"""Up to this many jobs, :meth:`Cluster.job_positions` scans the names rather than build a map of them."""
_NAME, _RESOURCES = attrgetter("name"), attrgetter("resources")
_QUEUE_OF = attrgetter("queue")
_FINAL_CODES = frozenset(CODES[s] for s in ("running", "nominated"))
"""The statuses a snapshot's tasks can have that count in the final load (:data:`FINAL`)."""
_CURRENT_CODES = frozenset(CODES[s] for s in ("running", "releasing"))
"""The statuses a snapshot's tasks can have that count in the current load (:data:`CURRENT`)."""
_NODE_LOOKUPS = 64
"""A state counted from columns sums the loads of up to this many nodes (or an eighth of the nodes) one by one;
past that it makes the maps of every node at once."""


class Cluster:
    """Snapshot + queue tree + fair shares (fixed) + task statuses, usage and node loads (live)."""

    _final_map: MutableMapping[str, Resources] | None
    _current_map: MutableMapping[str, Resources] | None
    """The two node load maps (:attr:`_final`, :attr:`_current`); ``None`` until first needed in a state counted
    from columns, whose single nodes' loads come from :meth:`_loads_of` meanwhile."""
    _node_loads: dict[str, tuple[Resources, Resources]]

    def __init__(
        self,
        snapshot: Snapshot,
        tree: QueueTree,
        shares: dict[str, Resources],
        status: MutableMapping[str, str],
        node_of: MutableMapping[str, str | None],
        usage: dict[str, QueueUsage] | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.tree = tree
        self.shares = shares
        self.status: MutableMapping[str, str] = status
        """Task name -> status (in a derived state, a :class:`.layered.Layered` map over its parent's)."""
        self.node_of: MutableMapping[str, str | None] = node_of
        """Task name -> node (likewise)."""
        self.memo: dict[object, object] = {}
        """Results that depend only on the queue tree and config (resolved min-runtimes), shared by rules."""
        self.scratch: dict[object, object] = {}
        """Results that depend on this state, shared by rules while it lasts (a new state starts empty)."""
        self.capacity: Resources = cluster_capacity(snapshot)
        """Allocatable resources summed over the nodes."""
        self.node_cache: dict[object, Any] = {}
        """Per-node results of this state (:meth:`node_values`, :meth:`node_map`)."""
        self.inherited: dict[object, tuple[Any, frozenset[str]]] = {}
        """Per-node results of earlier states, each with the nodes whose loads or promises changed since."""
        self._moved: tuple[np.ndarray, set[str]] | None = None
        """:meth:`running_nodes` of an earlier state, and the jobs whose running tasks moved since."""
        self._scan(fill=False)
        if usage is not None:
            self.usage = usage

    def _scan(self, *, fill: bool) -> None:
        """One pass over every task: node loads, running tasks per job and node, and queue usage.

        With ``fill``, the status and node maps are filled from the snapshot in the same pass.
        """
        snapshot, status, node_of = self.snapshot, self.status, self.node_of
        final: dict[str, dict[str, int]] = {}
        current: dict[str, dict[str, int]] = {}
        running: dict[str, int] = {}
        running_on: dict[str, dict[str, int]] = {}
        leaf: dict[str, QueueUsage] = {}
        nominated: dict[str, list[str]] = {}
        waiting_jobs: list[Job] = []
        own_waiting: set[str] = set()  # jobs waiting through a task with its own requests, or a nominated one
        # Inlined on purpose: this pass runs over every task of the cluster. Tasks that ask for the job's shared
        # requests are counted, and their queue usage added once per job.
        for job in snapshot.jobs:
            shared = tuple(job.task_resources.items())
            entry = leaf.get(job.queue)
            if entry is None:
                entry = leaf[job.queue] = QueueUsage()
            np_entry = None if job.is_preemptible else entry.allocated_non_preemptible
            count = waiting = held = 0
            hosts: dict[str, int] | None = None
            for task in job.tasks:
                name: str = task.name  # type: ignore[assignment]  # set by validation
                if fill:
                    state: str = task.status  # type: ignore[assignment]
                    node = task.node
                    status[name], node_of[name] = state, node
                else:
                    state, node = status[name], node_of[name]
                own = task.resources
                if state == "pending":
                    if own is None:
                        waiting += 1
                    else:
                        _shift(entry.requested, own, 1)
                        own_waiting.add(job.name)
                    continue
                if node is None:
                    continue
                requests = shared if own is None else tuple(own.items())
                if state == "running":  # the common case: holding, in the final and the current load
                    count += 1
                    if hosts is None:
                        hosts = running_on.setdefault(job.name, {})
                    hosts[node] = hosts.get(node, 0) + 1
                    at_end = final.get(node)
                    if at_end is None:
                        at_end = final[node] = {}
                    now = current.get(node)
                    if now is None:
                        now = current[node] = {}
                    for r, a in requests:
                        at_end[r] = at_end.get(r, 0) + a
                        now[r] = now.get(r, 0) + a
                    if own is None:
                        held += 1
                    else:
                        for target in (entry.requested, entry.allocated, np_entry):
                            if target is not None:
                                _shift(target, own, 1)
                    continue
                targets = []
                if state in HOLDING:
                    if own is None:
                        held += 1
                    else:
                        targets += [entry.requested, entry.allocated]
                        if np_entry is not None:
                            targets.append(np_entry)
                if state in PROMISED:
                    nominated.setdefault(node, []).append(name)
                    if state == "nominated":
                        own_waiting.add(job.name)
                if state in FINAL:
                    targets.append(final.setdefault(node, {}))
                if state in CURRENT:
                    targets.append(current.setdefault(node, {}))
                for target in targets:
                    for r, a in requests:
                        target[r] = target.get(r, 0) + a
            if waiting or held:
                for target, times in (
                    (entry.requested, waiting + held),
                    (entry.allocated, held),
                    (np_entry, held),
                ):
                    if target is not None and times:
                        for r, a in shared:
                            target[r] = target.get(r, 0) + a * times
            running[job.name] = count
            if waiting or (own_waiting and job.name in own_waiting):
                waiting_jobs.append(job)
        self._waiting: list[Job] | None = waiting_jobs
        self._running: MutableMapping[str, int] = running
        self._running_on: dict[str, dict[str, int]] | None = running_on
        self._hosts_from: tuple[np.ndarray, np.ndarray] | None = None
        """The (job, node) of every running task, for :meth:`running_hosts` of a state counted from columns."""
        self._nominated = nominated
        self._final = final
        self._current = current
        self._loads_from: TaskColumns | None = None
        self._leaving: dict[str, Resources] = {}
        self.usage = roll_up(leaf, self.tree)

    def _scan_columns(self, columns: TaskColumns) -> None:
        """What :meth:`_scan` with ``fill`` computes, from the snapshot's task columns: per node, job and queue sums
        in numpy, in the orders the task-by-task pass gives (document order of first appearance)."""
        snapshot = self.snapshot
        jobs, nodes = snapshot.jobs, [node.name for node in snapshot.nodes]
        self.status = dict(zip(columns.names, columns.statuses, strict=True))
        self.node_of = dict(zip(columns.names, columns.nodes, strict=True))
        job_names = columns.job_names
        running = columns.status == CODES["running"]
        counts = np.bincount(columns.job[running], minlength=len(jobs)).tolist()
        self._running = dict(zip(job_names, counts, strict=True))
        self._running_on = None  # most decisions never need every job's map: built when first asked for
        self._hosts_from = (columns.job[running], columns.node[running])
        self.scratch["running nodes"] = _only_nodes(columns.job[running], columns.node[running], len(jobs))
        self.scratch["loads of"] = columns  # this state's loads are the columns' sums (a derived state's are not)
        self._final_map = self._current_map = None  # per node when first asked for (see final_load)
        self._loads_from = columns
        self._node_loads: dict[str, tuple[Resources, Resources]] = {}
        self._leaving = {}
        nominated: dict[str, list[str]] = {}
        for i in np.flatnonzero(columns.status == CODES["nominated"]).tolist():
            nominated.setdefault(nodes[columns.node[i]], []).append(columns.names[i])
        self._nominated = nominated
        waiting = np.unique(columns.job[columns.chosen(("pending", "nominated"))]).tolist()
        self._waiting = [jobs[j] for j in waiting]

        per_job = snapshot.job_columns()
        queues, queue_of = per_job.queues, per_job.queue[columns.job]  # queues in order of first job
        held = columns.chosen(("running", "nominated"))  # HOLDING, as a snapshot's tasks can be
        kept = ~per_job.preemptible[columns.job] & held
        asked = held | (columns.status == CODES["pending"])
        sums = [columns.group_dicts(queue_of[m], columns.row[m], queues) for m in (held, kept, asked)]
        leaf = {q: QueueUsage(sums[0].get(q, {}), sums[1].get(q, {}), sums[2].get(q, {})) for q in queues}
        self.usage = roll_up(leaf, self.tree)

    @classmethod
    def of(cls, snapshot: Snapshot, previous: Cluster | None = None) -> Cluster:
        """The state of ``snapshot``. With ``previous``, a state of an earlier snapshot of the same nodes (a
        replay's last cycle), per-node results of the nodes whose loads and promises are unchanged are kept."""
        with paused_collection():
            same_queues = previous is not None and previous.tree.source is snapshot.queues
            tree = previous.tree if previous is not None and same_queues else QueueTree(snapshot)
            same_nodes = previous is not None and _same_nodes(previous.snapshot.nodes, snapshot.nodes)
            cluster = cls.__new__(cls)
            cluster.snapshot, cluster.tree, cluster.status, cluster.node_of = snapshot, tree, {}, {}
            cluster.memo, cluster.scratch, cluster.node_cache, cluster.inherited = {}, {}, {}, {}
            cluster._moved = None
            cluster.capacity = previous.capacity if previous is not None and same_nodes else cluster_capacity(snapshot)
            columns = snapshot.built_columns()  # built by validation of a large snapshot; not by assemble()
            if columns is not None:
                cluster._scan_columns(columns)
            else:
                cluster._scan(fill=True)
            cluster.shares = fair_shares(snapshot, tree, cluster.usage, cluster.capacity)
            if previous is not None and same_nodes:
                cluster.inherited = previous._passed_on(cluster._changed_since(previous))
            return cluster

    @property
    def _final(self) -> MutableMapping[str, Resources]:
        """Node -> its final load, every node holding a task (in the order of their first task)."""
        if self._final_map is None:
            self._fill_loads()
        return self._final_map  # type: ignore[return-value]

    @_final.setter
    def _final(self, loads: MutableMapping[str, Resources]) -> None:
        self._final_map = loads

    @property
    def _current(self) -> MutableMapping[str, Resources]:
        """Node -> its current load (likewise)."""
        if self._current_map is None:
            self._fill_loads()
        return self._current_map  # type: ignore[return-value]

    @_current.setter
    def _current(self, loads: MutableMapping[str, Resources]) -> None:
        self._current_map = loads

    def _fill_loads(self) -> None:
        """The two load maps of a state counted from columns, every node at once."""
        columns, nodes = self._loads_from, self._names()
        assert columns is not None
        final = columns.node_dicts(("running", "nominated"), nodes)
        self._final_map, self._current_map = final, _current_loads(columns, nodes, final)
        self._node_loads = {}

    def _loads_of(self, node: str) -> tuple[Resources, Resources]:
        """The final and current load of one node: from the maps when they exist, else summed over the node's tasks
        in the columns (a decision on a large cluster asks for a few dozen nodes; both maps cover them all). Past
        :data:`_NODE_LOOKUPS` nodes asked for, the maps are made."""
        final_map, current_map = self._final_map, self._current_map
        lazy = self._lazy_loads()
        if lazy is not None:
            own_final, own_current = lazy[0].own.get(node), lazy[1].own.get(node)
            if own_final is None or own_current is None:  # one read of the origin for both
                origin = lazy[0].origin._loads_of(node)
                return origin[0] if own_final is None else own_final, origin[1] if own_current is None else own_current
            return own_final, own_current
        if final_map is not None and current_map is not None:
            return final_map.get(node, {}), current_map.get(node, {})
        found = self._node_loads.get(node)
        if found is not None:
            return found
        if len(self._node_loads) >= max(_NODE_LOOKUPS, len(self.snapshot.nodes) // 8):
            self._fill_loads()
            return self._loads_of(node)
        columns = self._loads_from
        assert columns is not None
        at = self.node_index().get(node)
        final: Resources = {}
        current: Resources = {}
        if at is not None:
            statuses, rows, starts = self._tasks_by_node(columns)
            first, end = starts[at], starts[at + 1]
            maps = columns.requests
            # each request map times its count, maps in the order of their first task: the same sums as task by
            # task in document order (columns.node_dicts), keys in the same order
            counted: tuple[dict[int, int], dict[int, int]] = ({}, {})
            for code, row in zip(statuses[first:end], rows[first:end], strict=True):
                if code in _FINAL_CODES:
                    counted[0][row] = counted[0].get(row, 0) + 1
                if code in _CURRENT_CODES:
                    counted[1][row] = counted[1].get(row, 0) + 1
            for target, counts in zip((final, current), counted, strict=True):
                for row, count in counts.items():
                    for r, a in maps[row].items():
                        target[r] = target.get(r, 0) + a * count
        self._node_loads[node] = (final, current)
        return final, current

    def load_nodes(self, names: Iterable[str]) -> None:
        """Sum the loads of the nodes ``names`` at once, before a decision reads them node by node: the same maps as
        :meth:`final_load` and :meth:`current_load` would sum one node at a time (a decision that builds hundreds of
        nodes pays one numpy pass instead of hundreds of task loops). Nothing to do once every node's maps exist."""
        lazy = self._lazy_loads()
        if lazy is not None:
            lazy[0].origin.load_nodes(n for n in names if n not in lazy[0].own or n not in lazy[1].own)
            return
        if self._final_map is not None and self._current_map is not None:
            return
        known, index = self._node_loads, self.node_index()
        at = sorted({index[n] for n in names if n not in known and n in index})
        if not at:
            return
        if len(known) + len(at) >= max(_NODE_LOOKUPS, len(self.snapshot.nodes) // 8):
            self._fill_loads()
            return
        columns = self._loads_from
        assert columns is not None
        order, starts = self._tasks_by_node_arrays(columns)
        first, lengths = starts[at], starts[np.array(at) + 1] - starts[at]
        tasks = order[np.arange(int(lengths.sum())) + np.repeat(first - (np.cumsum(lengths) - lengths), lengths)]
        nodes, status, rows, names_all = columns.node[tasks], columns.status[tasks], columns.row[tasks], self._names()
        sums = [
            columns.group_dicts(nodes[chosen], rows[chosen], names_all)
            for chosen in (np.isin(status, list(_FINAL_CODES)), np.isin(status, list(_CURRENT_CODES)))
        ]
        for n in at:
            name = names_all[n]
            known[name] = (sums[0].get(name, {}), sums[1].get(name, {}))

    def _lazy_loads(self) -> tuple[_Loads, _Loads] | None:
        """A derived state's final and current loads when both are read through one fresh state (:class:`_Loads`)."""
        final_map, current_map = self._final_map, self._current_map
        if type(final_map) is _Loads and type(current_map) is _Loads and final_map.origin is current_map.origin:
            return final_map, current_map
        return None

    def _names(self) -> list[str]:
        """Node names in document order."""
        found = self.memo.get("node names")
        if not isinstance(found, list):
            found = self.memo["node names"] = [node.name for node in self.snapshot.nodes]
        return found

    def _tasks_by_node_arrays(self, columns: TaskColumns) -> tuple[np.ndarray, np.ndarray]:
        """The columns' task positions sorted by node (stable) and where each node's start, as arrays."""
        found = self.scratch.get("tasks by node, arrays")
        if found is None:
            order = np.argsort(columns.node, kind="stable")
            starts = np.searchsorted(columns.node[order], np.arange(len(self.snapshot.nodes) + 1))
            found = self.scratch["tasks by node, arrays"] = (order, starts)
        return found  # type: ignore[return-value]

    def _tasks_by_node(self, columns: TaskColumns) -> tuple[list[int], list[int], list[int]]:
        """The status and request-map row of the columns' tasks sorted by node (stable: document order within a
        node), and where each node's start: Python lists, so that a node's loads are summed without a numpy call."""
        found = self.scratch.get("tasks by node")
        if found is None:
            order, starts = self._tasks_by_node_arrays(columns)
            found = self.scratch["tasks by node"] = (
                columns.status[order].tolist(),
                columns.row[order].tolist(),
                starts.tolist(),
            )
        return found  # type: ignore[return-value]

    def _passed_on(self, changed: frozenset[str]) -> dict[object, tuple[Any, frozenset[str]]]:
        """What a state that differs from this one on the ``changed`` nodes inherits (no reference to this state)."""
        inherited = {key: (values, since | changed) for key, (values, since) in self.inherited.items()}
        inherited.update((key, (values, changed)) for key, values in self.node_cache.items())
        return inherited

    def _changed_since(self, other: Cluster) -> frozenset[str]:
        """Nodes whose loads or promises differ from ``other``'s."""
        changed: set[str] = set()
        for mine, theirs in (
            (self._final, other._final),
            (self._current, other._current),
            (self._leaving, other._leaving),
            (self._nominated, other._nominated),
        ):
            if mine != theirs:  # compared whole first: often equal, always cheap
                changed.update(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))
        return frozenset(changed)

    def with_changes(self, changes: Iterable[tuple[str, str, str | None]]) -> Cluster:
        """A new state where each ``(task, status, node)`` is applied (``node`` None: keep it); shares stay.

        Only what the changed tasks touch is recomputed: their nodes' loads, their
        jobs' running counts, and the usage of their queues and ancestors.
        """
        new = copy.copy(self)
        new.scratch, new.node_cache, new._waiting = {}, {}, None
        nodes_before = self.scratch.get("running nodes")
        changed_nodes: set[str] = set()
        # the task and job maps are layered over the parent's (a few changes of hundreds of thousands of entries)
        new.status, new.node_of, new._running = Layered(self.status), Layered(self.node_of), Layered(self._running)
        if self._final_map is None or isinstance(self._final_map, _Loads):  # loads not summed for every node
            new._final, new._current = _Loads.over(self, 0), _Loads.over(self, 1)
        else:
            new._final, new._current = dict(self._final), dict(self._current)
        new._leaving = dict(self._leaving)
        new.usage = dict(self.usage)
        new._running_on = None if self._running_on is None else dict(self._running_on)
        new._hosts_from = None  # the parent's tasks: built anew from this state's, if ever asked for
        new._nominated = dict(self._nominated)
        moved_jobs: set[str] = set()
        owner = self._owners()
        touched_nodes: set[tuple[str, str]] = set()
        touched_queues: set[str] = set()
        for task, state, node in changes:
            job, spec = owner[task]
            before, where = self.status[task], self.node_of[task]
            after = state
            there = None if after == "pending" else where if node is None else node
            changed_nodes.update(n for n in (where, there) if n is not None)
            requests = job.requests(spec)
            new._move(new._final, FINAL, touched_nodes, "final", requests, before, where, after, there)
            new._move(new._current, CURRENT, touched_nodes, "current", requests, before, where, after, there)
            if before == "running" and after in PROMISED and where is not None and there != where:
                new._leaving[where] = dict(new._leaving.get(where, {}))  # moved: the old pod is still there now
                _shift(new._leaving[where], requests, 1)
            new._running[job.name] += (after == "running") - (before == "running")
            if "running" in (before, after):
                moved_jobs.add(job.name)
            holds_before, holds_after = before in HOLDING, after in HOLDING
            if holds_before != holds_after:
                sign = 1 if holds_after else -1
                for queue in self.tree.upward(job.queue):
                    if queue not in touched_queues:
                        old = new.usage[queue]
                        new.usage[queue] = QueueUsage(
                            dict(old.allocated), dict(old.allocated_non_preemptible), dict(old.requested)
                        )
                        touched_queues.add(queue)
                    entry = new.usage[queue]
                    _shift(entry.allocated, requests, sign)
                    if not job.is_preemptible:
                        _shift(entry.allocated_non_preemptible, requests, sign)
            if before in PROMISED or after in PROMISED:
                new._renominate(task, where if before in PROMISED else None, there if after in PROMISED else None)
            new.status[task] = after
            new.node_of[task] = there
        maps = new._running_on
        if maps is not None:  # else built when first asked for
            for name in moved_jobs:
                hosts = new._count_hosts(self.snapshot.job(name))
                if hosts:
                    maps[name] = hosts
                else:
                    maps.pop(name, None)
        counts_before = self.scratch.get("running array")
        if isinstance(counts_before, np.ndarray):  # running_array() of the parent, patched for these jobs
            new.scratch["running array"] = _patched(counts_before, new, moved_jobs)
        if isinstance(nodes_before, np.ndarray):  # running_nodes() updates these jobs only
            new._moved = (nodes_before, moved_jobs)
        elif self._moved is not None:
            new._moved = (self._moved[0], self._moved[1] | moved_jobs)
        flipped = [n for n in moved_jobs if (self._running[n] > 0) != (new._running[n] > 0)]
        by_queue = self.scratch.get("running by queue")
        if not flipped:  # no job started or stopped running: the same lists
            for key in ("running jobs", "running by queue"):
                if key in self.scratch:
                    new.scratch[key] = self.scratch[key]
        elif isinstance(by_queue, dict) and all(new._running[n] == 0 for n in flipped):  # jobs only stopped
            changed = {self.snapshot.job(n).queue for n in flipped}
            lists = {
                q: [j for j in jobs if new._running[j.name]] if q in changed else jobs for q, jobs in by_queue.items()
            }
            new.scratch["running by queue"] = {q: jobs for q, jobs in lists.items() if jobs}
        new.inherited = self._passed_on(frozenset(changed_nodes))
        return new

    def node_values(
        self, key: object, compute: Callable[[int, Node], T], every: Callable[[], list[T]] | None = None
    ) -> list[T]:
        """``compute(index, node)`` for every node in document order, kept under ``key`` while this state lasts.

        ``compute`` must depend only on that node's loads and promises (and on what stays fixed for the session):
        a state derived from another (or a replay's next cycle) then recomputes only the nodes that changed.
        ``every``, if given, computes the whole list at once (the same values), when nothing can be reused.
        """
        found = self.node_cache.get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
        nodes = self.snapshot.nodes
        before = self.inherited.get(key)
        if before is not None and len(before[1]) < len(nodes) // 2:
            values = list(before[0])
            index = self.node_index()
            for name in before[1]:
                i = index[name]
                values[i] = compute(i, nodes[i])
        else:
            values = [compute(i, node) for i, node in enumerate(nodes)] if every is None else every()
        self.node_cache[key] = values
        return values

    def node_map(self, key: object) -> dict[str, Any]:
        """A per-node map under ``key``, filled by the caller node by node (values of one node's loads and promises
        only), started from an earlier state's entries for the nodes that have not changed since."""
        found = self.node_cache.get(key)
        if found is None:
            before = self.inherited.get(key)
            found = {} if before is None else {n: v for n, v in before[0].items() if n not in before[1]}
            self.node_cache[key] = found
        return found

    def _move(
        self,
        loads: MutableMapping[str, Resources],
        counted: tuple[str, ...],
        touched: set[tuple[str, str]],
        kind: str,
        requests: Resources,
        before: str,
        where: str | None,
        after: str,
        there: str | None,
    ) -> None:
        for state, node, sign in ((before, where, -1), (after, there, 1)):
            if node is None or state not in counted:
                continue
            if (kind, node) not in touched:
                loads[node] = dict(loads.get(node, {}))
                touched.add((kind, node))
            _shift(loads[node], requests, sign)

    def _renominate(self, task: str, left: str | None, joined: str | None) -> None:
        if left is not None:
            self._nominated[left] = [t for t in self._nominated[left] if t != task]
        if joined is not None:
            self._nominated[joined] = [*self._nominated.get(joined, []), task]

    def _owners(self) -> Mapping[str, tuple[Job, Task]]:
        """Task name -> (job, task), built once per snapshot and shared by every state derived from it."""
        owners = self.memo.get("owners")
        if owners is None:
            columns = self.snapshot.built_columns()
            if columns is not None:
                owners = _Owners(self.snapshot, columns)
            else:
                owners = {str(t.name): (j, t) for j in self.snapshot.jobs for t in j.tasks}
            self.memo["owners"] = owners
        return owners  # type: ignore[return-value]

    @property
    def now(self) -> float:
        return self.snapshot.now

    # -- tasks -----------------------------------------------------------------

    def tasks(self, job: Job, *statuses: str) -> list[Task]:
        """Tasks of ``job`` whose current status is one of ``statuses``, in document order."""
        status = self.status
        if type(status) is Layered:  # read inline: a few changes over the snapshot's map
            base, own = status.base_and_changes()
            return [t for t in job.tasks if (own[n] if (n := str(t.name)) in own else base[n]) in statuses]
        return [t for t in job.tasks if status[str(t.name)] in statuses]

    def waiting_jobs(self) -> list[Job]:
        """Jobs with a pending or nominated task, in snapshot order."""
        if self._waiting is None:
            self._waiting = [j for j in self.snapshot.jobs if self.count(j, "pending", "nominated")]
        return list(self._waiting)

    def count(self, job: Job, *statuses: str) -> int:
        return sum(1 for t in job.tasks if self.status[str(t.name)] in statuses)

    def status_counts(self, status: str) -> tuple[int, int]:
        """Jobs with a task in ``status``, and tasks in it: on the snapshot's columns when this state is the
        snapshot's own (no job model read), else task by task."""
        columns = self.scratch.get("loads of")
        if isinstance(columns, TaskColumns):
            chosen = columns.status == CODES[status]
            return len(np.unique(columns.job[chosen])), int(chosen.sum())
        counts = [self.count(job, status) for job in self.snapshot.jobs]
        return sum(1 for c in counts if c), sum(counts)

    def running_on(self, job: Job) -> dict[str, int]:
        """Node -> number of ``job``'s running tasks there (read only: jobs may share one map)."""
        if self._running_on is None:
            return self._count_hosts(job)
        return self._running_on.get(job.name, {})

    def running_hosts(self) -> dict[str, dict[str, int]]:
        """Job name -> :meth:`running_on` (jobs with running tasks only), for loops over many jobs; read only.

        Built when first asked for (on a large cluster, a third of a second): a decision needs the maps of the few
        jobs that run on several nodes (:meth:`running_nodes` tells which), and asks :meth:`running_on` for them.
        """
        if self._running_on is None:
            if self._hosts_from is not None:
                names = [node.name for node in self.snapshot.nodes]
                self._running_on = _counted(*self._hosts_from, self.job_columns().names, names)
            else:
                found = {job.name: self._count_hosts(job) for job in self.snapshot.jobs}
                self._running_on = {name: hosts for name, hosts in found.items() if hosts}
        return self._running_on

    def _count_hosts(self, job: Job) -> dict[str, int]:
        """:meth:`running_on`, counted from ``job``'s tasks."""
        hosts: dict[str, int] = {}
        for item in self.tasks(job, "running"):
            host = self.node_of[str(item.name)]
            if host is not None:
                hosts[host] = hosts.get(host, 0) + 1
        return hosts

    def running_jobs(self) -> list[Job]:
        """Jobs with a running task, in snapshot order, kept while this state lasts (with :meth:`running_by_queue`,
        which derived states update cheaply)."""
        found = self.scratch.get("running jobs")
        if not isinstance(found, list):
            # running_array() has every job, in snapshot order
            found = self.scratch["running jobs"] = list(compress(self.snapshot.jobs, self.running_array().tolist()))
            self.running_by_queue()
        return found

    def running_by_queue(self) -> dict[str, list[Job]]:
        """:meth:`running_jobs` by leaf queue (queues in the order of their first running job), kept while this
        state lasts; a state derived by stopping jobs filters only their queues' lists."""
        kept = self.scratch.get("running by queue")
        if isinstance(kept, dict):
            return kept
        running = self.running_jobs()
        queues = list(map(_QUEUE_OF, running))
        position = {queue: i for i, queue in enumerate(dict.fromkeys(queues))}
        codes = np.fromiter(map(position.__getitem__, queues), dtype=np.int64, count=len(queues))
        names = list(position)
        found = {names[code]: list(map(running.__getitem__, at.tolist())) for code, at in grouped(codes)}
        self.scratch["running by queue"] = found
        return found

    def job_columns(self) -> JobColumns:
        """The snapshot's jobs as columns (:meth:`Snapshot.job_columns`)."""
        return self.snapshot.job_columns()

    def running_array(self) -> np.ndarray:
        """:meth:`running_count` of every job, in document order (int64), kept while this state lasts."""
        found = self.scratch.get("running array")
        if not isinstance(found, np.ndarray):
            running = self._running  # every job, in document order
            if isinstance(running, Layered):  # the base's values in C, then the few changed ones
                base, changes = running.base_and_changes()
                found = _patched(np.fromiter(base.values(), dtype=np.int64, count=len(base)), self, changes)
            else:
                found = np.fromiter(running.values(), dtype=np.int64, count=len(running))
            self.scratch["running array"] = found
        return found

    def running_nodes(self) -> np.ndarray:
        """Per job (document order), the node (index) all its running tasks are on: -1 when none runs, -2 when they
        run on several nodes (int64); kept while this state lasts. A derived state updates its parent's."""
        found = self.scratch.get("running nodes")
        if isinstance(found, np.ndarray):
            return found
        index = self.node_index()
        if self._moved is not None:
            before, moved = self._moved
            found, names, job = before.copy(), sorted(moved), self.snapshot.job
            for name, at in zip(names, self.job_positions(names), strict=True):
                found[at] = _one_node(self.running_on(job(name)), index)
        else:
            on = self.running_hosts()
            found = np.fromiter(
                (_one_node(on.get(name), index) for name in self._running), np.int64, len(self._running)
            )
        self.scratch["running nodes"] = found
        return found

    def job_positions(self, names: Iterable[str]) -> list[int]:
        """The positions in the snapshot of the jobs ``names``.

        A snapshot whose jobs are made when read maps names to positions already. Otherwise a few are found by
        scanning the list of names (in C, a few milliseconds each on a large snapshot); more through a map of every
        name, built once per snapshot (a tenth of a second on a large one).
        """
        wanted = names if isinstance(names, list) else list(names)
        index = self.snapshot.jobs_by_name()
        if isinstance(index, JobIndex):  # a snapshot of jobs made when read knows their positions
            return list(map(index.position, wanted))
        known = self.job_columns().names
        found = self.memo.get("job positions")
        if not isinstance(found, dict) and len(wanted) <= _SCANNED:
            return list(map(known.index, wanted))
        if not isinstance(found, dict):
            found = self.memo["job positions"] = dict(zip(known, range(len(known)), strict=True))
        return list(map(found.__getitem__, wanted))

    def running_counts(self) -> Mapping[str, int]:
        """Job name -> :meth:`running_count`, for loops over many jobs; read only."""
        return self._running

    def running_count(self, job: Job) -> int:
        return self._running[job.name]

    def active_count(self, job: Job) -> int:
        """Tasks that hold or are promised capacity: running, allocated or pipelined."""
        return self.count(job, *HOLDING)

    def surplus(self, job: Job) -> int:
        """Running tasks above ``min_available``: what an elastic peel may take."""
        return max(0, self.running_count(job) - job.gang_minimum)

    # -- nodes -----------------------------------------------------------------

    def final_load(self, node: str) -> Resources:
        """What ``node`` holds once releasing tasks are gone (running + allocated + pipelined)."""
        return self._loads_of(node)[0]

    def nominations(self, node: str) -> list[tuple[Job, Task]]:
        """The promised (pipelined or nominated) tasks on ``node`` (seed 004), in the order they were promised."""
        names = self._nominated.get(node)
        if not names:
            return []  # without the owners map: built over every task, it costs a tenth of a second at 100,000 nodes
        owner = self._owners()
        return [owner[name] for name in names]

    def promised_nodes(self) -> list[str]:
        """Nodes where some task is promised a place (pipelined or nominated), in the order promised."""
        return [node for node, tasks in self._nominated.items() if tasks]

    def node_index(self) -> dict[str, int]:
        """Node name -> its position in the snapshot (built once per snapshot)."""
        index = self.memo.get("node index")
        if not isinstance(index, dict):
            index = self.memo["node index"] = {node.name: i for i, node in enumerate(self.snapshot.nodes)}
        return index

    def rooms(self, priority: int, resources: tuple[str, ...]) -> list[tuple[int, ...]]:
        """Every node's room in ``resources`` (document order; allocatable minus :meth:`room_load`) as a decision of
        ``priority`` sees it, kept while this state lasts.

        Only nodes with promised tasks see a load that depends on the priority: the others' rooms are computed once
        for every priority (and passed on to derived states, see :meth:`node_values`).
        """
        found = self.node_cache.get(("rooms", resources, priority))
        if found is not None:
            return found  # type: ignore[no-any-return]
        values = self.base_rooms(resources)
        index, nodes = self.node_index(), self.snapshot.nodes
        for name in self.promised_nodes():
            load = self.room_load(name, priority)
            if load is not self.final_load(name):  # lower-priority promises do not hold their capacity
                if values is self.node_cache[("rooms", resources)]:
                    values = list(values)
                values[index[name]] = _room(nodes[index[name]], load, resources)
        self.node_cache[("rooms", resources, priority)] = values
        return values

    def base_rooms(self, resources: tuple[str, ...]) -> list[tuple[int, ...]]:
        """Every node's room in ``resources`` with every promise holding (allocatable minus the final load): what
        :meth:`rooms` gives on the nodes of no :meth:`promised_nodes`, whatever the priority."""
        return self.node_values(
            ("rooms", resources),
            lambda _, node: _room(node, self.final_load(node.name), resources),
            lambda: self._column_rooms(resources) or _rooms(self.snapshot.nodes, self._final, resources),
        )

    def _column_rooms(self, resources: tuple[str, ...]) -> list[tuple[int, ...]] | None:
        """:meth:`base_rooms` of every node at once, on the task columns this state's loads were summed from (none
        for a derived state, or a sum too large for int64); its :meth:`room_matrix` too."""
        columns = self.scratch.get("loads of")
        if not isinstance(columns, TaskColumns) or not self.snapshot.nodes:
            return None
        held = columns.node_sums(("running", "nominated"))  # the final load of a snapshot's tasks
        if held is None:
            return None
        room = columns.allocatable - held  # both within int64, neither negative
        matrix = np.zeros((len(room), len(resources)), dtype=np.int64)
        for j, r in enumerate(resources):
            if r in columns.resources:  # else no node has it and no task asks for it: 0
                matrix[:, j] = room[:, columns.resources.index(r)]
        self.node_cache[("room matrix", resources)] = matrix
        return list(map(tuple, matrix.tolist()))

    def room_matrix(self, resources: tuple[str, ...]) -> np.ndarray | None:
        """:meth:`base_rooms` as a matrix (nodes x ``resources``, int64), or ``None`` if a room does not fit 64 bits;
        a derived state copies its parent's and writes the rows of the nodes that changed."""
        key = ("room matrix", resources)
        if key in self.node_cache:
            found: np.ndarray | None = self.node_cache[key]
            return found
        base, nodes = self.base_rooms(resources), self.snapshot.nodes
        if key in self.node_cache:  # made with the rooms (see _column_rooms)
            made: np.ndarray | None = self.node_cache[key]
            return made
        before = self.inherited.get(key)
        if before is not None and before[0] is not None and len(before[1]) < len(nodes) // 2:
            found = before[0].copy()
            index = self.node_index()
            for name in before[1]:
                found[index[name]] = base[index[name]]
        else:
            try:
                found = np.array(base, dtype=np.int64).reshape(len(nodes), len(resources))
            except OverflowError:
                found = None
        self.node_cache[key] = found
        return found

    def room_load(self, node: str, priority: int) -> Resources:
        """The final load as a decision of ``priority`` sees it (seed 004).

        Promises (pipelined or nominated tasks) of jobs with equal or higher
        priority hold their capacity; those of lower priority do not: a
        higher-priority job may take their place (and its decision lists them
        as overridden).
        """
        load = self.final_load(node)
        if not self._nominated.get(node):  # the common case, kept cheap: nothing promised on this node
            return load
        below = [(j, t) for j, t in self.nominations(node) if j.resolved_priority < priority]
        if not below:
            return load
        load = dict(load)
        for job, task in below:
            _shift(load, job.requests(task), -1)
        return load

    def current_load(self, node: str) -> Resources:
        """What ``node`` holds now (running + allocated + releasing, and the old pods of tasks moved away)."""
        load = self._loads_of(node)[1]
        leaving = self._leaving.get(node)
        if leaving:
            load = dict(load)
            _shift(load, leaving, 1)
        return load


class _Loads(MutableMapping[str, Resources]):
    """A derived state's final (``which`` 0) or current (1) node loads while the state counted from columns that it
    descends from (``origin``) has not summed every node's: its own entries for the nodes its changes touched, the
    others read from ``origin`` one node at a time (:meth:`Cluster._loads_of`). Applying a decision to a fresh
    100,000-node state would otherwise sum all 100,000 nodes' loads to change a few. Iterating, counting or
    comparing reads every node's (``origin`` sums them all then)."""

    def __init__(self, origin: Cluster, which: int, own: dict[str, Resources]) -> None:
        self.origin, self.which, self.own = origin, which, own

    @classmethod
    def over(cls, state: Cluster, which: int) -> _Loads:
        """The loads of a state derived from ``state`` (changes are then made to them), sharing its origin."""
        mine = state._final_map if which == 0 else state._current_map
        if isinstance(mine, _Loads):
            return cls(mine.origin, which, dict(mine.own))
        return cls(state, which, {})

    def get(self, node: str, default: Resources | None = None) -> Resources | None:  # type: ignore[override]
        found = self.own.get(node)
        return found if found is not None else self.origin._loads_of(node)[self.which]

    def __getitem__(self, node: str) -> Resources:
        found = self.get(node)
        assert found is not None
        return found

    def __setitem__(self, node: str, load: Resources) -> None:
        self.own[node] = load

    def __delitem__(self, node: str) -> None:
        raise TypeError("node loads are changed, never removed")

    def _every(self) -> dict[str, Resources]:
        base = self.origin._final if self.which == 0 else self.origin._current
        return {**base, **self.own}

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())


class _Owners(Mapping[str, tuple[Job, Task]]):
    """Task name -> (job, task), found through the task columns: only a name -> position map is built, in C, and
    only when a name is not its job's default (``<job>-<index>``, found through the job at once)."""

    def __init__(self, snapshot: Snapshot, columns: TaskColumns) -> None:
        self._jobs, self._by_name, self._columns = snapshot.jobs, snapshot.jobs_by_name(), columns
        self._known: dict[str, int] | None = None
        self._first: np.ndarray | None = None

    def __getitem__(self, name: str) -> tuple[Job, Task]:
        job_name, _, index = name.rpartition("-")
        job = self._by_name.get(job_name)
        if job is not None and index.isdecimal() and int(index) < len(job.tasks):
            task = job.tasks[int(index)]
            if task.name == name:  # task names are unique in a snapshot: this is the one
                return job, task
        i = self._position()[name]
        if self._first is None:  # where each job's tasks start
            self._first = np.searchsorted(self._columns.job, np.arange(len(self._jobs)))
        j = int(self._columns.job[i])
        job = self._jobs[j]
        return job, job.tasks[i - int(self._first[j])]

    def _position(self) -> dict[str, int]:
        if self._known is None:
            names = self._columns.names
            self._known = dict(zip(names, range(len(names)), strict=True))
        return self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._position())

    def __len__(self) -> int:
        return len(self._columns.names)


def _counted(jobs: np.ndarray, hosts: np.ndarray, job_names: list[str], nodes: list[str]) -> dict[str, dict[str, int]]:
    """Job name -> node name -> tasks, for the (job, node) pairs given task by task, in order of first appearance.

    Tasks come job by job, so each job's pairs are contiguous once in that order; most jobs have one, whose map is
    made in C.
    """
    size = max(len(nodes), 1)
    keys, first, counts = np.unique(jobs * size + hosts, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    keys, counts = keys[order], counts[order]
    job_of, node_of = keys // size, keys % size
    starts = np.flatnonzero(np.r_[True, job_of[1:] != job_of[:-1]]) if len(keys) else job_of
    # {node: count} per pair, one map for all equal pairs (read only, as running_on says): a map per job would
    # cost ~70 MB at 100,000 nodes; equal pairs are found in numpy
    most = int(counts.max(initial=0)) + 1
    distinct, inverse = np.unique(node_of * most + counts, return_inverse=True)
    pairs = zip(map(nodes.__getitem__, (distinct // most).tolist()), (distinct % most).tolist(), strict=True)
    maps = list(map(dict, map(_alone, pairs)))
    pair_map = inverse.reshape(len(keys)).tolist()
    per_job = list(map(maps.__getitem__, map(pair_map.__getitem__, starts.tolist())))
    ends = [*starts[1:].tolist(), len(keys)]
    for k in np.flatnonzero(np.diff(np.r_[starts, len(keys)]) > 1).tolist():
        per_job[k] = dict(per_job[k])
        for pair in range(int(starts[k]) + 1, ends[k]):
            per_job[k].update(maps[pair_map[pair]])
    return dict(zip(map(job_names.__getitem__, job_of[starts].tolist()), per_job, strict=True))


def _one_node(hosts: dict[str, int] | None, index: dict[str, int]) -> int:
    """:meth:`Cluster.running_nodes` of a job running ``hosts`` (node name -> tasks)."""
    if not hosts:
        return -1
    return index[next(iter(hosts))] if len(hosts) == 1 else -2


def _only_nodes(jobs: np.ndarray, hosts: np.ndarray, count: int) -> np.ndarray:
    """:meth:`Cluster.running_nodes` of ``count`` jobs from their running tasks' (job, node) pairs."""
    low, high = np.full(count, np.iinfo(np.int64).max), np.full(count, -1)
    np.minimum.at(low, jobs, hosts)
    np.maximum.at(high, jobs, hosts)
    return np.where(high < 0, -1, np.where(low == high, low, -2))


def _alone(pair: tuple[str, int]) -> tuple[tuple[str, int]]:
    return (pair,)


def _patched(counts: np.ndarray, state: Cluster, jobs: Iterable[str]) -> np.ndarray:
    """A copy of ``counts`` (running tasks per job, document order) with ``jobs``' counts read from ``state``."""
    names = sorted(jobs)
    if not names:
        return counts
    found = counts.copy()
    found[state.job_positions(names)] = [state._running[name] for name in names]
    return found


def _current_loads(columns: TaskColumns, nodes: list[str], final: dict[str, Resources]) -> dict[str, Resources]:
    """``columns.node_dicts(("running", "releasing"), nodes)``, with the map of ``final`` itself for every node that
    has no releasing and no nominated task (the two loads are equal there; loads are copied before they change, see
    :meth:`Cluster._move`)."""
    placed = columns.node >= 0
    odd = np.zeros(len(nodes), dtype=bool)
    odd[columns.node[columns.chosen(("releasing", "nominated")) & placed]] = True
    if not odd.any():
        return dict(final)
    chosen = columns.chosen(("running", "releasing")) & placed
    where, rows = columns.node[chosen], columns.row[chosen]
    redo = odd[where]
    again = columns.group_dicts(where[redo], rows[redo], nodes)
    present, first = np.unique(where, return_index=True)
    ordered = present[np.argsort(first, kind="stable")].tolist()
    return {nodes[n]: again[nodes[n]] if odd[n] else final[nodes[n]] for n in ordered}


def _room(node: Node, load: Resources, resources: tuple[str, ...]) -> tuple[int, ...]:
    have = node.resources
    return tuple(have.get(r, 0) - load.get(r, 0) for r in resources)


def _rooms(nodes: list[Node], final: Mapping[str, Resources], resources: tuple[str, ...]) -> list[tuple[int, ...]]:
    """:func:`_room` of every node (one pass, for large clusters)."""
    loads = map(final.get, map(_NAME, nodes), repeat({}))
    haves = map(_RESOURCES, nodes)
    if len(resources) == 1:
        (r,) = resources
        return [(have.get(r, 0) - load.get(r, 0),) for have, load in zip(haves, loads, strict=True)]
    return [
        tuple([have.get(r, 0) - load.get(r, 0) for r in resources]) for have, load in zip(haves, loads, strict=True)
    ]


def _same_nodes(before: list[Node], after: list[Node]) -> bool:
    return len(before) == len(after) and all(a is b for a, b in zip(before, after, strict=True))


def _shift(target: dict[str, int], requests: Resources, sign: int) -> None:
    for r, a in requests.items():
        target[r] = target.get(r, 0) + sign * a
