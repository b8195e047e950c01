"""Kueue's cohort quota (docs/rules.md, "Kueue's preemption"): once the victims go, the chunk fits what its
ClusterQueue has available, usages summed up the cohort tree in the rows' quota unit."""

from __future__ import annotations

from math import gcd

from ortools.sat.python import cp_model

from gpu_preempt.problem.records import Problem

from ..variables import LinearExpr, Variables

__all__ = [
    "_cohort_resource",
    "cohort",
    "cohort_tree",
    "constant_size",
    "freed_in",
    "placed_in",
    "positive_part",
    "quota_bound",
    "quota_unit",
    "subtree_members",
    "tree_usages",
]


def cohort(variables: Variables) -> None:
    """Kueue's quota (docs/rules.md, "Kueue's preemption"; :class:`~gpu_preempt.problem.quota_rows.CohortRows`): per
    resource the chunk asks for, ``placed <= max(0, available)`` of the preemptor's ClusterQueue once the victims
    go, written as Kueue's ``resource_node.go`` computes it: a Cohort's usage is what each child uses beyond its
    local quota, and what a queue has available is its local quota left plus its parent's available, capped by its
    borrowing limit. The maxima and minima are exact (CP-SAT's max and min equalities). In an attempt without
    borrowing the ClusterQueue also ends within its nominal quota, and victims of the ``while_nominal`` class are
    taken only in such an attempt. Amounts are counted in each resource's quota unit (:func:`quota_unit`).
    """
    rows, model, problem = variables.problem.cohort, variables.model, variables.problem
    if rows is None:
        return
    borrow: cp_model.IntVar | int = int(rows.modes[0]) if len(rows.modes) == 1 else model.new_bool_var("borrowing")
    for v in rows.while_nominal:
        if isinstance(borrow, int):
            if borrow:
                model.add(variables.victim[v] == 0)
        else:
            model.add_implication(variables.victim[v], borrow.Not())
    for resource in problem.resources:
        _cohort_resource(variables, resource, borrow)


def quota_unit(problem: Problem, resource: str) -> int:
    """The gcd of every amount of ``resource`` Kueue's arithmetic adds or compares in ``problem``: quotas, usages,
    the chunk's and the victims' requests. Counting in it keeps memory (milli-bytes) within CP-SAT's integers."""
    rows = problem.cohort
    assert rows is not None
    quotas = rows.numbers
    amounts = [
        m.get(resource, 0)
        for group in (quotas.nominal, quotas.borrowing, quotas.lending, quotas.used)
        for m in group.values()
    ]
    amounts += [t.requests.get(resource, 0) for t in problem.chunk]
    amounts += [slot.requests.get(resource, 0) for victim in problem.victims for slot in victim.slots]
    return gcd(*amounts) or 1


def cohort_tree(problem: Problem) -> tuple[dict[str, list[str]], str]:
    """The children of each queue of the preemptor's tree, and its top."""
    rows = problem.cohort
    assert rows is not None
    children: dict[str, list[str]] = {}
    for queue, parent in rows.numbers.parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(queue)
    top = rows.queue
    while (parent := rows.numbers.parents[top]) is not None:
        top = parent
    return children, top


def quota_bound(problem: Problem, resource: str, unit: int) -> int:
    """A bound on every amount of ``resource`` the rows handle, in ``unit``."""
    rows = problem.cohort
    assert rows is not None
    quotas = rows.numbers
    amounts = [
        abs(m.get(resource, 0)) for group in (quotas.nominal, quotas.used, quotas.borrowing) for m in group.values()
    ]
    asked = sum(t.requests.get(resource, 0) * len(t.tasks) for t in problem.chunk)
    return 2 * (sum(amounts) + asked) // unit + 1


