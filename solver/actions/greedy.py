"""The greedy baseline: victims taken the way KAI takes them, until the job fits.

docs/rules.md, "The greedy baseline": the victim queue is popped in order
(``problem.greedy_order``: queues over their share first, lowest job priority,
elastic surplus first, newest first); each pop takes one surplus task of an
elastic job, or a whole job; victims accumulate (never removed) until a
first-fit placement of the chunk succeeds and every rule holds. Unlike KAI, a
pop that would break the reclaim guarantee is skipped rather than kept, so that
the baseline only returns decisions this project's rules allow.

The baseline proves nothing: when it runs out of victims its answer is
``unknown``, and its answers are never marked optimal. It serves as the CP-SAT
model's first hint and as the yardstick of the benchmarks.
"""

from __future__ import annotations

from fractions import Fraction
from operator import attrgetter

import numpy as np

from gpu_preempt.models.columns import grouped
from gpu_preempt.problem.builder import Prepared
from gpu_preempt.problem.data import (
    ChunkType,
    DeviceFit,
    GuaranteeRow,
    Problem,
    Solution,
    broken_rows,
    device_fits,
    placed_amount,
    victim_freed,
)
from gpu_preempt.reduce.units import free_hosts
from gpu_preempt.rules.victim_order import greedy_key

_JOB, _SURPLUS = attrgetter("job"), attrgetter("surplus")

FIRST_PREFIX = 64
"""How many victims :func:`solve_prepared` builds first (then four times as many, and so on)."""


def solve_prepared(prepared: Prepared) -> tuple[Problem, Solution]:
    """The baseline's answer for ``prepared``, building victims only as far as its pops need them.

    :func:`solve` pops batches in the order of :func:`_batches` and stops at the first allowed answer: victims are
    grouped by queue (in ``greedy_order``) and priority, and within a group every elastic surplus goes before any
    whole job. So the problem over the first groups (the last one possibly cut after its elastic members, see
    :class:`_GroupOrder`) pops, in the same order, the batches the whole problem pops first, and every other batch
    comes after them: when its search finds an answer, it is the whole
    problem's answer. When it runs out of victims, the next prefix holds four times as many, up to every candidate.
    On 100,000 nodes this builds a few hundred victims instead of 324,000
    (``tests/solver/actions/test_greedy.py`` checks that the answers are the same). Decisions that may move jobs
    are solved whole.
    """
    if prepared.kueue is not None:  # Kueue's own search runs over every candidate (docs/rules.md, "Kueue's preemption")
        problem = prepared.problem
        assert problem is not None
        return problem, solve(problem)
    candidates = [] if prepared.candidates is None else prepared.candidates.candidates
    if prepared.moves_possible or len(candidates) <= FIRST_PREFIX:
        problem = prepared.problem
        assert problem is not None
        return problem, solve(problem)
    order = _GroupOrder(prepared)
    group, order_index = order.groups, order.indices
    hosts = _free_hosts(prepared)
    size = FIRST_PREFIX
    while True:
        order.reach(size + 1)  # a group lies within one queue, and queues are ordered whole
        while size < len(group) and group[size] == group[size - 1] and candidates[order_index[size]].surplus > 0:
            size += 1  # a group is cut only after its elastic members (see _GroupOrder)
        if size >= len(candidates) and hosts is None:
            problem = prepared.problem
            assert problem is not None
        else:
            problem = prepared.build(chosen=[candidates[i] for i in sorted(order_index[:size])], only_nodes=hosts)
        solution = solve(problem)
        if solution.status != "unknown" or size >= len(candidates):
            return problem, solution
        size *= 4


def _free_hosts(prepared: Prepared) -> set[str] | None:
    """For a chunk of one task type, the nodes with room for one task now (``None``: every schedulable node).

    A prefix problem needs no other node: one that has no room now and runs none of the prefix's victims can host
    no task of any answer over that prefix, so first-fit never picks it, and building it for a 100,000-node
    cluster costs more than the search.
    """
    job = prepared.job
    shapes = {tuple(sorted((r, a) for r, a in job.requests(task).items() if a > 0)) for task, _ in prepared.chunk}
    if len(shapes) != 1 or not next(iter(shapes)):
        return None
    request = dict(next(iter(shapes)))
    nodes, allowed = prepared.cluster.snapshot.nodes, prepared.where.mask
    found = free_hosts(prepared.cluster, job.resolved_priority, request, tuple(sorted(request)), job.gpu_devices)
    return {nodes[n].name for n, _ in found if allowed[n]}


