"""Outcomes that stand: a waiting job is not searched again while nothing its last outcome depends on changed.

A replay runs a cycle after every change, and every waiting job is tried by allocate, reclaim and preempt each
time; in a deep queue nearly every such try repeats the job's last outcome. :class:`OutcomeMemo` keeps, per job
and action, the last outcome that placed nothing, with the facts it rests on, and :meth:`OutcomeMemo.recall` gives
it back when those facts still hold, so that the cycle counts it as a repeat without a search. Each fact is one
under which the outcome cannot change (docs/architecture.md, "How a replay stays fast"):

* every outcome: the job is unchanged (every task pending, the same requeue state);
* ``skipped`` in backoff: the backoff still runs; by the reclaim gate: the gate is still closed (judged again,
  cheaply); by the job's priority class or its gang size: always;
* ``allocate`` ``infeasible`` (one kind of task, no topology to choose): the tasks the free room takes on the
  nodes the job may use, at its priority, are no more than they were, and no queue on its path holds less under a
  limit (or, for a non-preemptible job, under a deserved quota) of what it asks for;
* ``preempt`` ``infeasible`` for want of candidates: moreover, it still has none: the running jobs of its queue
  that it could ever take (preemptible, of lower priority) are the same ones with the same numbers of tasks and no
  protection that kept one of them out has ended, or else its candidates, judged again, are none;
* ``reclaim`` ``infeasible`` with no victim to take or move, when the free room took fewer of its tasks than its gang
  needs: the room still takes no more, the reclaim gate is still open (else it would be skipped), and the victims,
  judged again (once per queue and priority in a state), are still none;
* ``reclaim`` ``infeasible`` because even every victim leaving would leave too little room: the gate is still open
  and that is still so (:func:`gpu_preempt.problem.bounds.could_fit` on the problem built again, once per queue,
  priority, request and placement in a state).

Under ``config.policy: kueue`` a job's quota depends on every queue of its cohort, so what stands is judged by
the cohort's quota arithmetic of the state (docs/rules.md, "Kueue's preemption"):

* ``allocate`` ``infeasible``: as above, and what its ClusterQueue has available is no more than it was;
* ``preempt`` ``skipped`` because the quota has room (``kueue-admits``): it still has;
* ``preempt`` ``infeasible`` with no candidate (``kueue-unreached``): the quota still does not fit and, judged
  again without writing why each running job is left out, there is still none;
* ``preempt`` ``infeasible`` that the bound on the cohort queues' lines and shares refused
  (``kueue-exhausted``): it still refuses the problem built again
  (:func:`gpu_preempt.problem.bounds.could_fit_kueue`).

The last two only for CP-SAT's decisions: Kueue's own search (the greedy baseline) answers a hopeless problem by
its walk, ``unknown`` or ``infeasible`` as the walk ends, so its outcome is searched again.

Jobs whose outcomes rest on the same facts (queue, priority, request, placement, and the numbers above) are judged
once per state for all of them; only the job's own backoff is read job by job. Anything else is searched again. A
test holds replays with and without the memo to the same files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpu_preempt.formulate.builder import KUEUE_ADMITS, Prepared, prepare
from gpu_preempt.models import Job, RequeueState
from gpu_preempt.models.decision import Decision
from gpu_preempt.problem.bounds import could_fit, could_fit_kueue
from gpu_preempt.problem.records import Action
from gpu_preempt.reduce.hosts import free_hosts
from gpu_preempt.rules.candidates import preempt_candidates, reclaim_candidates
from gpu_preempt.rules.job_order import chunk_request
from gpu_preempt.rules.kueue_preemption import needing_preemption, no_kueue_candidate, policy_of, quotas_of
from gpu_preempt.rules.placement import eligibility, placement_key, placement_mask
from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.rules.requeue import backoff_reason, queue_order_time
from gpu_preempt.state.cluster import ClusterState

__all__ = ["SKIPS", "Facts", "OutcomeMemo", "Standing"]

Facts = tuple[object, ...]

SKIPS = (
    ("backoff", ("backoff", "deactivated")),
    ("gate", ("reclaim gate",)),
    ("static", ("priority class", "the gang needs")),
)
"""How a skip's reason says what it rests on (:func:`gpu_preempt.actions.job_solver.attempt`'s words)."""


@dataclass(frozen=True)
class Standing:
    """A job's last outcome of one action, and what it rests on."""

    decision: Decision
    requeue: RequeueState | None
    kind: str
    """``backoff``, ``gate``, ``static``, ``room`` (allocate), ``candidates`` (preempt), ``unreached`` or
    ``exhausted`` (reclaim); under Kueue's rules, ``kueue-admits``, ``kueue-unreached`` or ``kueue-exhausted``
    (preempt)."""
    fits: int = 0
    usage: tuple[int, ...] = ()
    members: Facts = ()
    until: float = float("inf")
    model: Job | None = None
    """The job model it was recorded for, when its statuses were the model's: the same model, unchanged in a later
    state, is the same job with every task pending."""
    facts: Facts | None = None
    """What the judgement reads besides the job's backoff, shared by every job recorded alike (one object): a state
    judges it once for all of them. ``None``: judged job by job."""


