"""Keeping only the units that can matter, grouped into classes of identical units.

**Top K per level.** Let ``K`` be the number of tasks to place. Any solution
uses at most ``K`` units (each used unit hosts at least one task; an unused
victim only adds cost). Take a unit ``u`` and a level ``t``: if ``K`` other
units each have an option hosting at least ``t`` tasks that costs no more than
``u``'s, then in any solution where ``u`` hosts ``t`` tasks, one of those ``K``
units is unused, and moving the ``t`` tasks there is no worse. So for each level
``t`` only the ``K`` best units need their ``t``-option. Units are disjoint, so
the exchange never touches another used unit.

**Lower bounds first.** Single-node units are sorted by a lower bound on their
cost (:func:`.options.lower_bound`); exact options are enumerated in that order
and the scan stops as soon as the next bound is no better than the ``K``-th best
exact cost found: every unit after it is dominated.

**Classes.** Of the units kept, those with the same signature (room, and the
same victims' choices up to names) have the same options; they are grouped into
one class with a count (its options: every level kept for any of them, each a
real option of every member), and the model chooses how many of each class to
use.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from gpu_preempt.models import Resources

from .options import Option, lower_bound, unit_options
from .units import Cost, CostModel, Unit, most_hosted


@dataclass
class UnitClass:
    """Identical units, in document order, with the options kept for each level ``t``."""

    members: list[Unit]
    options: dict[int, Option] = field(default_factory=dict)
    member_options: list[list[Option]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.members)


@dataclass
class Selection:
    classes: list[UnitClass]
    enumerated: int
    units: int


def select(
    units: list[Unit], needed: int, request: Resources, resources: tuple[str, ...], costs: CostModel
) -> Selection:
    """Classes of the units worth a variable, with the options worth keeping at each level."""
    most = {id(u): min(needed, _hosted(u, request, resources)) for u in units}
    exact: dict[int, list[Option]] = {}
    bounds: dict[int, Cost | None] = {}

    def options_of(u: Unit) -> list[Option]:
        if id(u) not in exact:
            exact[id(u)] = unit_options(u, request, resources, costs, most[id(u)])
        return exact[id(u)]

    def bound_of(u: Unit) -> Cost | None:
        if id(u) not in bounds:
            if len(u.nodes) > 1:
                found = options_of(u)
                bounds[id(u)] = found[0].cost if found else None
            else:
                bounds[id(u)] = lower_bound(u, request, resources, costs)
        return bounds[id(u)]

    scan = sorted((u for u in units if bound_of(u) is not None), key=lambda u: (bound_of(u), u.first))
    keep: dict[int, set[int]] = {}
    for t in range(1, needed + 1):
        found: list[tuple[Cost, int, Unit]] = []
        for unit in scan:
            if most[id(unit)] < t:
                continue
            if len(found) >= needed and bound_of(unit) >= found[-1][0]:  # type: ignore[operator]
                break  # every later unit is dominated by the needed best found so far
            options = options_of(unit)
            if len(options) < t:
                continue
            bisect.insort(found, (options[t - 1].cost, unit.first, unit), key=lambda x: (x[0], x[1]))
            del found[needed:]
        for _, _, unit in found:
            keep.setdefault(id(unit), set()).add(t)
    classes: dict[object, UnitClass] = {}
    for unit in units:
        levels = keep.get(id(unit))
        if levels:
            unit_class = classes.setdefault(_signature(unit, costs), UnitClass([]))
            unit_class.members.append(unit)
            for t in levels:
                unit_class.options.setdefault(t, options_of(unit_class.members[0])[t - 1])
    kept = sorted(classes.values(), key=lambda c: c.members[0].first)
    for unit_class in kept:
        unit_class.options = dict(sorted(unit_class.options.items()))
    return Selection(kept, enumerated=len(exact), units=len(units))


def _signature(unit: Unit, costs: CostModel) -> object:
    """Units with equal signatures have the same options: same room, same victims up to names."""
    if len(unit.nodes) > 1:
        return ("unit", unit.nodes)  # multi-node units are kept apart: their structure is rarely shared
    (n,) = unit.nodes
    victims = sorted(v.signature(costs) for v in unit.local.get(n, []))
    return (unit.room.get(n), tuple(victims))


def _hosted(unit: Unit, request: Resources, resources: tuple[str, ...]) -> int:
    if unit.hosted < 0:
        unit.hosted = most_hosted(unit, request, resources)
    return unit.hosted
