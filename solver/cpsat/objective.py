"""The lexicographic objective: one stage per criterion, most important first.

Stage order: first place as many optional tasks as possible (growth by
``allocate``; no stage when the chunk has none), then bring each best-effort
row (``problem.excess``, docs/rules.md, "Quota enforcement") as close to holding as possible, one stage
per row, then ``config.objective``:

* ``priority``: one stage per victim priority level, highest first: the count
  of victim jobs at that level (never evict a higher-priority job where lower
  ones suffice);
* ``jobs``: victim jobs; ``tasks``: evicted tasks;
* ``lost_work``: evicted and moved tasks' GPUs times the time since the job's last checkpoint or start
  (milliseconds; a moved task restarts: docs/snapshot-format.md, "Moves");
* ``lost_cpu_work`` (right after ``lost_work``): the same for victims without GPUs, their CPU for their GPUs (no
  stage when no victim is such a job);
* ``moves``: moved tasks (when the list does not name it, it comes after every criterion below);

then the least freed of each ``problem.least_freed`` row (quota enforcement's
choice among equal sets, docs/rules.md, "Quota enforcement"), and, unless ordered above, the fewest moved
tasks (docs/snapshot-format.md, "Moves"), then, for a preferred topology, the fewest domains of its level the job
uses (docs/rules.md, "Placement"). Stages whose
expression is constant (no victims) are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Literal

from ortools.sat.python import cp_model

from gpu_preempt.problem.records import cpu_milli_without_gpus, gpu_milli

from .variables import LinearExpr, Variables

__all__ = ["LIMIT", "Stage", "fold", "folded", "stages", "unfold"]


@dataclass(frozen=True)
class Stage:
    name: str
    expr: LinearExpr
    sense: Literal["min", "max"]
    bound: int
    """The largest value ``expr`` can take (it is never negative): what folding stages needs."""


def stages(variables: Variables) -> list[Stage]:
    problem = variables.problem
    out: list[Stage] = []
    if any(chunk.optional for chunk in problem.chunk) and variables.place:
        out.append(
            Stage(
                "placed",
                cp_model.LinearExpr.sum(list(variables.place.values())),
                "max",
                sum(variables.place_bound.values()),
            )
        )
    for k, row in enumerate(problem.excess):
        out.append(Stage(f"excess {row.queue} {row.resource}", variables.excess[k], "min", variables.excess_bound[k]))
    if not problem.victims:
        return out + _domains(variables)
    victims = range(len(problem.victims))
    slots = [(v, s) for v in victims for s in range(len(problem.victims[v].slots))]
    count = {(v, s): problem.victims[v].slots[s].count for v, s in slots}
    for criterion in problem.objective:
        if criterion == "priority":
            for level in problem.priority_levels:
                at_level = [variables.victim[v] for v in victims if problem.victims[v].priority == level]
                out.append(Stage(f"priority {level}", cp_model.LinearExpr.sum(at_level), "min", len(at_level)))
        elif criterion == "jobs":
            out.append(
                Stage("jobs", cp_model.LinearExpr.sum([variables.victim[v] for v in victims]), "min", len(victims))
            )
        elif criterion == "tasks":
            total = sum(count.values())
            out.append(
                Stage("tasks", cp_model.LinearExpr.sum([variables.evicted(v, s) for v, s in slots]), "min", total)
            )
        elif criterion in ("lost_work", "lost_cpu_work"):
            # a task moved loses its progress as one evicted does (a moved gang moves, and restarts, whole)
            weight = gpu_milli if criterion == "lost_work" else cpu_milli_without_gpus
            weighted = [
                (v, s, weight(problem.victims[v].slots[s].requests) * problem.victims[v].elapsed_ms) for v, s in slots
            ]
            unit = gcd(*(w for _, _, w in weighted)) or 1  # whole GPUs: the same weights as GPU-milliseconds
            weighted = [(v, s, w // unit) for v, s, w in weighted]
            terms = [(variables.evicted(v, s) + variables.moved_out(v, s)) * w for v, s, w in weighted if w > 0]
            if terms:
                bound = sum(count[v, s] * w for v, s, w in weighted if w > 0)
                out.append(Stage(criterion, cp_model.LinearExpr.sum(terms), "min", bound))
        elif criterion == "moves":
            out.extend(_moves(variables))
    for row in problem.least_freed:
        bound = variables.max_freed(row.victims, row.resource)
        out.append(Stage(f"freed {row.resource}", variables.freed(row.victims, row.resource), "min", bound))
    if "moves" not in problem.objective:
        out.extend(_moves(variables))
    return out + _domains(variables)


def _moves(variables: Variables) -> list[Stage]:
    """The moved tasks: where ``config.objective`` puts ``moves``, else below every other criterion."""
    if not variables.move:
        return []
    bound = sum(variables.problem.victims[v].slots[s].count for v, s, _ in variables.move)
    return [Stage("moves", variables.moved(), "min", bound)]


def _domains(variables: Variables) -> list[Stage]:
    if not variables.spread:
        return []
    return [Stage("domains", cp_model.LinearExpr.sum(list(variables.spread.values())), "min", len(variables.spread))]


LIMIT = 2**62
"""Folded objectives stay below this, so CP-SAT's 64-bit arithmetic never overflows."""


def fold(plan: list[Stage]) -> list[list[Stage]]:
    """Consecutive minimising stages grouped so that each group can be one weighted objective below ``LIMIT``.

    A group's objective is ``sum(weight_k * stage_k)`` with ``weight_k`` the product of ``bound + 1`` of the stages
    after ``k``: each weight exceeds the largest total the later stages can reach, so its optimum is the
    lexicographic one, and each stage's value is read back by :func:`unfold`.
    """
    groups: list[list[Stage]] = []
    for stage in plan:
        last = groups[-1] if groups else None
        if last is not None and stage.sense == "min" and last[0].sense == "min" and _reach([*last, stage]) < LIMIT:
            last.append(stage)
        else:
            groups.append([stage])
    return groups


def folded(group: list[Stage]) -> LinearExpr:
    """The weighted objective of a group from :func:`fold`."""
    if len(group) == 1:
        return group[0].expr
    weight, terms = 1, []
    for stage in reversed(group):
        terms.append(stage.expr * weight)
        weight *= stage.bound + 1
    return cp_model.LinearExpr.sum(terms)


def unfold(group: list[Stage], value: int) -> list[int]:
    """Each stage's value from the optimum of :func:`folded` (mixed radix, the last stage the least significant)."""
    if len(group) == 1:
        return [value]
    values = []
    for stage in reversed(group):
        value, digit = divmod(value, stage.bound + 1)
        values.append(digit)
    return values[::-1]


def _reach(group: list[Stage]) -> int:
    reach = 1
    for stage in group:
        reach *= stage.bound + 1
    return reach - 1
