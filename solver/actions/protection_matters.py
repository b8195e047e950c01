"""The protected jobs that matter to a decision: those its optimum would have taken but for their protection.

A decision on a large cluster shields tens of thousands of running jobs, most of which no optimum would touch. The
ones that matter are found by deciding again with the protections of single jobs lifted (non-preemptible,
min-runtime, toleration: each such job becomes a candidate that may lose all its tasks) and reading which of them
that optimum takes. The reclaim line (``guarantee``) protects queues, not jobs, and is not lifted
(docs/snapshot-format.md, "Commands and output"). Of many shielded jobs, the :data:`MOST_LIFTED` an optimum would
reach first are lifted (lowest priority, then fewest running tasks: the objective's first terms), so that the
second decision stays as small as the first.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpu_preempt import cpsat
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.formulate.builder import Prepared, prepare
from gpu_preempt.models import Job
from gpu_preempt.models.decision import Decision
from gpu_preempt.problem.records import Action
from gpu_preempt.rules.candidates import Candidate
from gpu_preempt.state.cluster import ClusterState

from . import greedy
from .job_solver import LastPrepared, named_victims
from .reduced_path import solve_reduced

__all__ = ["LIFTED", "MOST_LIFTED", "taken_but_for_protection"]

LIFTED = ("non-preemptible", "min-runtime", "toleration")
"""The protections of single jobs that are lifted to find the jobs that matter."""
MOST_LIFTED = 200
"""The most shielded jobs lifted at once."""


def taken_but_for_protection(cluster: ClusterState, job: Job, decision: Decision) -> list[str]:
    """The jobs a protection of :data:`LIFTED` shielded from ``decision`` (of ``job``, in ``cluster``) that its
    optimum takes once those protections are lifted, by name; empty when nothing was shielded or the decision is
    not one of reclaim or preempt."""
    if decision.action not in ("reclaim", "preempt") or decision.outcome == "skipped" or not decision.protected:
        return []
    action: Action = "reclaim" if decision.action == "reclaim" else "preempt"
    prepared = cluster.for_state(LastPrepared).of(job.name, action)
    if prepared is None:
        prepared = prepare(cluster, cluster.snapshot.job(job.name), action)
    found = prepared.candidates
    if prepared.skip is not None or found is None or prepared.kueue is not None:
        return []
    shielded = {p.job for p in decision.protected if p.rule in LIFTED}
    if not shielded:
        return []
    counts, columns = cluster.running_counts(), cluster.job_columns()
    rows = cluster.job_positions(sorted(shielded))
    if len(rows) > MOST_LIFTED:  # the objective's first terms: priority, jobs, tasks, then the work lost
        since = np.nan_to_num(columns.started[rows], nan=-np.inf).tolist()
        running = [counts[columns.names[r]] for r in rows]
        order = sorted(zip(columns.priority[rows].tolist(), running, [-t for t in since], rows, strict=True))
        rows = sorted(r for *_, r in order[:MOST_LIFTED])
    names = [columns.names[r] for r in rows]
    lifted = [
        Candidate(name, counts[name], max(0, counts[name] - int(columns.minimum[r])), True)
        for name, r in zip(names, rows, strict=True)
    ]
    shielded = set(names)
    keep = [i for i, c in enumerate(found.candidates) if c.job not in shielded]
    together = [found.candidates[i] for i in keep] + lifted
    positions = None
    if found.rows is not None:
        positions = np.concatenate([found.rows[keep], np.array(rows, dtype=np.int64)])
    priorities = None if found.priorities is None else found.priorities | set(columns.priority[rows].tolist())
    again = dataclasses.replace(found, candidates=together, rows=positions, priorities=priorities)
    retried = Prepared(cluster, prepared.job, action, prepared.chunk, prepared.required, again)
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
