"""The greedy baselines' placement: first-fit of the chunk once some victims are gone (docs/rules.md, "The greedy
baseline").

Biggest tasks first, each on the node KAI's node order puts first (:mod:`gpu_preempt.problem.node_order`: the
placement strategy, idle room before releasing room), a share of a GPU on the device KAI's ``gpupack`` or
``gpuspread`` picks (:class:`DeviceFit`). With a required topology still to choose, the first domain (in order)
where the whole chunk fits, as KAI tries one domain after another (docs/rules.md, "Placement").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

from gpu_preempt.problem.devices import DeviceFit, device_fits
from gpu_preempt.problem.node_order import best, strategy_of
from gpu_preempt.problem.records import ChunkType, Problem
from gpu_preempt.problem.solution import Solution, broken_rows

__all__ = [
    "Capacity",
    "Evicted",
    "Fitted",
    "LazyPerNode",
    "Rooms",
    "fit",
    "fits_one",
    "hosts",
    "room_after",
]

V = TypeVar("V")
Evicted = dict[tuple[int, int], int]
"""Tasks evicted per (victim, slot)."""


class Fitted(NamedTuple):
    """A first-fit placement, and what it leaves of the nodes."""

    placed: dict[tuple[int, int], int]
    """Tasks placed per (type, node)."""
    devices: dict[tuple[int, int, int], int]
    """Shares of a GPU per (type, node, device)."""
    room: Rooms
    """Per node, the room left once the victims are gone and the chunk is placed."""
    fits: dict[int, DeviceFit]
    """Per node with devices, what its devices hold then."""


def fit(
    problem: Problem, evicted: Evicted, counts: dict[int, int] | None = None, domain: int | None = None
) -> Fitted | None:
    """First-fit of the chunk once ``evicted`` go; ``None`` if a required task finds no room.

    ``counts``: place exactly these many tasks of each type (KAI's probe of part of the chunk), instead of its
    required tasks and as many optional ones as fit. ``domain``: in that domain of a required topology only.
    """
    if not problem.domains or domain is not None:
        return _fit_on(problem, evicted, domain, counts)
    for d in sorted({d for n, d in enumerate(problem.domains) if problem.nodes[n].eligible}):
        placed = _fit_on(problem, evicted, d, counts)
        if placed is not None:
            return placed
    return None


class LazyPerNode(dict[int, V]):
    """Per node, a value made by ``make`` when first asked for: a problem may hold thousands of nodes, of which a
    scenario touches a few."""

    def __init__(self, make: Callable[[int], V]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, n: int) -> V:
        found = self[n] = self.make(n)
        return found


Rooms = LazyPerNode[dict[str, int]]
"""Per node, its room once some victims are gone (its own room copied when first asked for)."""


def room_after(problem: Problem, evicted: Evicted) -> Rooms:
    """Per node, its room once ``evicted`` are gone."""
    room: Rooms = LazyPerNode(lambda n: dict(problem.nodes[n].room))
    for (v, s), count in evicted.items():
        slot = problem.victims[v].slots[s]
        here = room[slot.node]
        for r, a in slot.requests.items():
            here[r] = here.get(r, 0) + a * count
    return room


def hosts(problem: Problem) -> tuple[int, ...]:
    """The eligible nodes whose room takes a task of the chunk with no victim gone (found once per problem): with
    the nodes where victims leave room, the only ones first-fit may pick."""
    found: tuple[int, ...] | None = problem.__dict__.get("_hosts")
    if found is None:
        asked = [[(r, a) for r, a in t.requests.items() if a > 0] for t in problem.chunk]
        found = problem.__dict__["_hosts"] = tuple(
            n
            for n, node in enumerate(problem.nodes)
            if node.eligible and any(all(node.room.get(r, 0) >= a for r, a in shape) for shape in asked)
        )
    return found


def _fit_on(problem: Problem, evicted: Evicted, domain: int | None, counts: dict[int, int] | None) -> Fitted | None:
    """:func:`fit` on the nodes of ``domain`` (``None``: every eligible node)."""
    room = room_after(problem, evicted)
    nodes = problem.nodes
    touched = {n for n in room if nodes[n].eligible}
    usable = sorted(touched.union(hosts(problem)))
    if domain is not None:
        usable = [n for n in usable if problem.domains[n] == domain]
    placed: dict[tuple[int, int], int] = {}
    devices: dict[tuple[int, int, int], int] = {}
    on_devices = device_fits(problem, Solution("feasible", evicted))
    idle: Rooms = LazyPerNode(lambda n: dict(nodes[n].now_room))
    sharing = problem.placement[0] == "binpack"  # KAI's gpusharingorder is on with the GPU strategy binpack
    types = sorted(range(len(problem.chunk)), key=lambda t: sorted(problem.chunk[t].requests.values(), reverse=True))
    for t in reversed(types):
        chunk = problem.chunk[t]
        share, gpus = chunk.share, chunk.gpus
        strategy = strategy_of(problem, chunk)
        tasks, required = (len(chunk.tasks), chunk.required) if counts is None else (counts.get(t, 0),) * 2
        for index in range(tasks):
            fitting = [n for n in usable if fits_one(room[n], chunk, on_devices.get(n))]
            node = best(fitting, nodes, chunk, strategy, room, idle, on_devices, sharing=sharing)
            if node is None:
                if index < required:
                    return None
                break
            placed[t, node] = placed.get((t, node), 0) + 1
            if index >= required and _over_limit(problem, evicted, placed):
                placed[t, node] -= 1  # optional growth stops at a queue limit
                break
            for r, a in chunk.requests.items():
                room[node][r] = room[node].get(r, 0) - a
                idle[node][r] = idle[node].get(r, 0) - a
            fit_of = on_devices.get(node)
            if fit_of is not None and share:
                found = fit_of.take_share(share, chunk.spread)
                assert found is not None
                for device in found:
                    devices[t, node, device] = devices.get((t, node, device), 0) + 1
            elif fit_of is not None:
                fit_of.take_whole(gpus)
    return Fitted({key: n for key, n in placed.items() if n}, devices, room, on_devices)


def fits_one(room: dict[str, int], chunk: ChunkType, fit_of: DeviceFit | None) -> bool:
    """Whether one task of ``chunk`` fits a node's ``room`` (and its devices, when it counts them)."""
    if not all(room.get(r, 0) >= a for r, a in chunk.requests.items() if a > 0):
        return False
    return fit_of is None or fit_of.can_take(chunk.share, chunk.gpus, chunk.spread)


def _over_limit(problem: Problem, evicted: Evicted, placed: dict[tuple[int, int], int]) -> bool:
    trial = Solution("feasible", evicted, placed)
    return any(not b.startswith(("guarantee", "saturation")) for b in broken_rows(problem, trial))


class Capacity:
    """How many tasks of a one-type chunk the nodes could host, kept up to date as victims are added: a cheap
    necessary condition (KAI's idle-GPU filter of accumulated scenarios), so that scenarios are simulated only when
    they may succeed. With several task types it counts nothing (``single`` is false)."""

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

    def free(self, batch: Evicted) -> None:
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