@dataclass
class _PerState:
    """What the checks of one state share: tasks that fit per request shape, running jobs per queue, and the
    judgement of each shared set of facts."""

    fits: dict[tuple[object, ...], int] = field(default_factory=dict)
    members: dict[tuple[str, int], Facts] = field(default_factory=dict)
    usage: dict[tuple[str, tuple[str, ...], bool], tuple[int, ...]] = field(default_factory=dict)
    verdicts: dict[int, bool] = field(default_factory=dict)
    """``id`` of a :attr:`Standing.facts` -> whether outcomes resting on it stand."""
    victimless: dict[tuple[object, ...], bool] = field(default_factory=dict)
    """(queue, priority, preemptible) -> whether a reclaim by such a job finds no victim to take or move."""
    exhausted: dict[tuple[object, ...], bool] = field(default_factory=dict)
    """(queue, priority, request, placement) -> whether a reclaim by such a job is refused by the relaxation."""


class OutcomeMemo:
    """Per (job, action), the last outcome that placed nothing and what it rests on; carried from cycle to cycle of
    one replay (cleared when queues or nodes change)."""

    def __init__(self) -> None:
        self.standing: dict[tuple[str, str], Standing] = {}
        self.facts: dict[Facts, Facts] = {}
        """Every set of facts recorded, once (their ids key the states' verdicts, so they are kept alive)."""

    def clear(self) -> None:
        self.standing.clear()
        self.facts.clear()

    def forget(self, decision: Decision) -> None:
        """Drop what the jobs a decision places, evicts or moves had: they start afresh, as the replay's log does
        (:mod:`gpu_preempt.planning.decision_log`)."""
        jobs = {decision.job, *(v.job for v in decision.victims), *(m.job for m in decision.moves)}
        for key in [key for key in self.standing if key[0] in jobs]:
            del self.standing[key]

    def recall(self, cluster: ClusterState, job: Job, action: Action) -> Decision | None:
        """The job's last outcome of ``action`` when it still stands in ``cluster``, else ``None`` (the outcome is
        kept: its facts may hold again in a later state, and a new outcome of the job replaces it)."""
        return self.recall_all(cluster, [job], action)[job.name]

    def recall_all(self, cluster: ClusterState, jobs: Iterable[Job], action: Action) -> dict[str, Decision | None]:
        """:meth:`recall` of each of ``jobs``, by name (one loop: the cycle asks it of every waiting job)."""
        standing, changed, now = self.standing, cluster.changed_jobs, cluster.now
        verdicts = cluster.for_state(_PerState).verdicts
        out: dict[str, Decision | None] = {}
        for job in jobs:
            name = job.name
            found = standing.get((name, action))
            if found is None:
                out[name] = None
                continue
            if (found.model is not job or name in changed) and (
                found.requeue != job.requeue or cluster.count(job, "pending") != job.task_count
            ):
                out[name] = None
                continue
            kind = found.kind
            if kind == "static":
                out[name] = found.decision
                continue
            waiting = None if job.requeue is None else backoff_reason(job, now)
            if kind == "backoff" or waiting is not None:  # out of backoff now, or in it now: another outcome
                out[name] = found.decision if kind == "backoff" and waiting is not None else None
                continue
            facts = found.facts
            verdict: bool | None
            if facts is None:
                verdict = _judged(cluster, job, found)
            else:
                verdict = verdicts.get(id(facts))
                if verdict is None:
                    verdict = verdicts[id(facts)] = _judged(cluster, job, found)
            out[name] = found.decision if verdict else None
        return out

    def record(self, cluster: ClusterState, job: Job, action: Action, decision: Decision) -> None:
        """Keep ``decision`` (made in ``cluster``) when it is an outcome that can stand."""
        key = (job.name, action)
        self.standing.pop(key, None)
        if decision.placed or decision.outcome not in ("skipped", "infeasible"):
            return
        if cluster.count(job, "pending") != job.task_count:
            return
        reason = decision.reason or ""
        model = job if job.name not in cluster.changed_jobs else None
        if decision.outcome == "skipped":
            kind = next((k for k, words in SKIPS if reason.startswith(words)), None)
            if kind == "gate":
                chunk = tuple(sorted(chunk_request(cluster, job).items()))
                facts = self._shared(("gate", job.queue, chunk, job.is_preemptible))
                self.standing[key] = Standing(decision, job.requeue, kind, model=model, facts=facts)
            elif kind is not None:
                self.standing[key] = Standing(decision, job.requeue, kind, model=model)
            return
        if cluster.snapshot.config.policy == "kueue" and action == "preempt":
            self._record_kueue(cluster, job, decision, model)
            return
        fits = _fits(cluster, job)
        if fits is None:
            return
        usage = _usage(cluster, job)
        shape = (job.queue, job.resolved_priority, _request(job), job.is_preemptible, _placement_key(job))
        alike = (*shape, fits, usage)
        if action == "allocate":
            facts = self._shared(("room", *alike))
            self.standing[key] = Standing(decision, job.requeue, "room", fits, usage, model=model, facts=facts)
        elif action == "reclaim" and reason.startswith("no candidate victims") and fits < _gang(job):
            chunk = tuple(sorted(chunk_request(cluster, job).items()))
            facts = self._shared(("unreached", *shape, fits, chunk))
            self.standing[key] = Standing(decision, job.requeue, "unreached", fits, model=model, facts=facts)
        elif action == "reclaim" and reason.startswith("even evicting all"):
            chunk = tuple(sorted(chunk_request(cluster, job).items()))
            facts = self._shared(("exhausted", *shape, chunk))
            self.standing[key] = Standing(decision, job.requeue, "exhausted", model=model, facts=facts)
        elif action == "preempt" and decision.candidates == 0:
            until = min((p.until for p in decision.protected if p.until is not None), default=float("inf"))
            members = _members(cluster, job)
            facts = self._shared(("candidates", *alike, members, until))
            standing = Standing(decision, job.requeue, "candidates", fits, usage, members, until, model, facts)
            self.standing[key] = standing

    def _record_kueue(self, cluster: ClusterState, job: Job, decision: Decision, model: Job | None) -> None:
        """Keep a preempt under ``config.policy: kueue`` that the quota spared (the queue has room for the job),
        or, decided by CP-SAT, that found no candidate or that the bound on lines and shares refused: each is
        judged again, once per queue, priority and request in a state."""
        key = (job.name, "preempt")
        if decision.outcome == "skipped" and KUEUE_ADMITS in (decision.reason or ""):
            kind = "kueue-admits"
        elif decision.outcome != "infeasible" or decision.solver != "cpsat":
            return  # Kueue's own search answers a hopeless problem by its walk: unknown or infeasible
        elif decision.candidates == 0:
            kind = "kueue-unreached"
        elif _kueue_exhausted(cluster, job):
            kind = "kueue-exhausted"
        else:
            return
        facts = self._shared((kind, *_kueue_likeness(cluster, job)))
        self.standing[key] = Standing(decision, job.requeue, kind, model=model, facts=facts)

    def _shared(self, facts: Facts) -> Facts:
        return self.facts.setdefault(facts, facts)


