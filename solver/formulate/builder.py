"""From the cluster state and the rules to a :class:`~gpu_preempt.problem.records.Problem` for one job, one action.

What the pending job needs (docs/snapshot-format.md, "Gang and elastic"; KAI ``GetTasksToAllocate``):
while fewer than ``min_available`` of its tasks hold capacity, the *gang chunk*
(``min_available`` minus those) must be placed, all or nothing; once satisfied,
``allocate`` places as many more as fit and ``preempt``/``reclaim`` grant one
more task per attempt.

Who may lose tasks comes from :mod:`gpu_preempt.rules.candidates`; the rows that bind the
choice from the rules: queue limits and the non-preemptible quota at every level
of the job's path, and for reclaim the line of each leveled victim queue
(:mod:`gpu_preempt.rules.reclaim_line`) and KAI's parent-level saturation rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from gpu_preempt.models import Job, Resources, Task
from gpu_preempt.models.config import criteria
from gpu_preempt.problem.records import (
    Action,
    Problem,
)
from gpu_preempt.problem.victim_queue import VictimEntry, VictimOrder
from gpu_preempt.rules.candidates import (
    Candidate,
    CandidateSet,
    preempt_candidates,
    reclaim_candidates,
    with_lifted,
)
from gpu_preempt.rules.kueue_preemption import KueueTerms, kueue_candidates, needing_preemption, quotas_of
from gpu_preempt.rules.placement import Eligibility, eligibility
from gpu_preempt.rules.protection import Lifted
from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.rules.victim_order import keep_order
from gpu_preempt.state.cluster import ClusterState

from .chunk import chunk_of, chunk_types, requested
from .kai_rows import limit_rows, line_rows, saturation_rows
from .kueue_rows import kueue_problem
from .queue_facts import cluster_facts, entry_of
from .rooms import node_rooms
from .victims import moves_possible_for, victim_of

__all__ = ["KUEUE_ADMITS", "Prepared", "Remembered", "prepare", "prepare_lifted"]

KUEUE_ADMITS = "Kueue admits it without preempting"
"""The words of a Kueue preempt skipped because the ClusterQueue's quota has room (read by the memo)."""

_JOB, _PRIORITY = attrgetter("job"), itemgetter("_resolved_priority")


