"""The reduced path of a decision: units, options, selection, then the problem restricted to the units kept.

Applies when the chunk is one kind of task, all required (preempt, reclaim, or
a gang that must start whole), moves are not considered
(:attr:`~gpu_preempt.formulate.builder.Prepared.moves_possible`: a move lands on
free room of another node, which binds units together), and no topology domain is
to be chosen or counted (that binds units too).
:func:`reduce_prepared` returns ``None`` when it does not apply; otherwise the
problem over the kept units' candidates and nodes
(:meth:`Reduction.problem`), which :func:`gpu_preempt.actions.reduced_path.solve_reduced`
solves without the rows that bind units together (queue limits, the reclaim
line, the saturation rule). Its answer is the canonical optimum of the problem
without those rows (:mod:`.select`); when it satisfies them, it is the canonical
optimum of the whole problem, otherwise the caller solves the full model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from gpu_preempt.formulate.builder import Prepared
from gpu_preempt.problem.records import Problem

from .hosts import DeviceView
from .losses import TooComplex
from .select import select
from .units import CostModel, Unit, build_units

__all__ = ["Reduced", "Reduction", "reduce_prepared"]


@dataclass
class Reduced:
    """What the reductions kept, and where the time went (milliseconds), for reports."""

    units: int
    kept: int
    enumerated: int
    dropped: int
    reduce_ms: float = 0.0
    solve_ms: float = 0.0
    victims: int = 0


@dataclass
class Reduction:
    """A prepared decision reduced to the units that can matter."""

    prepared: Prepared
    units: list[Unit]
    report: Reduced

    def problem(self) -> Problem:
        """The problem over the kept units' candidates and nodes only."""
        candidates = self.prepared.candidates.candidates  # type: ignore[union-attr]
        chosen = sorted(
            {v.candidate for u in self.units for v in (*u.spanning, *(x for vs in u.local.values() for x in vs))}
        )
        nodes = self.prepared.cluster.snapshot.nodes
        only = {nodes[n].name for u in self.units for n in u.nodes}
        self.report.victims = len(chosen)
        return self.prepared.build(chosen=[candidates[i] for i in chosen], only_nodes=only)


def reduce_prepared(prepared: Prepared) -> Reduction | None:
    """``prepared`` reduced to the units that can matter, or ``None`` if the reductions do not apply."""
    if prepared.candidates is None or not prepared.chunk or not all(required for _, required in prepared.chunk):
        return None
    if prepared.moves_possible or prepared.where.constrained:
        return None
    ordered = prepared.cluster.snapshot.ordered_jobs()
    if ordered and any(c.job in ordered for c in prepared.candidates.candidates):
        return None  # docs/rules.md, "Task order": which surplus tasks go is fixed; the full model counts them
    job = prepared.job
    requests = [job.requests(task) for task, _ in prepared.chunk]
    if any(r != requests[0] for r in requests):
        return None
    request = {r: a for r, a in requests[0].items() if a > 0}
    if not request:
        return None
    resources = tuple(sorted(request))
    needed = len(prepared.chunk)
    cluster = prepared.cluster
    objective = tuple(c for c in cluster.snapshot.config.objective if c != "moves")  # nothing moves on this path
    costs = CostModel(objective, prepared.levels, cluster.now, cluster)
    if cluster.has_shares():  # docs/snapshot-format.md, "GPU sharing": options are counted on the devices
        costs = replace(costs, devices=DeviceView.of(cluster, job.resolved_priority, request, job.gpu_devices))
    started = time.perf_counter()
    try:
        found = prepared.candidates
        units, dropped = build_units(
            cluster,
            found.candidates,
            request,
            resources,
            job.resolved_priority,
            found.rows,
            prepared.where.mask,
            job.gpu_devices,
        )
        selection = select(units, needed, request, resources, costs)
    except TooComplex:
        return None
    report = Reduced(selection.scanned, len(selection.units), selection.enumerated, dropped)
    report.reduce_ms = (time.perf_counter() - started) * 1000
    return Reduction(prepared, selection.units, report)
