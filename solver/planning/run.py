"""One replay from a scenario file to its output folder: ``gpu-preempt simulate`` without the printing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_preempt.models import SnapshotError, read_document
from gpu_preempt.models.scenario import Scenario, scenario_from_data

from .metrics import summary
from .output import Plotter, check_out, write_outputs
from .simulator import Simulator
from .workload import ReplayInput, load_workload


@dataclass
class Replay:
    scenario: Scenario
    workload: ReplayInput
    simulator: Simulator
    summary: dict[str, Any]


def load_scenario(path: Path) -> tuple[Scenario, ReplayInput]:
    """The validated scenario in ``path`` and its workload (trace read, jobs built); raises :class:`SnapshotError`."""
    raw = read_document(path)
    scenario = scenario_from_data(raw)
    return scenario, load_workload(scenario, raw, path.parent)


def simulate(
    path: Path,
    out: Path | None,
    *,
    dump_at: float | None = None,
    check: bool | None = None,
    on_cycle: Callable[[float, int, int], None] | None = None,
    memo: bool = True,
) -> Replay:
    """Replay the scenario in ``path``; write the output folder ``out`` (and the ``--dump-at`` snapshot in it).
    ``on_cycle(now, jobs finished, jobs)`` is called after every cycle.
    ``memo=False`` searches every waiting job every cycle (the same files, more slowly: a test holds them equal)."""
    if out is not None:
        check_out(out)
    scenario, workload = load_scenario(path)
    if check is not None:
        scenario = scenario.model_copy(update={"simulation": scenario.simulation.model_copy(update={"check": check})})
    simulator = Simulator(scenario, workload, dump_at=dump_at, on_cycle=on_cycle, memo=memo)
    with contextlib.ExitStack() as stack:
        plotter = None if out is None else stack.enter_context(Plotter())
        try:
            simulator.run()
        except ValueError as err:  # a scheduled change naming something that does not exist
            raise SnapshotError.single("events", str(err)) from None
        figures = summary(simulator)
        if out is not None:
            write_outputs(simulator, out, figures, plotter)
    return Replay(scenario, workload, simulator, figures)