@dataclass
class Prepared:
    """What one attempt needs: the chunk, the candidates, and the problem built from them on demand.

    ``skip`` is set (and nothing else is) when the job is not eligible for the action.
    """

    cluster: ClusterState
    job: Job
    action: Action
    chunk: list[tuple[Task, bool]] = field(default_factory=list)
    required: Resources = field(default_factory=dict)
    candidates: CandidateSet | None = None
    skip: str | None = None
    kueue: KueueTerms | None = None
    """Under ``config.policy: kueue``, what Kueue's rules add to the candidates (docs/rules.md, "Kueue's
    preemption")."""
    _problem: Problem | None = field(default=None, init=False, repr=False)
    _levels: tuple[int, ...] | None = field(default=None, init=False, repr=False)
    _moves: bool | None = field(default=None, init=False, repr=False)
    _where: Eligibility | None = field(default=None, init=False, repr=False)
    _running: dict[str, list[Task]] = field(default_factory=dict, init=False, repr=False)
    _entries: dict[tuple[str, int, bool], VictimEntry] = field(default_factory=dict, init=False, repr=False)

    def running(self, job: Job) -> list[Task]:
        """``job``'s running tasks, read once per decision (every prefix of the greedy baseline reads them again)."""
        found = self._running.get(job.name)
        if found is None:
            found = self._running[job.name] = self.cluster.tasks(job, "running")
        return found

    def victim_entry(self, job: Job, candidate: Candidate) -> VictimEntry:
        """``candidate`` (``job``) as KAI's victim queue sees it, made once per decision."""
        key = (candidate.job, candidate.surplus, candidate.whole_job)
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = entry_of(
                self.cluster, job, self.running(job), candidate.surplus, candidate.whole_job
            )
        return found

    @property
    def where(self) -> Eligibility:
        """Where the job's new tasks may go (docs/rules.md, "Placement")."""
        if self._where is None:
            self._where = eligibility(self.cluster, self.job)
        return self._where

    @property
    def problem(self) -> Problem | None:
        """The full problem over every candidate (built once, when first asked for)."""
        if self.skip is not None:
            return None
        if self._problem is None:
            self._problem = self.build()
        return self._problem

    @property
    def moves_possible(self) -> bool:
        """Whether moves are considered in this decision (docs/snapshot-format.md, "Moves"): some candidate's task
        could be moved to
        free room on another node, and the decision is small enough.

        A move needs a schedulable node other than the task's own whose free room (every promise kept) takes the
        task; when no candidate task has one, no answer moves anything (exact and cheap). Moves are considered on
        decisions with at most ``MOVE_CANDIDATES`` candidates and ``MOVE_PAIRS`` possible moves: they bind the
        nodes together, so a larger decision could not go through the exact reductions; it is made without moves
        (KAI bounds its consolidation likewise, to 16 victims by default).
        """
        if self._moves is None:
            self._moves = moves_possible_for(self)
        return self._moves

    @property
    def levels(self) -> tuple[int, ...]:
        """Priority levels of the objective's ``priority`` vector: every candidate's priority, highest first."""
        if self._levels is None:
            snapshot = self.cluster.snapshot
            found = [] if self.candidates is None else self.candidates.candidates
            priorities = None if self.candidates is None else self.candidates.priorities
            if priorities is None:
                jobs = map(snapshot.jobs_by_name().__getitem__, map(_JOB, found))
                priorities = set(map(_PRIORITY, map(vars, jobs)))  # in C (Job.resolved_priority)
            self._levels = tuple(sorted(priorities, reverse=True))
        return self._levels

    def build(self, chosen: list[Candidate] | None = None, only_nodes: set[str] | None = None) -> Problem:
        """The problem over ``chosen`` candidates (default: all) and ``only_nodes`` (default: every useful node)."""
        cluster, job, action = self.cluster, self.job, self.action
        moves = self.moves_possible
        movable: list[Candidate] = []
        if chosen is None:
            chosen = [] if self.candidates is None else self.candidates.candidates
            if moves and self.candidates is not None:
                movable = self.candidates.movable
        victims_jobs = [cluster.snapshot.job(c.job) for c in (*chosen, *movable)]
        running = [self.running(j) for j in victims_jobs]
        allowed = self.where
        hosting = {node for j in victims_jobs for node in cluster.running_on(j)}
        nodes, index = node_rooms(cluster, job, self.chunk, hosting, allowed.mask, only_nodes, moves=moves)
        where = nodes if moves else ()
        fitting: dict[tuple[object, ...], tuple[int, ...]] = {}
        on_device = cluster.device_loads().placed if cluster.has_shares() else {}
        victims = tuple(
            victim_of(cluster, j, tasks, c, index, where, fitting, on_device, evictable=k < len(chosen))
            for k, (j, tasks, c) in enumerate(zip(victims_jobs, running, (*chosen, *movable), strict=True))
        )
        positions = [cluster.node_index()[room.name] for room in nodes]
        config = cluster.snapshot.config
        required = self.required
        problem = Problem(
            job=job.name,
            action=action,
            nodes=nodes,
            chunk=chunk_types(job, self.chunk),
            victims=victims,
            limits=limit_rows(cluster, job, victims, self.chunk),
            guarantees=line_rows(cluster, job, victims, required) if action == "reclaim" else (),
            guarantee_rule=config.reclaim_guarantee,
            saturation=saturation_rows(cluster, job, victims, required) if action == "reclaim" else (),
            objective=criteria(config.objective),
            keep_order=keep_order(cluster, [victim.job for victim in victims]),
            victim_order=VictimOrder(  # movable ones too: KAI pops a job the reclaim line protects, to move it
                cluster_facts(cluster, {victim.queue for victim in victims}),
                tuple(self.victim_entry(j, c) for j, c in zip(victims_jobs, (*chosen, *movable), strict=True)),
            ),
            levels=self.levels,
            domains=() if allowed.required is None else tuple(allowed.required[positions].tolist()),
            placement=(config.placement_strategy.gpu, config.placement_strategy.cpu),
            spread=() if allowed.preferred is None else tuple(allowed.preferred[positions].tolist()),
            spread_held=allowed.held,
        )
        return kueue_problem(self, problem) if config.policy == "kueue" else problem


