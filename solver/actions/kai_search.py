"""KAI-Scheduler's job solver, the greedy baseline under KAI's rules (docs/rules.md, "The greedy baseline"; KAI's
``pkg/scheduler/actions/common/solvers``).

For one pending job:

1. **Probes.** KAI solves growing parts of the chunk: its first ``k`` tasks for ``k`` = 1, 2, 4, ... until one fails
   or the whole chunk succeeds, then halves the gap between the last success and the first failure, then the
   whole chunk once more. The victims of each successful probe are *recorded*: every later scenario evicts them.
2. **Accumulation.** Each probe reads KAI's victim queue (:mod:`~gpu_preempt.rules.kai_victim_queue`) from the
   start; every pop adds one surplus task of an elastic job or all the tasks a job has left to the accumulated
   victims, which are never given back. A state that cannot free room enough for the probe is passed over (KAI's
   idle-GPU filter, here :class:`~gpu_preempt.actions.first_fit.Capacity`). The queue is walked once per decision
   (:class:`Walk`): every probe and generator reads the same pops.
3. **Scenarios.** Two generators, each running the whole search from scratch, the second when the first finds
   nothing. *Node-local* (KAI's ``NodeLocalGreedy``): for each node the last pop touches, by name, the recorded
   victims and every accumulated job with a task there. *Multi-node* (``MultiNodeGang``): the nodes that hold
   popped tasks, by the GPUs they would have free, fewest first, and the smallest number of them that covers what
   the probe asks beyond the GPUs free elsewhere, then one, three, seven ... more: the recorded victims and every pop
   with a task on those nodes. A scenario that failed is not tried again for the same probe.
4. **Simulation.** Every victim of the scenario is evicted and the chunk placed first-fit. Then each victim, the
   most worth keeping first, is placed again as KAI re-allocates its victims: all of a gang, or the
   ``min_available`` tasks of an elastic job evicted whole, or one task of one that lost only surplus tasks, within
   its queues' limits. One that fits back where it runs is not evicted after all; one that lands on room free
   elsewhere before the decision is *moved* (``config.moves``). The scenario succeeds when every rule holds (as
   KAI's validators run after the simulation).

The first scenario that succeeds is the answer: KAI's search is not minimal, and neither is this one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator

from gpu_preempt.actions.first_fit import Capacity, Evicted, Fitted, LazyPerNode, fit
from gpu_preempt.models import MILLI, GpuPreemptError
from gpu_preempt.problem.devices import DeviceFit
from gpu_preempt.problem.node_order import best, strategy_of
from gpu_preempt.problem.records import ChunkType, Problem, Slot, Victim, gpu_milli
from gpu_preempt.problem.solution import Solution, broken_rows, excess_of

__all__ = ["OUT_OF_POPS", "Failed", "Generator", "Truncated", "Walk", "solve"]


class Walk:
    """The pops of a problem's victim queue as the tasks each adds (its *batch*), indexed by node, with the room they
    free: read once, and read again by every probe and generator of one decision (KAI walks its queue afresh for
    each; the pops are the same)."""

    def __init__(self, problem: Problem) -> None:
        order = problem.victim_order
        assert order is not None
        self.problem, self.complete = problem, order.complete
        self._pops = order.pops()
        self.batches: list[tuple[int, Evicted]] = []
        """Each pop's victim and the tasks it adds per (victim, slot)."""
        self.jobs_on: dict[int, dict[int, int]] = {}
        """Per node, the victims with a popped task there, each with the first pop that put one there."""
        self.pops_on: dict[int, list[int]] = {}
        """Per node, the pops with a task there (by position)."""
        self.of_victim: dict[int, list[int]] = {}
        """Per victim, its pops (by position)."""
        self.hosted: list[int] = []
        """After each pop, how many tasks of a one-type chunk the room freed so far would host (KAI's idle-GPU
        filter; 0 with several task types)."""
        self._capacity = Capacity(problem)
        self._peeled: dict[int, int] = {}

    def get(self, position: int) -> tuple[int, Evicted] | None:
        """The pop at ``position``, read when first asked for (``None``: the queue has no more)."""
        while len(self.batches) <= position:
            pop = next(self._pops, None)
            if pop is None:
                return None
            self._add(*pop)
        return self.batches[position]

    def _add(self, v: int, peel: bool) -> None:
        victim = self.problem.victims[v]
        if peel:
            s = victim.peel_slots()[self._peeled.get(v, 0)]
            self._peeled[v] = self._peeled.get(v, 0) + 1
            batch = {(v, s): 1}
        elif v in self._peeled:
            gone = _slots_gone(victim.peel_slots(), self._peeled[v])
            batch = {(v, s): n for s, slot in enumerate(victim.slots) if (n := slot.count - gone.get(s, 0))}
        else:
            batch = {(v, s): slot.count for s, slot in enumerate(victim.slots)}
        position = len(self.batches)
        self.batches.append((v, batch))
        self.of_victim.setdefault(v, []).append(position)
        for _, s in batch:
            node = victim.slots[s].node
            self.jobs_on.setdefault(node, {}).setdefault(v, position)
            on = self.pops_on.setdefault(node, [])
            if not on or on[-1] != position:
                on.append(position)
        self._capacity.free(batch)
        self.hosted.append(self._capacity.total if self._capacity.single else 0)


