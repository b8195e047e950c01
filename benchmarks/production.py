"""Planning at production size (docs/performance.md, "Production shapes"): the bundled PAI machine table, all 1,897
machines (83 without GPUs), and a generated workload with production shapes, replayed end to end.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/production.py replay       # 8,000 jobs over two weeks, uncontended (load < 0.3)
    .venv/bin/python benchmarks/production.py fill-up      # the fill-up to 1.05x capacity, one arrival a second
    .venv/bin/python benchmarks/production.py cycles       # a cycle's cost against cluster size, and cycles.png

The workload (seeded): a third of the jobs ask for a share of one GPU (a half or a quarter), half for one GPU, the
rest for 2, 4 or 8 GPUs or a gang of 2 to 4 tasks of 8; one in eight asks for no GPU; each draws its CPU and memory
per task, and one in five names the GPU models it may run on. Durations are log-uniform from a minute to a day.
Each replay is the ``gpu-preempt simulate`` command in a child process (start-up, every output and plot included).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "fixtures" / "traces" / "alibaba-pai-machines" / "pai_machine_spec.csv"
CLI = [str(Path(sys.executable).parent / "gpu-preempt")]
MODELS = ("T4", "P100", "MISC", "V100", "V100M32")
HEADER = ("id", "submit", "duration", "gpus", "tasks", "cpu", "memory", "gpu_model", "queue")


def workload(jobs: int, span: float, seed: int = 0) -> list[dict[str, Any]]:
    """``jobs`` rows with production shapes arriving uniformly over ``span`` seconds."""
    draw = random.Random(seed)
    rows = []
    for i in range(jobs):
        kind = draw.random()
        tasks: int | str = ""
        if kind < 1 / 8:
            gpus: float = 0
        elif kind < 1 / 8 + 1 / 3 * 7 / 8:
            gpus = draw.choice((0.5, 0.25))
        elif kind < 1 / 8 + 7 / 8 * (1 / 3 + 1 / 2):
            gpus = 1
        elif draw.random() < 0.7:
            gpus = draw.choice((2, 4, 8))
        else:
            tasks = draw.randint(2, 4)
            gpus = 8 * tasks
        cpu = draw.choice((1, 2, 4, 8, 16)) if gpus == 0 else max(1, round(max(gpus, 1) * draw.uniform(2, 8)))
        cpu = min(cpu, 48)
        models = "|".join(sorted(draw.sample(MODELS, draw.randint(1, 2)))) if gpus and draw.random() < 0.2 else ""
        if models and gpus > 2 and not any(m in models for m in ("MISC", "V100", "V100M32")):
            models = ""  # a model of 2-GPU nodes cannot take a wider task
        rows.append(
            {
                "id": f"j{i:05d}",
                "submit": round(draw.uniform(0, span), 1),
                "duration": round(60 * 1440 ** draw.random(), 1),
                "gpus": gpus,
                "tasks": tasks,
                "cpu": cpu,
                "memory": f"{draw.choice((4, 8, 16, 32, 64))}Gi",
                "gpu_model": models,
                "queue": draw.choice(("research", "product")),
            }
        )
    return sorted(rows, key=lambda r: r["submit"])


def scenario(folder: Path, jobs: int, span: float, fill_up: dict[str, Any] | None = None, scale: float = 1.0) -> Path:
    trace = folder / "trace.csv"
    with trace.open("w") as file:
        file.write(",".join(HEADER) + "\n")
        for row in workload(jobs, span):
            file.write(",".join(str(row[h]) for h in HEADER) + "\n")
    document: dict[str, Any] = {
        "description": f"PAI's 1,897 machines, {jobs:,} generated jobs with production shapes",
        "cluster": {"nodes": machines(scale)},
        "queues": [
            {"name": "research", "deserved": {"gpu": 3000, "cpu": "unlimited", "memory": "unlimited"}},
            {"name": "product", "deserved": {"gpu": 3000, "cpu": "unlimited", "memory": "unlimited"}},
        ],
        "workload": {
            "trace": {"format": "csv", "path": str(trace), "columns": {h: h for h in HEADER}},
            **({"fill_up": fill_up} if fill_up else {}),
        },
        "simulation": {"period": "10s", "seed": 1},
    }
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def machines(scale: float) -> list[dict[str, Any]]:
    """The PAI machine table's node groups, each kind scaled by ``scale`` (above 1: the table repeated)."""
    from gpu_preempt.planning.adapters import read_machines

    groups = read_machines(MACHINES, "machines", 1.0)
    return [{**g, "count": max(1, round(g["count"] * scale))} for g in groups]


