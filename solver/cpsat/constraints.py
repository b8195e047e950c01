"""Constraints of the victim model, one function per rule family.

Every function adds the rows of one rule and cites it; :func:`add_all` adds
them all. Families can be left out (``skip``) to find which one makes a
problem infeasible, for the explanation of an ``infeasible`` decision.
"""

from __future__ import annotations

from collections.abc import Collection
from fractions import Fraction
from math import gcd

from ortools.sat.python import cp_model

from gpu_preempt.models import MILLI
from gpu_preempt.problem.quota_rows import FINAL_SHARE, INITIAL_SHARE
from gpu_preempt.problem.records import Problem

from .variables import LinearExpr, Variables

__all__ = [
    "FAMILIES",
    "INFINITE_SHARE",
    "Flow",
    "add_all",
    "capacity",
    "cohort",
    "devices",
    "excess",
    "fair",
    "gang",
    "guarantee",
    "limits",
    "moves",
    "quota_unit",
    "saturation",
    "topology",
    "victim_choices",
]

FAMILIES = ("limits", "guarantee", "saturation", "cohort", "fair")
"""Rule families that :func:`add_all` can leave out."""


def add_all(vars: Variables, skip: Collection[str] = ()) -> None:
    victim_choices(vars)
    moves(vars)
    capacity(vars)
    devices(vars)
    gang(vars)
    topology(vars)
    if "limits" not in skip:
        limits(vars)
    if "guarantee" not in skip:
        guarantee(vars)
    if "saturation" not in skip:
        saturation(vars)
    if "cohort" not in skip:
        cohort(vars)
    if "fair" not in skip:
        fair(vars)
    excess(vars)


def victim_choices(vars: Variables) -> None:
    """A victim loses all its running tasks or at most its surplus (never below ``min_available``).

    docs/snapshot-format.md, "Gang and elastic"; docs/rules.md, "Min-runtime" for protected elastic jobs, whose
    ``whole_job`` is false.
    """
    model = vars.model
    for v, victim in enumerate(vars.problem.victims):
        peels = [vars.peel[v, s] for s in range(len(victim.slots)) if (v, s) in vars.peel]
        whole = vars.whole.get(v)
        if peels:
            if whole is not None:
                model.add(cp_model.LinearExpr.sum(peels) + victim.surplus * whole <= victim.surplus)
            else:
                model.add(cp_model.LinearExpr.sum(peels) <= victim.surplus)
        indicator = vars.victim[v]
        if whole is not None:
            model.add_implication(whole, indicator)
        for s, slot in enumerate(victim.slots):
            if (v, s) in vars.peel:
                model.add(vars.peel[v, s] <= slot.count * indicator)
        model.add(indicator <= cp_model.LinearExpr.sum([*peels, *([whole] if whole is not None else [])]))
        if peels and any(slot.order is not None for slot in victim.slots):
            _task_order(vars, v)


def _task_order(vars: Variables, v: int) -> None:
    """docs/rules.md, "Task order": the surplus a victim loses comes from its tasks without an order first, then from
    the lowest order up: a slot of order ``o`` gives a task only once every task before ``o`` is peeled."""
    model, victim = vars.model, vars.problem.victims[v]
    levels = sorted({slot.order for slot in victim.slots if slot.order is not None})
    for level in levels:
        before = [s for s, slot in enumerate(victim.slots) if slot.order is None or slot.order < level]
        here = [s for s, slot in enumerate(victim.slots) if slot.order == level and (v, s) in vars.peel]
        if not here:
            continue
        started = model.new_bool_var(f"order_{v}_{level}")
        for s in here:
            model.add(vars.peel[v, s] <= victim.slots[s].count * started)
        peeled = [vars.peel[v, s] for s in before if (v, s) in vars.peel]
        total = sum(victim.slots[s].count for s in before)
        model.add(cp_model.LinearExpr.sum(peeled) >= total * started)


def moves(vars: Variables) -> None:
    """docs/snapshot-format.md, "Moves": a gang moves all its tasks or none, and is not evicted as well; an elastic
    job's tasks move
    one by one, none of a slot both evicted and moved past its count, none when the job is evicted whole; no
    more than ``disturb`` tasks in all are evicted or moved (a protected elastic job: its surplus)."""
    model, problem = vars.model, vars.problem
    for v, victim in enumerate(problem.victims):
        if victim.move == "none":
            continue
        whole, together = vars.whole.get(v), vars.move_whole.get(v)
        for s, slot in enumerate(victim.slots):
            out = vars.moved_out(v, s)
            if victim.move == "whole":
                model.add(out == (slot.count * together if together is not None else 0))
            else:
                model.add(vars.evicted(v, s) + out <= slot.count)
        if whole is not None and together is not None:
            model.add(whole + together <= 1)
        if victim.disturb is not None:
            disturbed = [vars.evicted(v, s) + vars.moved_out(v, s) for s in range(len(victim.slots))]
            model.add(cp_model.LinearExpr.sum(disturbed) <= victim.disturb)


