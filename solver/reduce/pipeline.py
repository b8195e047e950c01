"""The reduced path of a decision: units, options, selection, then the units kept as a restriction.

The reductions read a :class:`Demand` (what one decision asks, as data: the
state, the candidates, the chunk's requests, where its tasks may go) and return a
:class:`Restriction` (the candidates and nodes that can matter), which the job
solver hands back to the formulation to write the restricted problem. They apply
when the chunk is one kind of task, all required (preempt, reclaim, or a gang
that must start whole), moves are not considered (a move lands on free room of
another node, which binds units together), and no topology domain is to be chosen
or counted (that binds units too); :func:`restrict` returns ``None`` otherwise.
The restricted problem is solved without the rows that bind units together (queue
limits, the reclaim line, the saturation rule). Its answer is the canonical
optimum of the problem without those rows (:mod:`.select`); when it satisfies
them, it is the canonical optimum of the whole problem, otherwise the caller
solves the full model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from gpu_preempt.models import Job, Resources
from gpu_preempt.models.config import criteria
from gpu_preempt.rules.candidates import Candidate, CandidateSet
from gpu_preempt.state.cluster import ClusterState

from .hosts import DeviceView
from .losses import TooComplex
from .select import select
from .units import CostModel, build_units

__all__ = ["Demand", "Reduced", "Restriction", "restrict"]


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


@dataclass(frozen=True)
class Demand:
    """What the reductions read of one decision: the pending ``job``, its ``candidates`` and the ``requests`` of its
    chunk's tasks with whether each is required, the nodes its new tasks may use (``mask``, by node index) and
    whether a topology constrains them, whether moves are considered, and the objective's priority ``levels``."""

    cluster: ClusterState
    job: Job
    candidates: CandidateSet | None
    requests: tuple[tuple[Resources, bool], ...]
    mask: np.ndarray
    constrained: bool
    moves_possible: bool
    levels: tuple[int, ...]


@dataclass
class Restriction:
    """The candidates and the nodes (by name) that can matter to a decision, and what the reductions kept."""

    candidates: list[Candidate]
    nodes: set[str]
    report: Reduced
    ordered: bool = False
    """Some kept candidate orders its tasks (docs/rules.md, "Task order"), which the reductions do not read: they
    are exact for the problem without the order, so an answer that keeps the order anyway is exact for both."""


def restrict(demand: Demand) -> Restriction | None:
    """``demand`` restricted to the units that can matter, or ``None`` if the reductions do not apply."""
    found = demand.candidates
    if found is None or not demand.requests or not all(required for _, required in demand.requests):
        return None
    if demand.moves_possible or demand.constrained:
        return None
    cluster = demand.cluster
    job = demand.job
    requests = [r for r, _ in demand.requests]
    if any(r != requests[0] for r in requests):
        return None
    request = {r: a for r, a in requests[0].items() if a > 0}
    if not request:
        return None
    resources = tuple(sorted(request))
    objective = tuple(c for c in criteria(cluster.snapshot.config.objective) if c != "moves")  # nothing moves here
    costs = CostModel(objective, demand.levels, cluster.now, cluster)
    if cluster.has_shares():  # docs/snapshot-format.md, "GPU sharing": options are counted on the devices
        costs = replace(costs, devices=DeviceView.of(cluster, job.resolved_priority, request, job.gpu_devices))
    started = time.perf_counter()
    try:
        units, dropped = build_units(
            cluster,
            found.candidates,
            request,
            resources,
            job.resolved_priority,
            found.rows,
            demand.mask,
            job.gpu_devices,
        )
        selection = select(units, len(demand.requests), request, resources, costs)
    except TooComplex:
        return None
    report = Reduced(selection.scanned, len(selection.units), selection.enumerated, dropped)
    report.reduce_ms = (time.perf_counter() - started) * 1000
    kept = selection.units
    chosen = sorted({v.candidate for u in kept for v in (*u.spanning, *(x for vs in u.local.values() for x in vs))})
    nodes = cluster.snapshot.nodes
    report.victims = len(chosen)
    kept_candidates = [found.candidates[i] for i in chosen]
    ordered = cluster.snapshot.ordered_jobs()
    restriction = Restriction(kept_candidates, {nodes[n].name for u in kept for n in u.nodes}, report)
    restriction.ordered = bool(ordered) and any(c.job in ordered for c in kept_candidates)
    return restriction