def _judged(cluster: ClusterState, job: Job, found: Standing) -> bool:
    """Whether ``found`` stands for ``job``, out of backoff, in ``cluster``: what its facts say (the same for every
    job that shares them)."""
    kind = found.kind
    if kind == "gate":
        return reclaim_gate(cluster, job, chunk_request(cluster, job)) is not None
    if kind == "kueue-admits":
        return not needing_preemption(quotas_of(cluster), job.queue, chunk_request(cluster, job))
    if kind == "kueue-unreached":
        return no_kueue_candidate(cluster, job, chunk_request(cluster, job))
    if kind == "kueue-exhausted":
        return _kueue_exhausted(cluster, job)
    if kind == "exhausted":
        return _exhausted(cluster, job)
    fits = _fits(cluster, job)
    if kind == "unreached":
        return fits is not None and fits <= found.fits and _victimless(cluster, job)
    if fits is None or fits > found.fits or not _no_less(_usage(cluster, job), found.usage):
        return False
    if kind == "room":
        return True
    if cluster.now < found.until and _members(cluster, job) == found.members:
        return True
    return not preempt_candidates(cluster, job).candidates  # judged again, once per queue and priority in a state


def _fits(cluster: ClusterState, job: Job) -> int | None:
    """How many tasks of the job's one kind the free room takes, at its priority, on the nodes it may use; ``None``
    when the job has several kinds of task, asks for nothing, or has a topology to choose or count."""
    request = _request(job)
    if request is None:
        return None
    if job.placement is None:
        mask = placement_mask(cluster, job)
    else:
        where = eligibility(cluster, job)
        if where.constrained:
            return None
        mask = where.mask
    kept = cluster.for_state(_PerState).fits
    key = (job.resolved_priority, request, id(mask))
    found = kept.get(key)
    if found is None:
        asked = dict(request)
        hosts = free_hosts(cluster, job.resolved_priority, asked, tuple(r for r, _ in request), job.gpu_devices)
        found = kept[key] = sum(count for n, count in hosts if mask[n])
    return found


