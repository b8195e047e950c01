"""Which running jobs a pending job may take tasks from, and why the others may not.

docs/snapshot-format.md, "Rules"; KAI ``buildFilterFuncForPreempt`` and the reclaim victim filters
(docs/rules.md, "Candidates"):

* **preempt** (in-queue): preemptible jobs of the preemptor's own leaf queue
  with strictly lower priority, not protected by preempt-min-runtime (leaf-up
  resolution) or by toleration;
* **reclaim** (cross-queue): preemptible jobs of *other* leaf queues, whatever
  their priority, not protected by reclaim-min-runtime (``lca``/``queue``
  resolution) or by toleration, and whose leveled queue ``vq`` may lose them
  under its reclaim line (:mod:`gpu_preempt.rules.reclaim_line`): under
  ``last_chunk`` a job is blocked only when ``vq`` is at or below its line in
  every resource it holds (then no chunk may go); under ``strict`` when even its
  smallest evictable part would take ``vq`` below ``min(held, line)``.

A protected elastic job remains a candidate for its surplus only (the tasks it
runs above ``min_available``). A job only the reclaim line keeps out of reach is
*movable*: it may be moved to free room elsewhere (docs/snapshot-format.md, "Moves": a move does
not count against the line), not evicted. Toleration (docs/rules.md, "Preemption toleration") is a victim-side policy
and
applies to both actions. Every decision comes with a reason a person can read:
these feed the explanations of decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import Literal, NamedTuple, overload

import numpy as np

from gpu_preempt.models import Job, Resources, Toleration, format_quantity
from gpu_preempt.models.columns import JobColumns, grouped
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState

from .min_runtime import protected_until
from .protection import EvictingAction, Lifted, Protection, protections, queue_min_runtime
from .reclaim_line import Line, reclaim_line
from .toleration import tolerated_until

__all__ = [
    "Candidate",
    "CandidateSet",
    "Excluded",
    "Exclusion",
    "Names",
    "OtherQueues",
    "PreemptCandidates",
    "Unprotected",
    "preempt_candidates",
    "reclaim_candidates",
    "with_lifted",
]

Exclusion = Literal[
    "own-queue", "other-queue", "priority", "non-preemptible", "min-runtime", "toleration", "guarantee", "policy"
]


class Candidate(NamedTuple):
    """A job that may lose tasks: up to ``surplus`` tasks one by one, or all ``running`` if ``whole_job``.

    Named tuples rather than dataclasses (here and for :class:`Excluded`): a large cluster has hundreds of
    thousands of them per decision, and tuples are several times cheaper to create.
    """

    job: str
    running: int
    surplus: int
    whole_job: bool
    restrictions: tuple[Protection, ...] = ()

    @property
    def may_lose(self) -> int:
        return self.running if self.whole_job else self.surplus


class Excluded(NamedTuple):
    """A running job that may lose nothing to this preemptor, and why."""

    job: str
    rule: Exclusion
    reason: str
    until: float | None = None


class Names(Sequence[str]):
    """The names at some positions of a list of names, read when asked for (a view: nothing is copied)."""

    def __init__(self, names: list[str], at: np.ndarray) -> None:
        self.names, self.at = names, at

    def __len__(self) -> int:
        return len(self.at)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return list(map(self.names.__getitem__, self.at[i].tolist()))
        return self.names[int(self.at[i])]

    def __iter__(self) -> Iterator[str]:
        return map(self.names.__getitem__, self.at.tolist())


class OtherQueues(Sequence[tuple[str, Names]]):
    """Preempt: the running jobs of the queues other than the preemptor's, by queue (queues in order of their first
    job): the reason, and the jobs' names. Grouped when first read: most decisions never read them."""

    def __init__(self, columns: JobColumns, rows: np.ndarray, preemptor_queue: str) -> None:
        self.columns, self.rows, self.preemptor_queue = columns, rows, preemptor_queue
        self._groups: list[tuple[str, Names]] | None = None

    @property
    def jobs(self) -> int:
        """How many jobs there are in all."""
        return len(self.rows)

    def _all(self) -> list[tuple[str, Names]]:
        if self._groups is None:
            columns, rows = self.columns, self.rows
            self._groups = [
                (f"in queue {columns.queues[code]}, not {self.preemptor_queue}", Names(columns.names, rows[at]))
                for code, at in grouped(columns.queue[rows])
            ]
        return self._groups

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, i: int) -> tuple[str, Names]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, Names]]: ...
    def __getitem__(self, i: int | slice) -> tuple[str, Names] | list[tuple[str, Names]]:
        return self._all()[i]

    def __iter__(self) -> Iterator[tuple[str, Names]]:
        return iter(self._all())


