"""Kueue's fair sharing (docs/rules.md, "Kueue's fair sharing"): the dominant resource shares each victim's
ClusterQueue must keep against the preemptor's."""

from __future__ import annotations

from fractions import Fraction
from math import gcd

from ortools.sat.python import cp_model

from gpu_preempt.problem.quota_rows import FINAL_SHARE, INITIAL_SHARE

from ..floor_ratio import floor_ratio
from ..variables import LinearExpr, Variables
from .cohort import (
    cohort_tree,
    constant_size,
    placed_in,
    positive_part,
    quota_bound,
    quota_unit,
    subtree_members,
    tree_usages,
)

__all__ = ["fair"]


def fair(variables: Variables) -> None:
    """Kueue's fair sharing (docs/rules.md, "Kueue's fair sharing"; :class:`~gpu_preempt.problem.quota_rows.FairRows`):
    shares rounded up as Kueue's strategies compare them, ``ceil(borrowed x 1000 / lendable / weight)`` per resource
    in integers (:func:`~gpu_preempt.cpsat.floor_ratio.floor_ratio`, exact whatever the amounts; the ratio is the
    same in any unit), the largest over resources (a max equality)."""
    problem, model = variables.problem, variables.model
    rows = problem.fair
    if rows is None or problem.cohort is None:
        return
    quotas = rows.numbers
    children, top = cohort_tree(problem)
    units = {r: quota_unit(problem, r) for r in rows.resources}
    bounds = {r: quota_bound(problem, r, units[r]) for r in rows.resources}
    placed = {r: placed_in(variables, r, units[r]) for r in rows.resources}
    most_used = {r: _most_used(variables, children, top, r, units[r]) for r in rows.resources}

    def usages(back: int | None, tag: str) -> dict[str, dict[str, LinearExpr]]:
        return {
            r: tree_usages(
                variables, r, children, top, rows.victims, bounds[r], units[r], added=placed[r], back=back, tag=tag
            )
            for r in rows.resources
        }

    def terms(queue: str, r: str) -> tuple[int, int, int, int]:
        """The cap on what ``queue`` borrows of ``r``, the fraction's numerator and denominator (reduced), and the
        most its share of ``r`` can be (0 where it cannot borrow)."""
        parent, weight = quotas.parents[queue], rows.weights.get(queue, Fraction(1))
        own = quotas.subtree[queue].get(r, 0) // units[r]
        cap = min(bounds[r], max(0, most_used[r][queue] - own))
        lendable = quotas.potential[parent].get(r, 0) // units[r] if parent is not None else 0
        if weight == 0 or lendable <= 0:
            return cap, 0, 1, 0
        numerator, denominator = 1000 * weight.denominator, lendable * weight.numerator
        common = gcd(numerator, denominator)
        numerator, denominator = numerator // common, denominator // common
        return cap, numerator, denominator, -(-cap * numerator // denominator)

    # Above every finite share (a queue of weight 0 that borrows); kept small, since CP-SAT needs the sum of all
    # domains within 64 bits.
    infinite = 1 + max((terms(q, r)[3] for r in rows.resources for q in most_used[r]), default=0)

    def share(state: dict[str, dict[str, LinearExpr]], queue: str, tag: str) -> LinearExpr:
        parent = quotas.parents[queue]
        if parent is None:
            return 0
        weight = rows.weights.get(queue, Fraction(1))
        parts: list[LinearExpr] = []
        borrowing: list[cp_model.IntVar] = []
        for r in rows.resources:
            cap, numerator, denominator, _ = terms(queue, r)
            over = state[r][queue] - quotas.subtree[queue].get(r, 0) // units[r]
            borrowed = positive_part(variables, over, cap, f"b{tag}_{queue}_{r}")
            if weight == 0:
                if not isinstance(borrowed, int):
                    flag = model.new_bool_var(f"borrows{tag}_{queue}_{r}")
                    model.add(borrowed >= 1).only_enforce_if(flag)
                    model.add(borrowed == 0).only_enforce_if(flag.Not())
                    borrowing.append(flag)
                elif borrowed > 0:
                    return infinite
                continue
            if numerator == 0:
                continue
            if isinstance(borrowed, int):
                parts.append(-(-borrowed * numerator // denominator))
                continue
            parts.append(
                floor_ratio(model, borrowed, cap, numerator, denominator - 1, denominator, f"share{tag}_{queue}_{r}")
            )
        if weight == 0:
            if not borrowing:
                return 0
            any_ = model.new_bool_var(f"borrows{tag}_{queue}")
            model.add_max_equality(any_, borrowing)
            return infinite * any_
        constants = [p for p in parts if isinstance(p, int)]
        unknowns = [p for p in parts if not isinstance(p, int)]
        if not unknowns:
            return max(constants, default=0)
        largest = model.new_int_var(0, infinite, f"share{tag}_{queue}")
        model.add_max_equality(largest, [*unknowns, *constants])
        return largest

    after = usages(None, "")
    within = model.new_bool_var("fair_within_nominal")
    nominal = quotas.nominal.get(rows.queue, {})
    over = []
    for r in rows.needs:
        flag = model.new_bool_var(f"fair_over_{r}")
        limit = nominal.get(r, 0) // units[r]
        model.add(after[r][rows.queue] >= limit + 1).only_enforce_if(flag)
        model.add(after[r][rows.queue] <= limit).only_enforce_if(flag.Not())
        over.append(flag)
    model.add_bool_or([within, *over])
    for flag in over:
        model.add_implication(flag, within.Not())
    for target, members in sorted(rows.victims.items()):
        if target == rows.queue:
            continue
        mine, theirs = rows.pairs[target]
        ours = share(after, mine, "")
        taken = model.new_bool_var(f"fair_taken_{target}")
        model.add_max_equality(taken, [variables.victim[v] for v in members])
        ways: list[cp_model.IntVar] = [within]
        if FINAL_SHARE in rows.strategies:
            final = model.new_bool_var(f"fair_final_{target}")
            model.add(ours <= share(after, theirs, "")).only_enforce_if(final)
            ways.append(final)
        if INITIAL_SHARE in rows.strategies:
            lent = any(
                quotas.local[q].get(r, 0)
                for q in subtree_members(children, theirs)
                if q != theirs
                for r in rows.resources
            )
            if lent:  # what a victim frees reaches the target side through lending limits: one state per victim
                lasts = []
                for w in members:
                    before = model.new_bool_var(f"fair_before_{target}_{w}")
                    model.add_implication(before, variables.victim[w])
                    model.add(ours + 1 <= share(usages(w, f"_{w}"), theirs, f"_{w}")).only_enforce_if(before)
                    lasts.append(before)
                initial = model.new_bool_var(f"fair_initial_{target}")
                model.add_bool_or(lasts).only_enforce_if(initial)
            else:  # the target side's usage is linear in its victims: its largest victim, per resource, goes last
                back = {}
                for r in rows.resources:
                    sizes = {v: constant_size(variables, v, r, units[r]) for v in members}
                    last = model.new_int_var(0, max(sizes.values(), default=0), f"fair_last_{target}_{r}")
                    model.add_max_equality(last, [variables.victim[v] * size for v, size in sizes.items()])
                    back[r] = {q: (e + last if q == theirs else e) for q, e in after[r].items()}
                initial = model.new_bool_var(f"fair_initial_{target}")
                model.add(ours + 1 <= share(back, theirs, f"_initial_{target}")).only_enforce_if(initial)
            if FINAL_SHARE not in rows.strategies:
                model.add(cp_model.LinearExpr.sum([variables.victim[v] for v in members]) <= 1).only_enforce_if(initial)
            ways.append(initial)
        model.add_bool_or(ways).only_enforce_if(taken)


def _most_used(
    variables: Variables, children: dict[str, list[str]], top: str, resource: str, unit: int
) -> dict[str, int]:
    """A bound on the usage of ``resource`` (in ``unit``) of every queue under ``top``, whatever goes: what its
    ClusterQueues hold, and the chunk in the preemptor's (a Cohort uses at most what its members use)."""
    rows = variables.problem.cohort
    assert rows is not None
    asked = sum(t.requests.get(resource, 0) * len(t.tasks) for t in variables.problem.chunk) // unit + 1
    most: dict[str, int] = {}

    def walk(queue: str) -> int:
        below = children.get(queue, [])
        if below:
            most[queue] = sum(walk(child) for child in below)
        else:
            held = max(0, rows.numbers.used.get(queue, {}).get(resource, 0)) // unit + 1
            most[queue] = held + (asked if queue == rows.queue else 0)
        return most[queue]

    walk(top)
    return most
