"""Constraints of the victim model, one module per family of rows.

Every function adds the rows of one rule and cites it; :func:`add_all` adds
them all. Families can be left out (``skip``) to find which one makes a
problem infeasible, for the explanation of an ``infeasible`` decision.
"""

from __future__ import annotations

from collections.abc import Collection

from ..variables import Variables
from .cohort import cohort
from .devices import devices
from .fair import fair
from .kai_rows import excess, guarantee, limits, saturation
from .placement import capacity, gang, topology
from .victims import moves, victim_choices

__all__ = ["FAMILIES", "add_all"]

FAMILIES = ("limits", "guarantee", "saturation", "cohort", "fair")
"""Rule families that :func:`add_all` can leave out."""


def add_all(variables: Variables, skip: Collection[str] = ()) -> None:
    victim_choices(variables)
    moves(variables)
    capacity(variables)
    devices(variables)
    gang(variables)
    topology(variables)
    if "limits" not in skip:
        limits(variables)
    if "guarantee" not in skip:
        guarantee(variables)
    if "saturation" not in skip:
        saturation(variables)
    if "cohort" not in skip:
        cohort(variables)
    if "fair" not in skip:
        fair(variables)
    excess(variables)