@dataclass(frozen=True)
class CandidateSet:
    action: EvictingAction
    preemptor: str
    candidates: list[Candidate] = field(default_factory=list)
    judged: list[Excluded] = field(default_factory=list)
    """Exclusions with a reason of their own (every rule but ``other-queue``)."""
    movable: list[Candidate] = field(default_factory=list)
    """Jobs only the reclaim line excludes: they may be moved, not evicted (docs/snapshot-format.md, "Moves")."""
    other_queues: Sequence[tuple[str, Names]] = ()
    """Preempt: the running jobs of every other queue (the reason, the jobs' names), excluded as a whole: a large
    cluster has hundreds of thousands of them, so their :class:`Excluded` entries are written only when asked for."""
    rows: np.ndarray | None = field(default=None, compare=False)
    """The document positions of the :attr:`candidates`' jobs (int64, in the same order), when the rule that chose
    them knew them (it finds them on :meth:`ClusterState.job_columns`)."""
    priorities: set[int] | None = field(default=None, compare=False)
    """The distinct resolved priorities of :attr:`candidates`, when the rule that chose them found them (on the job
    columns: a pass over hundreds of thousands of jobs to find them again costs a few tenths of a second)."""
    _written: list[Excluded] = field(default_factory=list, compare=False, repr=False)

    @property
    def excluded(self) -> list[Excluded]:
        """Every running job that may lose nothing to this preemptor, and why (written once, when first asked)."""
        if not self._written and (self.judged or self.other_queues):
            self._written.extend(self.judged)
            for text, names in self.other_queues:
                self._written.extend(Excluded(name, "other-queue", text) for name in names)
        return self._written

    def excluded_count(self, rule: Exclusion) -> int:
        """How many jobs ``rule`` excludes."""
        if rule == "other-queue":
            if isinstance(self.other_queues, OtherQueues):
                return self.other_queues.jobs
            return sum(len(names) for _, names in self.other_queues)
        return sum(1 for e in self.judged if e.rule == rule)

    def candidate(self, job: str) -> Candidate | None:
        return {c.job: c for c in self.candidates}.get(job)

    def exclusion(self, job: str) -> Excluded | None:
        return {e.job: e for e in self.excluded}.get(job)


def preempt_candidates(cluster: ClusterState, preemptor: Job) -> CandidateSet:
    """Victim candidates of ``preemptor`` for in-queue preemption.

    They depend on the preemptor through its queue and priority only, so a preemptor
    with no running task gets the set an equal one got in the same state.
    """
    if cluster.running_count(preemptor) or cluster.for_state(Lifted).jobs:
        return _preempt_candidates(cluster, preemptor)
    kept = cluster.for_state(PreemptCandidates).sets
    key = (preemptor.queue, preemptor.resolved_priority)
    found = kept.get(key)
    if found is None:
        found = kept[key] = _preempt_candidates(cluster, preemptor)
    return replace(found, preemptor=preemptor.name)


@dataclass
class PreemptCandidates:
    """The preempt candidates of a state for preemptors with no running task (:func:`preempt_candidates`)."""

    sets: dict[tuple[str, int], CandidateSet] = field(default_factory=dict)
    """(preemptor's queue, its priority) -> the candidates."""