Generator = Callable[[Problem, Evicted, Walk, int, dict[int, int]], Iterator[Evicted]]
"""Scenarios from the recorded victims and the pops up to a position, for the tasks asked per type."""

Failed = set[tuple[int, frozenset[tuple[tuple[int, int], int]]]]
"""The scenarios that failed, each with the size of its probe (KAI's fingerprints)."""

OUT_OF_POPS = "the greedy search ran out of victims without finding room"


class Truncated(GpuPreemptError):
    """The problem's pops were the first of a longer queue, and the search needed more of them."""


def solve(problem: Problem) -> Solution:
    """KAI's answer for ``problem`` (see the module docstring); ``unknown`` when no scenario succeeds.

    Raises :class:`Truncated` when the problem's pops end before the search does and more exist.
    """
    fitted = fit(problem, {})
    if fitted is not None and not broken_rows(problem, Solution("feasible", {}, fitted.placed)):
        return Solution("feasible", {}, fitted.placed, devices=fitted.devices)
    if not problem.victims:
        return Solution("unknown", reason="the greedy first-fit placement found no room (it tries one packing)")
    walk = Walk(problem)
    failed: Failed = set()
    for generator in (_node_local, _multi_node):
        found = _probes(problem, walk, generator, failed)
        if found is not None:
            return found
    return Solution("unknown", reason=OUT_OF_POPS)


def _probes(problem: Problem, walk: Walk, generator: Generator, failed: Failed) -> Solution | None:
    """KAI's ``searchMaxSolvableK``: probes of growing parts of the chunk, the victims of each success recorded."""
    tasks = [t for t, chunk in enumerate(problem.chunk) for _ in range(chunk.required)]
    n = len(tasks)
    if n <= 1:
        return _search(problem, walk, n, None, ({}, -1), generator, failed)[0]
    recorded: tuple[Evicted, int] = ({}, -1)

    def probe(k: int) -> tuple[Solution | None, int]:
        counts: dict[int, int] = {}
        for t in tasks[:k]:
            counts[t] = counts.get(t, 0) + 1
        return _search(problem, walk, k, None if k == n else counts, recorded, generator, failed)

    done, first_failure, k = 0, n + 1, 1
    while True:
        found, reach = probe(k)
        if found is None:
            first_failure = k
            break
        if k == n:
            return found
        done, recorded = k, (_scenario_of(found), reach)
        k = min(2 * k, n)
    while first_failure - done > 1:
        middle = (done + first_failure) // 2
        found, reach = probe(middle)
        if found is None:
            first_failure = middle
        else:
            done, recorded = middle, (_scenario_of(found), reach)
    if done == 0:
        return None
    return probe(n)[0]


def _scenario_of(solution: Solution) -> Evicted:
    """The victims of ``solution``, evicted and moved alike (KAI records both)."""
    out = {key: n for key, n in solution.evicted.items() if n}
    for (v, s, _), n in solution.moved.items():
        out[v, s] = out.get((v, s), 0) + n
    return out


