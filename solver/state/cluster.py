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
from collections.abc import Iterable

from gpu_preempt.models import Job, Resources, Snapshot, Task
from gpu_preempt.models.collector import paused_collection

from .fair_share import fair_shares
from .queue_tree import QueueTree
from .queue_usage import HOLDING, QueueUsage, roll_up

FINAL = ("running", "allocated", "pipelined", "nominated")
PROMISED = ("pipelined", "nominated")
"""Statuses of tasks promised a place that releasing tasks free (seed 004): a higher-priority decision may take it."""
"""Statuses that hold node capacity once releasing tasks are gone."""
CURRENT = ("running", "allocated", "releasing")
"""Statuses that hold node capacity now."""


class Cluster:
    """Snapshot + queue tree + fair shares (fixed) + task statuses, usage and node loads (live)."""

    def __init__(
        self,
        snapshot: Snapshot,
        tree: QueueTree,
        shares: dict[str, Resources],
        status: dict[str, str],
        node_of: dict[str, str | None],
        usage: dict[str, QueueUsage] | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.tree = tree
        self.shares = shares
        self.status = status
        self.node_of = node_of
        self.memo: dict[object, object] = {}
        """Results that depend only on the queue tree and config (resolved min-runtimes), shared by rules."""
        self.scratch: dict[object, object] = {}
        """Results that depend on this state, shared by rules while it lasts (a new state starts empty)."""
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
        for job in snapshot.jobs:
            shared = job.task_resources
            entry = leaf.setdefault(job.queue, QueueUsage())
            np_entry = None if job.is_preemptible else entry.allocated_non_preemptible
            count = 0
            for task in job.tasks:
                name = str(task.name)
                if fill:
                    state, node = str(task.status), task.node
                    status[name], node_of[name] = state, node
                else:
                    state, node = status[name], node_of[name]
                requests = shared if task.resources is None else task.resources
                # the loops below are inlined on purpose: this pass runs over every task of the cluster
                if state == "pending":
                    target = entry.requested
                    for r, a in requests.items():
                        target[r] = target.get(r, 0) + a
                    continue
                if node is None:
                    continue
                targets = []
                if state in HOLDING:
                    targets += [entry.requested, entry.allocated]
                    if np_entry is not None:
                        targets.append(np_entry)
                if state == "running":
                    count += 1
                    hosts = running_on.setdefault(job.name, {})
                    hosts[node] = hosts.get(node, 0) + 1
                if state in PROMISED:
                    nominated.setdefault(node, []).append(name)
                if state in FINAL:
                    targets.append(final.setdefault(node, {}))
                if state in CURRENT:
                    targets.append(current.setdefault(node, {}))
                for target in targets:
                    for r, a in requests.items():
                        target[r] = target.get(r, 0) + a
            running[job.name] = count
        self._running = running
        self._running_on = running_on
        self._nominated = nominated
        self._final: dict[str, Resources] = final
        self._current: dict[str, Resources] = current
        self._leaving: dict[str, Resources] = {}
        self.usage = roll_up(leaf, self.tree)

    @classmethod
    def of(cls, snapshot: Snapshot) -> Cluster:
        with paused_collection():
            tree = QueueTree(snapshot)
            cluster = cls.__new__(cls)
            cluster.snapshot, cluster.tree, cluster.status, cluster.node_of = snapshot, tree, {}, {}
            cluster.memo, cluster.scratch = {}, {}
            cluster._scan(fill=True)
            cluster.shares = fair_shares(snapshot, tree, cluster.usage)
            return cluster

    def with_changes(self, changes: Iterable[tuple[str, str, str | None]]) -> Cluster:
        """A new state where each ``(task, status, node)`` is applied (``node`` None: keep it); shares stay.

        Only what the changed tasks touch is recomputed: their nodes' loads, their
        jobs' running counts, and the usage of their queues and ancestors.
        """
        new = copy.copy(self)
        new.scratch = {}
        new.status, new.node_of = dict(self.status), dict(self.node_of)
        new._final, new._current, new._leaving = dict(self._final), dict(self._current), dict(self._leaving)
        new._running, new.usage = dict(self._running), dict(self.usage)
        new._running_on = dict(self._running_on)
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
        for name in moved_jobs:
            hosts: dict[str, int] = {}
            for item in new.tasks(self.snapshot.job(name), "running"):
                host = new.node_of[str(item.name)]
                if host is not None:
                    hosts[host] = hosts.get(host, 0) + 1
            if hosts:
                new._running_on[name] = hosts
            else:
                new._running_on.pop(name, None)
        return new

    def _move(
        self,
        loads: dict[str, Resources],
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

    def _owners(self) -> dict[str, tuple[Job, Task]]:
        """Task name -> (job, task), built once per snapshot and shared by every state derived from it."""
        owners = self.memo.get("owners")
        if owners is None:
            owners = {str(t.name): (j, t) for j in self.snapshot.jobs for t in j.tasks}
            self.memo["owners"] = owners
        return owners  # type: ignore[return-value]

    @property
    def now(self) -> float:
        return self.snapshot.now

    # -- tasks -----------------------------------------------------------------

    def tasks(self, job: Job, *statuses: str) -> list[Task]:
        """Tasks of ``job`` whose current status is one of ``statuses``, in document order."""
        return [t for t in job.tasks if self.status[str(t.name)] in statuses]

    def count(self, job: Job, *statuses: str) -> int:
        return sum(1 for t in job.tasks if self.status[str(t.name)] in statuses)

    def running_on(self, job: Job) -> dict[str, int]:
        """Node -> number of ``job``'s running tasks there."""
        return self._running_on.get(job.name, {})

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
        return self._final.get(node, {})

    def nominations(self, node: str) -> list[tuple[Job, Task]]:
        """The promised (pipelined or nominated) tasks on ``node`` (seed 004), in the order they were promised."""
        owner = self._owners()
        return [owner[name] for name in self._nominated.get(node, ())]

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
        ``priority`` sees it, kept while this state lasts."""
        key = ("rooms", priority, resources)
        found = self.scratch.get(key)
        if isinstance(found, list):
            return found
        rooms = []
        for node in self.snapshot.nodes:
            load = self.room_load(node.name, priority)
            rooms.append(tuple(node.resources.get(r, 0) - load.get(r, 0) for r in resources))
        self.scratch[key] = rooms
        return rooms

    def room_load(self, node: str, priority: int) -> Resources:
        """The final load as a decision of ``priority`` sees it (seed 004).

        Promises (pipelined or nominated tasks) of jobs with equal or higher
        priority hold their capacity; those of lower priority do not: a
        higher-priority job may take their place (and its decision lists them
        as overridden).
        """
        load = self._final.get(node, {})
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
        load = self._current.get(node, {})
        leaving = self._leaving.get(node)
        if leaving:
            load = dict(load)
            _shift(load, leaving, 1)
        return load


def _shift(target: dict[str, int], requests: Resources, sign: int) -> None:
    for r, a in requests.items():
        target[r] = target.get(r, 0) + sign * a