def _gang(job: Job) -> int:
    """How many tasks the chunk of a job with every task pending holds."""
    return max(1, job.gang_minimum)


def _victimless(cluster: ClusterState, job: Job) -> bool:
    """Whether ``job`` may reclaim (the gate is open) and finds no running job to take, nor one to move when moves
    are considered. The victims are the same for every job of its queue and priority in a state: the reclaim line,
    the one thing that reads the request, only tells the victims to take from those to move."""
    chunk = chunk_request(cluster, job)
    if reclaim_gate(cluster, job, chunk) is not None:
        return False
    kept = cluster.for_state(_PerState).victimless
    key = (job.queue, job.resolved_priority, job.is_preemptible)
    found = kept.get(key)
    if found is None:
        victims = reclaim_candidates(cluster, job, chunk)
        # a job only the line keeps is a victim only when moves are considered (docs/snapshot-format.md, "Moves")
        unmoved = not victims.movable or not Prepared(cluster, job, "reclaim", candidates=victims).moves_possible
        found = kept[key] = not victims.candidates and unmoved
    return found


def _exhausted(cluster: ClusterState, job: Job) -> bool:
    """Whether ``job`` may reclaim (the gate is open) and no victim set could make room for it: the relaxation
    refuses the problem built again (the same for every job of its queue, priority, request and placement in a
    state)."""
    kept = cluster.for_state(_PerState).exhausted
    key = (job.queue, job.resolved_priority, job.is_preemptible, _request(job), id(placement_mask(cluster, job)))
    found = kept.get(key)
    if found is None:
        prepared = prepare(cluster, job, "reclaim")
        problem = prepared.problem
        found = kept[key] = problem is not None and not could_fit(problem)
    return found


