"""The figures of a replay (docs/scenario-format.md, "What comes out"), from the simulator's jobs and ledgers.

Definitions (times in seconds, GPU-time in GPU-hours):

* wait: first start - submit; JCT: finish - submit (trace jobs only: the jobs
  of a cluster snapshot are ``starting_jobs``, counted in every other figure); bounded slowdown:
  ``max(1, JCT / max(duration, 10 s))``; percentiles by linear interpolation;
* utilisation: GPU-time held by tasks (running or releasing; a share of a GPU its part) / capacity x span;
  ``arrivals``: the offered load (GPU-time the trace asks for / capacity x the arrival window, from 0 to the last
  arrival) and the utilisation over that same window, so that the two compare;
* fragmentation: devices partly used by shares of a GPU (they cannot host a task of whole GPUs), mean over time and
  most at once;
* goodput: the GPU-time of completed jobs' trace durations (work that counted);
  lost: progress destroyed by evictions and gang moves (lost_to_moves: the
  moves' part); overhead: restart
  overhead run; releasing: GPU-time evicted tasks held during the grace period;
* per GPU model (when the workload draws one per job): the job figures of the jobs of each model;
* preemptions: whole-job evictions; per 1,000 GPU-hours of held GPU-time; jobs
  preempted repeatedly: evicted twice or more;
* fill-up (``fill_up``, a fill-up experiment only): the shares of capacity requested and allocated at the end,
  the jobs still waiting, and the GPUs left unallocated by cause (:mod:`.fill_up`); its jobs never depart, so none
  is listed unfinished;
* fairness, per leaf queue: time below its deserved GPUs (Kueue: nominal) while wanting more,
  mean |held - fair share| (GPUs, time-weighted), Jain's index of held / fair
  share over queues with a fair share, time-weighted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpu_preempt.models import MILLI

from .fill_up import unallocated
from .progress import SimJob
from .simulator import Simulator

__all__ = ["BOUND", "POINTS", "fill_up_summary", "job_figures", "percentiles", "summary"]

BOUND = 10.0
"""Seconds: the bound of the bounded slowdown."""


POINTS = (50, 90, 95, 99)
"""The percentiles every time figure gives (p50, p90, p95, p99), in every output."""


def percentiles(values: Sequence[float] | np.ndarray, *points: int, zeros: int = 0) -> dict[str, float | None]:
    """``{"p50": ..., ...}`` of ``values`` and ``zeros`` more zeros (``None`` when there are none), as
    ``np.percentile`` (linear) gives them, without making the zeros (``values`` are never negative).

    >>> percentiles([4.0, 2.0], 50, 100, zeros=2) == percentiles([0.0, 0.0, 4.0, 2.0], 50, 100)
    True
    """
    n = len(values) + zeros
    if not n:
        return {f"p{p}": None for p in points}
    if not zeros:
        found = np.percentile(np.asarray(values, dtype=float), points)
        return {f"p{p}": round(float(v), 3) for p, v in zip(points, found, strict=True)}
    ranked = np.sort(np.asarray(values, dtype=float))
    out: dict[str, float | None] = {}
    for p in points:
        at = p / 100 * (n - 1)
        low, high = math.floor(at), math.ceil(at)
        a = 0.0 if low < zeros else float(ranked[low - zeros])
        b = 0.0 if high < zeros else float(ranked[high - zeros])
        out[f"p{p}"] = round(a + (b - a) * (at - low), 3)
    return out


def _hours(seconds: float) -> float:
    return round(seconds / 3600.0, 3)


def job_figures(jobs: list[SimJob]) -> dict[str, Any]:
    """Waits, JCT and slowdown of ``jobs`` (started / finished ones). Jobs of the cluster snapshot (there at the
    start) are counted apart: they have no wait or completion time of their own."""
    traced = [j for j in jobs if not j.spec.starting]
    waits = [j.first_start - j.spec.submit for j in traced if j.first_start is not None]
    done = [j for j in traced if j.finish is not None]
    jct = [j.finish - j.spec.submit for j in done if j.finish is not None]
    slowdown = [max(1.0, (j.finish - j.spec.submit) / max(j.spec.duration, BOUND)) for j in done if j.finish]
    return {
        "jobs": len(traced),
        "completed": len(done),
        "starting_jobs": len(jobs) - len(traced),
        "wait": percentiles(waits, *POINTS),
        "jct": percentiles(jct, *POINTS),
        "bounded_slowdown": {
            "mean": round(float(np.mean(slowdown)), 3) if slowdown else None,
            **percentiles(slowdown, *POINTS),
        },
        "preempted_jobs": sum(1 for j in jobs if j.evictions),
    }


def fill_up_summary(sim: Simulator) -> dict[str, Any]:
    """A fill-up's answer (docs/scenario-format.md, "Fill-up"): the shares of capacity requested and allocated at
    the end, the jobs waiting then, and the GPUs left unallocated by cause."""
    log = sim.fill_log
    assert log is not None
    waiting = [j.spec for j in sim.jobs.values() if "pending" in j.status or "nominated" in j.status]
    held = sum(sim.cluster.used.values())
    return {
        "arrivals": sim.arrived,
        "requested_share": round(sim.requested / log.capacity, 4),
        "allocated_share": round(held / log.capacity, 4),
        "waiting_jobs": len(waiting),
        "unallocated_gpus": unallocated(sim.cluster, waiting),
    }


def summary(sim: Simulator) -> dict[str, Any]:
    """Every figure of the contract's ``summary.json`` (timings under ``solver.time_ms`` only)."""
    jobs = list(sim.jobs.values())
    span = sim.now
    counters = sim.counters
    held = sum(j.held for j in jobs)
    goodput = sum(j.spec.duration * j.spec.gpus for j in jobs if j.finish is not None)
    lost = sum(j.lost for j in jobs)
    overhead = sum((j.work - j.spec.duration) * j.spec.gpus for j in jobs if j.finish is not None)
    evictions = sum(j.evictions for j in jobs)
    log = sim.log
    queues: dict[str, Any] = {}
    for queue in sim.leaves():
        mine = [j for j in jobs if j.spec.queue == queue]
        queues[queue] = {
            **job_figures(mine),
            "time_below_deserved_h": _hours(counters.below_deserved.get(queue, 0.0)),
        }
    models = sorted({j.spec.gpu_model for j in jobs if j.spec.gpu_model is not None})
    by_model = {model: job_figures([j for j in jobs if j.spec.gpu_model == model]) for model in models}
    return {
        "scenario": sim.scenario.description,
        "offered_load": round(sim.workload.offered_load, 4) if math.isfinite(sim.workload.offered_load) else None,
        "arrivals": {
            "window_h": _hours(sim.workload.span),
            "offered_load": round(sim.workload.offered_load, 4) if math.isfinite(sim.workload.offered_load) else None,
            "utilisation": (
                round(1 - counters.arrivals_idle / counters.arrivals_capacity, 4)
                if counters.arrivals_capacity
                else None
            ),
        },
        "time_scale": sim.scenario.workload.time_scale,
        "gpus": sum(sim.capacity.values()) // MILLI,
        "span_h": _hours(span),
        "synthetic": sim.workload.synthetic,
        "overall": job_figures(jobs),
        "queues": queues,
        **({"gpu_models": by_model} if by_model else {}),
        "gpu_hours": {
            "capacity": _hours(counters.capacity),
            "held": _hours(held),
            "idle": _hours(counters.idle),
            "goodput": _hours(goodput),
            "lost": _hours(lost),
            "lost_to_moves": _hours(sum(j.lost_to_moves for j in jobs)),
            "overhead": _hours(overhead),
        },
        "utilisation": round(held / counters.capacity, 4) if counters.capacity else None,
        "fragmentation": {
            "mean_gpus": round(counters.fragmented / span, 3) if span else None,
            "max_gpus": counters.most_fragmented,
        },
        "goodput_share": round(goodput / counters.capacity, 4) if counters.capacity else None,
        "lost_share": round(lost / held, 4) if held else None,
        "preemptions": {
            "total": evictions,
            "per_1000_gpu_hours": round(evictions / (held / 3600.0) * 1000.0, 3) if held else None,
            "jobs_preempted_share": round(sum(1 for j in jobs if j.evictions) / len(jobs), 4) if jobs else None,
            "jobs_preempted_repeatedly": sum(1 for j in jobs if j.evictions >= 2),
            "max_per_job": max((j.evictions for j in jobs), default=0),
            "moves": sum(j.moves for j in jobs),
        },
        "fairness": {
            "mean_deviation_gpus": round(counters.deviation / span / max(1, len(queues)), 3) if span else None,
            "jain_index": round(counters.jain / counters.jain_time, 4) if counters.jain_time else None,
        },
        "solver": {
            "name": sim.settings.solver,
            "cycles": sim.cycles,
            "decisions": log.count,
            "repeated_outcomes": log.repeated,
            "victim_decisions": log.searches,
            "proved_optimal_share": (
                round(log.proved / log.searches, 4) if log.searches and sim.settings.solver == "cpsat" else None
            ),  # greedy proves nothing
            "unknown": log.unknown,
            "time_ms": percentiles(np.frombuffer(log.solve_ms), *POINTS, zeros=log.stood),  # millions: no copy
        },
        "unfinished": [] if sim.fill_log is not None else sorted(j.spec.name for j in jobs if j.finish is None),
        **({"fill_up": fill_up_summary(sim)} if sim.fill_log is not None else {}),
        "notes": [
            "arrivals are open-loop: the trace's submit times are replayed whatever the waits (trace bias)",
        ],
    }
