"""Quota enforcement through preemption (docs/rules.md, "Quota enforcement"): bring a queue whose limit was lowered
back within it.

**When.** A queue is enforced when ``config.quota_preemption_enabled`` is true,
its ``quota_preemption_delay`` is positive (0, the default, means never: running
work ends naturally), ``limit_changed_at`` is set, ``now >= limit_changed_at +
quota_preemption_delay`` (the timer restarts at every change: ``limit_changed_at``
is the time of the last one), and its usage is above its limit in at least one
resource.

**Usage** is what the queue holds: running, allocated and pipelined tasks of
its subtree. Releasing tasks no longer count (YuniKorn's ``allocated -
preempting``). A resource is *over* when usage exceeds a finite limit; only
over resources are targets (the design's "preemptable resources", docs/rules.md, "Quota enforcement", computed as
``subOnlyExisting(max, usage)``: types the limit does not name are ignored).

**Victims.** Running jobs of the queue's leaves that use at least one over
resource. A job loses all its running tasks or only tasks above
``min_available`` (elastic surplus). ``preemptible: false`` protects a job;
min-runtime (docs/rules.md, "Min-runtime") and preemption toleration (docs/rules.md, "Preemption toleration") do not:
both
weigh a victim against a preemptor's claim, and here there is none: an
administrator's limit, with its own delay as the grace period.

**Rule.** After the eviction the queue's usage is within its limit in every
over resource, and no queue at any level (the enforced queue, its ancestors,
every queue below it) is taken below ``min(usage, deserved)`` in any resource
whose ``deserved`` is finite. For a parent queue the model chooses the victims
across all its children at once; the guarantee rows make sure no child loses
more than its *releasable* amount (usage above its guaranteed quota), which is
the bound the design's proportional split (docs/rules.md, "Quota enforcement") respects, without its rounding and
without the split's arbitrary shares.

**Loss.** The least disruptive such set under ``config.objective`` (the same
staged CP-SAT objective and tie-breaks as preempt and reclaim). Usage may end
below the limit when the victims' sizes do not add up exactly (YuniKorn's
greedy packing never overshoots and may stop short instead).

**Loss among equals.** After the objective, the set that frees the least
beyond what is over the limit, one resource at a time (GPUs first, then by
name), so that CPU and memory count as much as GPUs.

**Candidates.** A job is not a candidate when a queue whose guarantee its
eviction would lower (on its path, under or above the enforced queue) holds no
more than its guarantee in a resource all its tasks use: then any eviction of it
would break that guarantee (spec: only queues holding more than their guarantee
count).

**Preemption does not help.** When no allowed set suffices: with
``config.quota_miss`` > 0, the set that comes closest to the limit (one stage
per over resource, GPUs first, then by name), then least disruptive, is evicted
if it leaves every over resource within ``limit * (1 + quota_miss)``
(``partial``); with ``quota_miss: best_effort`` that set is evicted whatever
remains, as YuniKorn always does; otherwise nothing is evicted (``infeasible``).
The reason gives the numbers either way.

The timer is :mod:`gpu_preempt.rules.quota_timer`, CP-SAT's first hint
:mod:`gpu_preempt.actions.quota_hint`, the output :mod:`gpu_preempt.models.quota_decision` and the
independent check :mod:`gpu_preempt.check.quota_verifier`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from fractions import Fraction

from gpu_preempt import cpsat
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.cpsat.search import ModelError, too_large
from gpu_preempt.models import (
    MILLI,
    Job,
    Resources,
    SolverConfig,
    Task,
    format_quantity,
    format_resources,
    is_gpu_resource,
)
from gpu_preempt.models.config import criteria
from gpu_preempt.models.decision import Outcome, Protected
from gpu_preempt.models.quota_decision import QuotaDecision, QuotaResource
from gpu_preempt.problem.records import GuaranteeRow, LimitRow, Problem, Slot, Victim
from gpu_preempt.problem.solution import Solution, freed, objective_values
from gpu_preempt.rules.quota_timer import due_time, not_due
from gpu_preempt.rules.requeue import evicted_states
from gpu_preempt.rules.victim_order import keep_order
from gpu_preempt.state.cluster import ClusterState

from .job_solver import named_victims
from .quota_hint import greedy_hint

__all__ = [
    "QUOTA_ACTION",
    "enforce",
    "enforcement_order",
    "enforcement_problem",
    "over_limit",
    "resource_order",
    "tolerated",
]

QUOTA_ACTION = "enforce-quota"


def resource_order(resource: str) -> tuple[bool, str]:
    """GPUs first, then by name: the order of best-effort stages and of reports."""
    return (not is_gpu_resource(resource), resource)


def over_limit(cluster: ClusterState, queue: str) -> dict[str, tuple[int, int]]:
    """Resource -> (usage, limit) for every resource where ``queue`` holds more than its finite limit."""
    spec = cluster.tree.queue(queue)
    held = cluster.usage[queue].allocated
    over = {}
    for resource in sorted(spec.limit, key=resource_order):
        limit = spec.limit_of(resource)
        if limit is not None and held.get(resource, 0) > limit:
            over[resource] = (held.get(resource, 0), limit)
    return over


def tolerated(resource: str, limit: int, miss: float) -> int:
    """``floor(limit * (1 + miss))``, exactly (``miss`` read as the decimal it was written as); whole GPUs."""
    bound = limit + int(Fraction(str(miss)) * limit)
    return bound - bound % MILLI if is_gpu_resource(resource) else bound


def enforcement_order(cluster: ClusterState) -> list[str]:
    """Queues over their limit, deepest first (docs/rules.md, "Quota enforcement": leaves before parents), then in
    document order.

    Enforcing a child first lowers its parent's usage, which may bring the parent within its own limit.
    """
    tree = cluster.tree
    queues = tree.queues()
    position = {q: i for i, q in enumerate(queues)}
    over = [q for q in queues if over_limit(cluster, q)]
    return sorted(over, key=lambda q: (-len(tree.upward(q)), position[q]))


def enforce(cluster: ClusterState, queue: str) -> QuotaDecision:
    """Decide ``enforce-quota`` for ``queue`` in the state ``cluster``."""
    start = time.perf_counter()
    decision = _enforce(cluster, queue)
    decision.requeue = evicted_states(cluster.snapshot, decision)
    decision.solve_ms = (time.perf_counter() - start) * 1000
    return decision


def enforcement_problem(cluster: ClusterState, queue: str) -> Problem:
    """The exact problem of bringing ``queue`` within its limit: usage at most the limit in every over resource."""
    over = over_limit(cluster, queue)
    victims, _ = _candidates(cluster, queue, over)
    guarantees = _guarantee_rows(cluster, queue, victims)
    return _problem(cluster, queue, victims, guarantees, bounds={r: limit for r, (_, limit) in over.items()})


def _enforce(cluster: ClusterState, queue: str) -> QuotaDecision:
    config = cluster.snapshot.config
    fraction = config.miss_fraction
    over = over_limit(cluster, queue)
    resources = {
        r: QuotaResource(used, limit, used if fraction is None else tolerated(r, limit, fraction), used)
        for r, (used, limit) in over.items()
    }
    result = QuotaDecision(
        "",
        QUOTA_ACTION,
        "skipped",
        queue=queue,
        due=due_time(cluster, queue),
        miss=config.quota_miss,
        resources=resources,
    )
    if not over:
        result.reason = f"queue {queue} is within its limit"
        return result
    waiting = not_due(cluster, queue)
    if waiting is not None:
        result.reason = waiting
        return result
    budget = _Budget.of(config.solver)
    victims, protected = _candidates(cluster, queue, over)
    result.protected, result.candidates = protected, len(victims)
    guarantees = _guarantee_rows(cluster, queue, victims)
    if config.quota_overshoot == "never":
        return _within_excess(cluster, result, queue, over, victims, guarantees, protected, budget)
    exact = _problem(cluster, queue, victims, guarantees, bounds={r: limit for r, (_, limit) in over.items()})
    found = budget.solve(exact)
    if found.feasible:
        return _filled(cluster, result, exact, found, "enforced")
    if found.status == "unknown":
        result.outcome, result.reason = "unknown", found.reason or "time limit reached before an answer or a proof"
        return result
    closest = _problem(cluster, queue, victims, guarantees, bounds=None, best_effort=over)
    nearest = budget.solve(closest)
    partial: Problem | None = None
    if fraction is None:  # best_effort: the closest allowed set, whatever remains
        partial, found = closest, nearest
    elif fraction > 0:  # the closest allowed set, if within the tolerated bound
        bounds = {r: tolerated(r, limit, fraction) for r, (_, limit) in over.items()}
        partial = _problem(cluster, queue, victims, guarantees, bounds=bounds, best_effort=over)
        found = budget.solve(partial)
    if partial is not None:
        if found.feasible and found.victims():
            result.reason = _does_not_help(queue, over, victims, guarantees, protected, partial, found, fraction)
            return _filled(cluster, result, partial, found, "partial")
        if found.status == "unknown":
            result.outcome, result.reason = "unknown", found.reason
            return result
    result.outcome = "infeasible"
    result.reason = _does_not_help(queue, over, victims, guarantees, protected, closest, nearest, fraction)
    return result


def _within_excess(
    cluster: ClusterState,
    result: QuotaDecision,
    queue: str,
    over: dict[str, tuple[int, int]],
    victims: tuple[Victim, ...],
    guarantees: tuple[GuaranteeRow, ...],
    protected: list[Protected],
    budget: _Budget,
) -> QuotaDecision:
    """``quota_overshoot: never`` (YuniKorn's enforcement, docs/rules.md, "Quota enforcement"): free at most the
    excess in every over resource (a row per resource: ``freed <= usage - limit``); among such sets the one closest to
    the limit (GPUs first), then the least disruptive. ``partial`` when it leaves some resource above its limit."""
    everyone = tuple(range(len(victims)))
    ceilings = tuple(GuaranteeRow(queue, r, used, limit, "limit", everyone) for r, (used, limit) in over.items())
    problem = _problem(cluster, queue, victims, guarantees + ceilings, bounds=None, best_effort=over)
    found = budget.solve(problem)
    if found.status == "unknown":
        result.outcome, result.reason = "unknown", found.reason or "time limit reached before an answer or a proof"
        return result
    remains = {
        r: used - freed(problem, found, everyone, r) - limit if found.feasible else used - limit
        for r, (used, limit) in over.items()
    }
    above = "; ".join(f"{r}: {format_quantity(r, left)} left above the limit" for r, left in remains.items() if left)
    if found.feasible and found.victims():
        outcome: Outcome = "partial" if any(remains.values()) else "enforced"
        if outcome == "partial":
            result.reason = f"quota_overshoot never: the closest set that frees no more than the excess; {above}"
        return _filled(cluster, result, problem, found, outcome)
    result.outcome = "infeasible"
    held = f"; held back by {len(protected)} non-preemptible or guaranteed job(s)" if protected else ""
    result.reason = (
        f"quota_overshoot never: every allowed victim would take queue {queue} below its limit; {above}{held}"
    )
    return result


def _filled(
    cluster: ClusterState, result: QuotaDecision, problem: Problem, solution: Solution, outcome: Outcome
) -> QuotaDecision:
    """Fill ``result`` with the victims of ``solution``, its objective and the usage it leaves."""
    result.outcome = outcome
    result.optimal = solution.status == "optimal"
    result.victims = named_victims(cluster, problem, solution)
    result.objective = objective_values(problem, solution)
    result.priority_levels = list(problem.priority_levels)
    everyone = tuple(range(len(problem.victims)))
    for r, entry in result.resources.items():
        after = entry.usage - freed(problem, solution, everyone, r)
        result.resources[r] = QuotaResource(entry.usage, entry.limit, entry.tolerated, after)
    return result


@dataclass(frozen=True)
class _Budget:
    """What is left of a queue decision's budget: ``config.solver.time_limit`` covers every solve of it (one worker
    with the full LP, which proves these covering problems; a 2-worker portfolio did not)."""

    params: SolveParams
    deadline: float

    @classmethod
    def of(cls, solver: SolverConfig) -> _Budget:
        params = replace(SolveParams.of(solver), workers=1, full_linearization=True)
        return cls(params, time.perf_counter() + params.time_limit)

    def solve(self, problem: Problem) -> Solution:
        """Solve within what is left; on the ``work`` clock each solve has the whole budget, so that none depends on
        the machine."""
        params = self.params
        if params.clock == "wall":
            remaining = self.deadline - time.perf_counter()
            if remaining <= 0:
                return Solution("unknown", reason="time limit reached before an answer or a proof")
            params = replace(params, time_limit=remaining)
        try:
            return cpsat.solve(problem, params, hint=greedy_hint(problem))
        except ModelError as error:
            return Solution("unknown", reason=too_large(error))


def _jobs_under(cluster: ClusterState, queue: str) -> list[Job]:
    leaves = set(cluster.tree.leaves_under(queue))
    return [job for job in cluster.snapshot.jobs if job.queue in leaves and cluster.running_count(job) > 0]


def _candidates(
    cluster: ClusterState, queue: str, over: dict[str, tuple[int, int]]
) -> tuple[tuple[Victim, ...], list[Protected]]:
    """Running jobs under ``queue`` holding some over resource; non-preemptible ones, and those whose eviction
    would take a queue at its guarantee below it, are protected."""
    index = {node.name: i for i, node in enumerate(cluster.snapshot.nodes)}
    guarded = set(_guarded_queues(cluster, queue))
    victims: list[Victim] = []
    protected: list[Protected] = []
    for job in _jobs_under(cluster, queue):
        running = cluster.tasks(job, "running")
        held: Resources = {}
        for task in running:
            for r, a in job.requests(task).items():
                if r in over and a > 0:
                    held[r] = held.get(r, 0) + a
        if not held:
            continue
        if not job.is_preemptible:
            reason = f"not preemptible; holds {format_resources(held)} of queue {job.queue}"
            protected.append(Protected(job.name, "non-preemptible", None, reason))
            continue
        at_guarantee = _at_guarantee(cluster, job, running, guarded)
        if at_guarantee is not None:
            protected.append(Protected(job.name, "guarantee", None, at_guarantee))
            continue
        victims.append(_victim(cluster, job, index))
    return tuple(victims), protected


def _at_guarantee(cluster: ClusterState, job: Job, running: list[Task], guarded: set[str]) -> str | None:
    """Why any eviction of ``job`` would take a guarded queue below its guarantee, or ``None``: a queue on its path
    holds no more than its finite ``deserved`` in a resource every running task of the job uses."""
    used = [r for r in job.requests(running[0]) if all(job.requests(t).get(r, 0) > 0 for t in running)]
    for name in cluster.tree.upward(job.queue):
        if name not in guarded:
            continue
        spec, holding = cluster.tree.queue(name), cluster.usage[name].allocated
        for r in sorted(used, key=resource_order):
            deserved = spec.quota_of(r)
            if deserved is not None and holding.get(r, 0) <= deserved:
                shown = format_quantity(r, holding.get(r, 0))
                return f"queue {name} holds {shown} {r}, no more than its guaranteed {format_quantity(r, deserved)}"
    return None


def _victim(cluster: ClusterState, job: Job, index: dict[str, int]) -> Victim:
    running = cluster.tasks(job, "running")
    slots: dict[tuple[int, tuple[tuple[str, int], ...], bool, int], list[str]] = {}
    for task in reversed(running):  # evict-first order: newest task first; by task order (docs/rules.md, "Task order")
        node = index[str(cluster.node_of[str(task.name)])]
        key = (node, tuple(sorted(job.requests(task).items())), task.order is not None, task.order or 0)
        slots.setdefault(key, []).append(str(task.name))
    since = job.progress_since  # the lost-work clock
    elapsed = 0 if since is None else max(0, round((cluster.now - since) * 1000))
    return Victim(
        job=job.name,
        queue=job.queue,
        priority=job.resolved_priority,
        whole_job=True,
        surplus=max(0, len(running) - job.gang_minimum),
        slots=tuple(
            Slot(node, dict(req), tuple(tasks), order=order if ordered else None)
            for (node, req, ordered, order), tasks in sorted(slots.items())
        ),
        elapsed_ms=elapsed,
    )


def _members(cluster: ClusterState, queue: str, victims: tuple[Victim, ...]) -> tuple[int, ...]:
    inside = set(cluster.tree.leaves_under(queue))
    return tuple(v for v, victim in enumerate(victims) if victim.queue in inside)


def _guarded_queues(cluster: ClusterState, queue: str) -> list[str]:
    """The enforced queue, its ancestors and every queue below it: all whose usage the eviction lowers."""
    tree = cluster.tree
    return [q for q in tree.queues() if q in tree.upward(queue) or queue in tree.upward(q)]


def _guarantee_rows(cluster: ClusterState, queue: str, victims: tuple[Victim, ...]) -> tuple[GuaranteeRow, ...]:
    """Per guarded queue and resource with a finite ``deserved``: take at most ``usage - min(usage, deserved)``."""
    rows = []
    for name in _guarded_queues(cluster, queue):
        spec = cluster.tree.queue(name)
        members = _members(cluster, name, victims)
        if not members:
            continue
        held = cluster.usage[name].allocated
        for resource in sorted(spec.deserved, key=resource_order):
            deserved = spec.quota_of(resource)
            if deserved is None:
                continue
            row = GuaranteeRow(name, resource, held.get(resource, 0), deserved, "deserved", members)
            most = sum(s.count * s.requests.get(resource, 0) for v in members for s in victims[v].slots)
            if most > row.max_take:
                rows.append(row)
    return tuple(rows)


def _problem(
    cluster: ClusterState,
    queue: str,
    victims: tuple[Victim, ...],
    guarantees: tuple[GuaranteeRow, ...],
    *,
    bounds: dict[str, int] | None,
    best_effort: dict[str, tuple[int, int]] | None = None,
) -> Problem:
    """The victim problem: ``usage - freed <= bound`` per over resource; ``best_effort`` adds excess stages."""
    held = cluster.usage[queue].allocated
    everyone = tuple(range(len(victims)))
    limits = tuple(
        LimitRow(queue, r, bound - held.get(r, 0), everyone, "limit", bound) for r, bound in (bounds or {}).items()
    )
    excess = tuple(
        LimitRow(queue, r, limit - used, everyone, "limit", limit) for r, (used, limit) in (best_effort or {}).items()
    )
    over = sorted(bounds or best_effort or {}, key=resource_order)
    overshoot = tuple(LimitRow(queue, r, 0, everyone, "overshoot", 0) for r in over)
    config = cluster.snapshot.config
    return Problem(
        job=queue,
        action="enforce-quota",
        nodes=(),
        chunk=(),
        victims=victims,
        limits=limits,
        guarantees=guarantees,
        objective=criteria(config.objective),
        keep_order=keep_order(cluster, [victim.job for victim in victims]),
        excess=excess,
        least_freed=overshoot,
    )


def _does_not_help(
    queue: str,
    over: dict[str, tuple[int, int]],
    victims: tuple[Victim, ...],
    guarantees: tuple[GuaranteeRow, ...],
    protected: list[Protected],
    problem: Problem,
    solution: Solution,
    miss: float | None,
) -> str:
    """ "Preemption does not help", in numbers: the target, how close allowed victims come, and what holds them back.

    ``miss`` is ``quota_miss`` as a fraction, ``None`` for ``best_effort``.
    """
    everyone = tuple(range(len(victims)))
    parts = []
    for r, (used, limit) in over.items():
        line = f"{r}: uses {format_quantity(r, used)}, limit {format_quantity(r, limit)} "
        line += f"({format_quantity(r, used - limit)} to free)"
        if solution.feasible:
            after = used - freed(problem, solution, everyone, r)
            line += f", the closest allowed victims reach {format_quantity(r, after)}"
        if miss is None:
            line += " (quota_miss best_effort: the closest set is evicted)"
        elif miss > 0:
            line += f", tolerated with quota_miss {miss:g}: {format_quantity(r, tolerated(r, limit, miss))}"
        parts.append(line)
    held_back = []
    if solution.feasible:
        for row in guarantees:
            if row.resource in over and freed(problem, solution, row.victims, row.resource) >= row.max_take:
                kept = format_quantity(row.resource, min(row.held, row.threshold or 0))
                held_back.append(f"queue {row.queue} keeps its guaranteed {row.resource} {kept} (deserved)")
    if protected:
        names = ", ".join(p.job for p in protected[:5])
        names += f" and {len(protected) - 5} more" if len(protected) > 5 else ""
        held_back.append(f"{len(protected)} non-preemptible job(s) ({names})")
    if not victims:
        held_back.append("no preemptible running job holds the over-limit resources")
    text = f"preemption does not help: queue {queue} cannot be brought within its limit; " + "; ".join(parts)
    if held_back:
        text += "; held back by: " + ", ".join(held_back)
    return text
