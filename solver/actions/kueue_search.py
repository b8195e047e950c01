"""Kueue's own search for victims, the greedy baseline under ``config.policy: kueue`` (docs/rules.md, "Kueue's
preemption"; Kueue's ``pkg/scheduler/preemption/preemption.go``, ``minimalPreemptions``)."""

from __future__ import annotations

from gpu_preempt.actions.first_fit import Fitted, fit
from gpu_preempt.problem.records import GuaranteeRow, Problem
from gpu_preempt.problem.solution import Solution, broken_rows, placed_amount

__all__ = ["solve_cohort"]


def solve_cohort(problem: Problem) -> Solution:
    """Kueue's own search (docs/rules.md, "Kueue's preemption"; ``preemption.go``, ``minimalPreemptions``): for
    each attempt in turn, take the candidates in Kueue's order, skipping one that may not go in this attempt or
    whose queue no longer uses more than its quota, until the chunk fits; then fill back: from the second-to-last
    victim down to the first, put each back if the chunk still fits without it."""
    cohort = problem.cohort
    assert cohort is not None
    without = set(cohort.while_nominal)
    groups = problem.line_groups()
    asked = {r: sum(t.requests.get(r, 0) * t.required for t in problem.chunk) for r in problem.resources}
    freed = _Freed(problem)
    for borrowing in cohort.modes:
        taken: list[int] = []
        for v in problem.greedy_order:
            if borrowing and v in without:
                continue
            if not all(
                _still_over(problem, rows, taken) for _, rows in groups if v in problem.members(rows[0].victims)
            ):
                continue
            if problem.fair is not None and not problem.fair.allows(freed.by([*taken, v]), asked):
                continue  # docs/rules.md, "Kueue's fair sharing": its queue's share would pass no strategy
            taken.append(v)
            fitted = _cohort_fit(problem, taken, borrowing, freed)
            if fitted is None:
                continue
            for i in range(len(taken) - 2, -1, -1):
                trial = taken[:i] + taken[i + 1 :]
                found = _cohort_fit(problem, trial, borrowing, freed)
                if found is not None:
                    taken[i] = taken[-1]
                    taken.pop()
                    fitted = found
            evicted = _whole(problem, taken)
            return Solution("feasible", evicted, fitted.placed, devices=fitted.devices)
    return Solution("unknown", reason="Kueue's search ran out of candidates without finding room")


class _Freed:
    """What each victim frees evicted whole (found once per victim)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.known: dict[int, dict[str, int]] = {}

    def of(self, v: int) -> dict[str, int]:
        found = self.known.get(v)
        if found is None:
            found = self.known[v] = {}
            for slot in self.problem.victims[v].slots:
                for r, a in slot.requests.items():
                    if slot.count > 0:
                        found[r] = found.get(r, 0) + a * slot.count
        return found

    def by(self, victims: list[int]) -> dict[int, dict[str, int]]:
        return {v: self.of(v) for v in victims}


def _whole(problem: Problem, victims: list[int]) -> dict[tuple[int, int], int]:
    return {(v, s): slot.count for v in victims for s, slot in enumerate(problem.victims[v].slots)}


def _still_over(problem: Problem, rows: tuple[GuaranteeRow, ...], taken: list[int]) -> bool:
    """Whether the queue of ``rows`` still uses more than its quota in some resource once ``taken`` go."""
    gone = _whole(problem, [v for v in taken if v in problem.members(rows[0].victims)])
    return any(
        row.threshold is None
        or row.held - sum(n * problem.victims[v].slots[s].requests.get(row.resource, 0) for (v, s), n in gone.items())
        > row.threshold
        for row in rows
    )


def _cohort_fit(problem: Problem, victims: list[int], borrowing: bool, whole: _Freed) -> Fitted | None:
    """First-fit of the chunk once ``victims`` go, if it fits Kueue's quota in the attempt ``borrowing``."""
    cohort = problem.cohort
    assert cohort is not None
    evicted = _whole(problem, victims)
    fitted = fit(problem, evicted)
    if fitted is None:
        return None
    solution = Solution("feasible", evicted, fitted.placed)
    freed = whole.by(victims)
    placed = {r: placed_amount(problem, solution, r) for r in problem.resources}
    if not cohort.fits(freed, placed, borrowing=borrowing):
        return None
    if problem.fair is not None and not problem.fair.allows(freed, placed):
        return None
    if any(not b.startswith(("guarantee", "cohort")) for b in broken_rows(problem, solution)):
        return None
    return fitted
