"""Actions and the scheduling cycle: enforce-quota, then allocate, reclaim, preempt, each over every pending job.

``enforce-quota`` (docs/rules.md, "Quota enforcement", :mod:`gpu_preempt.actions.quota_enforcement`) runs first, over
every queue above its limit, deepest first; by default only when
``config.quota_preemption_enabled`` is true. Its victims become ``releasing``
before any job is placed.

As in KAI (docs/rules.md, "The cycle and the job order"): the actions run in order; within an action the
pending jobs are taken one at a time, neediest first, each attempted once; each
decision is applied to the session before the next one is made (victims become
``releasing``, placed tasks ``allocated`` or ``pipelined``), so two decisions
never promise the same capacity.

Order of pending jobs (docs/snapshot-format.md, "Commands and output"): KAI's job order
(:mod:`gpu_preempt.rules.job_order`): at every level of the queue tree,
the queue judged best by its best placeable pending job (starved queues first,
then the lowest share with the job added), then within the leaf priority and
age; re-judged after every decision. Under ``config.policy: kueue``, Kueue's entry order
(:mod:`gpu_preempt.rules.kueue_order`).

A job that fails in a state where a job just like it already failed (same
queue, priority, shape, requeue state and placement, every task pending) gets that
decision again under its own name, without a second search: the attempt reads
nothing else of the job (``reuse=False`` searches every time; a test holds the
two equal).

Only tasks that were running when the cycle started can be victims: work placed
by this cycle is not evicted by the same cycle. Pipelined tasks are promises
(docs/rules.md, "Nominations", :mod:`gpu_preempt.rules.nominations`): a later decision of higher priority may
take their place, which sends them back to pending; a job nominated by an
earlier cycle claims its nodes in ``allocate``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpu_preempt.models import Job, RequeueState, Snapshot, SolverName
from gpu_preempt.models.decision import CYCLE_ACTIONS, Decision, requeue_dict
from gpu_preempt.problem.records import Action
from gpu_preempt.rules.job_order import Placeable, WaitingOrder
from gpu_preempt.rules.kueue_order import KueueOrder
from gpu_preempt.rules.requeue import queue_order_time
from gpu_preempt.state.cluster import ClusterState

from .job_solver import attempt
from .memo import OutcomeMemo
from .quota_enforcement import QUOTA_ACTION, enforce, enforcement_order

__all__ = ["ACTIONS", "CycleResult", "default_actions", "final_decision", "job_actions", "run_cycle", "solve_one"]

ACTIONS: tuple[Action, ...] = ("allocate", "reclaim", "preempt")


def default_actions(snapshot: Snapshot) -> tuple[str, ...]:
    """The cycle's actions when none are given: enforce-quota first when the switch is on, then the job actions
    (under ``config.policy: kueue`` without reclaim, which its preempt covers)."""
    actions = CYCLE_ACTIONS if snapshot.config.quota_preemption_enabled else ACTIONS
    return job_actions(snapshot, actions)


def job_actions(snapshot: Snapshot, actions: Sequence[str]) -> tuple[str, ...]:
    """``actions`` as ``snapshot``'s scheduler runs them: only those of ``config.actions``, in its order (quota
    enforcement first, by its own switch); under Kueue's policy no reclaim, which its preempt covers."""
    config = snapshot.config
    order = [a for a in config.actions if a in actions]
    if config.policy == "kueue":
        order = [a for a in order if a != "reclaim"]
    return tuple([QUOTA_ACTION] if QUOTA_ACTION in actions else []) + tuple(order)


@dataclass
class CycleResult:
    """The decisions of one cycle and the state they leave."""

    start: ClusterState
    end: ClusterState
    decisions: list[Decision] = field(default_factory=list)
    states: list[ClusterState] = field(default_factory=list)
    """The state each decision was made in (for verification)."""
    repeats: list[Decision] = field(default_factory=list)
    """With a memo: the earlier outcomes that stood, in place of a decision (:mod:`.memo`)."""

    def to_dict(self, *, timing: bool = True) -> dict[str, Any]:
        jobs: dict[str, dict[str, Any]] = {
            job.name: {"tasks": {str(t.name): self._task_entry(str(t.name)) for t in job.tasks}}
            for job in self.end.snapshot.jobs
        }
        for name, state in self.requeue().items():
            jobs[name]["requeue"] = requeue_dict(state)
        return {"jobs": jobs, "decisions": [d.to_dict(timing=timing) for d in self.decisions]}

    def _task_entry(self, task: str) -> dict[str, Any]:
        """A task's status and node; a pipelined task (or one still nominated) also names its nominated node."""
        status, node = self.end.status[task], self.end.node_of[task]
        # docs/rules.md, "Nominations": promised to ``node`` while victims release
        if status in ("pipelined", "nominated"):
            return {"status": "pipelined", "node": node, "nominated_node": node}
        return {"status": status, "node": node}

    def requeue(self) -> dict[str, RequeueState]:
        """The new requeue state of every job this cycle evicted (docs/rules.md, "Requeue with backoff")."""
        return {name: state for d in self.decisions for name, state in d.requeue.items()}


