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

**Classes.** Units with the same signature (room, and the same victims' choices
up to names) have the same options; they are grouped into one class with a
count, and the model chooses how many of each class to use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models import Resources

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
    classes: dict[object, UnitClass] = {}
    for unit in units:
        classes.setdefault(_signature(unit, costs), UnitClass([])).members.append(unit)
    ordered = sorted(classes.values(), key=lambda c: c.members[0].first)
    most = {id(c): min(needed, most_hosted(c.members[0], request, resources)) for c in ordered}
    exact: dict[int, list[Option]] = {}
    bounds: dict[int, Cost | None] = {}

    def options_of(c: UnitClass) -> list[Option]:
        if id(c) not in exact:
            exact[id(c)] = unit_options(c.members[0], request, resources, costs, most[id(c)])
        return exact[id(c)]

    def bound_of(c: UnitClass) -> Cost | None:
        if id(c) not in bounds:
            unit = c.members[0]
            if len(unit.nodes) > 1:
                found = options_of(c)
                bounds[id(c)] = found[0].cost if found else None
            else:
                bounds[id(c)] = lower_bound(unit, request, resources, costs)
        return bounds[id(c)]

    scan = sorted((c for c in ordered if bound_of(c) is not None), key=lambda c: (bound_of(c), c.members[0].first))
    keep: dict[int, set[int]] = {}
    for t in range(1, needed + 1):
        found: list[tuple[Cost, int, UnitClass]] = []
        covered = 0
        for c in scan:
            if most[id(c)] < t:
                continue
            if covered >= needed:
                kth = found[-1][0]
                if bound_of(c) >= kth:  # type: ignore[operator]
                    break
            options = options_of(c)
            if len(options) < t:
                continue
            found.append((options[t - 1].cost, c.members[0].first, c))
            found.sort(key=lambda x: (x[0], x[1]))
            covered = 0
            trimmed = []
            for entry in found:
                if covered >= needed:
                    break
                trimmed.append(entry)
                covered += entry[2].count
            found = trimmed
        for _, _, c in found:
            keep.setdefault(id(c), set()).add(t)
    kept = []
    for c in ordered:
        levels = keep.get(id(c))
        if not levels:
            continue
        c.options = {t: options_of(c)[t - 1] for t in sorted(levels)}
        kept.append(c)
    return Selection(kept, enumerated=len(exact), units=len(units))


def _signature(unit: Unit, costs: CostModel) -> object:
    """Units with equal signatures have the same options: same room, same victims up to names."""
    if len(unit.nodes) > 1:
        return ("unit", unit.nodes)  # multi-node units are kept apart: their structure is rarely shared
    (n,) = unit.nodes
    victims = sorted(v.signature(costs) for v in unit.local.get(n, []))
    return (unit.room.get(n), tuple(victims))
