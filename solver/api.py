"""The public functions of :mod:`gpu_preempt` that are more than a re-export: decide and verify."""

from __future__ import annotations

from gpu_preempt.models import Snapshot, SolverName
from gpu_preempt.models.decision import Decision

from .actions.cycle import CycleResult, final_decision, solve_one
from .check.verifier import verify as _verify
from .check.verifier import verify_decisions
from .check.violation import Violation
from .state.cluster import ClusterState

__all__ = ["decide", "verify", "verify_cycle"]


def decide(snapshot: Snapshot, job: str, action: str = "auto", *, solver: SolverName = "cpsat") -> Decision:
    """One decision for the pending job named ``job``, in the state of ``snapshot``.

    ``action`` is ``allocate``, ``reclaim``, ``preempt``, or ``auto``: allocate,
    then reclaim, then preempt, until one places the job (when none does, the
    last attempt that was not skipped answers). ``solver`` is ``cpsat`` (exact)
    or ``greedy`` (KAI-Scheduler's own search). Raises :class:`UnknownJobError` (a ``KeyError``) for an unknown job.
    """
    cluster = ClusterState.of(snapshot)
    return final_decision(solve_one(cluster, cluster.snapshot.job(job), action, solver=solver))


def verify(state: Snapshot | ClusterState, decision: Decision) -> list[Violation]:
    """Every rule ``decision`` breaks in ``state`` (the snapshot or cluster it was made in); ``[]`` if sound. Each
    violation is its words (a string), with the ``rule`` it breaks and the ``job`` it concerns.

    The verifier is independent of the solver: plain Python over the state and
    the rules' definitions (:mod:`gpu_preempt.check.verifier`).
    """
    return _verify(state if isinstance(state, ClusterState) else ClusterState.of(state), decision)


def verify_cycle(result: CycleResult) -> list[Violation]:
    """Every broken rule of a cycle's decisions, each checked in the state it was made in; ``[]`` if all are sound."""
    return verify_decisions(result.decisions, result.states)