def capacity(vars: Variables) -> None:
    """Per node and resource: placed + moved in <= room (free + releasing) + what victims there free (evicted or
    moved out); and a task moved in uses only free room (every promise kept; docs/snapshot-format.md, "Moves").

    A row that holds even with everything placed and moved in at its bound and nothing freed is left out: the
    variables' domains imply it (amounts are never negative), and on a large node most resources besides GPUs
    have room to spare.
    """
    problem = vars.problem
    moved_in: dict[int, list[tuple[cp_model.IntVar, dict[str, int], int]]] = {}  # variable, requests, bound
    moved_out: dict[int, list[tuple[cp_model.IntVar, dict[str, int]]]] = {}
    for (v, s, n), var in vars.move.items():
        slot = problem.victims[v].slots[s]
        moved_in.setdefault(n, []).append((var, slot.requests, slot.count))
        moved_out.setdefault(slot.node, []).append((var, slot.requests))
    placing: dict[int, list[tuple[int, cp_model.IntVar]]] = {}  # per node, its placement variables in order
    for (t, m), var in vars.place.items():
        placing.setdefault(m, []).append((t, var))
    slots_on: dict[int, list[tuple[int, int]]] = {}  # per node, the victims' slots there in order
    for v, victim in enumerate(problem.victims):
        for s, slot in enumerate(victim.slots):
            slots_on.setdefault(slot.node, []).append((v, s))
    chunk, victims, whole, peel, asked = problem.chunk, problem.victims, vars.whole, vars.peel, problem.resources
    for n in sorted(placing.keys() | moved_in.keys()):
        on_node = slots_on.get(n, [])
        resources = asked if n in placing else ()
        if n in moved_in:
            arrive = {r for _, requests, _ in moved_in[n] for r, a in requests.items() if a > 0}
            resources = tuple(sorted(arrive.union(resources)))
        for resource in resources:
            unit = vars.scale.get(resource, 1)
            # one weighted sum: placed + arriving - freed - leaving <= room (freed: count * whole + peel)
            terms: list[cp_model.IntVar] = []
            weights: list[int] = []
            most = 0  # the left side at its largest
            for t, var in placing.get(n, []):
                amount = chunk[t].requests.get(resource, 0)
                if amount:
                    terms.append(var)
                    weights.append(amount // unit)
                    most += vars.place_bound[t, n] * (amount // unit)
            arriving = [
                (var, requests[resource] // unit, count)
                for var, requests, count in moved_in.get(n, [])
                if requests.get(resource, 0)
            ]
            for var, weight, count in arriving:
                terms.append(var)
                weights.append(weight)
                most += count * weight
            room = problem.nodes[n].room.get(resource, 0) // unit
            if most <= room:
                continue
            for v, s in on_node:
                slot = victims[v].slots[s]
                amount = slot.requests.get(resource, 0) // unit
                if amount:
                    if v in whole:
                        terms.append(whole[v])
                        weights.append(-amount * slot.count)
                    if (v, s) in peel:
                        terms.append(peel[v, s])
                        weights.append(-amount)
            for var, requests in moved_out.get(n, []):
                if requests.get(resource, 0):
                    terms.append(var)
                    weights.append(-(requests[resource] // unit))
            vars.model.add(cp_model.LinearExpr.weighted_sum(terms, weights) <= room)
            if arriving:
                free = problem.nodes[n].free_room().get(resource, 0) // unit
                if sum(weight * count for _, weight, count in arriving) > free:
                    moving = [var for var, _, _ in arriving]
                    vars.model.add(cp_model.LinearExpr.weighted_sum(moving, [w for _, w, _ in arriving]) <= free)


Flow = tuple[int | None, LinearExpr, int, int]
"""Tasks arriving on or leaving a node: the device (``None``: whole GPUs, on any empty device), how many (an
expression), milli-GPUs per device of each (GPUs per task when whole), and the most there may be."""


def devices(vars: Variables) -> None:
    """docs/snapshot-format.md, "GPU sharing": on a node with devices where tasks may arrive (placed or moved), every
    share that arrives goes to as many distinct devices as it is spread over (``sum_d dev[t, n, d] = spread *
    place[t, n]``, each ``dev[t, n, d] <= place[t, n]``: :func:`~gpu_preempt.problem.devices.task_devices` deals
    them to distinct tasks; a moved share goes to one device, likewise); on every
    device, the shares left after the evictions and moves plus those arriving are at most one GPU, and only on a
    device that carries shares (``used``); the devices that carry shares and the whole GPUs left and arriving are
    at most the node's devices. A share leaves its own device; a whole GPU leaves any.
    """
    model = vars.model
    for (t, n), var in vars.place.items():
        spec = vars.problem.nodes[n].devices
        if spec is not None and (t, n, 0) in vars.dev:
            spread = vars.problem.chunk[t].spread  # each task on that many distinct devices (task_devices)
            model.add(cp_model.LinearExpr.sum([vars.dev[t, n, d] for d in range(spec.count)]) == spread * var)
            if spread > 1:
                for d in range(spec.count):
                    model.add(vars.dev[t, n, d] <= var)
    moved_to: dict[tuple[int, int, int], list[cp_model.IntVar]] = {}
    for (v, s, n, _), var in vars.move_dev.items():
        moved_to.setdefault((v, s, n), []).append(var)
    for key, found in moved_to.items():
        model.add(cp_model.LinearExpr.sum(found) == vars.move[key])
    arriving = _arrivals(vars)
    leaving = _departures(vars, arriving.keys())
    _moves_on_free_devices(vars)
    for n, coming in sorted(arriving.items(), key=lambda item: item[0]):
        _node_devices(vars, n, coming, leaving.get(n, []))


def _arrivals(vars: Variables) -> dict[int, list[Flow]]:
    """Per node with devices, the tasks that may arrive: shares placed or moved per device, whole GPUs."""
    problem = vars.problem
    arriving: dict[int, list[Flow]] = {}
    for (t, n), var in vars.place.items():
        spec = problem.nodes[n].devices
        if spec is None:
            continue
        share, gpus = problem.chunk[t].share, problem.chunk[t].gpus
        if share:
            most = min(vars.place_bound[t, n], MILLI // share)
            arriving.setdefault(n, []).extend((d, vars.dev[t, n, d], share, most) for d in range(spec.count))
        elif gpus:
            arriving.setdefault(n, []).append((None, var, gpus, vars.place_bound[t, n]))
    for (v, s, n), var in vars.move.items():
        slot = problem.victims[v].slots[s]
        if problem.nodes[n].devices is not None and slot.gpus:
            arriving.setdefault(n, []).append((None, var, slot.gpus, slot.count))
    for (v, s, n, d), var in vars.move_dev.items():
        slot = problem.victims[v].slots[s]
        arriving.setdefault(n, []).append((d, var, slot.share, slot.count))
    return arriving


def _departures(vars: Variables, nodes: Collection[int]) -> dict[int, list[Flow]]:
    """Per node of ``nodes``, the victims' tasks that may leave it (evicted or moved): shares from their device,
    whole GPUs."""
    leaving: dict[int, list[Flow]] = {}
    for v, victim in enumerate(vars.problem.victims):
        for s, slot in enumerate(victim.slots):
            if slot.node not in nodes:
                continue
            gone = vars.evicted(v, s) + vars.moved_out(v, s)
            for device in slot.devices:
                leaving.setdefault(slot.node, []).append((device, gone, slot.share, slot.count))
            if slot.gpus:
                leaving.setdefault(slot.node, []).append((None, gone, slot.gpus, slot.count))
    return leaving


def _node_devices(vars: Variables, n: int, coming: list[Flow], going: list[Flow]) -> None:
    """The rows of node ``n``'s devices (see :func:`devices`)."""
    model, spec = vars.model, vars.problem.nodes[n].devices
    assert spec is not None
    if all(d is None for d, _, _, _ in coming) and all(d is None for d, _, _, _ in going) and not any(spec.shares):
        return  # whole GPUs only: the node's GPU room counts its devices
    carrying: list[LinearExpr] = []
    fixed = 0  # devices that carry shares whatever is decided
    for d in range(spec.count):
        held = spec.shares[d]
        terms = [expr for e, expr, _, _ in coming if e == d]
        weights = [weight for e, _, weight, _ in coming if e == d]
        most = held + sum(weight * bound for e, _, weight, bound in coming if e == d)
        freeable = 0
        for e, expr, amount, count in going:
            if e == d:
                terms.append(expr)
                weights.append(-amount)
                freeable += amount * count
        if held > freeable:  # a share nothing moves or evicts stays on it
            fixed += 1
            if most > MILLI:
                model.add(cp_model.LinearExpr.weighted_sum(terms, weights) <= MILLI - held)
            continue
        if not terms:
            continue  # nothing on it, nothing may come: an empty device
        used = vars.used[n, d] = model.new_bool_var(f"used_{n}_{d}")
        model.add(cp_model.LinearExpr.weighted_sum([*terms, used], [*weights, -MILLI]) <= -held)
        carrying.append(used)
    whole = [(expr, weight) for e, expr, weight, _ in coming if e is None]
    whole += [(expr, -weight) for e, expr, weight, _ in going if e is None]
    model.add(
        cp_model.LinearExpr.weighted_sum(
            [*carrying, *(expr for expr, _ in whole)], [1] * len(carrying) + [weight for _, weight in whole]
        )
        <= spec.count - fixed - spec.whole
    )


def _moves_on_free_devices(vars: Variables) -> None:
    """docs/snapshot-format.md, "Moves", device by device: a moved task uses only free room, so the shares moved to a
    device fit beside what it holds before the decision, and the devices they open and the whole GPUs moved to a node
    are at most its devices free before the decision."""
    model, problem = vars.model, vars.problem
    shares: dict[int, dict[int, list[tuple[cp_model.IntVar, int]]]] = {}
    whole: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
    for (v, s, n, d), var in vars.move_dev.items():
        shares.setdefault(n, {}).setdefault(d, []).append((var, problem.victims[v].slots[s].share))
    for (v, s, n), var in vars.move.items():
        slot = problem.victims[v].slots[s]
        if problem.nodes[n].devices is not None and slot.gpus:
            whole.setdefault(n, []).append((var, slot.gpus))
    for n in sorted(shares.keys() | whole.keys()):
        spec = problem.nodes[n].devices
        assert spec is not None
        opened: list[cp_model.IntVar] = []
        for d, found in sorted(shares.get(n, {}).items()):
            terms, weights = [var for var, _ in found], [w for _, w in found]
            if spec.shares[d]:
                model.add(cp_model.LinearExpr.weighted_sum(terms, weights) <= MILLI - spec.shares[d])
                continue
            opens = model.new_bool_var(f"opens_{n}_{d}")
            model.add(cp_model.LinearExpr.weighted_sum([*terms, opens], [*weights, -MILLI]) <= 0)
            opened.append(opens)
        arriving = whole.get(n, [])
        model.add(
            cp_model.LinearExpr.weighted_sum(
                [*opened, *(var for var, _ in arriving)], [1] * len(opened) + [w for _, w in arriving]
            )
            <= spec.free()
        )


def gang(vars: Variables) -> None:
    """All-or-nothing: every required task of the chunk is placed; optional ones may be."""
    for t, chunk in enumerate(vars.problem.chunk):
        placed = [var for (u, _), var in vars.place.items() if u == t]
        total = cp_model.LinearExpr.sum(placed) if placed else 0
        vars.model.add(total >= chunk.required)
        vars.model.add(total <= len(chunk.tasks))


def topology(vars: Variables) -> None:
    """docs/rules.md, "Placement": a required topology places every task inside one domain of its level; a preferred
    one marks each domain a task goes to (the objective counts them)."""
    model, problem = vars.model, vars.problem
    for (t, n), var in vars.place.items():
        bound = vars.place_bound[t, n]
        if vars.domain:
            model.add(var <= bound * vars.domain[problem.domains[n]])
        if vars.spread and problem.spread[n] in vars.spread:
            model.add(var <= bound * vars.spread[problem.spread[n]])
    if vars.domain:
        model.add(cp_model.LinearExpr.sum(list(vars.domain.values())) <= 1)


def limits(vars: Variables) -> None:
    """Queue limits at every level after the decision, and the deserved quota of non-preemptible work."""
    for row in vars.problem.limits:
        unit = vars.scale.get(row.resource, 1)
        vars.model.add(vars.placed_total(row.resource) - vars.freed(row.victims, row.resource) <= row.headroom // unit)


def excess(vars: Variables) -> None:
    """Best-effort rows (quota enforcement's "miss", docs/rules.md, "Quota enforcement"): ``placed - freed <= headroom
    + excess``, ``excess >= 0``.

    The excess variables are minimised by the first stages of the objective.
    """
    for k, row in enumerate(vars.problem.excess):
        unit = vars.scale.get(row.resource, 1)
        most = max(0, -(row.headroom // unit))
        over = vars.model.new_int_var(0, most, f"excess_{k}")
        vars.excess.append(over)
        vars.excess_bound.append(most)
        vars.model.add(
            vars.placed_total(row.resource) - vars.freed(row.victims, row.resource) <= row.headroom // unit + over
        )


def guarantee(vars: Variables) -> None:
    """The reclaim line of each leveled victim queue (docs/snapshot-format.md, "Reclaim"), in the problem's reading.

    ``strict``: per row, ``freed <= held - min(held, line)``. ``last_chunk``: when the queue loses anything,
    some chunk it loses of size at least ``size`` in some row's resource leaves it above the line before that
    chunk: ``held - freed + size > line``. One Boolean per (row, distinct chunk size ``size``): it holds only if a
    chunk that large is taken (a task of a slot that large, or a whole job whose largest chunk is) and the
    inequality holds; the queue needs one of them. Larger chunks only help, so the largest taken decides.
    """
    problem, model = vars.problem, vars.model
    if problem.guarantee_rule == "strict":
        for row in problem.guarantees:
            unit = vars.scale.get(row.resource, 1)
            model.add(vars.freed(row.victims, row.resource) <= row.max_take // unit)
        return
    for g, (_, rows) in enumerate(problem.line_groups()):
        members = rows[0].victims
        anything = model.new_bool_var(f"line_{g}_taken")
        for v in members:
            model.add_implication(vars.victim[v], anything)
        lasts = []
        for k, row in enumerate(rows):
            assert row.threshold is not None
            unit = vars.scale.get(row.resource, 1)
            freed = vars.freed(row.victims, row.resource)
            chunks: list[tuple[int, LinearExpr]] = []
            for v in members:
                victim = problem.victims[v]
                if v in vars.whole:
                    chunks.append((victim.whole_chunk.get(row.resource, 0), vars.whole[v]))
                chunks.extend(
                    (slot.requests.get(row.resource, 0), vars.evicted(v, s)) for s, slot in enumerate(victim.slots)
                )
            for size in sorted({size for size, _ in chunks}):
                last = model.new_bool_var(f"line_{g}_{k}_{size}")
                model.add(cp_model.LinearExpr.sum([taken for at_least, taken in chunks if at_least >= size]) >= last)
                # held - unit * freed + size > threshold, in whole units of the resource's scale
                model.add(freed <= (row.held - row.threshold + size - 1) // unit).only_enforce_if(last)
                lasts.append(last)
        model.add(cp_model.LinearExpr.sum(lasts) >= 1).only_enforce_if(anything)


def saturation(vars: Variables) -> None:
    """KAI's parent-level saturation rule (docs/rules.md, "The saturation rule"), exact in integers.

    When the reclaim takes from sibling ``s`` (in an involved resource), either
    ``mine <= share_a``, or ``p * share_s * mine < q * share_a * rest`` where the
    multiplier is ``p / q``.
    """
    model = vars.model
    for row in vars.problem.saturation:
        unit = vars.scale.get(row.resource, 1)
        active = model.new_bool_var(f"sat_active_{row.a}_{row.s}_{row.resource}")
        if row.requested:
            for v in row.victims_s:
                model.add_implication(vars.victim[v], active)
        else:
            bound = vars.max_freed(row.victims_s, row.resource)
            model.add(vars.freed(row.victims_s, row.resource) <= bound * active)
        p, q = row.multiplier.numerator, row.multiplier.denominator
        freed_a = vars.freed(row.victims_a, row.resource)
        freed_s = vars.freed(row.victims_s, row.resource)
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


def cohort(vars: Variables) -> None:
    """Kueue's quota (docs/rules.md, "Kueue's preemption"; :class:`~gpu_preempt.problem.quota_rows.CohortRows`): per
    resource the chunk asks for, ``placed <= max(0, available)`` of the preemptor's ClusterQueue once the victims
    go, written as Kueue's ``resource_node.go`` computes it: a Cohort's usage is what each child uses beyond its
    local quota, and what a queue has available is its local quota left plus its parent's available, capped by its
    borrowing limit. The maxima and minima are exact (CP-SAT's max and min equalities). In an attempt without
    borrowing the ClusterQueue also ends within its nominal quota, and victims of the ``while_nominal`` class are
    taken only in such an attempt. Amounts are counted in each resource's quota unit (:func:`quota_unit`).
    """
    rows, model, problem = vars.problem.cohort, vars.model, vars.problem
    if rows is None:
        return
    borrow: cp_model.IntVar | int = int(rows.modes[0]) if len(rows.modes) == 1 else model.new_bool_var("borrowing")
    for v in rows.while_nominal:
        if isinstance(borrow, int):
            if borrow:
                model.add(vars.victim[v] == 0)
        else:
            model.add_implication(vars.victim[v], borrow.Not())
    for resource in problem.resources:
        _cohort_resource(vars, resource, borrow)


def quota_unit(problem: Problem, resource: str) -> int:
    """The gcd of every amount of ``resource`` Kueue's arithmetic adds or compares in ``problem``: quotas, usages,
    the chunk's and the victims' requests. Counting in it keeps memory (milli-bytes) within CP-SAT's integers."""
    rows = problem.cohort
    assert rows is not None
    quotas = rows.quotas
    amounts = [
        m.get(resource, 0)
        for group in (quotas.nominal, quotas.borrowing, quotas.lending, quotas.used)
        for m in group.values()
    ]
    amounts += [t.requests.get(resource, 0) for t in problem.chunk]
    amounts += [slot.requests.get(resource, 0) for victim in problem.victims for slot in victim.slots]
    return gcd(*amounts) or 1


def _tree(problem: Problem) -> tuple[dict[str, list[str]], str]:
    """The children of each queue of the preemptor's tree, and its top."""
    rows = problem.cohort
    assert rows is not None
    children: dict[str, list[str]] = {}
    for queue, parent in rows.quotas.parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(queue)
    top = rows.queue
    while (parent := rows.quotas.parents[top]) is not None:
        top = parent
    return children, top


def _bound(problem: Problem, resource: str, unit: int) -> int:
    """A bound on every amount of ``resource`` the rows handle, in ``unit``."""
    rows = problem.cohort
    assert rows is not None
    quotas = rows.quotas
    amounts = [
        abs(m.get(resource, 0)) for group in (quotas.nominal, quotas.used, quotas.borrowing) for m in group.values()
    ]
    asked = sum(t.requests.get(resource, 0) * len(t.tasks) for t in problem.chunk)
    return 2 * (sum(amounts) + asked) // unit + 1


def _placed_in(vars: Variables, resource: str, unit: int) -> LinearExpr:
    """What the chunk places of ``resource``, in ``unit``."""
    chunk = vars.problem.chunk
    terms = [var * (chunk[t].requests.get(resource, 0) // unit) for (t, _), var in vars.place.items()]
    return cp_model.LinearExpr.sum(terms) if terms else 0


def _freed_in(vars: Variables, members: tuple[int, ...], resource: str, unit: int) -> LinearExpr:
    """What ``members`` free of ``resource`` when evicted, in ``unit``."""
    terms = [
        vars.evicted(v, s) * (slot.requests.get(resource, 0) // unit)
        for v in members
        for s, slot in enumerate(vars.problem.victims[v].slots)
        if slot.requests.get(resource, 0)
    ]
    return cp_model.LinearExpr.sum(terms) if terms else 0


def _cohort_resource(vars: Variables, resource: str, borrow: cp_model.IntVar | int) -> None:
    rows, model, problem = vars.problem.cohort, vars.model, vars.problem
    assert rows is not None
    quotas, unit = rows.quotas, quota_unit(problem, resource)
    children, top = _tree(problem)
    bound = _bound(problem, resource, unit)
    placed = _placed_in(vars, resource, unit)
    usage = _usages(vars, resource, children, top, rows.victims, bound, unit)

    def at_least_zero(expr: LinearExpr, name: str) -> LinearExpr:
        return _at_least_zero(vars, expr, bound, name)

    def available(queue: str) -> LinearExpr:
        parent, mine = quotas.parents[queue], usage[queue]
        if parent is None:
            return quotas.subtree_quota(queue, resource) // unit - mine
        local = quotas.local_quota(queue, resource) // unit
        from_parent = available(parent)
        limit = quotas.borrowing.get(queue, {}).get(resource)
        if limit is not None:
            used_up = mine if local == 0 else at_least_zero(mine - local, f"used_up_{queue}_{resource}")
            cap = quotas.subtree_quota(queue, resource) // unit - local - used_up + limit // unit
            if isinstance(cap, int) and isinstance(from_parent, int):
                from_parent = min(cap, from_parent)
            else:
                least = model.new_int_var(-bound, bound, f"from_parent_{queue}_{resource}")
                model.add_min_equality(least, [from_parent, cap])
                from_parent = least
        return at_least_zero(local - mine, f"local_left_{queue}_{resource}") + from_parent

    model.add(placed <= at_least_zero(available(rows.queue), f"available_{resource}"))
    nominal = quotas.nominal.get(rows.queue, {}).get(resource, 0) // unit
    if isinstance(borrow, int):
        if not borrow:
            model.add(usage[rows.queue] + placed <= nominal)
    else:
        model.add(usage[rows.queue] + placed <= nominal).only_enforce_if(borrow.Not())


def _at_least_zero(vars: Variables, expr: LinearExpr, bound: int, name: str) -> LinearExpr:
    """``max(0, expr)``: a constant when ``expr`` is one, else a variable tied to it by a max equality."""
    if isinstance(expr, int):
        return max(0, expr)
    var = vars.model.new_int_var(0, bound, name)
    vars.model.add_max_equality(var, [expr, 0])
    return var


def _usages(
    vars: Variables,
    resource: str,
    children: dict[str, list[str]],
    top: str,
    victims: dict[str, tuple[int, ...]],
    bound: int,
    unit: int,
    *,
    added: LinearExpr = 0,
    back: int | None = None,
    tag: str = "",
) -> dict[str, LinearExpr]:
    """Kueue's usage of every queue under ``top`` in ``resource`` (in ``unit``) once the victims go (all but
    ``back``), with ``added`` in the preemptor's ClusterQueue: a ClusterQueue's held less what its victims free, a
    Cohort's what each child uses beyond its local quota (``resource_node.go``, ``accumulateFromChild``)."""
    rows = vars.problem.cohort
    assert rows is not None
    quotas = rows.quotas
    usage: dict[str, LinearExpr] = {}

    def use(queue: str) -> LinearExpr:
        below = children.get(queue, [])
        if not below:
            held = quotas.used.get(queue, {}).get(resource, 0) // unit
            members = tuple(v for v in victims.get(queue, ()) if v != back)
            found: LinearExpr = held - _freed_in(vars, members, resource, unit) if members else held
            if queue == rows.queue and not (isinstance(added, int) and added == 0):
                found = found + added
        else:
            terms: list[LinearExpr] = []
            for child in below:
                local, part = quotas.local_quota(child, resource) // unit, use(child)
                name = f"lent{tag}_{child}_{resource}"
                terms.append(part if local == 0 else _at_least_zero(vars, part - local, bound, name))
            found = sum(t for t in terms if isinstance(t, int)) + cp_model.LinearExpr.sum(
                [t for t in terms if not isinstance(t, int)]
            )
        if not isinstance(found, int):
            # one variable per usage: the expressions are read again and again, and OR-Tools may fold a sum in place
            settled = vars.model.new_int_var(-bound, bound, f"usage{tag}_{queue}_{resource}")
            vars.model.add(settled == found)
            found = settled
        usage[queue] = found
        return found

    use(top)
    return usage


INFINITE_SHARE = 2**60
"""A share above every finite one (a queue of weight 0 that borrows), and the bound of every finite one."""


def fair(vars: Variables) -> None:
    """Kueue's fair sharing (docs/rules.md, "Kueue's fair sharing"; :class:`~gpu_preempt.problem.quota_rows.FairRows`):
    shares rounded up as Kueue's strategies compare them, ``ceil(borrowed x 1000 / lendable / weight)`` per resource
    in integers (a division equality; the ratio is the same in any unit), the largest over resources (a max
    equality)."""
    problem, model = vars.problem, vars.model
    rows = problem.fair
    if rows is None or problem.cohort is None:
        return
    quotas = rows.quotas
    children, top = _tree(problem)
    units = {r: quota_unit(problem, r) for r in rows.resources}
    bounds = {r: _bound(problem, r, units[r]) for r in rows.resources}
    placed = {r: _placed_in(vars, r, units[r]) for r in rows.resources}

    def usages(back: int | None, tag: str) -> dict[str, dict[str, LinearExpr]]:
        return {
            r: _usages(vars, r, children, top, rows.victims, bounds[r], units[r], added=placed[r], back=back, tag=tag)
            for r in rows.resources
        }

    def share(state: dict[str, dict[str, LinearExpr]], queue: str, tag: str) -> LinearExpr:
        parent = quotas.parents[queue]
        if parent is None:
            return 0
        weight = rows.weights.get(queue, Fraction(1))
        parts: list[LinearExpr] = []
        borrowing: list[cp_model.IntVar] = []
        for r in rows.resources:
            unit, bound = units[r], bounds[r]
            over = state[r][queue] - quotas.subtree_quota(queue, r) // unit
            borrowed = _at_least_zero(vars, over, bound, f"b{tag}_{queue}_{r}")
            if weight == 0:
                if not isinstance(borrowed, int):
                    flag = model.new_bool_var(f"borrows{tag}_{queue}_{r}")
                    model.add(borrowed >= 1).only_enforce_if(flag)
                    model.add(borrowed == 0).only_enforce_if(flag.Not())
                    borrowing.append(flag)
                elif borrowed > 0:
                    return INFINITE_SHARE
                continue
            lendable = quotas.potential_available(parent, r) // unit
            if lendable <= 0:
                continue
            numerator, denominator = 1000 * weight.denominator, lendable * weight.numerator
            if isinstance(borrowed, int):
                parts.append(-(-borrowed * numerator // denominator))
                continue
            most_ratio = min(INFINITE_SHARE - 1, -(-bound * numerator // denominator))
            ratio = model.new_int_var(0, most_ratio, f"share{tag}_{queue}_{r}")
            model.add_division_equality(ratio, borrowed * numerator + denominator - 1, denominator)
            parts.append(ratio)
        if weight == 0:
            if not borrowing:
                return 0
            any_ = model.new_bool_var(f"borrows{tag}_{queue}")
            model.add_max_equality(any_, borrowing)
            infinite = model.new_int_var(0, INFINITE_SHARE, f"share{tag}_{queue}")
            model.add(infinite == INFINITE_SHARE * any_)
            return infinite
        constants = [p for p in parts if isinstance(p, int)]
        variables = [p for p in parts if not isinstance(p, int)]
        if not variables:
            return max(constants, default=0)
        most = model.new_int_var(0, INFINITE_SHARE, f"share{tag}_{queue}")
        model.add_max_equality(most, [*variables, *constants])
        return most

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
        model.add_max_equality(taken, [vars.victim[v] for v in members])
        ways: list[cp_model.IntVar] = [within]
        if FINAL_SHARE in rows.strategies:
            final = model.new_bool_var(f"fair_final_{target}")
            model.add(ours <= share(after, theirs, "")).only_enforce_if(final)
            ways.append(final)
        if INITIAL_SHARE in rows.strategies:
            lent = any(
                quotas.local_quota(q, r) for q in _under(children, theirs) if q != theirs for r in rows.resources
            )
            if lent:  # what a victim frees reaches the target side through lending limits: one state per victim
                lasts = []
                for w in members:
                    before = model.new_bool_var(f"fair_before_{target}_{w}")
                    model.add_implication(before, vars.victim[w])
                    model.add(ours + 1 <= share(usages(w, f"_{w}"), theirs, f"_{w}")).only_enforce_if(before)
                    lasts.append(before)
                initial = model.new_bool_var(f"fair_initial_{target}")
                model.add_bool_or(lasts).only_enforce_if(initial)
            else:  # the target side's usage is linear in its victims: its largest victim, per resource, goes last
                back = {}
                for r in rows.resources:
                    sizes = {v: _constant_size(vars, v, r, units[r]) for v in members}
                    last = model.new_int_var(0, max(sizes.values(), default=0), f"fair_last_{target}_{r}")
                    model.add_max_equality(last, [vars.victim[v] * size for v, size in sizes.items()])
                    back[r] = {q: (e + last if q == theirs else e) for q, e in after[r].items()}
                initial = model.new_bool_var(f"fair_initial_{target}")
                model.add(ours + 1 <= share(back, theirs, f"_initial_{target}")).only_enforce_if(initial)
            if FINAL_SHARE not in rows.strategies:
                model.add(cp_model.LinearExpr.sum([vars.victim[v] for v in members]) <= 1).only_enforce_if(initial)
            ways.append(initial)
        model.add_bool_or(ways).only_enforce_if(taken)


def _under(children: dict[str, list[str]], queue: str) -> list[str]:
    """``queue`` and every queue below it."""
    found = [queue]
    for child in children.get(queue, []):
        found += _under(children, child)
    return found


def _constant_size(vars: Variables, v: int, resource: str, unit: int) -> int:
    """What victim ``v`` frees of ``resource`` when evicted whole, in ``unit`` (Kueue evicts whole workloads)."""
    victim = vars.problem.victims[v]
    return sum(slot.count * (slot.requests.get(resource, 0) // unit) for slot in victim.slots)