def _kueue_exhausted(cluster: ClusterState, job: Job) -> bool:
    """Whether, under ``config.policy: kueue``, the job's preempt needs preemption and no victim set could make
    room for it: the problem built again is refused by :func:`gpu_preempt.problem.bounds.could_fit_kueue` (the
    same for every job of its queue, priority, request and placement in a state)."""
    kept = cluster.for_state(_PerState).exhausted
    key = ("kueue", *_kueue_likeness(cluster, job), job.is_preemptible, id(placement_mask(cluster, job)))
    found = kept.get(key)
    if found is None:
        problem = prepare(cluster, job, "preempt").problem
        found = kept[key] = problem is not None and bool(problem.victims) and not could_fit_kueue(problem)
    return found


def _request(job: Job) -> tuple[tuple[str, int], ...] | None:
    """What each task of the job asks for (sorted, no zeros), kept on the job model; ``None`` unless every task
    asks for the same, and something, on one device (a share on several is searched again)."""
    found = job.__dict__.get("_memo_request", job)
    if found is job:
        request = tuple(sorted((r, a) for r, a in job.task_resources.items() if a > 0))
        found = job.__dict__["_memo_request"] = request if job.uniform and request and job.gpu_devices == 1 else None
    return found  # type: ignore[no-any-return]


def _placement_key(job: Job) -> str | None:
    """The job's placement as a key (kept on the job model)."""
    found = job.__dict__.get("_memo_placement", job)
    if found is job:
        found = job.__dict__["_memo_placement"] = None if job.placement is None else placement_key(job.placement)
    return found  # type: ignore[no-any-return]


def _usage(cluster: ClusterState, job: Job) -> tuple[int, ...]:
    """What the queues on the job's path hold where a row of the decision could bind (docs/rules.md, "How a
    decision is made"): under a limit, all they hold; under a deserved quota, for a non-preemptible job, the
    non-preemptible part. A queue holding less could leave room under such a row; elsewhere usage binds nothing."""
    request = _request(job)
    resources = () if request is None else tuple(r for r, _ in request)
    kept = cluster.for_state(_PerState).usage
    key = (job.queue, resources, job.is_preemptible)
    found = kept.get(key)
    if found is None:
        out: list[int] = []
        for name in cluster.tree.upward(job.queue):
            queue, usage = cluster.tree.queue(name), cluster.usage[name]
            for r in resources:
                if queue.limit_of(r) is not None:
                    out.append(usage.allocated.get(r, 0))
                if not job.is_preemptible and queue.quota_of(r) is not None:
                    out.append(usage.allocated_non_preemptible.get(r, 0))
        if cluster.snapshot.config.policy == "kueue":  # what the ClusterQueue has available, negated: more admits more
            quotas = quotas_of(cluster)
            out.extend(-max(0, quotas.available(job.queue, r)) for r in resources)
        found = kept[key] = tuple(out)
    return found


def _kueue_likeness(cluster: ClusterState, job: Job) -> Facts:
    """What Kueue's preemption reads of a job with every task pending: its ClusterQueue, priority and request, and
    its queue-order time where its policy compares equal priorities by it."""
    policy = policy_of(cluster, job.queue)
    newer = "LowerOrNewerEqualPriority" in (policy.within_cluster_queue, policy.reclaim_within_cohort)
    when = queue_order_time(cluster.snapshot, job) if newer else None
    return job.queue, job.resolved_priority, tuple(sorted(chunk_request(cluster, job).items())), when


def _no_less(now: tuple[int, ...], then: tuple[int, ...]) -> bool:
    return len(now) == len(then) and all(a >= b for a, b in zip(now, then, strict=True))


def _members(cluster: ClusterState, job: Job) -> Facts:
    """The running jobs of the job's queue that preempt could ever take (preemptible, of lower priority) and their
    running tasks: the others are never its candidates."""
    kept = cluster.for_state(_PerState).members
    key = (job.queue, job.resolved_priority)
    found = kept.get(key)
    if found is None:
        jobs = cluster.running_by_queue().get(job.queue, [])
        below = job.resolved_priority
        found = kept[key] = tuple(
            (j.name, cluster.running_count(j)) for j in jobs if j.resolved_priority < below and j.is_preemptible
        )
    return found
