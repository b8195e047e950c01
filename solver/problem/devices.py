"""Shares of a GPU device by device (docs/snapshot-format.md, "GPU sharing"): the devices of a node after a
solution's evictions and moves, filled task by task, and whether what a solution places fits them.
"""

from __future__ import annotations

from gpu_preempt.models import MILLI

from .records import Devices, Problem
from .solution import Solution

__all__ = ["DeviceFit", "assign_devices", "device_fits", "devices_broken", "freed_on_devices", "task_devices"]


def task_devices(counts: list[int], tasks: int) -> list[tuple[int, ...]]:
    """The devices of each of ``tasks`` tasks whose shares take device ``d`` ``counts[d]`` times: the devices listed
    in order, each as often as it is taken, dealt to the tasks in turn. A device taken at most ``tasks`` times goes to
    distinct tasks, so each task's devices are distinct.

    >>> task_devices([2, 1, 1], 2)
    [(0, 1), (0, 2)]
    """
    listed = [d for d, count in enumerate(counts) for _ in range(count)]
    return [tuple(sorted(listed[i::tasks])) for i in range(tasks)] if tasks else []


class DeviceFit:
    """The devices of one node after a solution's evictions, filled task by task (docs/snapshot-format.md, "GPU
    sharing"): a share goes to the devices that carry shares and have room for it, the most used first, then to the
    first empty devices (shares packed together, whole devices kept free: KAI's ``gpupack``), as many as it is
    spread over; with ``spread`` (KAI's ``gpuspread``) to the empty devices first, then the least used; a task of
    ``w`` whole GPUs takes ``w`` empty devices.

    >>> fit = DeviceFit(Devices(count=3, whole=0, shares=(600, 0, 0)))
    >>> fit.take_share(300), fit.take_share(300, 2), fit.take_whole(1)
    ((0,), (1, 2), False)
    """

    def __init__(
        self,
        devices: Devices,
        freed_shares: dict[int, int] | None = None,
        freed_whole: int = 0,
        *,
        spread: bool = False,
    ) -> None:
        self.spread = spread
        """KAI's ``gpuspread``: a share goes to the least used devices, empty ones first; else ``gpupack``: the most
        used shared devices that have room, empty ones last."""
        self.count = devices.count
        self.shares = list(devices.shares) + [0] * (devices.count - len(devices.shares))
        for d, amount in (freed_shares or {}).items():
            self.shares[d] -= amount
        self.whole = devices.whole - freed_whole

    def empty(self) -> int:
        return self.count - self.whole - sum(1 for a in self.shares if a)

    def capacity(self, share: int, gpus: int, spread: int = 1) -> int:
        """How many tasks of ``share`` milli-GPUs on each of ``spread`` devices (0: none), else of ``gpus`` whole GPUs,
        the devices take (for one size of share, the most there is room for: ``m`` tasks fit when the devices, each
        taken at most ``m`` times, give ``m * spread`` places).

        >>> DeviceFit(Devices(count=3, whole=1, shares=(600, 0, 0))).capacity(300, 0)
        4
        >>> DeviceFit(Devices(count=3, whole=0, shares=(400, 0, 0))).capacity(500, 0, 2)
        2
        """
        if share:
            places = [(MILLI - a) // share for a in self.shares if a] + [MILLI // share] * max(0, self.empty())
            if spread == 1:
                return sum(places)
            m = 0
            while sum(min(m + 1, p) for p in places) >= (m + 1) * spread:
                m += 1
            return m
        return self.empty() // gpus if gpus else 1 << 62

    def shared_room(self, share: int) -> bool:
        """Whether a device that carries shares has room for ``share`` (KAI's ``gpusharingorder`` prefers such a
        node)."""
        return any(a and a + share <= MILLI for a in self.shares)

    def can_take(self, share: int, gpus: int, spread: int = 1) -> bool:
        """Whether a task of ``share`` milli-GPUs on each of ``spread`` devices (0: none), else of ``gpus`` whole GPUs,
        fits."""
        if share:
            return sum(1 for a in self.shares if a and a + share <= MILLI) + max(0, self.empty()) >= spread
        return self.empty() >= gpus

    def take_share(self, amount: int, spread: int = 1) -> tuple[int, ...] | None:
        """The devices the share goes to (``None``: too few have room), in KAI's device order (:attr:`spread`)."""
        fitting = sorted(
            (d for d, a in enumerate(self.shares) if a and a + amount <= MILLI), key=lambda d: (-self.shares[d], d)
        )
        empty = [d for d, a in enumerate(self.shares) if not a][: max(0, self.empty())]
        if self.spread:
            fitting = empty + sorted(fitting, key=lambda d: (self.shares[d], d))
        elif len(fitting) < spread:
            fitting += empty[: spread - len(fitting)]
        if len(fitting) < spread:
            return None
        devices = tuple(sorted(fitting[:spread]))
        for d in devices:
            self.shares[d] += amount
        return devices

    def take_whole(self, gpus: int) -> bool:
        if self.empty() < gpus:
            return False
        self.whole += gpus
        return True

    def holds(self) -> bool:
        """Whether the devices hold what they carry (every device at most one GPU, whole and shared devices within
        the count)."""
        return all(a <= MILLI for a in self.shares) and self.empty() >= 0


def freed_on_devices(problem: Problem, solution: Solution) -> dict[int, tuple[dict[int, int], int]]:
    """Per node, the shares (per device) and the whole devices that the tasks ``solution`` evicts or moves free
    there, less what the moved tasks take where they land (negative amounts)."""
    found: dict[int, tuple[dict[int, int], int]] = {}

    def shift(n: int, devices: tuple[int, ...], share: int, gpus: int, count: int) -> None:
        if not count or problem.nodes[n].devices is None:
            return
        shares, whole = found.get(n, ({}, 0))
        for device in devices:
            shares[device] = shares.get(device, 0) + share * count
        whole += gpus * count
        found[n] = (shares, whole)

    for (v, s), count in solution.evicted.items():
        slot = problem.victims[v].slots[s]
        shift(slot.node, slot.devices, slot.share, slot.gpus, count)
    for (v, s, n), count in solution.moved.items():
        slot = problem.victims[v].slots[s]
        shift(slot.node, slot.devices, slot.share, slot.gpus, count)
        if not slot.devices:
            shift(n, (), 0, slot.gpus, -count)
    for (v, s, n, d), count in solution.moved_devices.items():
        shift(n, (d,), problem.victims[v].slots[s].share, 0, -count)
    return found


def device_fits(problem: Problem, solution: Solution) -> dict[int, DeviceFit]:
    """A :class:`DeviceFit` per node with devices, after ``solution``'s evictions and moves."""
    freed = freed_on_devices(problem, solution)
    counted: tuple[tuple[int, Devices], ...] | None = problem.__dict__.get("_devices")
    if counted is None:  # found once per problem: most nodes of a large one count no devices
        counted = problem.__dict__["_devices"] = tuple(
            (n, node.devices) for n, node in enumerate(problem.nodes) if node.devices is not None
        )
    spread = problem.placement[0] == "spread"
    return {n: DeviceFit(devices, *freed.get(n, ({}, 0)), spread=spread) for n, devices in counted}


def assign_devices(problem: Problem, solution: Solution) -> dict[tuple[int, int, int], int] | None:
    """The devices of the shares ``solution`` places, filled by :class:`DeviceFit` (types in order), or ``None`` when
    that fill does not hold them all (the devices may still hold them packed otherwise)."""
    fits = device_fits(problem, solution)
    out: dict[tuple[int, int, int], int] = {}
    shares_first = sorted(solution.placed.items(), key=lambda item: (not problem.chunk[item[0][0]].share, item[0]))
    for (t, n), count in shares_first:
        fit = fits.get(n)
        if fit is None or not count:
            continue
        chunk = problem.chunk[t]
        if chunk.share:
            for _ in range(count):
                devices = fit.take_share(chunk.share, chunk.spread)
                if devices is None:
                    return None
                for device in devices:
                    out[t, n, device] = out.get((t, n, device), 0) + 1
        elif not fit.take_whole(chunk.gpus * count):
            return None
    return out


def devices_broken(problem: Problem, solution: Solution) -> str | None:
    """Why ``solution``'s devices do not hold what it places (docs/snapshot-format.md, "GPU sharing"), or ``None``:
    every share placed on a node with devices names its devices (distinct for each task), and after the evictions
    every device holds at most one GPU and the whole GPUs fit the devices left empty."""
    fits = device_fits(problem, solution)
    named: dict[tuple[int, int], int] = {}
    for (t, n, d), count in solution.devices.items():
        named[t, n] = named.get((t, n), 0) + count
        fits[n].shares[d] += problem.chunk[t].share * count
        if count > solution.placed.get((t, n), 0):
            tasks = solution.placed.get((t, n), 0)
            return f"device {d} of {problem.nodes[n].name} takes {count} share(s) of {tasks} task(s)"
    for (t, n), count in solution.placed.items():
        fit = fits.get(n)
        if fit is None or not count:
            continue
        chunk = problem.chunk[t]
        if chunk.share:
            if named.get((t, n), 0) != count * chunk.spread:
                return f"{count} share(s) placed on {problem.nodes[n].name} name {named.get((t, n), 0)} device(s)"
        else:
            fit.whole += chunk.gpus * count
    for n, fit in fits.items():
        if not fit.holds():
            return f"the devices of {problem.nodes[n].name} do not hold what the decision leaves on them"
    return None
