"""Which running jobs a pending job may take tasks from, and why the others may not.

Spec "Rules"; KAI ``buildFilterFuncForPreempt`` and the reclaim victim filters
(reference/kai.md §1.5-1.6, §3.5, §5):

* **preempt** (in-queue): preemptible jobs of the preemptor's own leaf queue
  with strictly lower priority, not protected by preempt-min-runtime (leaf-up
  resolution) or by toleration;
* **reclaim** (cross-queue): preemptible jobs of *other* leaf queues, whatever
  their priority, not protected by reclaim-min-runtime (``lca``/``queue``
  resolution) or by toleration, and whose leveled queue ``vq`` may lose them
  under its reclaim line (:mod:`gpu_preempt.solver.rules.reclaim_line`): under
  ``last_chunk`` a job is blocked only when ``vq`` is at or below its line in
  every resource it holds (then no chunk may go); under ``strict`` when even its
  smallest evictable part would take ``vq`` below ``min(held, line)``.

A protected elastic job remains a candidate for its surplus only (the tasks it
runs above ``min_available``). A job only the reclaim line keeps out of reach is
*movable*: it may be moved to free room elsewhere (spec "Moves": a move does
not count against the line), not evicted. Toleration (seed 001) is a victim-side policy and
applies to both actions. Every decision comes with a reason a person can read:
these feed the explanations of decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple

from gpu_preempt.models import Job, Resources, Toleration, format_quantity
from gpu_preempt.models.quantity import add
from gpu_preempt.solver.state.cluster import Cluster

from .min_runtime import protected_until
from .protection import Action, Protection, min_runtime, protections
from .reclaim_line import Line, reclaim_line
from .toleration import tolerated_until

Exclusion = Literal["own-queue", "other-queue", "priority", "non-preemptible", "min-runtime", "toleration", "guarantee"]


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


@dataclass(frozen=True)
class CandidateSet:
    action: Action
    preemptor: str
    candidates: list[Candidate] = field(default_factory=list)
    judged: list[Excluded] = field(default_factory=list)
    """Exclusions with a reason of their own (every rule but ``other-queue``)."""
    movable: list[Candidate] = field(default_factory=list)
    """Jobs only the reclaim line excludes: they may be moved, not evicted (spec "Moves")."""
    other_queues: list[tuple[str, list[Job]]] = field(default_factory=list)
    """Preempt: the running jobs of every other queue (the reason, the jobs), excluded as a whole: a large
    cluster has hundreds of thousands of them, so their :class:`Excluded` entries are written only when asked for."""
    priorities: set[int] | None = field(default=None, compare=False)
    """The distinct resolved priorities of :attr:`candidates`, when the rule that chose them gathered them on the way
    (reclaim: a pass over hundreds of thousands of jobs to find them again costs a few tenths of a second)."""
    _written: list[Excluded] = field(default_factory=list, compare=False, repr=False)

    @property
    def excluded(self) -> list[Excluded]:
        """Every running job that may lose nothing to this preemptor, and why (written once, when first asked)."""
        if not self._written and (self.judged or self.other_queues):
            self._written.extend(self.judged)
            for text, jobs in self.other_queues:
                self._written.extend(Excluded(job.name, "other-queue", text) for job in jobs)
        return self._written

    def excluded_count(self, rule: Exclusion) -> int:
        """How many jobs ``rule`` excludes."""
        if rule == "other-queue":
            return sum(len(jobs) for _, jobs in self.other_queues)
        return sum(1 for e in self.judged if e.rule == rule)

    def candidate(self, job: str) -> Candidate | None:
        return {c.job: c for c in self.candidates}.get(job)

    def exclusion(self, job: str) -> Excluded | None:
        return {e.job: e for e in self.excluded}.get(job)


def preempt_candidates(cluster: Cluster, preemptor: Job) -> CandidateSet:
    """Victim candidates of ``preemptor`` for in-queue preemption.

    They depend on the preemptor through its queue and priority only, so a preemptor
    with no running task gets the set an equal one got in the same state.
    """
    if cluster.running_count(preemptor):
        return _preempt_candidates(cluster, preemptor)
    key = ("preempt-candidates", preemptor.queue, preemptor.resolved_priority)
    found = cluster.scratch.get(key)
    if not isinstance(found, CandidateSet):
        found = cluster.scratch[key] = _preempt_candidates(cluster, preemptor)
    return replace(found, preemptor=preemptor.name)


def _preempt_candidates(cluster: Cluster, preemptor: Job) -> CandidateSet:
    result = CandidateSet("preempt", preemptor.name)
    texts: dict[int, str] = {}  # the same few reasons for thousands of jobs: each written once
    for queue, jobs in cluster.running_by_queue().items():
        if queue != preemptor.queue:
            result.other_queues.append((f"in queue {queue}, not {preemptor.queue}", jobs))
            continue
        unprotected = Unprotected(cluster, preemptor, "preempt")
        for job in jobs:
            if job is preemptor:
                continue
            if job.resolved_priority >= preemptor.resolved_priority:
                text = texts.get(job.resolved_priority)
                if text is None:
                    text = texts[job.resolved_priority] = (
                        f"priority {job.resolved_priority} is not below the preemptor's {preemptor.resolved_priority}"
                    )
                result.judged.append(Excluded(job.name, "priority", text))
            elif unprotected(job):
                running = cluster.running_count(job)
                result.candidates.append(Candidate(job.name, running, max(0, running - job.gang_minimum), True))
            elif not job.is_preemptible:
                result.judged.append(unprotected.non_preemptible(job))
            else:
                _judge(cluster, job, preemptor, "preempt", result)
    return result


def reclaim_candidates(cluster: Cluster, reclaimer: Job, chunk: Resources) -> CandidateSet:
    """Victim candidates of ``reclaimer`` (asking for ``chunk``) for cross-queue reclaim."""
    priorities: set[int] = set()
    result = CandidateSet("reclaim", reclaimer.name, priorities=priorities)
    seen = priorities.add
    strict = cluster.snapshot.config.reclaim_guarantee == "strict"
    lines: dict[str, tuple[str, Line]] = {}
    closed: dict[str, str | None] = {}
    own = f"in the reclaimer's own queue {reclaimer.queue}"
    unprotected = Unprotected(cluster, reclaimer, "reclaim")
    closed_queues: dict[str, str | None] = {}  # last_chunk: whether the reclaim line closes a job's queue, by queue

    def blocks(job: Job, candidate: Candidate) -> str | None:
        if job.queue not in lines:
            rq, vq = cluster.tree.leveled_pair(reclaimer.queue, job.queue)
            lines[job.queue] = (vq, reclaim_line(cluster, rq, vq, chunk))
        vq, line = lines[job.queue]
        if strict:
            return _strict_blocks(cluster, job, candidate, vq, line, chunk)
        if vq not in closed:
            closed[vq] = _at_or_below(cluster, vq, line)
        return closed[vq]

    counts, new = cluster.running_counts(), tuple.__new__
    for job in _running_others(cluster, reclaimer):
        queue = job.queue
        if queue == reclaimer.queue:
            result.judged.append(Excluded(job.name, "own-queue", own))
        elif unprotected(job):  # the common case, inlined: hundreds of thousands of jobs
            running, minimum = counts[job.name], job.min_available
            surplus = running - (len(job.tasks) if minimum is None else minimum)
            # Candidate(...) without the Python call of its generated __new__: the fields in order.
            candidate = new(Candidate, (job.name, running, surplus if surplus > 0 else 0, True, ()))
            if strict or queue not in closed_queues:
                blocked = blocks(job, candidate)
                if not strict:
                    closed_queues[queue] = blocked
            else:
                blocked = closed_queues[queue]
            if blocked is None:
                result.candidates.append(candidate)
                seen(job.resolved_priority)
            else:
                result.movable.append(candidate)
                result.judged.append(Excluded(job.name, "guarantee", blocked))
        elif not job.is_preemptible:
            result.judged.append(unprotected.non_preemptible(job))
        else:
            found = _judge(cluster, job, reclaimer, "reclaim", result)
            if found is not None:
                blocked = blocks(job, found)
                if blocked is not None:
                    result.movable.append(result.candidates.pop())
                    result.judged.append(Excluded(job.name, "guarantee", blocked))
                else:
                    seen(job.resolved_priority)
    return result


def _at_or_below(cluster: Cluster, vq: str, line: Line) -> str | None:
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


def _running_others(cluster: Cluster, preemptor: Job) -> list[Job]:
    running = cluster.running_jobs()
    return [j for j in running if j is not preemptor] if cluster.running_count(preemptor) else running


class Unprotected:
    """Whether a job has no protection at all against one preemptor (:func:`.protection.protections` would find
    none), decided from per-queue and per-class values worked out once: the common case on large clusters, where
    hundreds of thousands of jobs are judged. A job it does not clear is judged in full.
    """

    def __init__(self, cluster: Cluster, preemptor: Job, action: Action) -> None:
        self.cluster, self.preemptor, self.action, self.now = cluster, preemptor, action, cluster.now
        self.runtimes: dict[str, float] = {}
        self.tolerating: dict[str | None, Toleration | None] = {None: None}
        """Per class, its toleration policy if it may tolerate this preemptor (its window is checked per job)."""
        self.refusals: dict[tuple[bool | None, int], Excluded] = {}

    def non_preemptible(self, job: Job) -> Excluded:
        """What :func:`_judge` finds for a job that is not preemptible: its first protection, whatever else protects
        it, in words that depend only on its ``preemptible`` flag and priority (written once for each)."""
        key = (job.preemptible, job.resolved_priority)
        found = self.refusals.get(key)
        if found is None:
            first = protections(self.cluster, job, self.preemptor, self.action)[0]
            found = self.refusals[key] = Excluded("", first.rule, first.describe(), first.until)
        return Excluded(job.name, found.rule, found.reason, found.until)

    def __call__(self, job: Job) -> bool:
        if not job.is_preemptible:
            return False
        cls = job.priority_class
        if cls not in self.tolerating:
            policy = self.cluster.snapshot.toleration_of(job)
            below = policy is not None and self.preemptor.resolved_priority < policy.minimum_preemptable_priority
            self.tolerating[cls] = policy if below else None
        started, policy = job.started_at, self.tolerating[cls]
        if policy is not None:
            now, priority = self.now, self.preemptor.resolved_priority
            if tolerated_until(policy, started_at=started, preemptor_priority=priority, now=now) is not None:
                return False
        if started is None:
            return True
        runtime = self.runtimes.get(job.queue)
        if runtime is None:
            runtime = self.runtimes[job.queue] = min_runtime(self.cluster, job, self.preemptor, self.action)
        until = protected_until(started, runtime)
        return until is None or not self.now < until


def _judge(cluster: Cluster, job: Job, preemptor: Job, action: Action, result: CandidateSet) -> Candidate | None:
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
    cluster: Cluster, job: Job, candidate: Candidate, vq: str, line: Line, chunk: Resources
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
