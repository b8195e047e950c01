"""One replay from a scenario to its output folder: ``gpu-preempt simulate`` without the printing, and
:func:`gpu_preempt.simulate`.

Two 8-GPU jobs of a trace, ten minutes apart, on one 8-GPU node: the second waits for the first to end.

>>> import tempfile, shutil, gpu_preempt
>>> folder = Path(tempfile.mkdtemp())
>>> trace = folder / "trace.csv"
>>> _ = trace.write_text("job_id,submission_time,duration,num_gpu\\na,0,3600,8\\nb,600,3600,8\\n")
>>> result = gpu_preempt.simulate({
...     "cluster": {"nodes": [{"count": 1, "gpu": 8, "cpu": 64, "memory": "512Gi"}]},
...     "queues": [{"name": "team", "deserved": {"gpu": 8}}],
...     "workload": {"trace": {"format": "itp", "path": str(trace)}},
... })
>>> result.jobs().column("wait_s").to_pylist(), result.summary["preemptions"]["total"]
([0.0, 3000.0], 0)
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from gpu_preempt.models import SnapshotError, read_document
from gpu_preempt.models.scenario import Scenario, scenario_from_data

from .metrics import summary
from .out_folder import OutFolder
from .output import Plotter, jobs_table, write_outputs
from .report import replay_report, scenario_text
from .simulator import Simulator
from .workload import ReplayInput, load_workload

__all__ = ["SimulationResult", "load_scenario", "simulate"]


@dataclass
class SimulationResult:
    """A replay: the scenario as validated, its workload, the simulator at the end, and the summary (the figures of
    ``summary.json``, docs/scenario-format.md)."""

    scenario: Scenario
    workload: ReplayInput
    simulator: Simulator
    summary: dict[str, Any]

    def jobs(self) -> pa.Table:
        """One row per job (``jobs.parquet``): what it was, when it waited and ran, what it lost."""
        return jobs_table(self.simulator)

    def samples(self) -> list[dict[str, Any]]:
        """The time series (``timeseries.csv``): one row per sample."""
        return self.simulator.samples


def load_scenario(source: Path | Mapping[str, Any]) -> tuple[Scenario, ReplayInput]:
    """The validated scenario (a file, or a document whose paths are relative to the working folder) and its
    workload (trace read, jobs built); raises :class:`SnapshotError`."""
    raw = read_document(source) if isinstance(source, Path | str) else dict(source)
    scenario = scenario_from_data(raw)
    base = Path(source).parent if isinstance(source, Path | str) else Path.cwd()
    return scenario, load_workload(scenario, raw, base)


def simulate(
    scenario: Path | str | Mapping[str, Any],
    out: Path | str | None = None,
    *,
    dump_at: float | None = None,
    check: bool | None = None,
    on_cycle: Callable[[float, int, int], None] | None = None,
    on_start: Callable[[float], None] | None = None,
    memo: bool = True,
    incremental: bool = True,
    force: bool = False,
) -> SimulationResult:
    """Replay ``scenario`` (a scenario file, or its document: docs/scenario-format.md) through the engine.

    With ``out``, write its output folder there (summary.json, jobs.parquet, events.jsonl, timeseries.csv, plots;
    with ``dump_at``, seconds of simulated time, the snapshot of the first cycle at or after it as dump.json).
    ``out`` is checked first: a folder holding files gpu-preempt did not write is refused (:class:`SnapshotError`)
    unless ``force``. ``check`` verifies every decision and invariant every cycle (``simulator.problems`` lists
    what broke). ``on_start(span)`` hears when the last job arrives (seconds) once the workload is read;
    ``on_cycle(now, jobs finished, jobs)`` is called after every cycle. ``memo=False`` searches every waiting job
    every cycle, and ``incremental=False`` counts every node afresh every cycle (the same results, more slowly: tests
    hold them equal). Bad input raises
    :class:`SnapshotError` naming the field.
    """
    source = Path(scenario) if isinstance(scenario, str) else scenario
    target = None if out is None else Path(out)
    with contextlib.ExitStack() as stack:
        folder = None if target is None else stack.enter_context(OutFolder(target, "simulate", force=force))
        validated, workload = load_scenario(source)
        if on_start is not None:
            on_start(workload.span)
        if check is not None:
            simulation = validated.simulation.model_copy(update={"check": check})
            validated = validated.model_copy(update={"simulation": simulation})
        simulator = Simulator(
            validated, workload, dump_at=dump_at, on_cycle=on_cycle, memo=memo, incremental=incremental
        )
        plotter = None if folder is None else stack.enter_context(Plotter())
        try:
            simulator.run()
        except ValueError as err:  # a scheduled change naming something that does not exist
            raise SnapshotError.single("events", str(err)) from None
        figures = summary(simulator)
        if folder is not None:
            name = source.stem if isinstance(source, Path) else "scenario"
            title = f"{name}, {validated.simulation.solver}, seed {validated.simulation.seed}"
            write_outputs(simulator, folder.staging, figures, plotter, title)
            text = source.read_text(encoding="utf-8") if isinstance(source, Path) else scenario_text(source)
            replay_report(folder.staging, title, text, figures)
    return SimulationResult(validated, workload, simulator, figures)