def _search(
    problem: Problem,
    walk: Walk,
    k: int,
    counts: dict[int, int] | None,
    recorded: tuple[Evicted, int],
    generator: Generator,
    failed: Failed,
) -> tuple[Solution | None, int]:
    """One probe: the scenarios of ``generator`` over the accumulated pops, the first one that succeeds, and the
    last pop it reads. ``recorded``: the victims every scenario evicts, and the last pop of the probe that found
    them (they are among the pops up to there)."""
    victims, reach = recorded

    def attempt(scenario: Evicted) -> Solution | None:
        key = (k, frozenset(scenario.items()))
        if key in failed:
            return None
        found = _simulate(problem, counts, scenario)
        if found is None:
            failed.add(key)
        return found

    if victims:
        found = attempt(victims)
        if found is not None:
            return found, reach
    single = len(problem.chunk) == 1
    need = (sum(counts.values()) if counts is not None else problem.chunk[0].required) if single else 0
    asked = counts or _required(problem)
    unread = dict(victims)  # a pop's tasks recorded already are skipped (KAI pushes the job back without them)
    recorded_jobs = {v for v, _ in victims}
    position = -1
    while True:
        position += 1
        pop = walk.get(position)
        if pop is None:
            break
        if pop[0] in recorded_jobs and not _unrecorded(pop[1], unread):
            continue  # nothing KAI would add: no new state
        if walk.hosted[max(position, reach)] < need:
            continue  # all the room popped so far (recorded victims within) cannot host the probe
        for scenario in generator(problem, victims, walk, position, asked):
            found = attempt(scenario)
            if found is not None:
                return found, max(position, reach)
    if not walk.complete:
        raise Truncated
    return None, reach


def _slots_gone(slots: tuple[int, ...], peeled: int) -> dict[int, int]:
    """Per slot, how many of the first ``peeled`` surplus tasks it gave up."""
    gone: dict[int, int] = {}
    for s in slots[:peeled]:
        gone[s] = gone.get(s, 0) + 1
    return gone


def _unrecorded(batch: Evicted, unread: Evicted) -> Evicted:
    """The tasks of ``batch`` not among the recorded victims ``unread`` (which lose those met)."""
    out: Evicted = {}
    for key, count in batch.items():
        met = min(count, unread.get(key, 0))
        if met:
            unread[key] -= met
        if count > met:
            out[key] = count - met
    return out


def _required(problem: Problem) -> dict[int, int]:
    return {t: chunk.required for t, chunk in enumerate(problem.chunk)}


def _union(recorded: Evicted, batches: Iterable[Evicted]) -> Evicted:
    """The recorded victims and the tasks of ``batches``: a slot's tasks go in one order whoever takes them, so
    the two share their first tasks (a count each, the larger)."""
    popped: Evicted = {}
    for batch in batches:
        for key, n in batch.items():
            popped[key] = popped.get(key, 0) + n
    for key, n in recorded.items():
        popped[key] = max(n, popped.get(key, 0))
    return popped


def _node_local(
    problem: Problem, recorded: Evicted, walk: Walk, position: int, counts: dict[int, int]
) -> Iterator[Evicted]:
    """KAI's ``NodeLocalGreedy``: for each node of the last pop, by name, every accumulated job with a task there."""
    victims, nodes, batches = problem.victims, problem.nodes, walk.batches
    _, latest = batches[position]
    for node in sorted({victims[v].slots[s].node for v, s in latest}, key=lambda n: nodes[n].name):
        there = []
        for v, first in walk.jobs_on[node].items():
            if first > position:
                break
            there.append(v)
        yield _union(recorded, (batches[p][1] for v in there for p in walk.of_victim[v] if p <= position))