def prepare(cluster: ClusterState, job: Job, action: Action) -> Prepared:
    """The chunk of ``job`` to place by ``action`` and its candidates, or why the job is skipped (``job`` as the
    state's snapshot counts it: :func:`~gpu_preempt.state.cluster.decidable`)."""
    job = cluster.snapshot.job(job.name)
    if action != "allocate" and not job.may_evict:
        never = f"priority class {job.priority_class} has preemption_policy Never: it is placed only on free capacity"
        return Prepared(cluster, job, action, skip=never)
    chunk, skip = chunk_of(cluster, job, action)
    if skip is not None:
        return Prepared(cluster, job, action, skip=skip)
    required = requested(job, [t for t, required in chunk if required])
    candidates: CandidateSet | None = None
    if cluster.snapshot.config.policy == "kueue":
        return _kueue_prepare(cluster, job, action, chunk, required)
    if action == "reclaim":
        closed = reclaim_gate(cluster, job, required)
        if closed is not None:
            return Prepared(cluster, job, action, skip=f"reclaim gate: {closed}")
        candidates = reclaim_candidates(cluster, job, required)
    elif action == "preempt":
        candidates = preempt_candidates(cluster, job)
    prepared = Prepared(cluster, job, action, chunk, required, candidates)
    remembered = cluster.for_state(Remembered)
    if remembered.on and candidates is not None and not cluster.for_state(Lifted).jobs:
        remembered.last = (job.name, action, candidates)
    return prepared


@dataclass
class Remembered:
    """The candidates of the last reclaim or preempt a state prepared with nothing lifted, kept when ``on`` (a
    command that asks which protected jobs matter to its one decision: :func:`prepare_lifted` starts from them;
    off in cycles and replays, whose states would each keep a decision's candidates)."""

    on: bool = False
    last: tuple[str, Action, CandidateSet] | None = None


def prepare_lifted(cluster: ClusterState, job: Job, action: Action) -> Prepared:
    """:func:`prepare` with the jobs :class:`~gpu_preempt.rules.protection.Lifted` names set aside: from the
    candidates this state remembers for the same job and action (:class:`Remembered`), only those jobs judged again
    (:func:`~gpu_preempt.rules.candidates.with_lifted`); else prepared anew. Neither the chunk nor the reclaim gate
    reads a job's protections."""
    last = cluster.for_state(Remembered).last
    if last is None or last[:2] != (job.name, action) or cluster.snapshot.config.policy == "kueue":
        return prepare(cluster, job, action)
    job = cluster.snapshot.job(job.name)
    chunk, skip = chunk_of(cluster, job, action)
    assert skip is None  # as when the candidates were found
    required = requested(job, [t for t, required in chunk if required])
    return Prepared(cluster, job, action, chunk, required, with_lifted(cluster, last[2], job, required))


def _kueue_prepare(
    cluster: ClusterState, job: Job, action: Action, chunk: list[tuple[Task, bool]], required: Resources
) -> Prepared:
    """``prepare`` under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption"): ``preempt`` covers the
    ClusterQueue and its cohort, and is tried only when the quota leaves no room."""
    if action == "reclaim":
        why = "policy kueue: one preemption covers the ClusterQueue and its cohort (action preempt)"
        return Prepared(cluster, job, action, skip=why)
    if action == "allocate":
        return Prepared(cluster, job, action, chunk, required)
    if not needing_preemption(quotas_of(cluster), job.queue, required):
        why = f"ClusterQueue {job.queue} has quota for it: {KUEUE_ADMITS}, and it waits for room on the nodes"
        return Prepared(cluster, job, action, skip=why)
    candidates, terms = kueue_candidates(cluster, job, required)
    return Prepared(cluster, job, action, chunk, required, candidates, kueue=terms)