def with_lifted(cluster: ClusterState, first: CandidateSet, preemptor: Job, chunk: Resources) -> CandidateSet:
    """What the rule of ``first`` finds once the jobs :class:`Lifted` names have their own protections lifted, from
    ``first`` (found for the same preemptor and chunk in this state, nothing lifted): only the lifted jobs are
    judged again, every other judgment stands. Its exclusions are the lifted jobs' alone."""
    lifted = cluster.for_state(Lifted).jobs
    assert first.rows is not None
    rows = np.array(sorted(cluster.job_positions(sorted(lifted))), dtype=np.int64)
    if first.action == "reclaim":
        found = reclaim_candidates(cluster, preemptor, chunk, only=rows)
    else:
        found = _preempt_candidates(cluster, preemptor, only=rows)
    assert found.rows is not None
    kept = np.flatnonzero(~np.isin(first.rows, rows)).tolist()
    positions = np.concatenate([first.rows[kept], found.rows])
    both = [*map(first.candidates.__getitem__, kept), *found.candidates]
    order = np.argsort(positions, kind="stable")
    movable = [c for c in first.movable if c.job not in lifted]
    if found.movable:  # few: in job order among the others
        movable += found.movable
        at = dict(zip((c.job for c in movable), cluster.job_positions([c.job for c in movable]), strict=True))
        movable.sort(key=lambda c: at[c.job])
    return replace(
        first,
        candidates=list(map(both.__getitem__, order.tolist())),
        judged=found.judged,
        movable=movable,
        other_queues=(),
        rows=positions[order],
        priorities=set(np.unique(cluster.job_columns().priority[positions]).tolist()),
        _written=[],
    )


def _preempt_candidates(cluster: ClusterState, preemptor: Job, only: np.ndarray | None = None) -> CandidateSet:
    columns, jobs, rows = cluster.job_columns(), cluster.snapshot.jobs, _running_others(cluster, preemptor, only)
    mine = columns.queue[rows] == columns.queues.index(preemptor.queue)  # the preemptor's queue is a job's queue
    result = CandidateSet("preempt", preemptor.name, other_queues=OtherQueues(columns, rows[~mine], preemptor.queue))
    rows = rows[mine]
    unprotected = Unprotected(cluster, preemptor, "preempt")
    clear = (columns.priority[rows] < preemptor.resolved_priority) & unprotected.on_columns(rows)
    texts: dict[int, str] = {}  # the same few reasons for thousands of jobs: each written once
    found_at = []
    rest, names = rows[~clear], columns.names
    # Read from the columns where they tell (a job model is made only for those judged in full).
    priorities, preemptible, marked = (
        column[rest].tolist() for column in (columns.priority, columns.preemptible, columns.marked)
    )
    lifted = cluster.for_state(Lifted).jobs
    for i, at, priority, fair_game, said_no in zip(
        np.flatnonzero(~clear).tolist(), rest.tolist(), priorities, preemptible, marked, strict=True
    ):
        fair_game = fair_game or names[at] in lifted
        before = len(result.candidates)
        if priority >= preemptor.resolved_priority:
            text = texts.get(priority)
            if text is None:
                text = texts[priority] = (
                    f"priority {priority} is not below the preemptor's {preemptor.resolved_priority}"
                )
            result.judged.append(Excluded(names[at], "priority", text))
        elif not fair_game:
            result.judged.append(unprotected.refusal(names[at], said_no, priority, jobs, at))
        else:
            _judge(cluster, jobs[at], preemptor, "preempt", result)
        if len(result.candidates) > before:
            found_at.append(i)
    return _with_plain(result, cluster, rows, clear, found_at)


