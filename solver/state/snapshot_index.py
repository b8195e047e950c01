"""What a session reads of its snapshot alone: built once, when first asked for, and shared by every state derived
from the snapshot (:meth:`.cluster.ClusterState.with_changes` keeps the snapshot and its index).

Besides its own lookups, the index keeps one instance per class for the layers above the state
(:attr:`SnapshotIndex.kept`): a rule's cache of results that depend on the snapshot, its queue tree and config only
(resolved min-runtimes, which request shapes fit some node) is a class of the rule's module, so that every cached
thing has a name, a type and one owner.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property

import numpy as np

from gpu_preempt.models import Job, Snapshot, Task
from gpu_preempt.models.columns import TaskColumns
from gpu_preempt.models.load.job_list import JobIndex

from .caches import Caches

__all__ = ["SCANNED", "Owners", "SnapshotIndex"]

SCANNED = 8
"""Up to this many jobs, :meth:`SnapshotIndex.job_positions` scans the names rather than build a map of them."""


class SnapshotIndex:
    """Node names and positions, task owners, job positions and the schedulable nodes of one snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._job_positions: dict[str, int] | None = None
        self.kept = Caches()
        """The caches of the layers above kept for this snapshot (:mod:`.kept`)."""

    @cached_property
    def node_names(self) -> list[str]:
        """Node names in document order."""
        return [node.name for node in self.snapshot.nodes]

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Node name -> its position in the snapshot."""
        return {node.name: i for i, node in enumerate(self.snapshot.nodes)}

    @cached_property
    def schedulable(self) -> np.ndarray:
        """Which nodes are schedulable (document order), as a mask."""
        nodes = self.snapshot.nodes
        return np.fromiter((node.schedulable for node in nodes), dtype=bool, count=len(nodes))

    @cached_property
    def owners(self) -> Mapping[str, tuple[Job, Task]]:
        """Task name -> (job, task)."""
        return Owners(self.snapshot, self.snapshot.built_columns())

    def job_positions(self, names: Iterable[str]) -> list[int]:
        """The positions in the snapshot of the jobs ``names``.

        A snapshot whose jobs are made when read maps names to positions already. In a large one (validation built
        its columns) a few are found by scanning the list of names (in C); otherwise through a map of every name,
        built once.
        """
        wanted = names if isinstance(names, list) else list(names)
        snapshot = self.snapshot
        index = snapshot.jobs_by_name()
        if isinstance(index, JobIndex):  # a snapshot of jobs made when read knows their positions
            return list(map(index.position, wanted))
        found = self._job_positions
        if found is None and len(wanted) <= SCANNED and snapshot.built_columns() is not None:
            return list(map(snapshot.job_columns().names.index, wanted))
        if found is None:
            found = self._job_positions = {job.name: i for i, job in enumerate(snapshot.jobs)}
        return list(map(found.__getitem__, wanted))


class Owners(Mapping[str, tuple[Job, Task]]):
    """Task name -> (job, task): a name that is its job's default (``<job>-<index>``) is found through the job at
    once; another through a map of every name, built when first needed (of positions, in C, when validation built
    the task columns)."""

    def __init__(self, snapshot: Snapshot, columns: TaskColumns | None) -> None:
        self._jobs, self._by_name, self._columns = snapshot.jobs, snapshot.jobs_by_name(), columns
        self._known: dict[str, int] | None = None
        self._first: np.ndarray | None = None
        self._every: dict[str, tuple[Job, Task]] | None = None

    def __getitem__(self, name: str) -> tuple[Job, Task]:
        job_name, _, index = name.rpartition("-")
        job = self._by_name.get(job_name)
        if job is not None and index.isdecimal() and int(index) < len(job.tasks):
            task = job.tasks[int(index)]
            if task.name == name:  # task names are unique in a snapshot: this is the one
                return job, task
        if self._columns is None:
            return self._map()[name]
        i = self._position()[name]
        if self._first is None:  # where each job's tasks start
            self._first = np.searchsorted(self._columns.job, np.arange(len(self._jobs)))
        j = int(self._columns.job[i])
        job = self._jobs[j]
        return job, job.tasks[i - int(self._first[j])]

    def _map(self) -> dict[str, tuple[Job, Task]]:
        if self._every is None:
            self._every = {str(t.name): (j, t) for j in self._jobs for t in j.tasks}
        return self._every

    def _position(self) -> dict[str, int]:
        if self._known is None:
            assert self._columns is not None
            names = self._columns.names
            self._known = dict(zip(names, range(len(names)), strict=True))
        return self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._map() if self._columns is None else self._position())

    def __len__(self) -> int:
        return len(self._map() if self._columns is None else self._columns.names)
