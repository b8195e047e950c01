"""The reduced path of a decision: units, options, selection, then the class model's counts back to victims.

Applies when the chunk is one kind of task, all required (preempt, reclaim, or
a gang that must start whole). :func:`reduce_plan` returns ``None`` when it does
not apply; :meth:`Reduction.result` turns the class model's counts (solved by
:func:`gpu_preempt.solver.cpsat.reduced.solve_reduced`) into a problem and its
solution, or ``None`` when that answer breaks a row that binds units together (a
queue limit, the reclaim guarantee, the saturation rule); the caller then solves
the full model. An answer it does return is optimal for the full problem: the
reduced problem is a relaxation with the same optimum as the problem without
those rows, and the answer satisfies them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpu_preempt.solver.problem.builder import Plan
from gpu_preempt.solver.problem.data import Problem, Solution, broken_rows

from .options import Option
from .select import UnitClass, select
from .units import CostModel, TooComplex, Unit, Victim, build_units


@dataclass
class Reduced:
    """What the reductions kept, and where the time went (milliseconds), for reports."""

    units: int
    classes: int
    enumerated: int
    dropped: int
    reduce_ms: float = 0.0
    solve_ms: float = 0.0
    model_vars: int = 0


@dataclass
class Reduction:
    """A plan reduced to unit classes: ``needed`` tasks to host, the classes that may host them."""

    plan: Plan
    classes: list[UnitClass]
    needed: int
    costs: CostModel
    report: Reduced

    def result(self, status: str, counts: dict[tuple[int, int], int]) -> tuple[Problem, Solution, Reduced] | None:
        """The problem and solution for the class model's ``counts`` (``None``: a row binds, solve the full model)."""
        plan = self.plan
        if status in ("infeasible", "unknown"):
            return plan.build(chosen=[], only_nodes=set()), Solution(status), self.report  # type: ignore[arg-type]
        used = _decode(self.classes, counts, self.costs)
        return _as_problem(plan, used, self.needed, status, self.report)


def reduce_plan(plan: Plan) -> Reduction | None:
    """``plan`` reduced to unit classes, or ``None`` if the reductions do not apply."""
    if plan.candidates is None or not plan.chunk or not all(required for _, required in plan.chunk):
        return None
    job = plan.job
    requests = [job.requests(task) for task, _ in plan.chunk]
    if any(r != requests[0] for r in requests):
        return None
    request = {r: a for r, a in requests[0].items() if a > 0}
    if not request:
        return None
    resources = tuple(sorted(request))
    needed = len(plan.chunk)
    cluster = plan.cluster
    costs = CostModel(cluster.snapshot.config.objective, plan.levels, cluster.now)
    started = time.perf_counter()
    try:
        units, dropped = build_units(cluster, plan.candidates.candidates, request, resources, job.resolved_priority)
        selection = select(units, needed, request, resources, costs)
    except TooComplex:
        return None
    report = Reduced(selection.units, len(selection.classes), selection.enumerated, dropped)
    report.model_vars = sum(len(c.options) for c in selection.classes)
    report.reduce_ms = (time.perf_counter() - started) * 1000
    return Reduction(plan, selection.classes, needed, costs, report)


def _decode(
    classes: list[UnitClass], counts: dict[tuple[int, int], int], costs: CostModel
) -> list[tuple[Unit, Option]]:
    """Concrete units for the counts: in each class, the first units (document order) take the largest options."""
    used = []
    for c, unit_class in enumerate(classes):
        levels = sorted(((t, n) for (k, t), n in counts.items() if k == c and n), reverse=True)
        members = iter(unit_class.members)
        for t, n in levels:
            for _ in range(n):
                member = next(members)
                used.append((member, _aligned(unit_class.members[0], unit_class.options[t], member, costs)))
    return sorted(used, key=lambda pair: pair[0].first)


def _aligned(first: Unit, option: Option, member: Unit, costs: CostModel) -> Option:
    """``option`` of the class's first unit, carried over to an identical ``member``."""
    if member is first:
        return option
    (n_first,), (n_member,) = first.nodes, member.nodes
    order_first = first.items(_canonical(first.local.get(n_first, []), costs), costs)
    order_member = member.items(_canonical(member.local.get(n_member, []), costs), costs)
    position = {item.victim: i for i, item in enumerate(order_first)}
    picks = []
    for item, choice in option.picks:
        twin = order_member[position[item.victim]]
        picks.append((twin, twin.choices[item.choices.index(choice)]))
    return Option(option.tasks, option.cost, tuple(picks), tuple((n_member, k) for _, k in option.hosted))


def _canonical(victims: list[Victim], costs: CostModel) -> list[Victim]:
    return sorted(victims, key=lambda v: (v.signature(costs), v.job.name))


def _as_problem(
    plan: Plan, used: list[tuple[Unit, Option]], needed: int, status: str, report: Reduced
) -> tuple[Problem, Solution, Reduced] | None:
    cluster = plan.cluster
    candidates = plan.candidates.candidates  # type: ignore[union-attr]
    taken: dict[int, dict[int, int]] = {}
    hosts: list[tuple[int, int]] = []
    for _, option in used:
        for item, choice in option.picks:
            taken[item.victim] = dict(choice.per_node)
        hosts.extend(option.hosted)
    node_names = [node.name for node in cluster.snapshot.nodes]
    position = {name: n for n, name in enumerate(node_names)}
    chosen = sorted(taken)
    problem = plan.build(chosen=[candidates[i] for i in chosen], only_nodes={node_names[n] for n, _ in hosts})
    index = {room.name: i for i, room in enumerate(problem.nodes)}
    evicted: dict[tuple[int, int], int] = {}
    for v, candidate_index in enumerate(chosen):
        per_node = taken[candidate_index]
        for s, slot in enumerate(problem.victims[v].slots):
            n = position[problem.nodes[slot.node].name]
            if per_node.get(n):
                evicted[v, s] = per_node[n]
    placed: dict[tuple[int, int], int] = {}
    left = needed
    for n, k in hosts:
        take = min(k, left)
        if take:
            key = (0, index[node_names[n]])
            placed[key] = placed.get(key, 0) + take
            left -= take
    solution = Solution(status, evicted=evicted, placed=placed)  # type: ignore[arg-type]
    if left or broken_rows(problem, solution):
        return None
    solution.stages = [f"reduced: {report.units} units, {report.classes} classes, {report.enumerated} enumerated"]
    return problem, solution, report
