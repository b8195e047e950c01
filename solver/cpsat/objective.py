"""The lexicographic objective: one stage per criterion, most important first.

Stage order: first place as many optional tasks as possible (growth by
``allocate``; no stage when the chunk has none), then bring each best-effort
row (``problem.excess``, seed 002) as close to holding as possible, one stage
per row, then ``config.objective``:

* ``priority``: one stage per victim priority level, highest first: the count
  of victim jobs at that level (never evict a higher-priority job where lower
  ones suffice);
* ``jobs``: victim jobs; ``tasks``: evicted tasks;
* ``lost_work``: evicted tasks' GPUs times ``now - started_at`` (milliseconds);

then the least freed of each ``problem.least_freed`` row (quota enforcement's
choice among equal sets, seed 002), and, below any eviction, the fewest moved
tasks (spec "Moves"). Stages whose
expression is constant (no victims) are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from gpu_preempt.solver.problem.data import gpus_of

from .variables import LinearExpr, Variables


@dataclass(frozen=True)
class Stage:
    name: str
    expr: LinearExpr
    sense: Literal["min", "max"]


def stages(vars: Variables) -> list[Stage]:
    problem = vars.problem
    out: list[Stage] = []
    if any(chunk.optional for chunk in problem.chunk) and vars.place:
        out.append(Stage("placed", cp_model.LinearExpr.sum(list(vars.place.values())), "max"))
    for k, row in enumerate(problem.excess):
        out.append(Stage(f"excess {row.queue} {row.resource}", vars.excess[k], "min"))
    if not problem.victims:
        return out
    victims = range(len(problem.victims))
    slots = [(v, s) for v in victims for s in range(len(problem.victims[v].slots))]
    for criterion in problem.objective:
        if criterion == "priority":
            for level in problem.priority_levels:
                at_level = [vars.victim[v] for v in victims if problem.victims[v].priority == level]
                out.append(Stage(f"priority {level}", cp_model.LinearExpr.sum(at_level), "min"))
        elif criterion == "jobs":
            out.append(Stage("jobs", cp_model.LinearExpr.sum([vars.victim[v] for v in victims]), "min"))
        elif criterion == "tasks":
            out.append(Stage("tasks", cp_model.LinearExpr.sum([vars.evicted(v, s) for v, s in slots]), "min"))
        elif criterion == "lost_work":
            weighted = [
                (v, s, gpus_of(problem.victims[v].slots[s].requests) * problem.victims[v].elapsed_ms) for v, s in slots
            ]
            terms = [vars.evicted(v, s) * w for v, s, w in weighted if w > 0]
            if terms:
                out.append(Stage("lost_work", cp_model.LinearExpr.sum(terms), "min"))
    for row in problem.least_freed:
        out.append(Stage(f"freed {row.resource}", vars.freed(row.victims, row.resource), "min"))
    if vars.move:
        out.append(Stage("moves", vars.moved(), "min"))
    return out