def reclaim_candidates(
    cluster: ClusterState, reclaimer: Job, chunk: Resources, only: np.ndarray | None = None
) -> CandidateSet:
    """Victim candidates of ``reclaimer`` (asking for ``chunk``) for cross-queue reclaim; with ``only``, among the
    jobs at those document positions alone.

    The jobs that are plainly candidates (preemptible, in another queue, protected by nothing, in a queue the line
    leaves open) are found on columns (:meth:`ClusterState.job_columns`); every other running job is judged one by one.
    """
    result = CandidateSet("reclaim", reclaimer.name)
    strict = cluster.snapshot.config.reclaim_guarantee == "strict"
    lines: dict[str, tuple[str, Line]] = {}
    closed: dict[str, str | None] = {}
    own = f"in the reclaimer's own queue {reclaimer.queue}"
    unprotected = Unprotected(cluster, reclaimer, "reclaim")
    closed_queues: dict[str, str | None] = {}  # last_chunk: whether the reclaim line closes a job's queue, by queue

    def line_of(queue: str) -> tuple[str, Line]:
        if queue not in lines:
            rq, vq = cluster.tree.leveled_pair(reclaimer.queue, queue)
            lines[queue] = (vq, reclaim_line(cluster, rq, vq, chunk))
        return lines[queue]

    def closes(queue: str) -> str | None:
        """``last_chunk``: why the line closes ``queue``'s leveled queue, or ``None``."""
        if queue not in closed_queues:
            vq, line = line_of(queue)
            if vq not in closed:
                closed[vq] = _at_or_below(cluster, vq, line)
            closed_queues[queue] = closed[vq]
        return closed_queues[queue]

    def blocks(job: Job, candidate: Candidate) -> str | None:
        if strict:
            vq, line = line_of(job.queue)
            return _strict_blocks(cluster, job, candidate, vq, line, chunk)
        return closes(job.queue)

    jobs, rows, columns = cluster.snapshot.jobs, _running_others(cluster, reclaimer, only), cluster.job_columns()
    clear = np.zeros(len(rows), dtype=bool) if strict else _plain(cluster, reclaimer, unprotected, rows, closes)
    counts, found_at = cluster.running_counts(), []
    rest, names, mine = rows[~clear], columns.names, columns.queues.index(reclaimer.queue)
    # Read from the columns where they tell (a job model is made only where a job is needed in full).
    queues, minimum, preemptible, marked, priorities = (
        column[rest].tolist()
        for column in (columns.queue, columns.minimum, columns.preemptible, columns.marked, columns.priority)
    )
    unguarded = unprotected.on_columns(rest).tolist()
    lifted = cluster.for_state(Lifted).jobs
    for i, at, code, gang, free, fair_game, said_no, priority in zip(
        np.flatnonzero(~clear).tolist(),
        rest.tolist(),
        queues,
        minimum,
        unguarded,
        preemptible,
        marked,
        priorities,
        strict=True,
    ):
        fair_game = fair_game or names[at] in lifted
        before = len(result.candidates)
        if code == mine:
            result.judged.append(Excluded(names[at], "own-queue", own))
        elif free:
            name = names[at]
            running = counts[name]
            candidate = Candidate(name, running, max(0, running - gang), True)
            blocked = blocks(jobs[at], candidate) if strict else closes(columns.queues[code])
            if blocked is None:
                result.candidates.append(candidate)
            else:
                result.movable.append(candidate)
                result.judged.append(Excluded(name, "guarantee", blocked))
        elif not fair_game:
            result.judged.append(unprotected.refusal(names[at], said_no, priority, jobs, at))
        else:
            job = jobs[at]
            found = _judge(cluster, job, reclaimer, "reclaim", result)
            if found is not None:
                blocked = blocks(job, found)
                if blocked is not None:
                    result.movable.append(result.candidates.pop())
                    result.judged.append(Excluded(job.name, "guarantee", blocked))
        if len(result.candidates) > before:
            found_at.append(i)
    return _with_plain(result, cluster, rows, clear, found_at)


def _plain(
    cluster: ClusterState,
    reclaimer: Job,
    unprotected: Unprotected,
    rows: np.ndarray,
    closes: Callable[[str], str | None],
) -> np.ndarray:
    """Which of the jobs at ``rows`` (document positions) are plainly reclaim candidates: in another leaf queue,
    protected by nothing, in a queue that ``closes`` leaves open."""
    columns = cluster.job_columns()
    queue = columns.queue[rows]
    mask: np.ndarray = (queue != columns.queues.index(reclaimer.queue)) & unprotected.on_columns(rows)
    for code in np.unique(queue[mask]).tolist():
        if closes(columns.queues[code]) is not None:
            mask &= queue != code
    return mask


def _whole_candidates(cluster: ClusterState, rows: np.ndarray) -> list[Candidate]:
    """Unrestricted candidates (the whole job, or its surplus task by task) of the jobs at ``rows``."""
    columns = cluster.job_columns()
    running = cluster.running_array()[rows]
    surplus = np.maximum(running - columns.minimum[rows], 0)
    names = map(columns.names.__getitem__, rows.tolist())
    # Candidate(...) without the Python call of its generated __new__: the fields in order.
    fields = zip(names, running.tolist(), surplus.tolist(), repeat(True), repeat(()))
    return list(map(tuple.__new__, repeat(Candidate), fields))


def _with_plain(
    result: CandidateSet, cluster: ClusterState, rows: np.ndarray, clear: np.ndarray, found_at: list[int]
) -> CandidateSet:
    """``result`` with the plain candidates (``rows[clear]``) among those judged one by one (``rows[found_at]``),
    in document order, and the positions and distinct priorities of all."""
    plain = np.flatnonzero(clear)
    judged = np.array(found_at, dtype=np.int64)
    candidates = _whole_candidates(cluster, rows[plain])
    if len(judged):
        order = np.argsort(np.concatenate([plain, judged]), kind="stable")
        both = [*candidates, *result.candidates]
        candidates = list(map(both.__getitem__, order.tolist()))
        plain = np.concatenate([plain, judged])[order]
    result.candidates[:] = candidates
    priorities = set(np.unique(cluster.job_columns().priority[rows[plain]]).tolist())
    return replace(result, rows=rows[plain], priorities=priorities)


