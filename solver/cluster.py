"""The state of a cluster during a scheduling session.

A :class:`Cluster` starts from a snapshot and tracks what decisions change: the
status and node of every task. Statuses are those of the snapshot (``running``,
``pending``, ``releasing``) plus the two a session creates: ``allocated``
(placed on free capacity) and ``pipelined`` (placed on capacity that releasing
tasks will free).

Two loads are kept per node:

* the *final* load, ``running + allocated + pipelined``: what the node holds
  once every releasing task is gone. New work must fit under the node's
  resources in the final load; this is how pipelined tasks may use releasing
  capacity, and how two decisions never promise the same capacity.
* the *current* load, ``running + allocated + releasing``: what the node holds
  now. A placement that also fits here starts at once (``allocated``).

Queue usage counts ``running``, ``allocated`` and ``pipelined`` tasks. Fair
shares are computed once, from the snapshot, and stay fixed for the session (as
in KAI, where a session computes them when it opens).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from models import Job, Resources, Snapshot, Task
from models.collector import paused_collection

from .fair_share import fair_shares
from .queue_tree import QueueTree
from .queue_usage import HOLDING, QueueUsage, roll_up

FINAL = ("running", "allocated", "pipelined")
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
        self._final: dict[str, Resources] = final
        self._current: dict[str, Resources] = current
        self.usage = roll_up(leaf, self.tree)

    @classmethod
    def of(cls, snapshot: Snapshot) -> Cluster:
        with paused_collection():
            tree = QueueTree(snapshot)
            cluster = cls.__new__(cls)
            cluster.snapshot, cluster.tree, cluster.status, cluster.node_of = snapshot, tree, {}, {}
            cluster.memo = {}
            cluster._scan(fill=True)
            cluster.shares = fair_shares(snapshot, tree, cluster.usage)
            return cluster

    def with_changes(self, changes: Iterable[tuple[str, str, str | None]]) -> Cluster:
        """A new state where each ``(task, status, node)`` is applied (``node`` None: keep it); shares stay.

        Only what the changed tasks touch is recomputed: their nodes' loads, their
        jobs' running counts, and the usage of their queues and ancestors.
        """
        new = copy.copy(self)
        new.status, new.node_of = dict(self.status), dict(self.node_of)
        new._final, new._current = dict(self._final), dict(self._current)
        new._running, new.usage = dict(self._running), dict(self.usage)
        new._running_on = dict(self._running_on)
        moved_jobs: set[str] = set()
        owner = self._owners()
        touched_nodes: set[tuple[str, str]] = set()
        touched_queues: set[str] = set()
        for task, state, node in changes:
            job, spec = owner[task]
            before, where = self.status[task], self.node_of[task]
            after = state
            there = where if node is None else node
            requests = job.requests(spec)
            new._move(new._final, FINAL, touched_nodes, "final", requests, before, where, after, there)
            new._move(new._current, CURRENT, touched_nodes, "current", requests, before, where, after, there)
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

    def current_load(self, node: str) -> Resources:
        """What ``node`` holds now (running + allocated + releasing)."""
        return self._current.get(node, {})


def _shift(target: dict[str, int], requests: Resources, sign: int) -> None:
    for r, a in requests.items():
        target[r] = target.get(r, 0) + sign * a