def run_cycle(
    snapshot: Snapshot,
    actions: Sequence[Action | str] | None = None,
    *,
    solver: SolverName = "cpsat",
    reuse: bool = True,
    previous: ClusterState | None = None,
    memo: OutcomeMemo | None = None,
) -> CycleResult:
    """One scheduling cycle over every pending job (``actions`` default: :func:`default_actions`).

    ``previous``, a state of an earlier snapshot of the same nodes (a replay passes its last cycle's end), only
    saves work: per-node results of nodes it left unchanged are kept (:meth:`ClusterState.of`). ``memo``, kept
    from cycle to cycle, saves searches: a job's last outcome that still stands is listed in ``repeats`` instead
    of being decided again (:mod:`.memo`).
    """
    cluster = ClusterState.of(snapshot, previous)
    result = CycleResult(cluster, cluster)
    pending = cluster.waiting_jobs()  # each has a pending or a nominated task
    held: dict[bool, set[str]] = {}  # per claim (allocate), the jobs that want a place in the cycle's first state
    for action in default_actions(snapshot) if actions is None else actions:
        if action == QUOTA_ACTION:
            for queue in enforcement_order(cluster):
                enforced = enforce(cluster, queue)
                result.decisions.append(enforced)
                result.states.append(cluster)
                if memo is not None and enforced.evicts:
                    memo.forget(enforced)
                if enforced.evicts:
                    cluster = cluster.with_changes(enforced.changes())
            continue
        attempted: set[str] = set()
        order: WaitingOrder | KueueOrder | None = None  # the waiting jobs in order, while the state lasts
        fits = Placeable(cluster, action)
        failed: dict[Hashable, Decision] = {}  # what jobs alike got in this state
        # docs/rules.md, "Nominations": claims
        wanted = ("pending", "nominated") if action == "allocate" else ("pending",)
        claims = action == "allocate"
        if claims not in held:
            held[claims] = {j.name for j in pending if claims or result.start.count(j, "pending")}
        wants = held[claims]
        if cluster.changed_jobs:  # jobs changed since the first state: counted again
            since = cluster.changed_jobs
            wants = {n for n in wants if n not in since}
            wants.update(j.name for j in pending if j.name in since and cluster.count(j, *wanted))
        touched: set[str] = set()  # jobs this action's decisions changed: the others still want what they wanted
        stood: dict[str, Decision | None] | None = None  # the memo's answers, while the action's first state lasts
        if memo is not None:
            stood = memo.recall_all(cluster, [j for j in pending if j.name in wants], action)  # type: ignore[arg-type]
            if None not in stood.values():  # nothing to search: the order changes nothing
                result.repeats.extend(d for d in stood.values() if d is not None)
                continue
        while True:
            if order is None:
                waiting = [
                    j
                    for j in pending
                    if j.name not in attempted and (cluster.count(j, *wanted) if j.name in touched else j.name in wants)
                ]
                kueue = cluster.snapshot.config.policy == "kueue"  # docs/rules.md, "Kueue's preemption"
                order = KueueOrder(cluster, waiting) if kueue else WaitingOrder(cluster, waiting, fits)
            run = order.pop_run()  # jobs taken one after the other while the state lasts
            if not run:
                break
            for job in run:
                attempted.add(job.name)
                if stood is not None:
                    standing = stood[job.name]
                else:
                    standing = memo.recall(cluster, job, action) if memo is not None else None  # type: ignore[arg-type]
                if standing is not None:
                    result.repeats.append(standing)
                    continue
                alike = _likeness(cluster, job) if reuse else None
                if alike is not None and alike in failed:
                    decision = replace(failed[alike], job=job.name, solve_ms=0.0)
                else:
                    decision = attempt(cluster, job, action, solver=solver)  # type: ignore[arg-type]
                result.decisions.append(decision)
                result.states.append(cluster)
                if memo is not None:
                    memo.record(cluster, job, action, decision)  # type: ignore[arg-type]
                    if decision.placed:
                        memo.forget(decision)
                if decision.placed:
                    cluster = cluster.with_changes(decision.changes(), decision.devices)
                    shrunk = not (decision.victims or decision.moves or decision.overrides)
                    changed = _touched(decision)
                    touched |= changed
                    fits = fits.carried(cluster, changed, shrunk=shrunk)
                    order = None  # the rest of the run is judged again in the new state
                    stood = None
                    failed = {}
                    break
                if alike is not None:
                    failed[alike] = decision
    result.end = cluster
    return result


def solve_one(cluster: ClusterState, job: Job, action: Action | str, *, solver: SolverName = "cpsat") -> list[Decision]:
    """Decisions for one job: one action, or ``auto`` = allocate, then reclaim, then preempt until one places it."""
    if action != "auto":
        return [attempt(cluster, job, action, solver=solver)]  # type: ignore[arg-type]
    tried = []
    for step in job_actions(cluster.snapshot, ACTIONS):
        decision = attempt(cluster, job, step, solver=solver)  # type: ignore[arg-type]
        tried.append(decision)
        if decision.placed:
            break
    return tried


def final_decision(tried: list[Decision]) -> Decision:
    """The decision that answers for ``tried``: the last one, or when it placed nothing the last not skipped."""
    decision = tried[-1]
    if not decision.placed:
        decision = next((d for d in reversed(tried) if d.outcome != "skipped"), decision)
    return decision


def _touched(decision: Decision) -> set[str]:
    """The jobs a decision changes: the job placed, its victims, the jobs moved, the jobs whose promise it took."""
    changed = {decision.job, *(v.job for v in decision.victims), *(m.job for m in decision.moves)}
    changed.update(o.job for o in decision.overrides)
    return changed


def _likeness(cluster: ClusterState, job: Job) -> Hashable | None:
    """What an attempt reads of a job whose tasks are all pending (``None`` for any other job)."""
    if any(t.status != "pending" for t in job.tasks):
        return None
    requeue = job.requeue
    return (
        job.queue,
        job.resolved_priority,
        job.is_preemptible,
        job.may_evict,
        job.min_available,
        job.gpu_devices,
        tuple(tuple(sorted(job.requests(t).items())) for t in job.tasks),
        None if requeue is None else tuple(requeue_dict(requeue).items()),
        queue_order_time(cluster.snapshot, job) if requeue is not None else None,
        None if job.placement is None else job.placement.model_dump_json(),
    )
