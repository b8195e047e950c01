"""Keeping only the units that can matter.

**Top K per level.** Let ``K`` be the number of tasks to place. Any solution
uses at most ``K`` units (each used unit hosts at least one task; an unused
victim only adds cost). Take a unit ``u`` and a level ``t``: if ``K`` other
units each have an option hosting at least ``t`` tasks that costs no more than
``u``'s, then in any solution where ``u`` hosts ``t`` tasks, one of those ``K``
units is unused, and moving the ``t`` tasks there is no worse. So for each level
``t`` only the ``K`` best units need their ``t``-option. Units are disjoint, so
the exchange never touches another used unit.

**Lower bounds first.** Single-node units are sorted by a lower bound on their
cost (:func:`.options.lower_bound`, computed for all of them at once by
:func:`.options.lower_bounds`); exact options are enumerated in that order
and the scan stops as soon as the next bound is no better than the ``K``-th best
exact cost found: every unit after it is dominated.

Costs end with the canonical tie-break (:mod:`gpu_preempt.rules.victim_order`), so a
unit is dropped only when ``K`` others are better *or equal with a better
tie-break*: the canonical answer among equal optima uses kept units only, and
the full model restricted to them (:mod:`gpu_preempt.actions.reduced_path`)
finds it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter

import numpy as np

from gpu_preempt.models import Resources
from gpu_preempt.rules.victim_order import NO_VICTIMS

from .losses import Cost
from .options import Hosting, lower_bounds, unit_options
from .units import CostModel, Unit, most_hosted

__all__ = ["BATCHED_LEVELS", "Selection", "level_bounds", "select", "spread_bounds"]

BATCHED_LEVELS = 4096
"""Up to this many (unit, level) pairs beyond the first level, :func:`select` bounds every level in one pass (a
numpy pass costs about a millisecond however small); past that, level by level, on the units still in the scan."""


@dataclass
class Selection:
    units: list[Unit]
    """The units kept, in document order of their first node."""
    enumerated: int
    scanned: int


def select(
    units: list[Unit], needed: int, request: Resources, resources: tuple[str, ...], costs: CostModel
) -> Selection:
    """The units worth keeping: for each level ``t``, the ``needed`` best by their ``t``-option's cost.

    Level ``t`` scans the units that might host ``t`` tasks in the order of a lower bound on that option's cost
    (:func:`level_bounds`; for ``t`` = 1, the bounds of one task), and stops where the bound reaches the
    ``needed``-th best cost found."""
    most = {id(u): min(needed, _hosted(u, request, resources)) for u in units}
    exact: dict[int, list[Hosting]] = {}
    pooled: dict[int, Unit] = {}

    def options_of(u: Unit) -> list[Hosting]:
        if id(u) not in exact:
            exact[id(u)] = unit_options(u, request, resources, costs, most[id(u)])
        return exact[id(u)]

    singles = [u for u in units if len(u.nodes) == 1]
    first: dict[int, Cost | None] = {}
    first.update(zip(map(id, singles), lower_bounds(singles, request, resources, costs), strict=True))
    spread = [u for u in units if len(u.nodes) > 1]
    first.update(zip(map(id, spread), spread_bounds(spread, request, resources, costs), strict=True))
    bounded = [u for u in units if first[id(u)] is not None]
    bounds: dict[int, Cost] = {id(u): first[id(u)] for u in bounded}  # type: ignore[misc]
    scan = _by_bound(bounded, [bounds[id(u)] for u in bounded])
    kept: dict[int, Unit] = {}
    deeper = [(u, t) for u in scan for t in range(2, most[id(u)] + 1)]
    early: dict[tuple[int, int], Cost | None] = {}  # few enough: every level's bounds in one pass
    if len(deeper) <= BATCHED_LEVELS:
        tight = level_bounds([u for u, _ in deeper], [t for _, t in deeper], request, resources, costs, pooled)
        early = {(id(u), t): bound for (u, t), bound in zip(deeper, tight, strict=True)}
    for t in range(1, needed + 1):
        if t > 1:  # bounds for t tasks, on the units that might host them, and the scan in their order
            able = [u for u in scan if most[id(u)] >= t]
            if not able:
                break  # no unit hosts t tasks, nor any more
            if early:
                tight = [early[id(u), t] for u in able]
            else:
                tight = level_bounds(able, t, request, resources, costs, pooled)
            pairs = [(u, max(bounds[id(u)], b)) for u, b in zip(able, tight, strict=True) if b is not None]
            bounds = {id(u): b for u, b in pairs}
            scan = _by_bound([u for u, _ in pairs], [b for _, b in pairs])
        found: list[tuple[Cost, int, Unit]] = []
        for unit in scan:
            if most[id(unit)] < t:
                continue
            if len(found) >= needed and bounds[id(unit)] >= found[-1][0]:
                break  # every later unit is dominated by the needed best found so far
            options = options_of(unit)
            if len(options) < t:
                continue
            bisect.insort(found, (options[t - 1].cost, unit.first, unit), key=lambda x: (x[0], x[1]))
            del found[needed:]
        for _, _, unit in found:
            kept[id(unit)] = unit
    return Selection(sorted(kept.values(), key=lambda u: u.first), enumerated=len(exact), scanned=len(units))


def spread_bounds(
    units: list[Unit], request: Resources, resources: tuple[str, ...], costs: CostModel
) -> list[Cost | None]:
    """A lower bound on the cost of hosting one task on each multi-node unit (``None``: impossible).

    A task lands on one schedulable node ``n`` of the unit, so the victims evicted free room there: the unit's
    option costs at least the :func:`.options.lower_bound` of ``n`` seen as a unit of its own, where a victim
    spanning nodes counts with its tasks on ``n`` (its loss then counts those tasks only, and a surplus may seem
    to free more there than it can: both make the bound smaller, never larger). The least over its nodes bounds
    the unit.
    """
    views: list[Unit] = []
    owner: list[int] = []
    for k, unit in enumerate(units):
        for n, room in unit.room.items():
            here = [
                victim._replace(per_node=((n, count),), nodes=(n,))
                for victim in unit.spanning
                for m, count in victim.per_node
                if m == n
            ]
            views.append(Unit((n,), {n: room}, _local={n: [*unit.local.get(n, []), *here]}))
            owner.append(k)
    out: list[Cost | None] = [None] * len(units)
    for k, bound in zip(owner, lower_bounds(views, request, resources, costs), strict=True):
        if bound is not None and (out[k] is None or bound < out[k]):  # type: ignore[operator]
            out[k] = bound
    return out


def level_bounds(
    units: list[Unit],
    tasks: int | Sequence[int],
    request: Resources,
    resources: tuple[str, ...],
    costs: CostModel,
    pooled: dict[int, Unit] | None = None,
) -> list[Cost | None]:
    """A lower bound on the cost of hosting ``tasks`` tasks (one count for all, or one per unit) on each unit
    (``None``: impossible).

    A unit of one node has :func:`.options.lower_bounds` for ``tasks`` tasks. A unit over several nodes is bounded
    as if it were one node (:func:`_pooled`): the tasks it hosts need, summed over its nodes, ``tasks`` times the
    request, and at most its rooms (those below zero counted as zero) and what its victims free can give it. Every
    option hosting ``tasks`` tasks also hosts one, so the scan may take the larger of this bound and the bound for
    one task (lexicographically: both are at most every such option's cost). ``pooled`` keeps the units seen as
    one node, by ``id``, from one call to the next.
    """
    each = [tasks] * len(units) if isinstance(tasks, int) else list(tasks)
    alone = [k for k, u in enumerate(units) if len(u.nodes) == 1]
    spread = [k for k, u in enumerate(units) if len(u.nodes) > 1]
    views = {} if pooled is None else pooled
    for k in spread:
        if id(units[k]) not in views:
            views[id(units[k])] = _pooled(units[k], len(resources))
    out: list[Cost | None] = [None] * len(units)
    for rows, seen in ((alone, [units[k] for k in alone]), (spread, [views[id(units[k])] for k in spread])):
        found = lower_bounds(seen, request, resources, costs, [each[k] for k in rows])
        for k, bound in zip(rows, found, strict=True):
            out[k] = bound
    return out


def _pooled(unit: Unit, width: int) -> Unit:
    """``unit`` as one node (its first): the rooms of its schedulable nodes summed (from zero: a node short of room
    hosts nothing, it takes nothing from the others), and every victim on it, those spanning nodes with all their
    running tasks there. A relaxation: any option of ``unit`` is one of it, at most as costly."""
    first = unit.first
    room = tuple(sum(max(0, rooms[i]) for rooms in unit.room.values()) for i in range(width))
    victims = [
        victim._replace(per_node=((first, sum(k for _, k in victim.per_node)),), nodes=(first,))
        for victim in unit.spanning
    ]
    victims += [victim for here in unit.local.values() for victim in here]
    return Unit((first,), {first: room}, _local={first: victims})


def _by_bound(units: list[Unit], bounds: list[Cost]) -> list[Unit]:
    """``units`` sorted by ``(bound, first node)``, as ``sorted`` with that key sorts them.

    Lower bounds are integers and then the same tie-break (none: :data:`NO_VICTIMS`), so on a large cluster the
    sort is numpy's, on columns, rather than some million comparisons of tuples; where they do not all fit 64-bit
    integers (numpy then makes an array of objects), Python sorts them. First nodes differ (units are disjoint), so
    the order is total and both sorts agree.
    """
    if len(units) > 1 and all(bound[-1] is NO_VICTIMS for bound in bounds):
        matrix = np.array(list(map(_ALL_BUT_LAST, bounds)))
        if matrix.dtype == np.int64 and matrix.shape == (len(units), len(bounds[0]) - 1):  # else Python sorts
            first = np.fromiter(map(_FIRST, map(_NODES, units)), dtype=np.int64, count=len(units))
            order = np.lexsort((first, *matrix.T[::-1]))  # the last key is the primary one
            return list(map(units.__getitem__, order.tolist()))
    return [units[i] for i in sorted(range(len(units)), key=lambda i: (bounds[i], units[i].first))]


_ALL_BUT_LAST, _NODES, _FIRST = itemgetter(slice(0, -1)), attrgetter("nodes"), itemgetter(0)


def _hosted(unit: Unit, request: Resources, resources: tuple[str, ...]) -> int:
    if unit.hosted < 0:
        unit.hosted = most_hosted(unit, request, resources)
    return unit.hosted
