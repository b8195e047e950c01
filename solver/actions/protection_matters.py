"""The protected jobs that matter to a decision: those its optimum would have taken but for their protection.

A decision on a large cluster shields tens of thousands of running jobs, most of which no optimum would touch. The
ones that matter are found by deciding again with the protections of single jobs lifted (non-preemptible,
min-runtime, toleration: :class:`~gpu_preempt.rules.protection.Lifted`, which the candidate rules read) and reading
which of them that optimum takes. Every other rule still applies: the reclaim line (``guarantee``) protects
queues, not jobs (docs/snapshot-format.md, "Commands and output").

When the decision placed the job and the objective ranks priority first, no job of a priority above its victims'
can be in the optimum (the decision stays feasible, and such a job would count at a level where it counts none):
those are not lifted. Every other shielded job is, so the answer is exact whenever the second decision is proved
optimal, as the first is. The reductions keep the second decision about as small as the first: a lifted job is one
more candidate on its nodes.
"""

from __future__ import annotations

from gpu_preempt import cpsat
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.formulate.builder import Remembered, prepare_lifted
from gpu_preempt.models import Job
from gpu_preempt.models.decision import Decision
from gpu_preempt.problem.records import Action
from gpu_preempt.rules.protection import LIFTABLE, Lifted
from gpu_preempt.state.cluster import ClusterState

from . import greedy
from .job_solver import named_victims
from .reduced_path import solve_reduced

__all__ = ["LIFTED", "remember_candidates", "taken_but_for_protection"]

LIFTED = LIFTABLE
"""The protections of single jobs that are lifted to find the jobs that matter."""


def remember_candidates(cluster: ClusterState) -> None:
    """Keep the candidates of the decisions ``cluster`` prepares (the last one), so that
    :func:`taken_but_for_protection` judges only the lifted jobs again: for a command that asks it of its one
    decision (a cycle's states would each keep a decision's candidates)."""
    cluster.for_state(Remembered).on = True


def taken_but_for_protection(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
    """The jobs a protection of :data:`LIFTED` shielded from ``decision`` (of ``job``, in ``cluster``) that its
    optimum takes once those protections are lifted, by name; empty when nothing was shielded or the decision is
    not one of reclaim or preempt."""
    if decision.action not in ("reclaim", "preempt") or decision.outcome == "skipped" or not decision.protected:
        return []
    action: Action = "reclaim" if decision.action == "reclaim" else "preempt"
    if cluster.snapshot.config.policy == "kueue":
        return []  # Kueue's protections are its quotas and priorities, not a job's own
    shielded = {p.job for p in decision.protected if p.rule in LIFTED}
    if not shielded:
        return []
    columns = cluster.job_columns()
    rows = cluster.job_positions(sorted(shielded))
    if decision.placed and cluster.snapshot.config.objective[0] == "priority":
        # The decision stays feasible with more candidates, and its victims' highest priority bounds the optimum's:
        # a job above it would count at a level where the decision counts none.
        if not decision.victims:
            return []
        top = max(columns.priority[cluster.job_positions([v.job for v in decision.victims])].tolist())
        rows = [r for r, priority in zip(rows, columns.priority[rows].tolist(), strict=True) if priority <= top]
    if not rows:
        return []
    shielded = {columns.names[r] for r in rows}
    lifted = cluster.for_state(Lifted)
    lifted.jobs = frozenset(shielded)
    try:  # the candidates found again by the rules, these jobs' own protections set aside
        retried = prepare_lifted(cluster, cluster.snapshot.job(job.name), action)
    finally:
        lifted.jobs = frozenset()
    if retried.skip is not None or retried.candidates is None:
        return []
    params = SolveParams.of(cluster.snapshot.config.solver)
    reduced = solve_reduced(retried, params) if decision.solver == "cpsat" else greedy.solve_prepared(retried)
    if reduced is not None:
        problem, solution = reduced[0], reduced[1]
    else:
        full = retried.problem
        assert full is not None
        problem = full
        solution = greedy.solve(problem) if decision.solver == "greedy" else cpsat.solve(problem, params)
    if not solution.feasible:
        return []
    return sorted(v.job for v in named_victims(cluster, problem, solution) if v.job in shielded)
