"""The undominated victim options of a unit: for each number of tasks, the least disruptive way to host them.

For a unit and each ``t`` (tasks of the chunk it should host), the option kept is
the lexicographically least cost vector among all combinations of its victims'
choices that make room for at least ``t`` tasks.

Why nothing is lost: costs add up over units (each victim belongs to one unit),
and the lexicographic order is compatible with addition (``a <= b`` implies
``a + c <= b + c``; for the last component, the canonical tie-break of
:mod:`gpu_preempt.rules.victim_order`, this holds for sets of victims of
other units, which are disjoint). So in any solution, replacing a unit's combination by the
cheapest one hosting at least as many tasks never makes the total worse; without
the rows that bind units together, the choice inside one unit does not affect
the others.

Within a node, every combination is enumerated (bounded: a node holds few
jobs); across the nodes of a multi-node unit, per-node optima are combined by
dynamic programming over the number of tasks, for every choice of the victims
that span nodes. :func:`lower_bound` gives a cheap bound on a single-node
unit's option, so that most units are never enumerated (see :mod:`.select`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from gpu_preempt.models import Resources
from gpu_preempt.rules.victim_order import NO_VICTIMS

from .hosts import tasks_fitting
from .losses import Cost, Loss, Member, TooComplex
from .units import CandidateTasks, CostModel, SingleNodeUnits, Unit, add

__all__ = ["ENUMERATION_LIMIT", "Hosting", "lower_bound", "lower_bounds", "node_options", "unit_options"]

_PRIORITY, _SECOND = itemgetter("_resolved_priority"), itemgetter(1)

ENUMERATION_LIMIT = 4096
"""Most combinations enumerated for one node, or for the multi-node victims of one unit."""


@dataclass(frozen=True)
class Hosting:
    """Room for at least ``tasks`` tasks: the choices taken (item, choice index) and tasks per node."""

    tasks: int
    cost: Cost
    picks: tuple[tuple[Member, Loss], ...]
    hosted: tuple[tuple[int, int], ...]


def unit_options(
    unit: Unit, request: Resources, resources: tuple[str, ...], costs: CostModel, most: int
) -> list[Hosting]:
    """``options[t - 1]`` = the best option hosting at least ``t`` tasks, for ``t = 1 .. most`` (shorter if the unit
    cannot host that many)."""
    best: list[Hosting | None] = [None] * most
    spanning = unit.members(unit.spanning, costs)
    combos = 1
    for item in spanning:
        combos *= len(item.losses) + 1
    if combos > ENUMERATION_LIMIT:
        raise TooComplex(f"{combos} combinations of multi-node victims")
    for chosen in itertools.product(*[(None, *item.losses) for item in spanning]):
        base = costs.zero()
        extra: dict[int, tuple[int, ...]] = {}
        extra_devices: dict[int, list[tuple[int, tuple[tuple[int, int], ...]]]] = {}
        picks: list[tuple[Member, Loss]] = []
        for item, choice in zip(spanning, chosen, strict=True):
            if choice is None:
                continue
            base = add(base, choice.cost)
            picks.append((item, choice))
            for n, vector in choice.freed:
                extra[n] = _plus(extra.get(n), vector)
            for n, whole, shares in choice.devices:
                extra_devices.setdefault(n, []).append((whole, shares))
        per_node = [
            (
                n,
                node_options(
                    _plus(unit.room[n], extra.get(n)),
                    unit.members(unit.local.get(n, []), costs),
                    request,
                    resources,
                    costs,
                    most,
                    node=n,
                    extra_devices=extra_devices.get(n, ()),
                ),
            )
            for n in unit.nodes
            if n in unit.room
        ]
        for t, (cost, node_picks, hosted) in enumerate(_combine(per_node, costs, most), start=1):
            if cost is None:
                continue
            total = add(base, cost)
            current = best[t - 1]
            if current is None or total < current.cost:
                best[t - 1] = Hosting(t, total, (*picks, *node_picks), hosted)
    out = []
    for option in best:
        if option is None:
            break
        out.append(option)
    return out


def node_options(
    room: tuple[int, ...],
    items: list[Member],
    request: Resources,
    resources: tuple[str, ...],
    costs: CostModel,
    most: int,
    *,
    node: int | None = None,
    extra_devices: Sequence[tuple[int, tuple[tuple[int, int], ...]]] = (),
) -> list[tuple[Cost, tuple[tuple[Member, Loss], ...]] | None]:
    """For ``k = 0 .. most``: the cheapest choices on one node that host at least ``k`` tasks (or ``None``); where
    devices are counted (``costs.devices``), on the devices of ``node`` too, with ``extra_devices`` freed there by
    victims spanning nodes."""
    devices = costs.devices if node is not None else None
    combos = 1
    for item in items:
        combos *= len(item.losses) + 1
        if combos > ENUMERATION_LIMIT:
            raise TooComplex(f"more than {ENUMERATION_LIMIT} combinations on one node")
    best: list[tuple[Cost, tuple[tuple[Member, Loss], ...]] | None] = [None] * (most + 1)
    zero = costs.zero()
    for chosen in itertools.product(*[(None, *item.losses) for item in items]):
        cost, freed = zero, room
        picks = []
        for item, choice in zip(items, chosen, strict=True):
            if choice is None:
                continue
            cost = add(cost, choice.cost)
            freed = _plus(freed, choice.freed[0][1])
            picks.append((item, choice))
        hosted = min(most, tasks_fitting(freed, request, resources))
        if devices is not None and hosted > 0:
            assert node is not None
            hosted = min(hosted, devices.hosted(node, [loss for _, loss in picks], extra_devices))
        for k in range(hosted + 1):
            current = best[k]
            if current is None or cost < current[0]:
                best[k] = (cost, tuple(picks))
    return best


def _combine(
    per_node: list[tuple[int, list[tuple[Cost, tuple[tuple[Member, Loss], ...]] | None]]],
    costs: CostModel,
    most: int,
) -> list[tuple[Cost | None, tuple[tuple[Member, Loss], ...], tuple[tuple[int, int], ...]]]:
    """Best cost to host at least ``t`` tasks over several nodes (``t = 1 .. most``), by dynamic programming."""
    State = tuple[Cost, tuple[tuple[Member, Loss], ...], tuple[tuple[int, int], ...]]
    dp: list[State | None] = [None] * (most + 1)
    dp[0] = (costs.zero(), (), ())
    for n, options in per_node:
        nxt: list[State | None] = list(dp)
        for done, state in enumerate(dp):
            if state is None:
                continue
            for k in range(1, most + 1):
                option = options[k] if k < len(options) else None
                if option is None:
                    continue
                t = min(most, done + k)
                cost = add(state[0], option[0])
                if nxt[t] is None or cost < nxt[t][0]:  # type: ignore[index]
                    nxt[t] = (cost, (*state[1], *option[1]), (*state[2], (n, k)))
        dp = nxt
    # "at least t": take the best over every larger count
    out: list[tuple[Cost | None, tuple[tuple[Member, Loss], ...], tuple[tuple[int, int], ...]]] = []
    running: State | None = None
    suffix: list[State | None] = [None] * (most + 1)
    for t in range(most, 0, -1):
        state = dp[t]
        if state is not None and (running is None or state[0] < running[0]):
            running = state
        suffix[t] = running
    for t in range(1, most + 1):
        state = suffix[t]
        out.append((None, (), ()) if state is None else state)
    return out


def lower_bound(
    unit: Unit, request: Resources, resources: tuple[str, ...], costs: CostModel, tasks: int = 1
) -> Cost | None:
    """A component-wise lower bound on the cost of hosting ``tasks`` tasks on a single-node unit (``None``:
    impossible).

    The victims must free ``tasks`` times the request, less the room there is. Components: the count at the
    highest priority level present is the fewest of its jobs needed once every lower-priority job is taken; other
    levels 0; jobs at least the fewest jobs that could free the room; tasks at least that many, and at least the
    fewest tasks that could (largest first), rounded up to a multiple of the greatest common divisor of what the
    victims can lose (a victim that may only go whole loses all its running tasks); lost work at least the sum of
    the fewest jobs' smallest losses. Each is at most the true value, so the vector is at most the true cost
    lexicographically.
    """
    (n,) = unit.nodes
    room = unit.room[n]
    need = [tasks * request.get(r, 0) - room[i] for i, r in enumerate(resources)]
    if all(x <= 0 for x in need):
        return costs.zero()
    victims = unit.local.get(n, [])
    sizes = []
    losses = []
    step = 0
    for victim in victims:
        running = victim.per_node[0][1]
        most = running if victim.whole else victim.surplus
        sizes.append(tuple(most * x for x in victim.size))
        least = 1 if victim.surplus > 0 else running
        losses.append(least * victim.gpus * costs.elapsed(victim.job))
        step = math.gcd(step, least)
    fewest = _fewest(sizes, need)
    if fewest is None:
        return None
    lost_tasks = max(fewest, _round_up(_fewest_tasks(victims, need), step))
    priorities = [victim.job.resolved_priority for victim in victims]
    top = max(priorities)
    below = [s for p, s in zip(priorities, sizes, strict=True) if p != top]
    left = [max(0, x - sum(s[i] for s in below)) for i, x in enumerate(need)]
    at_top = [s for p, s in zip(priorities, sizes, strict=True) if p == top]
    top_count = 0 if all(x <= 0 for x in left) else (_fewest(at_top, left) or 0)
    losses.sort()
    out: list[Any] = []
    for criterion in costs.objective:
        if criterion == "priority":
            out.extend(top_count if level == top else 0 for level in costs.levels)
        elif criterion == "jobs":
            out.append(fewest)
        elif criterion == "tasks":
            out.append(lost_tasks)
        elif criterion == "lost_cpu_work":
            out.append(0)  # a bound: below every true value
        else:
            out.append(sum(losses[:fewest]))
    out.append(NO_VICTIMS)
    return tuple(out)


def lower_bounds(
    units: list[Unit],
    request: Resources,
    resources: tuple[str, ...],
    costs: CostModel,
    tasks: int | Sequence[int] = 1,
) -> list[Cost | None]:
    """:func:`lower_bound` of every single-node unit of ``units`` for ``tasks`` tasks (one count for all, or one per
    unit), the same vectors, computed on all of them at once.

    The victims of every unit are laid out in flat columns (unit, room each may free per resource, smallest loss,
    priority); "fewest largest items that cover the need" becomes a sort by unit and size, a running sum per unit
    and a count per unit of the items reached before the need is met. Amounts near 2^63 fall back to
    :func:`lower_bound` unit by unit (Python integers do not overflow).
    """
    width, count = len(resources), len(units)
    if not count:
        return []
    wanted = [request.get(r, 0) for r in resources]
    each = [tasks] * count if isinstance(tasks, int) else list(tasks)
    try:
        if max(map(abs, wanted), default=0) * max(each) >= 2**62:
            raise OverflowError  # the differences below could wrap around
        rooms = np.array([unit.room[unit.nodes[0]] for unit in units], dtype=np.int64).reshape(count, width)
        need = np.array(wanted, dtype=np.int64) * np.array(each, dtype=np.int64)[:, None] - rooms
        unit_of, running, surplus, whole, size, gpus, clock, priority = _victim_columns(units, width)
    except OverflowError:
        return [lower_bound(unit, request, resources, costs, t) for unit, t in zip(units, each, strict=True)]
    crowd = int(np.bincount(unit_of, minlength=1).max()) + 1
    since = np.where(np.isnan(clock), 0.0, np.maximum(0.0, np.rint((costs.now - clock) * 1000)))  # elapsed()
    most = np.where(whole, running, surplus)
    least = np.where(surplus > 0, 1, running)
    # Running sums over all units wrap around in int64, but their differences within one unit are exact as long as
    # every unit's own sums fit: checked (in floating point, with room to spare) before anything is multiplied.
    largest = max(
        float(np.abs(need).max(initial=0)),
        float((np.abs(size.astype(float)) * most[:, None]).max(initial=0)),
        float((least * gpus.astype(float) * since).max(initial=0)),
    )
    if largest * crowd >= 2.0**61:
        return [lower_bound(unit, request, resources, costs, t) for unit, t in zip(units, each, strict=True)]
    step = np.zeros(count, dtype=np.int64)  # per unit, the gcd of what its victims can lose (whole: every task)
    np.gcd.at(step, unit_of, least)
    one, size = size, size * most[:, None]
    loss = least * gpus * since.astype(np.int64)
    top = np.full(count, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top, unit_of, priority)
    at_top = priority == top[unit_of]
    fewest = np.zeros(count, dtype=np.int64)
    impossible = np.zeros(count, dtype=bool)
    top_count = np.zeros(count, dtype=np.int64)
    lost_tasks = np.zeros(count, dtype=np.int64)
    for i in range(width):
        short = need[:, i] > 0
        if not short.any():
            continue  # every unit has room in this resource already: it adds nothing
        rows = short[unit_of]  # the victims of the units short of it (the others' values stay as they are)
        owner, column, topmost = unit_of[rows], size[rows, i], at_top[rows]
        total = _sums(owner, column, count)
        impossible |= short & (total < need[:, i])
        fewest = np.maximum(fewest, np.where(short, _covering(owner, column, need[:, i], count), 0))
        covering_tasks = _covering_tasks(owner, one[rows, i], most[rows], need[:, i], count)
        lost_tasks = np.maximum(lost_tasks, np.where(short, covering_tasks, 0))
        below = _sums(owner[~topmost], column[~topmost], count)
        left = np.maximum(need[:, i] - below, 0)
        covering = _covering(owner[topmost], column[topmost], left, count)
        top_count = np.maximum(top_count, np.where(left > 0, covering, 0))
    lost = _smallest_sums(unit_of, loss, fewest, count)
    step = np.maximum(step, 1)
    lost_tasks = np.maximum(fewest, -(-lost_tasks // step) * step)
    columns: list[Any] = []  # the vectors' components, each for every unit at once
    for criterion in costs.objective:
        if criterion == "priority":
            columns.extend(np.where(top == level, top_count, 0).tolist() for level in costs.levels)
        elif criterion == "jobs":
            columns.append(fewest.tolist())
        elif criterion == "tasks":
            columns.append(lost_tasks.tolist())
        elif criterion == "lost_cpu_work":
            columns.append([0] * count)  # a bound: below every true value
        else:
            columns.append(lost.tolist())
    out: list[Cost | None] = list(zip(*columns, repeat(NO_VICTIMS, count), strict=True))
    for u in np.flatnonzero(impossible).tolist():
        out[u] = None
    zero = costs.zero()
    for u in np.flatnonzero(np.all(need <= 0, axis=1)).tolist():
        out[u] = zero
    return out


def _victim_columns(
    units: list[Unit], width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The single-node victims of ``units`` as columns: unit (position in ``units``), running tasks, surplus, whole,
    one task's size, GPUs per task, and their jobs' start (NaN: never) and priority. Read from the
    :class:`~.units.SingleNodeUnits` table the units come from when they all come from one, else from their victims."""
    sources = [u.source for u in units]
    table: SingleNodeUnits | None = sources[0][0] if sources and sources[0] is not None else None
    if table is not None and all(source is not None and source[0] is table for source in sources):
        ids = np.fromiter(map(_SECOND, sources), dtype=np.int64, count=len(sources))  # type: ignore[arg-type]
        lengths = (table.starts[ids + 1] - table.starts[ids]) if len(ids) else ids
        offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
        rows = np.arange(int(lengths.sum())) - offsets + np.repeat(table.starts[ids], lengths)
        unit_of = np.repeat(np.arange(len(units), dtype=np.int64), lengths)
        return (
            unit_of,
            table.running[rows],
            table.surplus[rows],
            table.whole[rows],
            table.size[rows].reshape(len(rows), width),
            table.gpus[rows],
            table.since[rows],
            table.priority[rows],
        )
    local = [unit.local.get(unit.nodes[0], []) for unit in units]
    victims = [v for vs in local for v in vs]
    count = len(victims)
    fields = [vars(v.job) for v in victims]
    return (
        np.repeat(np.arange(len(units), dtype=np.int64), [len(vs) for vs in local]),
        np.fromiter((v.per_node[0][1] for v in victims), dtype=np.int64, count=count),
        np.fromiter((v.surplus for v in victims), dtype=np.int64, count=count),
        np.fromiter((v.whole for v in victims), dtype=bool, count=count),
        np.array([v.size for v in victims], dtype=np.int64).reshape(count, width),
        np.fromiter((v.gpus for v in victims), dtype=np.int64, count=count),
        np.array([v.job.progress_since for v in victims], dtype=float).reshape(count),  # None: NaN
        np.fromiter(map(_PRIORITY, fields), dtype=np.int64, count=count),
    )


