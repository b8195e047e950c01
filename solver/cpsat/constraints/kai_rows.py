"""KAI's quota rows: queue limits and non-preemptible quota, the reclaim line (guarantees), the saturation rule, and
quota enforcement's excess (docs/rules.md)."""

from __future__ import annotations

from math import gcd

from ortools.sat.python import cp_model

from ..variables import LinearExpr, Variables

__all__ = ["excess", "guarantee", "limits", "saturation"]


def limits(variables: Variables) -> None:
    """Queue limits at every level after the decision, and the deserved quota of non-preemptible work."""
    for row in variables.problem.limits:
        unit = variables.scale.get(row.resource, 1)
        variables.model.add(
            variables.placed_total(row.resource) - variables.freed(row.victims, row.resource) <= row.headroom // unit
        )


def excess(variables: Variables) -> None:
    """Best-effort rows (quota enforcement's "miss", docs/rules.md, "Quota enforcement"): ``placed - freed <= headroom
    + excess``, ``excess >= 0``.

    The excess variables are minimised by the first stages of the objective.
    """
    for k, row in enumerate(variables.problem.excess):
        unit = variables.scale.get(row.resource, 1)
        most = max(0, -(row.headroom // unit))
        over = variables.model.new_int_var(0, most, f"excess_{k}")
        variables.excess.append(over)
        variables.excess_bound.append(most)
        variables.model.add(
            variables.placed_total(row.resource) - variables.freed(row.victims, row.resource)
            <= row.headroom // unit + over
        )


def guarantee(variables: Variables) -> None:
    """The reclaim line of each leveled victim queue (docs/snapshot-format.md, "Reclaim"), in the problem's reading.

    ``strict``: per row, ``freed <= held - min(held, line)``. ``last_chunk``: when the queue loses anything,
    some chunk it loses of size at least ``size`` in some row's resource leaves it above the line before that
    chunk: ``held - freed + size > line``. One Boolean per (row, distinct chunk size ``size``): it holds only if a
    chunk that large is taken (a task of a slot that large, or a whole job whose largest chunk is) and the
    inequality holds; the queue needs one of them. Larger chunks only help, so the largest taken decides.
    """
    problem, model = variables.problem, variables.model
    if problem.guarantee_rule == "strict":
        for row in problem.guarantees:
            unit = variables.scale.get(row.resource, 1)
            model.add(variables.freed(row.victims, row.resource) <= row.max_take // unit)
        return
    for g, (_, rows) in enumerate(problem.line_groups()):
        members = rows[0].victims
        anything = model.new_bool_var(f"line_{g}_taken")
        for v in members:
            model.add_implication(variables.victim[v], anything)
        lasts = []
        for k, row in enumerate(rows):
            assert row.threshold is not None
            unit = variables.scale.get(row.resource, 1)
            freed = variables.freed(row.victims, row.resource)
            chunks: list[tuple[int, LinearExpr]] = []
            for v in members:
                victim = problem.victims[v]
                if v in variables.whole:
                    chunks.append((victim.whole_chunk.get(row.resource, 0), variables.whole[v]))
                chunks.extend(
                    (slot.requests.get(row.resource, 0), variables.evicted(v, s)) for s, slot in enumerate(victim.slots)
                )
            for size in sorted({size for size, _ in chunks}):
                last = model.new_bool_var(f"line_{g}_{k}_{size}")
                model.add(cp_model.LinearExpr.sum([taken for at_least, taken in chunks if at_least >= size]) >= last)
                # held - unit * freed + size > threshold, in whole units of the resource's scale
                model.add(freed <= (row.held - row.threshold + size - 1) // unit).only_enforce_if(last)
                lasts.append(last)
        model.add(cp_model.LinearExpr.sum(lasts) >= 1).only_enforce_if(anything)


def saturation(variables: Variables) -> None:
    """KAI's parent-level saturation rule (docs/rules.md, "The saturation rule"), exact in integers.

    When the reclaim takes from sibling ``s`` (in an involved resource), either
    ``mine <= share_a``, or ``p * share_s * mine < q * share_a * rest`` where the
    multiplier is ``p / q``.
    """
    model = variables.model
    for row in variables.problem.saturation:
        unit = variables.scale.get(row.resource, 1)
        active = model.new_bool_var(f"sat_active_{row.a}_{row.s}_{row.resource}")
        if row.requested:
            for v in row.victims_s:
                model.add_implication(variables.victim[v], active)
        else:
            bound = variables.max_freed(row.victims_s, row.resource)
            model.add(variables.freed(row.victims_s, row.resource) <= bound * active)
        p, q = row.multiplier.numerator, row.multiplier.denominator
        freed_a = variables.freed(row.victims_a, row.resource)
        freed_s = variables.freed(row.victims_s, row.resource)
        # (2) in units: q*share_a*unit*Fs - p*share_s*unit*Fa <= q*share_a*held_s - p*share_s*mine_base - 1
        coef_s, coef_a = q * row.share_a * unit, p * row.share_s * unit
        rhs = q * row.share_a * row.held_s - p * row.share_s * row.mine_base - 1
        if not row.victims_a:
            # mine is constant and above share_a (rows below it are never built): (2) alone must hold.
            if coef_s == 0:
                model.add(active == 0)
            else:
                model.add(freed_s <= rhs // coef_s).only_enforce_if(active)
            continue
        divisor = gcd(coef_s, coef_a) or 1
        below = model.new_bool_var(f"sat_below_{row.a}_{row.s}_{row.resource}")
        # (1) mine <= share_a  <=>  Fa >= (mine_base - share_a) / unit
        model.add(freed_a >= -((row.share_a - row.mine_base) // unit)).only_enforce_if([active, below])
        model.add(coef_s // divisor * freed_s - coef_a // divisor * freed_a <= rhs // divisor).only_enforce_if(
            [active, below.Not()]
        )