def _multi_node(
    problem: Problem, recorded: Evicted, walk: Walk, position: int, counts: dict[int, int]
) -> Iterator[Evicted]:
    """KAI's ``MultiNodeGang``: the nodes holding popped tasks by the GPUs they would have, fewest first; the fewest
    that cover the GPUs asked beyond those free elsewhere, then one, three, seven ... more, with every pop touching
    them."""
    victims, batches = problem.victims, walk.batches
    base = _base_gpus(problem)
    extra: dict[int, int] = {}
    for (v, s), count in recorded.items():
        slot = victims[v].slots[s]
        if slot.node in base:
            extra[slot.node] = extra.get(slot.node, 0) + gpu_milli(slot.requests) * count
    first: dict[int, int] = {}
    for node, positions in walk.pops_on.items():
        if node not in base or positions[0] > position:
            continue
        first[node] = positions[0]
        for p in positions:
            if p > position:
                break
            v, batch = batches[p]
            for (_, s), count in batch.items():
                slot = victims[v].slots[s]
                if slot.node == node:
                    extra[node] = extra.get(node, 0) + gpu_milli(slot.requests) * count
    asked = [gpu_milli(problem.chunk[t].requests) for t, n in counts.items() for _ in range(n)]
    smallest = min(asked, default=0)
    gpus = {n: base[n] + amount for n, amount in extra.items()}
    hosting = sorted((n for n in first if gpus[n] >= smallest), key=lambda n: (gpus[n], first[n]))
    baseline = _usable_total(problem, base, smallest)  # every node at its own room, then the nodes changed
    for n, amount in gpus.items():
        baseline -= base[n] if base[n] >= smallest else 0
        baseline += amount if n not in first and amount >= smallest else 0
    demand = max(0, sum(asked) - baseline)
    total, least = 0, None
    for i, n in enumerate(hosting):
        if total >= demand:
            least = i
            break
        total += gpus[n]
    else:
        least = len(hosting) if total >= demand else None
    if least is None:
        return
    size, step = least, 1
    while True:
        touching = sorted({p for n in hosting[:size] for p in walk.pops_on[n] if p <= position})
        yield _union(recorded, (batches[p][1] for p in touching))
        if size >= len(hosting):
            return
        size, step = min(size + step, len(hosting)), step * 2


def _base_gpus(problem: Problem) -> dict[int, int]:
    """Per eligible node, the GPUs (milli) its room has with no victim gone (found once per problem)."""
    found: dict[int, int] | None = problem.__dict__.get("_base_gpus")
    if found is None:
        found = problem.__dict__["_base_gpus"] = {
            n: gpu_milli(node.room) for n, node in enumerate(problem.nodes) if node.eligible
        }
    return found


def _usable_total(problem: Problem, base: dict[int, int], smallest: int) -> int:
    """The GPUs of the nodes whose own room takes at least ``smallest`` (found once per problem and size)."""
    kept: dict[int, int] = problem.__dict__.setdefault("_usable_total", {})
    found = kept.get(smallest)
    if found is None:
        found = kept[smallest] = sum(g for g in base.values() if g >= smallest)
    return found


def _simulate(problem: Problem, counts: dict[int, int] | None, scenario: Evicted) -> Solution | None:
    """Evict ``scenario``, place the chunk (``counts`` of it), place the victims again where they may go; the
    solution if every rule holds."""
    fitted = fit(problem, scenario, counts)
    if fitted is None:
        return None
    evicted, moved = dict(scenario), dict[tuple[int, int, int], int]()
    moved_devices: dict[tuple[int, int, int, int], int] = {}
    _place_again(problem, fitted, evicted, moved, moved_devices)
    lost: dict[int, int] = {}
    for (v, _), n in evicted.items():
        lost[v] = lost.get(v, 0) + n
    if not all(problem.victims[v].may_lose(n) for v, n in lost.items() if n):
        return None  # a victim the rules keep (its queue's line, its protection) was not placed again
    solution = Solution(
        "feasible",
        {key: n for key, n in evicted.items() if n},
        fitted.placed,
        moved=moved,
        devices=fitted.devices,
        moved_devices=moved_devices,
    )
    if broken_rows(problem, solution):
        return None
    return solution