def placed_in(variables: Variables, resource: str, unit: int) -> LinearExpr:
    """What the chunk places of ``resource``, in ``unit``."""
    chunk = variables.problem.chunk
    terms = [var * (chunk[t].requests.get(resource, 0) // unit) for (t, _), var in variables.place.items()]
    return cp_model.LinearExpr.sum(terms) if terms else 0


def freed_in(variables: Variables, members: tuple[int, ...], resource: str, unit: int) -> LinearExpr:
    """What ``members`` free of ``resource`` when evicted, in ``unit``."""
    terms = [
        variables.evicted(v, s) * (slot.requests.get(resource, 0) // unit)
        for v in members
        for s, slot in enumerate(variables.problem.victims[v].slots)
        if slot.requests.get(resource, 0)
    ]
    return cp_model.LinearExpr.sum(terms) if terms else 0


def _cohort_resource(variables: Variables, resource: str, borrow: cp_model.IntVar | int) -> None:
    rows, model, problem = variables.problem.cohort, variables.model, variables.problem
    assert rows is not None
    quotas, unit = rows.numbers, quota_unit(problem, resource)
    children, top = cohort_tree(problem)
    bound = quota_bound(problem, resource, unit)
    placed = placed_in(variables, resource, unit)
    usage = tree_usages(variables, resource, children, top, rows.victims, bound, unit)

    def at_least_zero(expr: LinearExpr, name: str) -> LinearExpr:
        return positive_part(variables, expr, bound, name)

    def available(queue: str) -> LinearExpr:
        parent, mine = quotas.parents[queue], usage[queue]
        if parent is None:
            return quotas.subtree[queue].get(resource, 0) // unit - mine
        local = quotas.local[queue].get(resource, 0) // unit
        from_parent = available(parent)
        limit = quotas.borrowing.get(queue, {}).get(resource)
        if limit is not None:
            used_up = mine if local == 0 else at_least_zero(mine - local, f"used_up_{queue}_{resource}")
            cap = quotas.subtree[queue].get(resource, 0) // unit - local - used_up + limit // unit
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


def positive_part(variables: Variables, expr: LinearExpr, bound: int, name: str) -> LinearExpr:
    """``max(0, expr)``: a constant when ``expr`` is one, else a variable tied to it by a max equality."""
    if isinstance(expr, int):
        return max(0, expr)
    var = variables.model.new_int_var(0, bound, name)
    variables.model.add_max_equality(var, [expr, 0])
    return var


def tree_usages(
    variables: Variables,
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
    rows = variables.problem.cohort
    assert rows is not None
    quotas = rows.numbers
    usage: dict[str, LinearExpr] = {}

    def use(queue: str) -> LinearExpr:
        below = children.get(queue, [])
        if not below:
            held = quotas.used.get(queue, {}).get(resource, 0) // unit
            members = tuple(v for v in victims.get(queue, ()) if v != back)
            found: LinearExpr = held - freed_in(variables, members, resource, unit) if members else held
            if queue == rows.queue and not (isinstance(added, int) and added == 0):
                found = found + added
        else:
            terms: list[LinearExpr] = []
            for child in below:
                local, part = quotas.local[child].get(resource, 0) // unit, use(child)
                name = f"lent{tag}_{child}_{resource}"
                terms.append(part if local == 0 else positive_part(variables, part - local, bound, name))
            found = sum(t for t in terms if isinstance(t, int)) + cp_model.LinearExpr.sum(
                [t for t in terms if not isinstance(t, int)]
            )
        if not isinstance(found, int):
            # one variable per usage: the expressions are read again and again, and OR-Tools may fold a sum in place
            settled = variables.model.new_int_var(-bound, bound, f"usage{tag}_{queue}_{resource}")
            variables.model.add(settled == found)
            found = settled
        usage[queue] = found
        return found

    use(top)
    return usage


def subtree_members(children: dict[str, list[str]], queue: str) -> list[str]:
    """``queue`` and every queue below it."""
    found = [queue]
    for child in children.get(queue, []):
        found += subtree_members(children, child)
    return found


def constant_size(variables: Variables, v: int, resource: str, unit: int) -> int:
    """What victim ``v`` frees of ``resource`` when evicted whole, in ``unit`` (Kueue evicts whole workloads)."""
    victim = variables.problem.victims[v]
    return sum(slot.count * (slot.requests.get(resource, 0) // unit) for slot in victim.slots)