def timed(path: Path, out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run([*CLI, "simulate", str(path), "--out", str(out)], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(done.stderr)
    summary = json.loads((out / "summary.json").read_text())
    return {"wall": wall, "summary": summary}


def cycle_costs(scale: float, jobs: int) -> dict[str, Any]:
    """The uncontended replay on ``scale`` x the PAI machines, in this process, each cycle timed: the medians of the
    cycles that placed something and of those that changed nothing."""
    from gpu_preempt.planning.run import simulate
    from gpu_preempt.planning.simulator import Simulator

    timed_cycles: list[tuple[float, bool]] = []
    plain = Simulator._cycle

    def cycle(self: Simulator, payload: None) -> None:
        before = len(self.log.changing)
        started = time.perf_counter()
        plain(self, payload)
        timed_cycles.append((time.perf_counter() - started, len(self.log.changing) > before))

    Simulator._cycle = cycle  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            result = simulate(scenario(Path(scratch), jobs, 14 * 86400, scale=scale))
    finally:
        Simulator._cycle = plain  # type: ignore[method-assign]
    placed = sorted(t for t, changed in timed_cycles if changed)
    still = sorted(t for t, changed in timed_cycles if not changed)
    return {
        "nodes": len(result.simulator.cluster.nodes),
        "placing": 1000 * placed[len(placed) // 2] if placed else None,
        "unchanged": 1000 * still[len(still) // 2] if still else None,
        "cycles": len(timed_cycles),
    }


def cycles() -> None:
    """A cycle's cost against cluster size (the machine table scaled, jobs in proportion), as a table and a plot."""
    from matplotlib.figure import Figure

    rows = [cycle_costs(scale, max(200, round(4000 * scale))) for scale in (0.1, 0.25, 0.5, 1.0, 2.0)]
    print("| nodes | cycles | placing one job (median) | nothing changed (median) |")
    print("| ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['nodes']:,} | {r['cycles']:,} | {r['placing']:.2f} ms | {r['unchanged']:.2f} ms |")
    figure = Figure(figsize=(7, 4))
    axes = figure.add_subplot()
    nodes = [r["nodes"] for r in rows]
    axes.plot(nodes, [r["placing"] for r in rows], "o-", label="a cycle that places a job (median)")
    axes.plot(nodes, [r["unchanged"] for r in rows], "s--", label="a cycle that changes nothing (median)")
    axes.set_xlabel("nodes")
    axes.set_ylabel("milliseconds")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    figure.suptitle("One cycle of a replay against cluster size (PAI machine table, production shapes)")
    figure.savefig(ROOT / "docs" / "images" / "cycle-cost-production.png", dpi=100, metadata={"Software": None})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("replay", "fill-up", "cycles"))
    parser.add_argument("--jobs", type=int, default=8000)
    args = parser.parse_args()
    if args.what == "cycles":
        cycles()
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        fill = {"target": 1.05, "seed": 0, "interval": "1s"} if args.what == "fill-up" else None
        found = timed(scenario(folder, args.jobs, 14 * 86400, fill), folder / "out")
    s = found["summary"]
    print(
        f"| {args.what} | {s['overall']['jobs']:,} | {s['gpus']:,} | {s['arrivals']['offered_load']} | "
        f"{found['wall']:.1f} s | {s['solver']['cycles']:,} | {s['solver']['decisions']:,} |"
        + (f" {s['fill_up']['allocated_share']} | {s['fill_up']['unallocated_gpus']} |" if "fill_up" in s else "")
    )


if __name__ == "__main__":
    main()