def _at_or_below(cluster: ClusterState, vq: str, line: Line) -> str | None:
    """``last_chunk``: why no chunk may be taken from ``vq`` (at or below its line everywhere), or ``None``."""
    held = cluster.usage[vq].allocated
    if line.above(held):
        return None
    parts = []
    for resource in sorted(r for r, a in held.items() if a > 0):
        amount = line.amount.get(resource)
        shown = format_quantity(resource, held[resource])
        if amount is None:
            parts.append(f"{shown} {resource} of an unlimited {line.kind[resource]}")
        else:
            parts.append(f"{shown} {resource} of {line.kind[resource]} {format_quantity(resource, amount)}")
    return f"queue {vq} is at or below its line in every resource it holds ({'; '.join(parts)})"


def _running_others(cluster: ClusterState, preemptor: Job, only: np.ndarray | None = None) -> np.ndarray:
    """The document positions of the running jobs but ``preemptor`` (of those at ``only``, ascending, if given)."""
    running = cluster.running_array()
    rows: np.ndarray = np.flatnonzero(running) if only is None else only[running[only] > 0]
    if cluster.running_count(preemptor):
        rows = rows[rows != cluster.job_columns().names.index(preemptor.name)]
    return rows


class Unprotected:
    """Whether a job has no protection at all against one preemptor (:func:`.protection.protections` would find
    none), decided from per-queue and per-class values worked out once: the common case on large clusters, where
    hundreds of thousands of jobs are judged. A job it does not clear is judged in full.
    """

    def __init__(self, cluster: ClusterState, preemptor: Job, action: EvictingAction) -> None:
        self.cluster, self.preemptor, self.action, self.now = cluster, preemptor, action, cluster.now
        self.runtimes: dict[str, float] = {}
        self.tolerating: dict[str | None, Toleration | None] = {None: None}
        """Per class, its toleration policy if it may tolerate this preemptor (its window is checked per job)."""
        self.refusals: dict[tuple[bool, int], Excluded] = {}

    def non_preemptible(self, job: Job) -> Excluded:
        """What :func:`_judge` finds for a job that is not preemptible: its first protection, whatever else protects
        it, in words that depend only on whether it says ``preemptible: false`` and its priority (written once for
        each)."""
        return self.refusal(job.name, job.preemptible is False, job.resolved_priority, [job], 0)

    def refusal(self, name: str, said_no: bool, priority: int, jobs: Sequence[Job], at: int) -> Excluded:
        """:meth:`non_preemptible` of the job ``jobs[at]``, named ``name``, which ``said_no`` (``preemptible:
        false``), of resolved ``priority``: the job is read only if no other job gave these words already."""
        found = self.refusals.get((said_no, priority))
        if found is None:
            first = protections(self.cluster, jobs[at], self.preemptor, self.action)[0]
            found = self.refusals[(said_no, priority)] = Excluded("", first.rule, first.describe(), first.until)
        return Excluded(name, found.rule, found.reason, found.until)

    def tolerance(self, priority_class: str | None) -> Toleration | None:
        """The toleration policy of ``priority_class`` if it may tolerate this preemptor (the window is per job)."""
        if priority_class not in self.tolerating:  # None (no class) is there from the start
            assert priority_class is not None
            found = self.cluster.snapshot.priority_class(priority_class).toleration
            below = found is not None and self.preemptor.resolved_priority < found.minimum_preemptable_priority
            self.tolerating[priority_class] = found if below else None
        return self.tolerating[priority_class]

    def runtime(self, queue: str) -> float:
        """The min-runtime protecting this preemptor's victims in leaf ``queue``."""
        found = self.runtimes.get(queue)
        if found is None:
            found = self.runtimes[queue] = queue_min_runtime(self.cluster, queue, self.preemptor, self.action)
        return found

    def on_columns(self, rows: np.ndarray) -> np.ndarray:
        """What :meth:`__call__` says of each job at ``rows`` (document positions), on the cluster's job columns."""
        columns, now = self.cluster.job_columns(), self.now
        queue, classes, started = columns.queue[rows], columns.priority_class[rows], columns.started[rows]
        mask = columns.preemptible[rows]
        never = np.isnan(started)
        for code in np.unique(classes[mask]).tolist():
            policy = self.tolerance(columns.classes[code])
            if policy is None or (not policy.forever and policy.toleration_seconds == 0):
                continue
            tolerating = classes == code
            if not policy.forever:  # tolerated_until(): never started, or still within the window
                tolerating &= never | (started + policy.toleration_seconds > now)
            mask &= ~tolerating
        runtime = np.zeros(len(columns.queues))
        for code in np.unique(queue[mask]).tolist():
            runtime[code] = self.runtime(columns.queues[code])
        limit = runtime[queue]
        cleared: np.ndarray = mask & (never | (limit <= 0) | ~(now < started + limit))  # protected_until()
        return cleared

    def __call__(self, job: Job) -> bool:
        if not job.is_preemptible:
            return False
        started, policy = job.started_at, self.tolerance(job.priority_class)
        if policy is not None:
            now, priority = self.now, self.preemptor.resolved_priority
            if tolerated_until(policy, started_at=started, preemptor_priority=priority, now=now) is not None:
                return False
        if started is None:
            return True
        until = protected_until(started, self.runtime(job.queue))
        return until is None or not self.now < until


