"""The victims' choices: a whole job or part of its surplus (in its task order), and moves (docs/snapshot-format.md,
"Moves")."""

from __future__ import annotations

from ortools.sat.python import cp_model

from ..variables import Variables

__all__ = ["moves", "victim_choices"]


def victim_choices(variables: Variables) -> None:
    """A victim loses all its running tasks or at most its surplus (never below ``min_available``).

    docs/snapshot-format.md, "Gang and elastic"; docs/rules.md, "Min-runtime" for protected elastic jobs, whose
    ``whole_job`` is false.
    """
    model = variables.model
    for v, victim in enumerate(variables.problem.victims):
        peels = [variables.peel[v, s] for s in range(len(victim.slots)) if (v, s) in variables.peel]
        whole = variables.whole.get(v)
        if peels:
            if whole is not None:
                model.add(cp_model.LinearExpr.sum(peels) + victim.surplus * whole <= victim.surplus)
            else:
                model.add(cp_model.LinearExpr.sum(peels) <= victim.surplus)
        indicator = variables.victim[v]
        if whole is not None:
            model.add_implication(whole, indicator)
        for s, slot in enumerate(victim.slots):
            if (v, s) in variables.peel:
                model.add(variables.peel[v, s] <= slot.count * indicator)
        model.add(indicator <= cp_model.LinearExpr.sum([*peels, *([whole] if whole is not None else [])]))
        if peels and any(slot.order is not None for slot in victim.slots):
            _task_order(variables, v)


def _task_order(variables: Variables, v: int) -> None:
    """docs/rules.md, "Task order": the surplus a victim loses comes from its tasks without an order first, then from
    the lowest order up: a slot of order ``o`` gives a task only once every task before ``o`` is peeled."""
    model, victim = variables.model, variables.problem.victims[v]
    levels = sorted({slot.order for slot in victim.slots if slot.order is not None})
    for level in levels:
        before = [s for s, slot in enumerate(victim.slots) if slot.order is None or slot.order < level]
        here = [s for s, slot in enumerate(victim.slots) if slot.order == level and (v, s) in variables.peel]
        if not here:
            continue
        started = model.new_bool_var(f"order_{v}_{level}")
        for s in here:
            model.add(variables.peel[v, s] <= victim.slots[s].count * started)
        peeled = [variables.peel[v, s] for s in before if (v, s) in variables.peel]
        total = sum(victim.slots[s].count for s in before)
        model.add(cp_model.LinearExpr.sum(peeled) >= total * started)


def moves(variables: Variables) -> None:
    """docs/snapshot-format.md, "Moves": a gang moves all its tasks or none, and is not evicted as well; an elastic
    job's tasks move
    one by one, none of a slot both evicted and moved past its count, none when the job is evicted whole; no
    more than ``disturb`` tasks in all are evicted or moved (a protected elastic job: its surplus)."""
    model, problem = variables.model, variables.problem
    for v, victim in enumerate(problem.victims):
        if victim.move == "none":
            continue
        whole, together = variables.whole.get(v), variables.move_whole.get(v)
        for s, slot in enumerate(victim.slots):
            out = variables.moved_out(v, s)
            if victim.move == "whole":
                model.add(out == (slot.count * together if together is not None else 0))
            else:
                model.add(variables.evicted(v, s) + out <= slot.count)
        if whole is not None and together is not None:
            model.add(whole + together <= 1)
        if victim.disturb is not None:
            disturbed = [variables.evicted(v, s) + variables.moved_out(v, s) for s in range(len(victim.slots))]
            model.add(cp_model.LinearExpr.sum(disturbed) <= victim.disturb)