def _place_again(
    problem: Problem,
    fitted: Fitted,
    evicted: Evicted,
    moved: dict[tuple[int, int, int], int],
    moved_devices: dict[tuple[int, int, int, int], int],
) -> None:
    """KAI's re-allocation of its victims after the chunk (docs/rules.md, "The greedy baseline"), the most worth
    keeping first: a victim that fits back where it runs is not evicted after all (KAI pipelines it where it was); one
    that lands on room free elsewhere before the decision is moved (``moved``). Both are taken off ``evicted``."""
    victims, order = problem.victims, problem.victim_order
    free: LazyPerNode[dict[str, int]] = LazyPerNode(lambda n: dict(problem.nodes[n].free_room()))
    before: LazyPerNode[DeviceFit] = LazyPerNode(lambda n: _fit_before(problem, n))
    rank = _keep_rank(problem)
    for v in sorted({v for (v, _), n in evicted.items() if n and v in rank}, key=rank.__getitem__):
        victim = victims[v]
        taken = {s: evicted.get((v, s), 0) for s in range(len(victim.slots))}
        total = sum(taken.values())
        surplus = len(order.entries[v].peels) if order is not None else victim.surplus
        if not surplus:  # a gang comes back whole, or not at all
            if total < victim.running:
                continue
            wanted = taken
        else:  # an elastic job its min_available tasks when evicted whole, else one task (KAI's GetTasksToAllocate)
            wanted = _some(victim, taken, victim.running - surplus if total == victim.running else 1)
        if problem.limits:
            kept = {key: n - wanted.get(key[1], 0) if key[0] == v else n for key, n in evicted.items()}
            if any(excess_of(problem, Solution("feasible", kept, fitted.placed), row) for row in problem.limits):
                continue  # KAI re-allocates a victim only within its queues' limits
        if _home(problem, fitted, v, wanted):
            for s, n in wanted.items():
                evicted[v, s] -= n
            continue
        if victim.move == "none" or any(len(victim.slots[s].devices) > 1 for s in wanted):
            continue  # a share on several devices is evicted or stays (docs/rules.md, "GPU sharing")
        found = _land(problem, fitted, free, before, v, wanted)
        if found is None:
            continue
        landing, devices = found
        for (s, m), n in landing.items():
            evicted[v, s] -= n
            moved[v, s, m] = moved.get((v, s, m), 0) + n
        for (s, m, d), n in devices.items():
            moved_devices[v, s, m, d] = moved_devices.get((v, s, m, d), 0) + n


def _keep_rank(problem: Problem) -> dict[int, int]:
    """Per victim, its place in ``keep_order`` (found once per problem)."""
    found: dict[int, int] | None = problem.__dict__.get("_keep_rank")
    if found is None:
        found = problem.__dict__["_keep_rank"] = {v: k for k, v in enumerate(problem.keep_order)}
    return found


def _home(problem: Problem, fitted: Fitted, v: int, wanted: dict[int, int]) -> bool:
    """Whether the tasks ``wanted`` (per slot) of victim ``v`` fit back where they run, on the same devices; if so
    they take that room again."""
    victim = problem.victims[v]
    room, fits = fitted.room, fitted.fits
    need: dict[int, dict[str, int]] = {}
    shares: dict[tuple[int, int], int] = {}
    whole: dict[int, int] = {}
    for s, count in wanted.items():
        slot = victim.slots[s]
        asked = need.setdefault(slot.node, {})
        for r, a in slot.requests.items():
            if a > 0:
                asked[r] = asked.get(r, 0) + a * count
        if slot.devices and slot.node in fits:
            for d in slot.devices:
                shares[slot.node, d] = shares.get((slot.node, d), 0) + slot.share * count
        elif slot.node in fits and slot.gpus:
            whole[slot.node] = whole.get(slot.node, 0) + slot.gpus * count
    if not all(room[n].get(r, 0) >= a for n, asked in need.items() for r, a in asked.items()):
        return False
    if not all(fits[n].shares[d] + a <= MILLI for (n, d), a in shares.items()):
        return False
    reopened: dict[int, int] = {}  # devices the eviction emptied, which whole GPUs placed since may count on
    for n, d in shares:
        if not fits[n].shares[d]:
            reopened[n] = reopened.get(n, 0) + 1
    if not all(fits[n].empty() >= reopened.get(n, 0) + whole.get(n, 0) for n in reopened.keys() | whole.keys()):
        return False
    for n, asked in need.items():
        for r, a in asked.items():
            room[n][r] -= a
    for (n, d), a in shares.items():
        fits[n].shares[d] += a
    for n, g in whole.items():
        fits[n].take_whole(g)
    return True


def _some(victim: Victim, taken: dict[int, int], count: int) -> dict[int, int]:
    """``count`` of the tasks ``taken`` (per slot), the most worth keeping first: KAI places a victim's tasks again
    in its task order, the reverse of the order it gives up its surplus."""
    left = dict(taken)
    out: dict[int, int] = {}
    for s in reversed(victim.peel_slots()):
        if count <= 0:
            break
        if left.get(s, 0):
            left[s] -= 1
            out[s] = out.get(s, 0) + 1
            count -= 1
    return out


