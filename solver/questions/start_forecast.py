"""When will my pending job start: the snapshot replayed forward through the simulator, once per seed.

The replay starts from the snapshot (docs/scenario-format.md, ``cluster.snapshot``): its running jobs keep running
and its pending jobs wait, every cycle decided as ``cycle`` decides. A running job's remaining work is what its
``expected_end`` leaves, where it gives one; otherwise, like a pending job's whole work, it is drawn per seed from an
exponential distribution of the stated mean (``remaining``, ``duration``): the spread over seeds is the spread of
the estimate. Per pending job: its start in each seed (seconds from the
snapshot's instant; ``None`` when it does not start), the 50th and 90th percentiles over the seeds, and per running
job, in how many seeds it is preempted on the way. Jobs of an arrivals trace compete with them when one is given.

>>> found = forecast("fixtures/example-cluster.yaml", seeds=3)
>>> [(j.job, j.p50 is not None) for j in found.pending]
[('serving-new', True)]
"""

from __future__ import annotations

import math
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_preempt.models import format_duration, load_snapshot
from gpu_preempt.planning.run import simulate

__all__ = ["CANONICAL", "COLUMNS", "NO_ARRIVALS", "Forecast", "PendingStart", "forecast", "scenario_of"]

NO_ARRIVALS = "id,submit,duration,gpus,queue\n"
COLUMNS = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus", "queue": "queue"}
CANONICAL = ("id", "submit", "duration", "gpus", "queue", "priority_class", "tasks", "cpu", "memory", "gpu_model")
"""The trace columns read by name from an arrivals file's header."""


@dataclass(frozen=True)
class PendingStart:
    """A pending job's start in each seed (seconds from the snapshot's instant; ``None``: it does not start)."""

    job: str
    starts: tuple[float | None, ...]

    @property
    def p50(self) -> float | None:
        return _percentile(self.starts, 0.5)

    @property
    def p90(self) -> float | None:
        return _percentile(self.starts, 0.9)

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job, "p50_s": self.p50, "p90_s": self.p90, "starts_s": list(self.starts)}


@dataclass
class Forecast:
    """Start estimates of every pending job, and the running jobs preempted on the way (in how many seeds)."""

    seeds: int
    pending: list[PendingStart] = field(default_factory=list)
    preempted: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seeds": self.seeds,
            "pending": [p.to_dict() for p in self.pending],
            "preempted": [{"job": j, "seeds": n} for j, n in sorted(self.preempted.items())],
        }


def forecast(
    snapshot: str | Path,
    *,
    seeds: int = 5,
    remaining: float = 7200.0,
    duration: float = 7200.0,
    simulation: dict[str, Any] | None = None,
    arrivals: str | Path | None = None,
) -> Forecast:
    """Replay the snapshot file forward ``seeds`` times; ``remaining`` and ``duration`` are the mean seconds of work
    left of a running job without ``expected_end`` and of a pending job's work; ``simulation`` is the scenario's
    ``simulation`` section (period, grace period, restart model, solver); ``arrivals``, a CSV trace with the
    canonical column names (docs/scenario-format.md, "workload": ``id, submit, duration, gpus`` and optionally
    ``queue``, ``priority_class``, ``tasks``, ``cpu``, ``memory``, ``gpu_model``), the jobs that arrive meanwhile, their
    ``submit`` in seconds from the snapshot's instant."""
    path = Path(snapshot).resolve()
    start = load_snapshot(path)
    running = [j for j in start.jobs if any(t.status != "pending" for t in j.tasks)]
    pending = [j for j in start.jobs if all(t.status == "pending" for t in j.tasks)]
    found = Forecast(seeds)
    starts: dict[str, list[float | None]] = {j.name: [] for j in pending}
    with tempfile.TemporaryDirectory(prefix="gpu-preempt-forecast-") as folder:
        trace = Path(arrivals).resolve() if arrivals is not None else Path(folder) / "no-arrivals.csv"
        if arrivals is None:
            trace.write_text(NO_ARRIVALS)
        for seed in range(1, seeds + 1):
            scenario = scenario_of(path, trace, seed, remaining=remaining, duration=duration, simulation=simulation)
            sim = simulate(scenario).simulator
            jobs = {**{j.spec.name: j for j in sim.finished}, **sim.jobs}
            for job in pending:
                starts[job.name].append(jobs[job.name].first_start if job.name in jobs else None)
            for job in running:
                if job.name in jobs and jobs[job.name].evictions:
                    found.preempted[job.name] = found.preempted.get(job.name, 0) + 1
    found.pending = [PendingStart(name, tuple(values)) for name, values in starts.items()]
    return found


def scenario_of(
    snapshot: Path,
    trace: Path,
    seed: int,
    *,
    remaining: float = 7200.0,
    duration: float = 7200.0,
    simulation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The scenario one seed of :func:`forecast` replays: the snapshot file as the cluster and its starting state,
    each job's work drawn with ``seed``, the jobs of ``trace`` (a CSV with the canonical columns) arriving."""
    start = load_snapshot(snapshot)
    rng = random.Random(seed)
    work: dict[str, str] = {}
    for job in start.jobs:
        if all(t.status == "pending" for t in job.tasks):
            left = rng.expovariate(1 / duration)
        elif job.expected_end is not None:
            left = job.expected_end - start.now
        else:
            left = rng.expovariate(1 / remaining)
        work[job.name] = format_duration(round(max(1.0, left), 3))
    with trace.open(encoding="utf-8") as lines:
        header = [h.strip() for h in lines.readline().strip().split(",")]
    columns = {name: name for name in header if name in CANONICAL} or COLUMNS
    return {
        "cluster": {"snapshot": str(snapshot), "remaining_of": work},
        "workload": {"trace": {"format": "csv", "path": str(trace), "columns": columns}},
        "simulation": {**(simulation or {}), "seed": seed},
    }


def _percentile(values: tuple[float | None, ...], q: float) -> float | None:
    """The ``q`` percentile (nearest rank) of the starts, a seed that never starts counting as latest; ``None``
    when the percentile falls on such a seed."""
    if not values:
        return None
    ordered = sorted(values, key=lambda v: math.inf if v is None else v)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]