class _GroupOrder:
    """The candidates (by index, :attr:`indices`) in the order :func:`_batches` pops them, each with its group
    (:attr:`groups`): queues in the order of their first victim in ``greedy_order`` (:func:`greedy_key`), then job
    priority, lowest first.

    A queue's first victim is its smallest key; the queue's share ratio and priority are the same for all its jobs,
    so the queues are ordered on those and on the least ``(priority, whole job, newest, name)`` of their jobs.
    Within a group the candidates come in that same order, the baseline's: elastic ones (with a surplus) first. The
    pops of a group are every elastic surplus, then the whole jobs in that order, so the first ``k`` members of a
    group pop as the whole group begins to as soon as they hold all its elastic members: :func:`solve_prepared` may
    cut a group there.

    The lists grow a queue at a time, as far as :meth:`reach` asks: the prefixes :func:`solve_prepared` builds hold a
    few hundred candidates, out of hundreds of thousands on a large cluster, and sorting them all costs more.
    """

    def __init__(self, prepared: Prepared) -> None:
        assert prepared.candidates is not None
        cluster, shares = prepared.cluster, dict[str, Fraction]()
        found = prepared.candidates
        self._candidates = candidates = found.candidates
        rows = found.rows
        if rows is None:
            rows = np.array(cluster.job_positions(map(_JOB, candidates)), dtype=np.int64).reshape(len(candidates))
        # greedy_key(...)[2:] of every candidate, on columns: hundreds of thousands
        columns, jobs = cluster.job_columns(), cluster.snapshot.jobs
        created, started = columns.created[rows], columns.started[rows]
        self._priority = columns.priority[rows]
        self._whole = np.fromiter(map(_SURPLUS, candidates), dtype=np.int64, count=len(candidates)) == 0
        self._newest = -np.where(np.isnan(created), np.where(np.isnan(started), -1e300, started), created)
        self._members: dict[int, np.ndarray] = {}
        least, first = {}, {}
        for code, members in grouped(columns.queue[rows]):
            self._members[code] = members
            least[code] = self._least(members)
            first[code] = greedy_key(cluster, jobs[int(rows[members[0]])], 0, shares)[:2]
        self._queues = iter(sorted(self._members, key=lambda q: (*first[q], *least[q])))
        self._rank = 0
        self.groups: list[tuple[int, int]] = []
        self.indices: list[int] = []

    def _keys(self, members: np.ndarray) -> list[tuple[int, bool, float, str]]:
        """``greedy_key(...)[2:]`` of the candidates ``members``: (priority, whole job, newest, name)."""
        names = map(_JOB, map(self._candidates.__getitem__, members.tolist()))
        picked = (self._priority[members].tolist(), self._whole[members].tolist(), self._newest[members].tolist())
        return list(zip(*picked, names, strict=True))

    def _least(self, members: np.ndarray) -> tuple[int, bool, float, str]:
        """The least :meth:`_keys` of ``members``: found on columns, names compared only among ties."""
        priority, whole, newest = self._priority[members], self._whole[members], self._newest[members]
        best = np.lexsort((newest, whole, priority))[0]
        ties = members[(priority == priority[best]) & (whole == whole[best]) & (newest == newest[best])]
        return min(self._keys(ties))

    def _ranked(self, members: np.ndarray) -> list[int]:
        """``members`` sorted by :meth:`_keys`, on columns; names are ranked only if some columns tie."""
        priority, whole, newest = self._priority[members], self._whole[members], self._newest[members]
        order = np.lexsort((newest, whole, priority))
        p, w, n = priority[order], whole[order], newest[order]
        if ((p[1:] == p[:-1]) & (w[1:] == w[:-1]) & (n[1:] == n[:-1])).any():
            names = list(map(_JOB, map(self._candidates.__getitem__, members.tolist())))
            by_name = np.empty(len(names), dtype=np.int64)
            by_name[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
            order = np.lexsort((by_name, newest, whole, priority))
        ranked: list[int] = members[order].tolist()
        return ranked

    def reach(self, size: int) -> None:
        """Order at least ``size`` candidates (every one, if there are fewer), whole queues at a time."""
        while len(self.indices) < size:
            queue = next(self._queues, None)
            if queue is None:
                return
            ranked = self._ranked(self._members[queue])
            self.groups += [(self._rank, priority) for priority in self._priority[ranked].tolist()]
            self.indices += ranked
            self._rank += 1


def solve(problem: Problem) -> Solution:
    if problem.cohort is not None and problem.victims:
        return solve_cohort(problem)
    taken: dict[tuple[int, int], int] = {}
    fitted = _fit(problem, taken)
    if fitted is not None and not broken_rows(problem, Solution("feasible", dict(taken), fitted[0])):
        return Solution("feasible", {}, fitted[0], devices=fitted[1])
    capacity = _Capacity(problem)
    for batch in _batches(problem):
        if problem.guarantees:
            trial = dict(taken)
            for key, count in batch.items():
                trial[key] = trial.get(key, 0) + count
            attempt = Solution("feasible", trial, {})
            if any(b.startswith("guarantee") for b in broken_rows(problem, attempt)):
                continue  # more victims only take more: this pop can never be part of an allowed answer
            taken = trial
        else:
            for key, count in batch.items():
                taken[key] = taken.get(key, 0) + count
        capacity.free(batch)
        if not capacity.enough():
            continue
        fitted = _fit(problem, taken)
        if fitted is None:
            continue
        solution = Solution("feasible", dict(taken), fitted[0], devices=fitted[1])
        if not broken_rows(problem, solution):
            return solution
    if not problem.victims:
        return Solution("unknown", reason="the greedy first-fit placement found no room (it tries one packing)")
    return Solution("unknown", reason="the greedy search ran out of victims without finding room")


class _Capacity:
    """How many tasks of a one-type chunk the nodes could host, kept up to date as victims are added.

    It only decides when the full first-fit is worth running; with several task
    types it always says yes.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.single = len(problem.chunk) == 1
        self.room = {n: dict(node.room) for n, node in enumerate(problem.nodes) if node.eligible}
        self.request = [(r, a) for r, a in problem.chunk[0].requests.items() if a > 0] if self.single else []
        self.hosted = {n: self._fits(room) for n, room in self.room.items()}
        self.total = sum(self.hosted.values())

    def _fits(self, room: dict[str, int]) -> int:
        if not self.request:
            return 0
        return max(0, min(room.get(r, 0) // a for r, a in self.request))

    def free(self, batch: dict[tuple[int, int], int]) -> None:
        victims = self.problem.victims
        for (v, s), count in batch.items():
            slot = victims[v].slots[s]
            room = self.room.get(slot.node)
            if room is None:
                continue
            for r, a in slot.requests.items():
                room[r] = room.get(r, 0) + a * count
            if self.single:
                before, after = self.hosted[slot.node], self._fits(room)
                self.hosted[slot.node] = after
                self.total += after - before

    def enough(self) -> bool:
        return not self.single or self.total >= self.problem.chunk[0].required


def _batches(problem: Problem) -> list[dict[tuple[int, int], int]]:
    """Pops in victim-queue order: each elastic victim's surplus one task at a time (newest first), then the rest."""
    order: list[tuple[tuple[int, int, int, int], dict[tuple[int, int], int]]] = []
    queue_rank: dict[str, int] = {}
    for rank, v in enumerate(problem.greedy_order):
        queue_rank.setdefault(problem.victims[v].queue, rank)
    for rank, v in enumerate(problem.greedy_order):
        victim = problem.victims[v]
        group = queue_rank[victim.queue], victim.priority
        peeled: dict[int, int] = {}
        if victim.surplus:
            newest_first = sorted(
                ((task, s) for s, slot in enumerate(victim.slots) for task in slot.tasks), reverse=True
            )  # task names are unique: no tie reaches the slot
            slots = victim.slots  # docs/rules.md, "Task order": tasks without an order first, then the lowest order
            newest_first.sort(key=lambda item: (slots[item[1]].order is not None, slots[item[1]].order or 0))
            for _, s in newest_first[: victim.surplus]:
                peeled[s] = peeled.get(s, 0) + 1
                order.append(((*group, 0, rank), {(v, s): 1}))
        if victim.whole_job:
            rest = {(v, s): n for s, slot in enumerate(victim.slots) if (n := slot.count - peeled.get(s, 0))}
            order.append(((*group, 1, rank), rest))
    order.sort(key=lambda item: item[0])
    return [batch for _, batch in order]


Fitted = tuple[dict[tuple[int, int], int], dict[tuple[int, int, int], int]]
"""Tasks placed per (type, node), and shares of a GPU per (type, node, device)."""


def _fit(problem: Problem, taken: dict[tuple[int, int], int]) -> Fitted | None:
    """First-fit of the chunk, biggest tasks first, nodes in order, shares of a GPU on the first device with room
    (:class:`DeviceFit`, KAI's packing of shared devices); ``None`` if a required task finds no room.

    With a required topology still to choose, the first domain (in order) where the whole chunk fits, as KAI tries
    one domain after another (docs/rules.md, "Placement").
    """
    if not problem.domains:
        return _fit_on(problem, taken, None)
    for d in sorted({d for n, d in enumerate(problem.domains) if problem.nodes[n].eligible}):
        placed = _fit_on(problem, taken, d)
        if placed is not None:
            return placed
    return None


def _fit_on(problem: Problem, taken: dict[tuple[int, int], int], domain: int | None) -> Fitted | None:
    """:func:`_fit` on the nodes of ``domain`` (``None``: every eligible node)."""
    room = {n: dict(node.room) for n, node in enumerate(problem.nodes)}
    for (v, s), count in taken.items():
        slot = problem.victims[v].slots[s]
        for r, a in slot.requests.items():
            room[slot.node][r] = room[slot.node].get(r, 0) + a * count
    usable = [
        n for n, spec in enumerate(problem.nodes) if spec.eligible and (domain is None or problem.domains[n] == domain)
    ]
    placed: dict[tuple[int, int], int] = {}
    devices: dict[tuple[int, int, int], int] = {}
    on_devices = device_fits(problem, Solution("feasible", taken))
    types = sorted(range(len(problem.chunk)), key=lambda t: sorted(problem.chunk[t].requests.values(), reverse=True))
    for t in reversed(types):
        chunk = problem.chunk[t]
        share, gpus = chunk.share, chunk.gpus

        for index in range(len(chunk.tasks)):
            node = next((n for n in usable if _fits(room[n], chunk, on_devices.get(n))), None)
            if node is None:
                if index < chunk.required:
                    return None
                break
            placed[t, node] = placed.get((t, node), 0) + 1
            if index >= chunk.required and _over_limit(problem, taken, placed):
                placed[t, node] -= 1  # optional growth stops at a queue limit
                break
            for r, a in chunk.requests.items():
                room[node][r] = room[node].get(r, 0) - a
            fit = on_devices.get(node)
            if fit is not None and share:
                found = fit.take_share(share, chunk.spread)
                assert found is not None
                for device in found:
                    devices[t, node, device] = devices.get((t, node, device), 0) + 1
            elif fit is not None:
                fit.take_whole(gpus)
    return {key: n for key, n in placed.items() if n}, devices


def _fits(room: dict[str, int], chunk: ChunkType, fit: DeviceFit | None) -> bool:
    """Whether one task of ``chunk`` fits a node's ``room`` (and its devices, when it counts them)."""
    if not all(room.get(r, 0) >= a for r, a in chunk.requests.items() if a > 0):
        return False
    return fit is None or fit.can_take(chunk.share, chunk.gpus, chunk.spread)


def _over_limit(problem: Problem, taken: dict[tuple[int, int], int], placed: dict[tuple[int, int], int]) -> bool:
    trial = Solution("feasible", taken, placed)
    return any(not b.startswith(("guarantee", "saturation")) for b in broken_rows(problem, trial))


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
    for borrowing in cohort.modes:
        taken: list[int] = []
        for v in problem.greedy_order:
            if borrowing and v in without:
                continue
            if not all(
                _still_over(problem, rows, taken) for _, rows in groups if v in problem.members(rows[0].victims)
            ):
                continue
            if problem.fair is not None and not problem.fair.allows(_freed_by(problem, [*taken, v]), asked):
                continue  # docs/rules.md, "Kueue's fair sharing": its queue's share would pass no strategy
            taken.append(v)
            fitted = _cohort_fit(problem, taken, borrowing)
            if fitted is None:
                continue
            for i in range(len(taken) - 2, -1, -1):
                trial = taken[:i] + taken[i + 1 :]
                found = _cohort_fit(problem, trial, borrowing)
                if found is not None:
                    taken[i] = taken[-1]
                    taken.pop()
                    fitted = found
            evicted = _whole(problem, taken)
            return Solution("feasible", evicted, fitted[0], devices=fitted[1])
    return Solution("unknown", reason="Kueue's search ran out of candidates without finding room")


def _freed_by(problem: Problem, victims: list[int]) -> dict[int, dict[str, int]]:
    """What each of ``victims`` frees, evicted whole."""
    solution = Solution("feasible", _whole(problem, victims), {})
    return {v: victim_freed(problem, solution, v) for v in victims}


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


def _cohort_fit(problem: Problem, victims: list[int], borrowing: bool) -> Fitted | None:
    """First-fit of the chunk once ``victims`` go, if it fits Kueue's quota in the attempt ``borrowing``."""
    cohort = problem.cohort
    assert cohort is not None
    evicted = _whole(problem, victims)
    fitted = _fit(problem, evicted)
    if fitted is None:
        return None
    solution = Solution("feasible", evicted, fitted[0])
    freed = {v: victim_freed(problem, solution, v) for v in victims}
    placed = {r: placed_amount(problem, solution, r) for r in problem.resources}
    if not cohort.fits(freed, placed, borrowing=borrowing):
        return None
    if problem.fair is not None and not problem.fair.allows(freed, placed):
        return None
    if any(not b.startswith(("guarantee", "cohort")) for b in broken_rows(problem, solution)):
        return None
    return fitted