def _land(
    problem: Problem,
    fitted: Fitted,
    free: dict[int, dict[str, int]],
    before: dict[int, DeviceFit],
    v: int,
    wanted: dict[int, int],
) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int, int], int]] | None:
    """Where the tasks ``wanted`` (per slot) of victim ``v`` land, all of them, each on the first node of its slot's
    ``moves_to`` with room, free room and free devices for it that KAI's node order puts first (the placement
    strategy, :mod:`gpu_preempt.problem.node_order`; a share on the first device with room before the decision and
    after it, as :class:`DeviceFit` packs shares); ``None`` if one finds none (then nothing is taken).

    Returns the tasks per (slot, node) and the shares per (slot, node, device)."""
    victim, nodes = problem.victims[v], problem.nodes
    room, fits = fitted.room, fitted.fits
    trial_room: dict[int, dict[str, int]] = {}
    trial_free: dict[int, dict[str, int]] = {}
    trial_after: dict[int, DeviceFit] = {}
    trial_before: dict[int, DeviceFit] = {}

    def touch(m: int) -> None:
        """Copy what node ``m`` has left into the trial, when first landed on."""
        if m not in trial_room:
            trial_room[m], trial_free[m] = dict(room[m]), dict(free[m])
            if nodes[m].devices is not None:
                trial_after[m], trial_before[m] = _copy(fits[m]), _copy(before[m])

    landing: dict[tuple[int, int], int] = {}
    devices: dict[tuple[int, int, int], int] = {}
    sharing = problem.placement[0] == "binpack"  # KAI's gpusharingorder is on with the GPU strategy binpack
    for s, count in wanted.items():
        slot = victim.slots[s]
        asked = [(r, a) for r, a in slot.requests.items() if a > 0]
        task = ChunkType(slot.requests, slot.tasks[:1], 1)
        strategy = strategy_of(problem, task)
        for _ in range(count):
            fitting = []
            for m in slot.moves_to:
                touch(m)
                if not all(trial_room[m].get(r, 0) >= a and trial_free[m].get(r, 0) >= a for r, a in asked):
                    continue
                if slot.share and (m not in trial_before or not _share_room(trial_before[m], trial_after[m], slot)):
                    continue
                whole = not slot.share and m in trial_before and slot.gpus
                if whole and min(trial_before[m].empty(), trial_after[m].empty()) < slot.gpus:
                    continue
                fitting.append(m)
            chosen = best(fitting, nodes, task, strategy, trial_room, trial_free, trial_before, sharing=sharing)
            if chosen is None:
                return None
            if slot.share:
                device = _share_device(trial_before[chosen], trial_after[chosen], slot.share)
                assert device is not None
                devices[s, chosen, device] = devices.get((s, chosen, device), 0) + 1
            elif chosen in trial_before and slot.gpus:
                trial_before[chosen].take_whole(slot.gpus)
                trial_after[chosen].take_whole(slot.gpus)
            for r, a in asked:
                trial_room[chosen][r] -= a
                trial_free[chosen][r] -= a
            landing[s, chosen] = landing.get((s, chosen), 0) + 1
    room.update(trial_room)
    free.update(trial_free)
    fits.update(trial_after)
    before.update(trial_before)
    return landing, devices


def _share_room(before: DeviceFit, after: DeviceFit, slot: Slot) -> bool:
    """Whether a share of ``slot`` finds a device in both fits (:func:`_share_device`, on copies)."""
    return _share_device(_copy(before), _copy(after), slot.share) is not None


def _share_device(before: DeviceFit, after: DeviceFit, share: int) -> int | None:
    """The device a moved share lands on, taken in both fits: the first that carries shares and has room for it
    before the decision and after it, else the first empty in both (docs/snapshot-format.md, "GPU sharing")."""
    for d in range(before.count):
        fits_both = before.shares[d] and before.shares[d] + share <= MILLI and after.shares[d] + share <= MILLI
        if fits_both and (after.shares[d] or after.empty() >= 1):  # an emptied device is one whole GPUs may take
            break
    else:
        empty = [d for d in range(before.count) if not before.shares[d] and not after.shares[d]]
        if not empty or before.empty() < 1 or after.empty() < 1:
            return None
        d = empty[0]
    before.shares[d] += share
    after.shares[d] += share
    return d


def _fit_before(problem: Problem, n: int) -> DeviceFit:
    """What node ``n``'s devices hold before the decision."""
    devices = problem.nodes[n].devices
    assert devices is not None
    return DeviceFit(devices)


def _copy(fit_of: DeviceFit) -> DeviceFit:
    out = copy.copy(fit_of)
    out.shares = list(fit_of.shares)
    return out
