"""A problem's answer and its checks, in exact integers and without a solver: the objective a solution reaches, the
rows it breaks, what it frees and what work it loses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from gpu_preempt.models import Resources

from .records import GuaranteeRow, LimitRow, Problem, Victim, cpu_milli_without_gpus, gpu_milli

__all__ = [
    "Solution",
    "Status",
    "broken_rows",
    "chunk_size",
    "excess_of",
    "freed",
    "line_allows",
    "lost_work",
    "objective_values",
    "placed_amount",
    "placed_domains",
    "saturation_rejects",
    "spread_of",
    "topology_broken",
    "victim_freed",
]


Status = Literal["optimal", "feasible", "infeasible", "unknown"]
"""How a solve ended: proved best, feasible but unproved, proved impossible, or not known in time."""


@dataclass
class Solution:
    """An answer to a :class:`Problem`: counts per (victim, slot) evicted and per (type, node) placed."""

    status: Status
    evicted: dict[tuple[int, int], int] = field(default_factory=dict)
    placed: dict[tuple[int, int], int] = field(default_factory=dict)
    reason: str = ""
    stages: list[str] = field(default_factory=list)
    moved: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """Tasks of (victim, slot) moved to node ``n``: ``(v, s, n) -> count`` (docs/snapshot-format.md, "Moves")."""
    devices: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """Shares of type ``t`` placed on device ``d`` of node ``n``: ``(t, n, d) -> count`` (docs/snapshot-format.md,
    "GPU sharing"); their sum over ``d`` is ``placed[t, n]`` times the type's ``spread``, none above ``placed[t, n]``
    (each task on distinct devices: :func:`task_devices`)."""
    moved_devices: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    """Shares of (victim, slot) moved to device ``d`` of node ``n``: ``(v, s, n, d) -> count``; their sum over ``d``
    is ``moved[v, s, n]``."""

    @property
    def feasible(self) -> bool:
        return self.status in ("optimal", "feasible")

    def evicted_of(self, victim: int) -> int:
        return sum(n for (v, _), n in self.evicted.items() if v == victim)

    def victims(self) -> list[int]:
        return sorted({v for (v, _), n in self.evicted.items() if n > 0})

    def placed_count(self) -> int:
        return sum(self.placed.values())

    def moved_of(self, victim: int, slot: int) -> int:
        return sum(n for (v, s, _), n in self.moved.items() if (v, s) == (victim, slot))

    def moves(self) -> int:
        return sum(self.moved.values())


def placed_domains(problem: Problem, solution: Solution, domains: tuple[int, ...]) -> set[int]:
    """The domains (of ``domains``, per node) where ``solution`` places tasks."""
    return {domains[n] for (_, n), count in solution.placed.items() if count > 0}


def topology_broken(problem: Problem, solution: Solution) -> str | None:
    """Why ``solution`` breaks the problem's placement (a task on a node it may not use, or a required topology
    split across domains), or ``None``."""
    for (_, n), count in solution.placed.items():
        if count > 0 and not problem.nodes[n].eligible:
            return f"tasks placed on {problem.nodes[n].name}, which the job may not use"
    if problem.domains:
        used = placed_domains(problem, solution, problem.domains)
        if len(used) > 1 or -1 in used:
            return "the tasks placed lie in more than one domain of the required topology level"
    return None


def spread_of(problem: Problem, solution: Solution) -> int:
    """How many domains of the preferred level the job uses after ``solution`` (0 without a preferred level)."""
    if not problem.spread:
        return 0
    return len(problem.spread_held | placed_domains(problem, solution, problem.spread))


def lost_work(problem: Problem, solution: Solution, weight: Callable[[Resources], int] = gpu_milli) -> int:
    """Progress the evicted and moved tasks lose, in milli-GPU-milliseconds: their GPUs (a share its part) times
    the time since their job's last checkpoint or start (``elapsed_ms``); with ``weight``
    :func:`~.records.cpu_milli_without_gpus`, the milli-CPU-milliseconds victims without GPUs lose."""
    lost = 0
    for (v, s), n in solution.evicted.items():
        lost += n * weight(problem.victims[v].slots[s].requests) * problem.victims[v].elapsed_ms
    for (v, s, _), n in solution.moved.items():
        lost += n * weight(problem.victims[v].slots[s].requests) * problem.victims[v].elapsed_ms
    return lost


def objective_values(problem: Problem, solution: Solution) -> dict[str, object]:
    """The spec's objective of a solution, computed from the counts alone (no solver).

    ``priority`` is the vector of victim-job counts per priority level (highest
    first), ``jobs`` the victim jobs, ``tasks`` the evicted tasks, ``lost_work``
    the GPU-seconds of progress lost, and ``lost_cpu_work`` the CPU-seconds victims without GPUs lose (when some
    do).
    """
    victims = solution.victims()
    per_level = [sum(1 for v in victims if problem.victims[v].priority == p) for p in problem.priority_levels]
    out: dict[str, object] = {
        "priority": per_level,
        "jobs": len(victims),
        "tasks": sum(solution.evicted.values()),
        "lost_work": lost_work(problem, solution) / 1_000_000,
    }
    cpu = lost_work(problem, solution, cpu_milli_without_gpus) if "lost_cpu_work" in problem.objective else 0
    if cpu:
        out["lost_cpu_work"] = cpu / 1_000_000
    if solution.moved:
        out["moves"] = solution.moves()
    if problem.spread:
        out["domains"] = spread_of(problem, solution)
    return out


def freed(problem: Problem, solution: Solution, victims: tuple[int, ...], resource: str) -> int:
    """Amount of ``resource`` the solution takes from ``victims``."""
    wanted = problem.members(victims)
    return sum(
        n * problem.victims[v].slots[s].requests.get(resource, 0)
        for (v, s), n in solution.evicted.items()
        if v in wanted
    )


def placed_amount(problem: Problem, solution: Solution, resource: str) -> int:
    return sum(n * problem.chunk[t].requests.get(resource, 0) for (t, _), n in solution.placed.items())


def excess_of(problem: Problem, solution: Solution, row: LimitRow) -> int:
    """By how much ``solution`` breaks ``row`` (0 when it holds)."""
    over = placed_amount(problem, solution, row.resource) - freed(problem, solution, row.victims, row.resource)
    return max(0, over - row.headroom)


def broken_rows(problem: Problem, solution: Solution) -> list[str]:
    """Rows of ``problem`` that ``solution`` breaks (exact integer arithmetic, no solver)."""
    broken: list[str] = []
    for row in problem.limits:
        if (
            placed_amount(problem, solution, row.resource) - freed(problem, solution, row.victims, row.resource)
            > row.headroom
        ):
            broken.append(f"{row.kind} of queue {row.queue} ({row.resource})")
    if problem.guarantee_rule == "strict":
        for g in problem.guarantees:
            if freed(problem, solution, g.victims, g.resource) > g.max_take:
                broken.append(f"guarantee of queue {g.queue} ({g.resource})")
    else:
        for queue, rows in problem.line_groups():
            if line_allows(problem, solution, rows) is None:
                broken.append(f"guarantee of queue {queue} (at or below its line before the last chunk)")
    taken = set(solution.victims())
    for sat in problem.saturation:
        freed_s = freed(problem, solution, sat.victims_s, sat.resource)
        involved = bool(taken & set(sat.victims_s)) if sat.requested else freed_s > 0
        if not involved:
            continue
        mine = sat.mine_base - freed(problem, solution, sat.victims_a, sat.resource)
        rest = sat.held_s - freed_s
        if saturation_rejects(mine, sat.share_a, rest, sat.share_s, sat.multiplier):
            broken.append(f"saturation of queue {sat.a} against {sat.s} ({sat.resource})")
    cohort = problem.cohort
    if cohort is not None:
        freed_by = {v: victim_freed(problem, solution, v) for v in taken}
        placed = {r: placed_amount(problem, solution, r) for r in problem.resources}
        if not cohort.allows(freed_by, placed):
            broken.append(f"cohort quota of ClusterQueue {cohort.queue}")
        if problem.fair is not None and not problem.fair.allows(freed_by, placed):
            broken.append(f"cohort fair sharing of ClusterQueue {cohort.queue}")
    return broken


def victim_freed(problem: Problem, solution: Solution, victim: int) -> Resources:
    """What ``victim`` frees in ``solution``, per resource."""
    out: Resources = {}
    for (v, s), n in solution.evicted.items():
        if v == victim and n > 0:
            for r, a in problem.victims[v].slots[s].requests.items():
                out[r] = out.get(r, 0) + a * n
    return out


def chunk_size(problem: Problem, solution: Solution, victim: int, resource: str) -> int:
    """The largest chunk ``victim`` loses in ``solution``, in ``resource``: its whole-job chunk when it loses every
    running task, else one peeled task (0 when it loses nothing)."""
    counts = {s: n for (v, s), n in solution.evicted.items() if v == victim and n > 0}
    return _largest_chunk(problem.victims[victim], counts, resource)


def _largest_chunk(spec: Victim, counts: dict[int, int], resource: str) -> int:
    if not counts:
        return 0
    if sum(counts.values()) == spec.running and spec.whole_job:
        return spec.whole_chunk.get(resource, 0)
    return max(spec.slots[s].requests.get(resource, 0) for s in counts)


def line_allows(problem: Problem, solution: Solution, rows: tuple[GuaranteeRow, ...]) -> str | None:
    """``last_chunk`` for one queue's rows: the resource still above the line before the last chunk (``None``:
    none is, so the set may not be taken). A queue that loses nothing needs no resource: ``""``.

    Walks the solution's evictions, not the queue's candidates (a large queue has hundreds of thousands).
    """
    members = problem.members(rows[0].victims)
    taken: dict[int, dict[int, int]] = {}
    for (v, s), n in solution.evicted.items():
        if n > 0 and v in members:
            taken.setdefault(v, {})[s] = n
    if not taken:
        return ""
    for row in rows:
        last = max(_largest_chunk(problem.victims[v], counts, row.resource) for v, counts in taken.items())
        gone = sum(
            n * problem.victims[v].slots[s].requests.get(row.resource, 0)
            for v, counts in taken.items()
            for s, n in counts.items()
        )
        if row.threshold is not None and row.held - gone + last > row.threshold:
            return row.resource
    return None


def saturation_rejects(mine: int, share_a: int, rest: int, share_s: int, multiplier: Fraction) -> bool:
    """KAI's saturation rule: reject iff ``mine/share_a > 1``, ``share_s > 0`` and
    ``multiplier * mine/share_a >= rest/share_s``.

    A zero ``share_a`` makes the ratio infinite when ``mine > 0`` (and 0 otherwise).
    """
    if share_s <= 0:
        return False
    if share_a == 0:
        return mine > 0
    ratio_a = Fraction(mine, share_a)
    return ratio_a > 1 and multiplier * ratio_a >= Fraction(rest, share_s)
