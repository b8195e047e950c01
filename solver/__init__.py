"""The decision engine of gpu-preempt, and its public API.

A folder per role, and imports go one way only (docs/architecture.md; the test
``tests/test_architecture.py`` fails on an import against the flow)::

    models <- state <- rules <- problem <- reduce <- cpsat <- explain <- actions <- planning <- cli
    check (the verifiers): models, state and rules only (planning may use them)
    inventory (NVML): models only

``state`` is the cluster, queue tree, usage and fair share; ``rules`` one module
a rule; ``problem`` the victim problem in numbers and its builder; ``reduce`` the
exact reductions; ``cpsat`` the only code that imports OR-Tools; ``explain``
reasons in words (it may re-solve a relaxed problem); ``actions`` the job
solver, the cycle, quota enforcement and the greedy baseline; ``planning`` the
capacity-planning replay; ``check`` the independent verifiers; ``cli`` the
command line.

Examples
--------
Queue ``a`` (deserved 4 GPUs) runs two 4-GPU jobs on the only node; queue ``b``
(deserved 4) waits for 4 GPUs. ``a`` is above its quota by one job, and the one
that started last loses the least work:

>>> from gpu_preempt import decide, parse_snapshot, run_cycle, verify, verify_cycle
>>> snapshot = parse_snapshot('''
... now: 2026-01-01T12:00:00Z
... nodes: [{name: n0, resources: {gpu: 8}}]
... queues: [{name: a, deserved: {gpu: 4}}, {name: b, deserved: {gpu: 4}}]
... jobs:
... - {name: old, queue: a, task_resources: {gpu: 4}, started_at: 2026-01-01T09:00:00Z, tasks: [{node: n0}]}
... - {name: new, queue: a, task_resources: {gpu: 4}, started_at: 2026-01-01T11:00:00Z, tasks: [{node: n0}]}
... - {name: want, queue: b, task_resources: {gpu: 4}, tasks: [{}]}
... ''')
>>> decision = decide(snapshot, "want")
>>> decision.action, decision.outcome, [v.job for v in decision.victims], decision.optimal
('reclaim', 'pipelined', ['new'], True)
>>> verify(snapshot, decision)
[]

A whole cycle, each decision applied before the next, and every decision re-checked:

>>> result = run_cycle(snapshot)
>>> [(d.job, d.action, d.outcome) for d in result.decisions]
[('want', 'allocate', 'infeasible'), ('want', 'reclaim', 'pipelined')]
>>> verify_cycle(result)
[]
"""

from __future__ import annotations

from gpu_preempt.models import Snapshot, SnapshotError, load_snapshot, parse_snapshot, snapshot_from_data
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.quota_decision import QuotaDecision

from .actions.cycle import CycleResult, final_decision, run_cycle, solve_one
from .actions.job_solver import SolverName
from .check.verifier import verify as _verify
from .check.verifier import verify_decisions
from .state.cluster import Cluster

__all__ = [
    "Cluster",
    "CycleResult",
    "Decision",
    "QuotaDecision",
    "Snapshot",
    "SnapshotError",
    "decide",
    "load_snapshot",
    "parse_snapshot",
    "run_cycle",
    "snapshot_from_data",
    "verify",
    "verify_cycle",
]


def decide(snapshot: Snapshot, job: str, action: str = "auto", *, solver: SolverName = "cpsat") -> Decision:
    """One decision for the pending job named ``job``, in the state of ``snapshot``.

    ``action`` is ``allocate``, ``reclaim``, ``preempt``, or ``auto``: allocate,
    then reclaim, then preempt, until one places the job (when none does, the
    last attempt that was not skipped answers). ``solver`` is ``cpsat`` (exact)
    or ``greedy`` (the KAI-like baseline). Raises ``KeyError`` for an unknown job.
    """
    return final_decision(solve_one(Cluster.of(snapshot), snapshot.job(job), action, solver=solver))


def verify(state: Snapshot | Cluster, decision: Decision) -> list[str]:
    """Every rule ``decision`` breaks in ``state`` (the snapshot or cluster it was made in), in words; ``[]`` if sound.

    The verifier is independent of the solver: plain Python over the state and
    the rules' definitions (:mod:`gpu_preempt.solver.check.verifier`).
    """
    return _verify(state if isinstance(state, Cluster) else Cluster.of(state), decision)


def verify_cycle(result: CycleResult) -> list[str]:
    """Every broken rule of a cycle's decisions, each checked in the state it was made in; ``[]`` if all are sound."""
    return verify_decisions(result.decisions, result.states)
