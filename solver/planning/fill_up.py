"""Fill-up experiments (docs/scenario-format.md, "Fill-up"): how much of a cluster a job mix can really use.

Job shapes are drawn from the trace's jobs (seeded, with replacement) and arrive one per ``interval`` until the
GPUs they ask for reach ``target`` x the cluster's GPUs; none departs. Each arrival is decided before the next (a
cycle at most every ``interval``), and the replay stops once the last one has settled (a grace period and two
cycle periods after it). Outputs: per arrival, the GPUs requested
so far against the GPUs allocated after the first cycle that saw it, both as shares of capacity
(``fill_up.csv``, ``fill_up.png``), and the GPUs left unallocated at the end, each counted under the first reason
the waiting jobs cannot use it:

* ``partly used by shares``: the rest of a device that carries shares of a GPU, which no task of whole GPUs takes;
* ``no node of the model``: free GPUs of a model no waiting job asks for;
* ``too few on one node``: a node's free GPUs, of the right model, fewer than any waiting task of that model asks;
* ``no CPU left`` / ``no memory left``: enough free GPUs on the node, but not the CPU (then memory) a waiting task
  of that model asks for;
* ``quota or topology``: they would fit a waiting task, which its queue's quota or its topology keeps away;
* ``no waiting job``: nothing is waiting (the cluster took everything asked).

>>> shapes = [JobSpec("a", 0.0, 60.0, 2000, (2000,), "q"), JobSpec("b", 0.0, 60.0, 0, (0,), "q")]
>>> [(j.name, j.submit, j.gpu_milli) for j in drawn_shapes(shapes, FillUp(target=1.0, seed=0), 4000)]
[('000000-a', 0.0, 2000), ('000001-b', 1.0, 0), ('000002-a', 2.0, 2000)]
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from gpu_preempt.models import MILLI, SnapshotError
from gpu_preempt.models.duration import MAX_DURATION
from gpu_preempt.models.scenario import FillUp

from .workload import GPU_MODEL_LABEL, JobSpec

__all__ = ["CAUSES", "MAX_ARRIVALS", "FillUpLog", "drawn_shapes", "unallocated"]

MAX_ARRIVALS = 1_000_000
"""The most arrivals a fill-up draws."""

CAUSES = (
    "partly used by shares",
    "no node of the model",
    "too few on one node",
    "no CPU left",
    "no memory left",
    "quota or topology",
    "no waiting job",
)
"""Why free GPUs stay unallocated, in the order they are judged."""


def drawn_shapes(jobs: list[JobSpec], fill: FillUp, capacity_milli: int) -> list[JobSpec]:
    """Shapes of ``jobs`` drawn with replacement (``fill.seed``), one per ``fill.interval``, until the GPUs asked
    reach ``fill.target`` x ``capacity_milli``; each runs for ever (the replay stops first)."""
    if not any(j.gpu_milli for j in jobs):
        raise SnapshotError.single("workload.fill_up", "the trace's jobs ask for no GPU: nothing fills the cluster")
    wanted = fill.target * capacity_milli
    draw = random.Random(f"fill-up {fill.seed}")  # a string seed: the same draws on every machine
    out: list[JobSpec] = []
    asked = 0
    while asked < wanted:
        if len(out) == MAX_ARRIVALS:
            message = f"{MAX_ARRIVALS:,} arrivals ask for {asked / MILLI:g} GPUs, below the target"
            raise SnapshotError.single("workload.fill_up.target", message)
        shape = jobs[draw.randrange(len(jobs))]
        out.append(
            replace(shape, name=f"{len(out):06d}-{shape.name}", submit=len(out) * fill.interval, duration=MAX_DURATION)
        )
        asked += shape.gpu_milli
    return out


@dataclass
class FillUpLog:
    """What a fill-up records as it goes: per cycle, the instant, the arrivals so far, the milli-GPUs they asked
    for and the milli-GPUs held."""

    capacity: int
    """Milli-GPUs of the cluster."""
    cycles: list[tuple[float, int, int, int]] = field(default_factory=list)

    def rows(self, arrivals: list[JobSpec]) -> list[dict[str, Any]]:
        """One row per arrival: the share of capacity requested with it, and the share allocated after the first
        cycle at or after it."""
        out: list[dict[str, Any]] = []
        asked, at = 0, 0
        for i, job in enumerate(arrivals):
            asked += job.gpu_milli
            while at < len(self.cycles) and self.cycles[at][1] <= i:
                at += 1
            held = self.cycles[at][3] if at < len(self.cycles) else (self.cycles[-1][3] if self.cycles else 0)
            out.append(
                {
                    "arrival": i,
                    "time": job.submit,
                    "job": job.name,
                    "requested_share": round(asked / self.capacity, 6),
                    "allocated_share": round(held / self.capacity, 6),
                }
            )
        return out


def unallocated(cluster: Any, waiting: list[JobSpec]) -> dict[str, float]:
    """GPUs left unallocated at the end of a fill-up, by cause (module docstring), for the replay's ``cluster``
    (:class:`~.replay_cluster.ReplayCluster`) and its ``waiting`` jobs."""
    out = dict.fromkeys(CAUSES, 0.0)
    tasks = [(tuple(j.gpu_model.split("|")) if j.gpu_model else None, j.task_resources(i)) for j in waiting
             for i in range(j.tasks) if j.task_gpu_milli[i]]  # fmt: skip
    for node in cluster.nodes:
        name = node.name
        capacity = cluster.capacity[name]
        if not capacity or not node.schedulable:
            continue
        shares = cluster.shares.get(name, {})
        partly = sum(MILLI - used for used in shares.values() if used < MILLI)
        whole = (capacity - cluster.used[name] - partly) // MILLI * MILLI
        out["partly used by shares"] += partly / MILLI
        if whole <= 0:
            continue
        out[_cause(node, whole, cluster.resources[name], cluster.other_used[name], tasks)] += whole / MILLI
    return {cause: round(gpus, 3) for cause, gpus in out.items()}


def _cause(
    node: Any,
    whole: int,
    have: dict[str, int],
    used: dict[str, int],
    tasks: list[tuple[tuple[str, ...] | None, dict[str, int]]],
) -> str:
    """Why ``whole`` free milli-GPUs of ``node`` serve none of the waiting ``tasks``: the furthest any task gets."""
    if not tasks:
        return "no waiting job"
    model = node.labels.get(GPU_MODEL_LABEL, node.gpu_model)
    furthest = 0
    for models, request in tasks:
        if models is not None and model not in models:
            continue
        furthest = max(furthest, 1)
        if request.get("gpu", 0) > whole:
            continue
        furthest = max(furthest, 2)
        if request.get("cpu", 0) > have.get("cpu", 0) - used.get("cpu", 0):
            continue
        furthest = max(furthest, 3)
        if request.get("memory", 0) > have.get("memory", 0) - used.get("memory", 0):
            continue
        return "quota or topology"
    return ("no node of the model", "too few on one node", "no CPU left", "no memory left")[furthest]