def _judge(
    cluster: ClusterState, job: Job, preemptor: Job, action: EvictingAction, result: CandidateSet
) -> Candidate | None:
    found = protections(cluster, job, preemptor, action)
    running = cluster.running_count(job)
    surplus = max(0, running - job.gang_minimum)
    if not found:  # the common case
        candidate = Candidate(job.name, running, surplus, whole_job=True)
        result.candidates.append(candidate)
        return candidate
    blocking = [p for p in found if not p.surplus_only]
    if blocking:
        first = blocking[0]
        result.judged.append(Excluded(job.name, first.rule, first.describe(), first.until))
        return None
    if found and surplus == 0:
        first = found[0]
        reason = f"{first.describe()}; it runs no task above min_available"
        result.judged.append(Excluded(job.name, first.rule, reason, first.until))
        return None
    candidate = Candidate(job.name, running, surplus, whole_job=False, restrictions=tuple(found))
    result.candidates.append(candidate)
    return candidate


def _strict_blocks(
    cluster: ClusterState, job: Job, candidate: Candidate, vq: str, line: Line, chunk: Resources
) -> str | None:
    """``strict``: why even the smallest evictable part of ``job`` would take ``vq`` below ``min(held, line)`` in a
    resource the chunk asks for; ``None`` if some part fits.

    The evictable parts are single tasks when the job has a surplus, else the whole job.
    """
    if job.uniform:  # the common case: every task alike, so one task (or all of them) is the smallest part
        one = job.task_resources
        parts = [one] if candidate.surplus > 0 else [{r: a * candidate.running for r, a in one.items()}]
    else:
        running = [job.requests(t) for t in cluster.tasks(job, "running")]
        parts = running if candidate.surplus > 0 else [_total(running)]
    held = cluster.usage[vq].allocated
    reason = None
    for part in parts:
        reason = None
        for resource in sorted(r for r, a in chunk.items() if a > 0):
            have, take = held.get(resource, 0), part.get(resource, 0)
            if take > 0 and have - take < line.floor(resource, have):
                amount, kind = line.amount.get(resource), line.kind.get(resource, "deserved")
                shown = format_quantity(resource, have)
                if amount is None:
                    reason = (
                        f"queue {vq} has an unlimited {kind} {resource}: the strict line keeps all {shown} it holds"
                    )
                elif have <= amount:
                    kept = format_quantity(resource, amount)
                    reason = f"queue {vq} holds only its guaranteed {shown} {resource} ({kind} {kept})"
                else:
                    reason = (
                        f"queue {vq} holds {shown} {resource} and keeps its guaranteed "
                        f"{format_quantity(resource, amount)} ({kind}); evicting this job would take "
                        f"{format_quantity(resource, take)}"
                    )
                break
        if reason is None:
            return None
    return reason


def _total(parts: list[Resources]) -> Resources:
    total: Resources = {}
    for part in parts:
        total = add(total, part)
    return total
