"""Decision variables of the victim model: integer counts, never one Boolean per task.

* ``place[t, n]``: tasks of chunk type ``t`` placed on node ``n``;
* ``whole[v]``: victim ``v`` loses all its running tasks;
* ``peel[v, s]``: tasks of slot ``s`` of an elastic victim ``v`` evicted one by one;
* ``victim[v]``: ``v`` loses at least one task;
* ``move[v, s, n]``: tasks of slot ``s`` of ``v`` moved to node ``n`` (docs/snapshot-format.md, "Moves"), and
``move_whole[v]``: a
  gang ``v`` moves, every task;
* ``domain[d]``: the tasks go to domain ``d`` of a required topology level; ``spread[d]``: some task goes to
  domain ``d`` of a preferred level (docs/rules.md, "Placement");
* ``dev[t, n, d]``: shares of type ``t`` placed on device ``d`` of node ``n``; ``move_dev[v, s, n, d]``: shares of
  slot ``s`` of ``v`` moved to device ``d`` of ``n``; ``used[n, d]``: device ``d`` of ``n`` carries shares after the
  decision (docs/snapshot-format.md, "GPU sharing"), on nodes with devices only.

The tasks evicted from a slot are ``count * whole + peel``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from math import gcd

from ortools.sat.python import cp_model

from gpu_preempt.models import MILLI
from gpu_preempt.problem.records import Problem, Slot
from gpu_preempt.problem.solution import Solution

__all__ = ["LinearExpr", "Variables", "resource_scales"]

LinearExpr = cp_model.LinearExpr | int
"""A linear expression of the model, or a constant."""


def resource_scales(problem: Problem) -> dict[str, int]:
    """Per resource, the gcd of every amount the model uses, so coefficients stay small and exact."""
    amounts: dict[str, list[int]] = {}
    maps = [
        *(chunk.requests for chunk in problem.chunk),
        *(slot.requests for victim in problem.victims for slot in victim.slots),
        *(node.room for node in problem.nodes),
    ]
    for requests in maps:
        for r, a in requests.items():
            amounts.setdefault(r, []).append(a)
    for row in (*problem.limits, *problem.excess):
        amounts.setdefault(row.resource, []).append(row.headroom)
    for g in problem.guarantees:
        amounts.setdefault(g.resource, []).append(g.max_take)
    return {r: gcd(*values) or 1 for r, values in amounts.items()}


@dataclass
class Variables:
    """All variables of one model, with the expressions built from them."""

    problem: Problem
    model: cp_model.CpModel
    scale: dict[str, int]
    place: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    place_bound: dict[tuple[int, int], int] = field(default_factory=dict)
    whole: dict[int, cp_model.IntVar] = field(default_factory=dict)
    peel: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    victim: dict[int, cp_model.IntVar] = field(default_factory=dict)
    excess: list[cp_model.IntVar] = field(default_factory=list)
    """Per ``problem.excess`` row, how far the row is broken (in units of its resource's scale)."""
    excess_bound: list[int] = field(default_factory=list)
    move: dict[tuple[int, int, int], cp_model.IntVar] = field(default_factory=dict)
    move_whole: dict[int, cp_model.IntVar] = field(default_factory=dict)
    domain: dict[int, cp_model.IntVar] = field(default_factory=dict)
    spread: dict[int, cp_model.IntVar] = field(default_factory=dict)
    dev: dict[tuple[int, int, int], cp_model.IntVar] = field(default_factory=dict)
    move_dev: dict[tuple[int, int, int, int], cp_model.IntVar] = field(default_factory=dict)
    used: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    hinted: Solution | None = None
    """The solution the model's hints come from."""

    @classmethod
    def build(cls, model: cp_model.CpModel, problem: Problem) -> Variables:
        self = cls(problem, model, resource_scales(problem))
        freed = _freed_per_node(problem)
        for t, chunk in enumerate(problem.chunk):
            for n, node in enumerate(problem.nodes):
                bound = min(len(chunk.tasks), self._fit_bound(t, n, freed.get(n, ()))) if node.eligible else 0
                if bound > 0:
                    self.place[t, n] = model.new_int_var(0, bound, f"place_{t}_{n}")
                    self.place_bound[t, n] = bound
        for t, n in list(self.place):
            devices, share = problem.nodes[n].devices, problem.chunk[t].share
            if devices is not None and share:
                for d in range(devices.count):
                    most = min(self.place_bound[t, n], MILLI // share)
                    self.dev[t, n, d] = model.new_int_var(0, most, f"dev_{t}_{n}_{d}")
        if problem.domains:
            for d in sorted({problem.domains[n] for _, n in self.place}):
                self.domain[d] = model.new_bool_var(f"domain_{d}")
        if problem.spread:
            for d in sorted({problem.spread[n] for _, n in self.place} - problem.spread_held):
                self.spread[d] = model.new_bool_var(f"spread_{d}")
        for v, victim in enumerate(problem.victims):
            if victim.whole_job:
                self.whole[v] = model.new_bool_var(f"whole_{v}")
            if victim.surplus > 0:
                for s, slot in enumerate(victim.slots):
                    self.peel[v, s] = model.new_int_var(0, min(slot.count, victim.surplus), f"peel_{v}_{s}")
            self.victim[v] = model.new_bool_var(f"victim_{v}")
            if victim.move == "whole" and all(slot.moves_to for slot in victim.slots):
                self.move_whole[v] = model.new_bool_var(f"move_whole_{v}")
            if victim.move != "none":
                for s, slot in enumerate(victim.slots):
                    for n in slot.moves_to:
                        self.move[v, s, n] = model.new_int_var(0, slot.count, f"move_{v}_{s}_{n}")
                        devices = problem.nodes[n].devices
                        if not slot.devices or devices is None:
                            continue
                        for d in range(devices.count):
                            if (n, (d,)) != (slot.node, slot.devices):
                                self.move_dev[v, s, n, d] = model.new_int_var(
                                    0, slot.count, f"move_dev_{v}_{s}_{n}_{d}"
                                )
        return self

    def _fit_bound(self, t: int, n: int, slots: Iterable[Slot]) -> int:
        """Most tasks of type ``t`` node ``n`` could host if every victim there (its ``slots``) were evicted."""
        requests = self.problem.chunk[t].requests
        room = dict(self.problem.nodes[n].room)
        for slot in slots:
            for r, a in slot.requests.items():
                room[r] = room.get(r, 0) + a * slot.count
        fits = [room.get(r, 0) // a for r, a in requests.items() if a > 0]
        return min(fits) if fits else len(self.problem.chunk[t].tasks)

    # -- expressions -------------------------------------------------------------

    def evicted(self, v: int, s: int) -> LinearExpr:
        count = self.problem.victims[v].slots[s].count
        terms: list[LinearExpr] = []
        if v in self.whole:
            terms.append(count * self.whole[v])
        if (v, s) in self.peel:
            terms.append(self.peel[v, s])
        return cp_model.LinearExpr.sum(terms) if terms else 0

    def freed(self, victims: tuple[int, ...] | list[int], resource: str) -> LinearExpr:
        """Resource freed by evicting from ``victims``, in units of ``scale[resource]``."""
        unit = self.scale.get(resource, 1)
        terms = []
        for v in victims:
            for s, slot in enumerate(self.problem.victims[v].slots):
                amount = slot.requests.get(resource, 0)
                if amount:
                    terms.append(self.evicted(v, s) * (amount // unit))
        return cp_model.LinearExpr.sum(terms) if terms else 0

    def moved_out(self, v: int, s: int) -> LinearExpr:
        by_slot: dict[tuple[int, int], list[cp_model.IntVar]] | None = self.__dict__.get("_moves_by_slot")
        if by_slot is None:  # built once: a model asks for every slot's moves, several times
            by_slot = self.__dict__["_moves_by_slot"] = {}
            for (u, k, _), var in self.move.items():
                by_slot.setdefault((u, k), []).append(var)
        terms = by_slot.get((v, s))
        return cp_model.LinearExpr.sum(terms) if terms else 0

    def moved(self) -> LinearExpr:
        return cp_model.LinearExpr.sum(list(self.move.values())) if self.move else 0

    def placed_total(self, resource: str) -> LinearExpr:
        unit = self.scale.get(resource, 1)
        terms = [
            var * (self.problem.chunk[t].requests.get(resource, 0) // unit)
            for (t, _), var in self.place.items()
            if self.problem.chunk[t].requests.get(resource, 0)
        ]
        return cp_model.LinearExpr.sum(terms) if terms else 0

    def max_freed(self, victims: tuple[int, ...], resource: str) -> int:
        unit = self.scale.get(resource, 1)
        return sum(
            slot.count * (slot.requests.get(resource, 0) // unit)
            for v in victims
            for slot in self.problem.victims[v].slots
        )

    # -- solutions -----------------------------------------------------------------

    def hint(self, solution: Solution) -> None:
        """Give CP-SAT a complete starting point (cleared first: duplicate hints are invalid)."""
        if solution is self.hinted:
            return  # the model holds these hints already (solutions are not changed once read)
        self.hinted = solution
        self.model.clear_hints()
        for key, var in self.place.items():
            self.model.add_hint(var, solution.placed.get(key, 0))
        for v, victim in enumerate(self.problem.victims):
            taken = {s: solution.evicted.get((v, s), 0) for s in range(len(victim.slots))}
            total = sum(taken.values())
            whole = v in self.whole and total == victim.running
            if v in self.whole:
                self.model.add_hint(self.whole[v], int(whole))
            for s in range(len(victim.slots)):
                if (v, s) in self.peel:
                    self.model.add_hint(self.peel[v, s], 0 if whole else taken[s])
            self.model.add_hint(self.victim[v], int(total > 0))
            if v in self.move_whole:
                moved = sum(solution.moved_of(v, s) for s in range(len(victim.slots)))
                self.model.add_hint(self.move_whole[v], int(moved == victim.running))
        for destination, var in self.move.items():
            self.model.add_hint(var, solution.moved.get(destination, 0))
        if self.dev and (solution.devices or not solution.placed):
            for placed, var in self.dev.items():
                self.model.add_hint(var, solution.devices.get(placed, 0))
        if self.move_dev and (solution.moved_devices or not solution.moved):
            for landed, var in self.move_dev.items():
                self.model.add_hint(var, solution.moved_devices.get(landed, 0))
        for ids, chosen in ((self.problem.domains, self.domain), (self.problem.spread, self.spread)):
            if not chosen:
                continue
            used = {ids[n] for (_, n), count in solution.placed.items() if count}
            for d, var in chosen.items():
                self.model.add_hint(var, int(d in used))

    def unhint(self) -> None:
        """Give CP-SAT no starting point."""
        self.model.clear_hints()
        self.hinted = None

    def read(self, solver: cp_model.CpSolver, status: str) -> Solution:
        values = list(solver.response_proto.solution)  # by variable index: one call, not one per variable
        placed = {key: values[var.index] for key, var in self.place.items() if values[var.index]}
        evicted = {}
        whole, peel = self.whole, self.peel
        for v, victim in enumerate(self.problem.victims):
            lost = values[whole[v].index] if v in whole else 0
            for s, slot in enumerate(victim.slots):
                count = slot.count * lost + (values[peel[v, s].index] if (v, s) in peel else 0)
                if count:
                    evicted[v, s] = count
        moved = {key: values[var.index] for key, var in self.move.items() if values[var.index]}
        devices = {key: values[var.index] for key, var in self.dev.items() if values[var.index]}
        moved_devices = {key: values[var.index] for key, var in self.move_dev.items() if values[var.index]}
        return Solution(
            status,  # type: ignore[arg-type]
            evicted=evicted,
            placed=placed,
            moved=moved,
            devices=devices,
            moved_devices=moved_devices,
        )


def _freed_per_node(problem: Problem) -> dict[int, list[Slot]]:
    """Per node, the victims' slots there, in victim and slot order."""
    found: dict[int, list[Slot]] = {}
    for victim in problem.victims:
        for slot in victim.slots:
            found.setdefault(slot.node, []).append(slot)
    return found
