"""What a replay measures as it goes: figures integrated over simulated time (idle GPUs, time below deserved,
deviation from fair share, Jain's index), the rows of the time series, and the GPUs each leaf queue holds and wants,
kept as running totals; and the invariants checked after every cycle in checking mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_preempt.models import MILLI

from .progress import SimJob
from .replay_cluster import ReplayCluster

__all__ = ["Counters", "Ledgers", "invariants"]


@dataclass
class Counters:
    """Figures integrated over simulated time."""

    idle: float = 0.0
    capacity: float = 0.0
    arrivals_idle: float = 0.0
    arrivals_capacity: float = 0.0
    """``idle`` and ``capacity`` while jobs arrive (from 0 to the last arrival): the window of the offered load."""
    fragmented: float = 0.0
    """Device-seconds of devices partly used by shares of a GPU (:meth:`.replay_cluster.ReplayCluster.fragmented`)."""
    most_fragmented: int = 0
    below_deserved: dict[str, float] = field(default_factory=dict)
    deviation: float = 0.0
    jain: float = 0.0
    jain_time: float = 0.0


class Ledgers:
    """The counters, the time series, and milli-GPUs per leaf queue: held by running tasks, and wanted (held,
    pending and nominated). Only the jobs that arrived or changed since the last count are counted again."""

    def __init__(self, leaves: list[str], arrivals_end: float = 0.0) -> None:
        self.counters = Counters()
        self.arrivals_end = arrivals_end
        """Simulated seconds of the last arrival: the window of the offered load, which utilisation is also
        measured over."""
        self.clock = 0.0
        """Simulated seconds integrated so far."""
        self.samples: list[dict[str, Any]] = []
        self.held: dict[str, int] = dict.fromkeys(leaves, 0)
        self.wanted: dict[str, int] = dict(self.held)
        self.counted: dict[str, tuple[int, int]] = {}
        self.resources: dict[str, dict[str, int]] = {leaf: {} for leaf in leaves}
        """Milli-units of every resource the running tasks of each leaf queue hold."""
        self.counted_resources: dict[str, dict[str, int]] = {}
        """GPUs each active job adds to ``held`` and ``wanted`` (running, waiting)."""
        self.recount: set[str] = set()
        """Jobs that arrived or changed since ``held`` and ``wanted`` were last brought up to date."""

    def changed(self, name: str) -> None:
        """The job ``name`` arrived, or its tasks changed."""
        self.recount.add(name)

    def queue_gpus(self, jobs: dict[str, SimJob]) -> tuple[dict[str, int], dict[str, int]]:
        """Milli-GPUs per leaf queue, held and wanted, brought up to date (``jobs``: every job of the replay)."""
        held, wanted = self.held, self.wanted
        for name in self.recount:
            job = jobs[name]
            queue = job.spec.queue
            running, waiting = self.counted.pop(name, (0, 0))
            held[queue] -= running
            wanted[queue] -= running + waiting
            holding = self.resources.setdefault(queue, {})
            for resource, amount in self.counted_resources.pop(name, {}).items():
                holding[resource] -= amount
            if not job.done:
                running, _, waiting = job.counts()
                held[queue] += running
                wanted[queue] += running + waiting
                self.counted[name] = (running, waiting)
                mine: dict[str, int] = {}
                for i, status in enumerate(job.status):
                    if status == "running":
                        for resource, amount in job.spec.task_resources(i).items():
                            mine[resource] = mine.get(resource, 0) + amount
                for resource, amount in mine.items():
                    holding[resource] = holding.get(resource, 0) + amount
                self.counted_resources[name] = mine
        self.recount.clear()
        return held, wanted

    def advance(self, dt: float, cluster: ReplayCluster, shares: dict[str, float], jobs: dict[str, SimJob]) -> None:
        """Integrate the figures over ``dt`` seconds of the present state (``shares``: fair GPUs per leaf queue)."""
        total = sum(cluster.capacity.values())
        counters = self.counters
        idle = total - sum(cluster.used.values())
        counters.capacity += total * dt / MILLI
        counters.idle += idle * dt / MILLI
        inside = max(0.0, min(dt, self.arrivals_end - self.clock))
        self.clock += dt
        if inside:
            counters.arrivals_capacity += total * inside / MILLI
            counters.arrivals_idle += idle * inside / MILLI
        fragmented = cluster.fragmented()
        counters.fragmented += fragmented * dt
        counters.most_fragmented = max(counters.most_fragmented, fragmented)
        held, wanted = self.queue_gpus(jobs)
        deserved = {q.name: q.guarantee("gpu") for q in cluster.queues}  # Kueue: the nominal quota
        below = counters.below_deserved
        ratios = []
        for queue in held:
            if wanted[queue] > held[queue] and held[queue] < deserved.get(queue, 0):
                below[queue] = below.get(queue, 0.0) + dt
            fair = shares.get(queue)
            if fair is not None:
                counters.deviation += abs(held[queue] / MILLI - fair) * dt
                if fair > 0:
                    ratios.append(held[queue] / MILLI / fair)
        if ratios and any(ratios):
            counters.jain += sum(ratios) ** 2 / (len(ratios) * sum(r * r for r in ratios)) * dt
            counters.jain_time += dt

    def sample(self, now: float, cluster: ReplayCluster, shares: dict[str, float], jobs: dict[str, SimJob]) -> None:
        """A row of the time series: free GPUs, devices partly used by shares, and per leaf queue GPUs held, wanted
        and its fair share."""
        held, wanted = self.queue_gpus(jobs)
        free = (sum(cluster.capacity.values()) - sum(cluster.used.values())) / MILLI
        row: dict[str, Any] = {"time": now, "free_gpus": free, "fragmented_gpus": cluster.fragmented()}
        for queue in held:
            row[f"{queue}.allocated"] = held[queue] / MILLI
            row[f"{queue}.demanded"] = wanted[queue] / MILLI
            row[f"{queue}.fair_share"] = shares.get(queue, 0.0)
        row["preemptions"] = sum(j.evictions for j in jobs.values())
        self.samples.append(row)


def invariants(cluster: ReplayCluster, active: dict[str, SimJob]) -> list[str]:
    """Broken invariants of the simulated state (checking mode): node capacity in every resource, the GPU ledger and
    the ledger of the other resources, the device ledger (docs/snapshot-format.md, "GPU sharing"), gang minimums."""
    problems = []
    for name, used in cluster.used.items():
        if used > cluster.capacity[name]:
            problems.append(f"node {name} holds {used / MILLI:g} GPUs of {cluster.capacity[name] // MILLI}")
    resources = cluster.resources
    for name, other in cluster.other_used.items():
        over = sorted(r for r, a in other.items() if a > resources[name].get(r, 0))
        if over:
            problems.append(f"node {name} holds more {', '.join(over)} than it has")
    recount: dict[str, int] = dict.fromkeys(cluster.used, 0)
    other_recount: dict[str, dict[str, int]] = {name: {} for name in cluster.other_used}
    shares: dict[str, dict[int, int]] = {}
    for job in active.values():
        for i, (gpus, node, status) in enumerate(zip(job.spec.task_gpu_milli, job.node, job.status, strict=True)):
            if status in ("running", "releasing"):
                assert node is not None
                recount[node] += gpus
                held = other_recount[node]
                for resource, amount in job.spec.task_resources(i).items():
                    if resource != "gpu" and amount:
                        held[resource] = held.get(resource, 0) + amount
                for device in (job.devices[i] if job.devices else None) or ():
                    on = shares.setdefault(node, {})
                    on[device] = on.get(device, 0) + gpus
    for name, on in sorted(shares.items()):
        whole = (recount[name] - sum(on.values())) // MILLI
        if any(a > MILLI for a in on.values()) or whole + len(on) > cluster.capacity[name] // MILLI:
            problems.append(f"node {name}: its devices hold more than they have ({dict(sorted(on.items()))})")
    if shares != {n: on for n, on in cluster.shares.items() if on}:
        problems.append("device ledger disagrees with the shares on the nodes")
        running = job.status.count("running")
        minimum = job.spec.min_available or job.spec.tasks
        if 0 < running < minimum:
            problems.append(f"job {job.spec.name} runs {running} tasks, below its gang minimum {minimum}")
    if recount != cluster.used:
        problems.append("node GPU ledger disagrees with the tasks on the nodes")
    if other_recount != {n: {r: a for r, a in held.items() if a} for n, held in cluster.other_used.items()}:
        problems.append("node ledger of CPU, memory and other resources disagrees with the tasks on the nodes")
    return problems