def _sums(unit_of: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """Per unit, the sum of ``values`` (exact in int64)."""
    out = np.zeros(count, dtype=np.int64)
    np.add.at(out, unit_of, values)
    return out


def _covering(unit_of: np.ndarray, values: np.ndarray, need: np.ndarray, count: int) -> np.ndarray:
    """Per unit, how many of its largest ``values`` are needed to reach ``need`` (all of them if they never do)."""
    order = np.lexsort((-values, unit_of))
    units, ranked = unit_of[order], values[order]
    running = np.cumsum(ranked)
    starts = np.searchsorted(units, units, side="left")
    before = running - ranked - np.where(starts > 0, running[starts - 1], 0)  # taken before this item, in its unit
    reached = np.zeros(count, dtype=np.int64)
    np.add.at(reached, units, before < need[units])
    return reached


def _covering_tasks(
    unit_of: np.ndarray, size: np.ndarray, available: np.ndarray, need: np.ndarray, count: int
) -> np.ndarray:
    """Per unit, the fewest tasks of its items (one task's ``size``, ``available`` tasks each), largest first, that
    reach ``need``: :func:`_fewest_tasks` for every unit at once."""
    order = np.lexsort((-size, unit_of))
    units, ranked, offered = unit_of[order], size[order], available[order]
    value = ranked * offered
    running = np.cumsum(value)
    starts = np.searchsorted(units, units, side="left")
    before = running - value - np.where(starts > 0, running[starts - 1], 0)  # covered before this item, in its unit
    gap = need[units] - before
    reached = gap > 0
    take = np.where(ranked > 0, np.minimum(offered, -(-gap // np.maximum(ranked, 1))), offered)
    out = np.zeros(count, dtype=np.int64)
    np.add.at(out, units[reached], take[reached])
    return out


def _smallest_sums(unit_of: np.ndarray, values: np.ndarray, taken: np.ndarray, count: int) -> np.ndarray:
    """Per unit, the sum of its ``taken`` smallest ``values`` (0 where ``taken`` is 0)."""
    out = np.zeros(count, dtype=np.int64)
    if not len(values):
        return out
    order = np.lexsort((values, unit_of))
    units, ranked = unit_of[order], values[order]
    running = np.cumsum(ranked)
    starts = np.searchsorted(units, np.arange(count), side="left")
    first = np.where(starts > 0, running[np.maximum(starts - 1, 0)], 0)
    ends = starts + taken - 1
    has = taken > 0
    out[has] = running[ends[has]] - first[has]
    return out


def _fewest(sizes: list[tuple[int, ...]], need: list[int]) -> int | None:
    """Fewest items whose sizes could cover ``need`` in every resource (largest first, resource by resource)."""
    most = 0
    for i, x in enumerate(need):
        if x <= 0:
            continue
        covered, count = 0, 0
        for size in sorted((s[i] for s in sizes), reverse=True):
            if covered >= x:
                break
            covered += size
            count += 1
        if covered < x:
            return None
        most = max(most, count)
    return most


def _fewest_tasks(victims: list[CandidateTasks], need: list[int]) -> int:
    """Fewest tasks whose sizes could cover ``need`` in every resource (largest first, resource by resource), each
    victim offering as many as it may lose; ``need`` must be coverable (:func:`_fewest` says so)."""
    most = 0
    for i, x in enumerate(need):
        if x <= 0:
            continue
        offered = sorted(((v.size[i], v.per_node[0][1] if v.whole else v.surplus) for v in victims), reverse=True)
        covered, count = 0, 0
        for size, available in offered:
            if covered >= x:
                break
            take = available if size <= 0 else min(available, -((covered - x) // size))
            covered += take * size
            count += take
        most = max(most, count)
    return most


def _round_up(value: int, step: int) -> int:
    """The least multiple of ``step`` from ``value`` on (``value`` itself when ``step`` is 0)."""
    return value if step <= 1 else -(-value // step) * step


def _plus(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> tuple[int, ...]:
    if a is None:
        assert b is not None
        return b
    if b is None:
        return a
    return tuple(x + y for x, y in zip(a, b, strict=True))
