"""Who runs where: each job's running tasks, counted, and per node; and the views of them a decision reads on every
job at once (counts and single nodes as arrays, running jobs by queue), kept while a state lasts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass

import numpy as np

from gpu_preempt.models import Job

__all__ = ["Running", "counted", "host_pairs", "one_node", "only_nodes", "patched"]


@dataclass
class Running:
    """The running tasks of one state, and what is kept of their views while it lasts."""

    counts: MutableMapping[str, int]
    """Job name -> its running tasks, every job in document order (a derived state's is layered over its parent's)."""
    on: dict[str, dict[str, int]] | None = None
    """Job name -> node -> its running tasks there (jobs with running tasks); ``None`` until first asked for."""
    hosts_from: tuple[np.ndarray, np.ndarray] | None = None
    """The (job, node) of every running task, from which :attr:`on` is built in a state counted from columns."""
    moved: tuple[np.ndarray, set[str]] | None = None
    """An earlier state's :attr:`nodes`, and the jobs whose running tasks changed since."""
    array: np.ndarray | None = None
    """:attr:`counts` as an array (int64, document order)."""
    nodes: np.ndarray | None = None
    """Per job (document order), the node (index) all its running tasks are on: -1 when none runs, -2 when they run
    on several nodes (int64)."""
    jobs: list[Job] | None = None
    """Jobs with a running task, in document order."""
    by_queue: dict[str, list[Job]] | None = None
    """:attr:`jobs` by leaf queue, queues in the order of their first running job."""


def counted(jobs: np.ndarray, hosts: np.ndarray, job_names: list[str], nodes: list[str]) -> dict[str, dict[str, int]]:
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
    # {node: count} per pair, one map for all equal pairs (read only, as ClusterState.running_on says): a map per job
    # would cost tens of megabytes at 100,000 nodes; equal pairs are found in numpy
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


def host_pairs(
    jobs: np.ndarray, hosts: np.ndarray, rows: list[int], nodes: int
) -> list[tuple[tuple[int, int], ...]] | None:
    """Per job at ``rows``, the (node, tasks) pairs of its running tasks, by node, from the (job, node) of every
    running task (:attr:`Running.hosts_from`); ``None`` if one of them is on no node of the snapshot's ``nodes``.

    >>> host_pairs(np.array([0, 0, 1, 1, 1]), np.array([3, 1, 2, 2, 0]), [1, 0], 4)
    [((0, 1), (2, 2)), ((1, 1), (3, 1))]
    >>> host_pairs(np.array([0, 0]), np.array([3, 1]), [], 4)
    []
    """
    wanted = np.isin(jobs, rows)
    job, host = jobs[wanted], hosts[wanted]
    if len(host) and int(host.min()) < 0:
        return None
    size = max(nodes, 1)
    keys, counts = np.unique(job * size + host, return_counts=True)  # by job, then node
    job_of = keys // size
    starts = np.flatnonzero(np.r_[True, job_of[1:] != job_of[:-1]]).tolist() if len(keys) else []
    ends = [*starts[1:], len(keys)] if starts else []
    on, many = (keys % size).tolist(), counts.tolist()
    found = {
        job: tuple(zip(on[s:e], many[s:e], strict=True))
        for job, s, e in zip(job_of[starts].tolist(), starts, ends, strict=True)
    }
    return [found.get(row, ()) for row in rows]


def one_node(hosts: dict[str, int] | None, index: dict[str, int]) -> int:
    """:attr:`Running.nodes` of a job running ``hosts`` (node name -> tasks)."""
    if not hosts:
        return -1
    return index[next(iter(hosts))] if len(hosts) == 1 else -2


def only_nodes(jobs: np.ndarray, hosts: np.ndarray, count: int) -> np.ndarray:
    """:attr:`Running.nodes` of ``count`` jobs from their running tasks' (job, node) pairs, given job by job.

    >>> only_nodes(np.array([0, 0, 2, 2, 3]), np.array([4, 4, 1, 5, 0]), 5).tolist()
    [4, -1, -2, 0, -1]
    """
    low, high = np.full(count, np.iinfo(np.int64).max), np.full(count, -1)
    if len(jobs):  # each job's tasks side by side: its lowest and highest node, one segment each
        starts = np.flatnonzero(np.r_[True, jobs[1:] != jobs[:-1]])
        low[jobs[starts]] = np.minimum.reduceat(hosts, starts)
        high[jobs[starts]] = np.maximum.reduceat(hosts, starts)
    return np.where(high < 0, -1, np.where(low == high, low, -2))


def patched(
    counts: np.ndarray, running: Mapping[str, int], jobs: Iterable[str], positions: Callable[[list[str]], list[int]]
) -> np.ndarray:
    """A copy of ``counts`` (running tasks per job, document order) with ``jobs``' counts read from ``running``
    (``positions``: where named jobs are in the snapshot)."""
    names = sorted(jobs)
    if not names:
        return counts
    found = counts.copy()
    found[positions(names)] = [running[name] for name in names]
    return found


def _alone(pair: tuple[str, int]) -> tuple[tuple[str, int]]:
    return (pair,)
