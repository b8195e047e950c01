"""The capacity-planning benchmark (docs/scenario-format.md, "Performance"): replays timed end to end, as a user runs
them.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/simulate.py cluster10          # the bundled scenario, CP-SAT and greedy
    .venv/bin/python benchmarks/simulate.py cluster04          # ITP cluster04 compressed 1.25x, CP-SAT and greedy
    .venv/bin/python benchmarks/simulate.py cluster04 --first 4000 --time-scale 2   # its first 4,000 jobs, 2x
    .venv/bin/python benchmarks/simulate.py cluster05 --time-scale 40   # ITP cluster05 on the bundled 32 x 8 GPUs
    .venv/bin/python benchmarks/simulate.py all-itp            # the ten ITP clusters on their ElasticFlow sizes
    .venv/bin/python benchmarks/simulate.py sweep              # 100 runs of the bundled scenario, 2 workers
    .venv/bin/python benchmarks/simulate.py kueue              # cluster10 and cluster05 (40x) under KAI's and Kueue's
                                                               # rules, Kueue's with and without fair sharing

Every replay is the ``gpu-preempt`` command in a child process, so the wall time includes starting Python and
writing every output and plot; the peak RSS is that child's (``wait4``). For a sweep it is the largest worker's.
Results print as Markdown tables; docs/performance.md quotes them. ``--timeout S`` stops a replay after S seconds
and reports it unfinished (to compare with code too slow to wait for: run this script with that code's Python).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces" / "microsoft-itp-elasticflow"
CLI = [str(Path(sys.executable).parent / "gpu-preempt")]
NODES = {"01": 64, "02": 64, "03": 64, "04": 128, "05": 64, "06": 64, "07": 128, "08": 128, "09": 128, "10": 32}
"""ElasticFlow's cluster sizes (8-GPU nodes), docs/planning.md, "Traces"."""


TIMEOUT: float | None = None
"""Seconds after which a replay is stopped (``--timeout``)."""


def timed(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB of the child and of its own children, and the exit code (-9: stopped at
    ``TIMEOUT``)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    timer = threading.Timer(TIMEOUT, child.kill) if TIMEOUT else None
    if timer is not None:
        timer.start()
    _, status, usage = os.wait4(child.pid, 0)
    if timer is not None:
        timer.cancel()
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code == -9 and TIMEOUT:
        return wall, usage.ru_maxrss / 1024, code
    if code != 0:
        assert child.stderr is not None
        sys.exit(f"{' '.join(argv)} failed ({code}):\n{child.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024, code


def replay(scenario: Path, out: Path, solver: str) -> dict[str, Any]:
    """One replay with ``solver``: its wall time, peak RSS and summary."""
    document = yaml.safe_load(scenario.read_text())
    document.setdefault("simulation", {})["solver"] = solver
    trace = document["workload"]["trace"]
    trace["path"] = str((scenario.parent / trace["path"]).resolve())
    path = out / f"{scenario.stem}-{solver}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    folder = out / f"{scenario.stem}-{solver}"
    wall, rss, code = timed([*CLI, "simulate", str(path), "--out", str(folder)])
    if code != 0:
        return {"wall": wall, "rss": rss, "summary": None}
    summary = json.loads((folder / "summary.json").read_text())
    return {"wall": wall, "rss": rss, "summary": summary}


def row(name: str, solver: str, found: dict[str, Any]) -> str:
    s = found["summary"]
    if s is None:
        return f"| {name} | {solver} | stopped after {found['wall']:.0f} s, unfinished |" + " |" * 13
    pre, hours, sol = s["preemptions"], s["gpu_hours"], s["solver"]
    proved = sol["proved_optimal_share"]
    wait = s["overall"]["wait"]
    return (
        f"| {name} | {solver} | {s['overall']['jobs']:,} | {s['offered_load']} | {found['wall']:.1f} s | "
        f"{found['rss']:.0f} MB | {sol['cycles']:,} | {sol['decisions']:,} | "
        f"{sol['victim_decisions']:,} | {'-' if proved is None else f'{proved:.1%}'} | {pre['total']} | "
        f"{pre['moves']} | {hours['lost']:.1f} | {_h(wait['p95'])} | {_h(wait['p99'])} | {len(s['unfinished'])} |"
    )


HEADER = (
    "| scenario | solver | jobs | offered load | wall | peak RSS | cycles | decisions | victim searches | "
    "proved optimal | preemptions | moves | lost GPU-h | wait p95 | wait p99 | unfinished |\n"
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def _h(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.2f} h"


def cluster04(out: Path, first: int | None, scale: float | None, solvers: list[str]) -> None:
    scenario = ROOT / "benchmarks" / "scenarios" / "itp-cluster04.yaml"
    if first is not None or scale is not None:
        document = yaml.safe_load(scenario.read_text())
        if first is not None:
            document["workload"]["window"] = {"first": first}
        if scale is not None:
            document["workload"]["time_scale"] = scale
        document["workload"]["trace"]["path"] = str((scenario.parent / document["workload"]["trace"]["path"]).resolve())
        scenario = out / f"itp-cluster04-first{first}-x{scale}.yaml"
        scenario.write_text(yaml.safe_dump(document, sort_keys=False))
    print(HEADER)
    for solver in solvers:
        print(row(scenario.stem, solver, replay(scenario, out, solver)), flush=True)


def cluster05(out: Path, scale: float, solvers: list[str]) -> None:
    """ITP cluster05 (3,629 jobs) on the bundled scenario's cluster (32 x 8 GPUs) and queues, arrivals compressed
    ``scale`` times."""
    document = yaml.safe_load((ROOT / "fixtures" / "scenarios" / "itp-cluster10.yaml").read_text())
    document["description"] = f"ITP cluster05 on the bundled 32 x 8 GPUs, arrivals compressed {scale:g}x"
    document["workload"]["trace"]["path"] = str(TRACES / "cluster05.csv")
    document["workload"]["time_scale"] = scale
    path = out / f"itp-cluster05-x{scale:g}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    print(HEADER)
    for solver in solvers:
        print(row(path.stem, solver, replay(path, out, solver)), flush=True)


def all_itp(out: Path, solvers: list[str]) -> None:
    """The ten clusters uncompressed (time_scale 1) on their ElasticFlow sizes, queues as in cluster04's scenario."""
    template = yaml.safe_load((ROOT / "benchmarks" / "scenarios" / "itp-cluster04.yaml").read_text())
    print(HEADER)
    total = {solver: 0.0 for solver in solvers}
    for name, nodes in NODES.items():
        document = json.loads(json.dumps(template))
        document["description"] = f"ITP cluster{name} on {nodes} x 8 GPUs, uncompressed"
        document["cluster"]["nodes"][0]["count"] = nodes
        gpus = nodes * 8
        shares = {"org": gpus, "research": gpus // 2, "product": gpus * 3 // 8, "interns": gpus // 8}
        for queue in document["queues"]:
            queue["deserved"]["gpu"] = shares[queue["name"]]
        document["workload"]["trace"]["path"] = str(TRACES / f"cluster{name}.csv")
        document["workload"]["time_scale"] = 1
        path = out / f"itp-cluster{name}.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        for solver in solvers:
            found = replay(path, out, solver)
            total[solver] += found["wall"]
            print(row(f"cluster{name}", solver, found), flush=True)
    for solver, seconds in total.items():
        print(f"\nall ten clusters with {solver}: {seconds:.1f} s in total")


def kueue(out: Path, solvers: list[str]) -> None:
    """The same workloads under KAI's rules, Kueue's classical preemption and Kueue's fair sharing: the bundled
    cluster10 scenario, and ITP cluster05 (3,629 jobs) on its cluster, arrivals compressed 40x."""
    scenarios = ROOT / "fixtures" / "scenarios"
    print(HEADER)
    for trace, scale in ((None, None), ("cluster05.csv", 40.0)):
        for name in ("itp-cluster10", "itp-cluster10-kueue", "itp-cluster10-kueue-fair"):
            source = scenarios / f"{name.removesuffix('-fair')}.yaml"
            document = yaml.safe_load(source.read_text())
            workload = document["workload"]
            workload["trace"]["path"] = str(
                TRACES / trace if trace else (source.parent / workload["trace"]["path"]).resolve()
            )
            if scale is not None:
                workload["time_scale"] = scale
            if name.endswith("-fair"):
                document["config"]["fair_sharing"] = True
            label = name if trace is None else name.replace("cluster10", "cluster05-x40")
            path = out / f"{label}.yaml"
            path.write_text(yaml.safe_dump(document, sort_keys=False))
            for solver in solvers:
                print(row(label, solver, replay(path, out, solver)), flush=True)


def sweep(out: Path, runs: int, workers: int) -> None:
    seeds = list(range(1, runs // 2 + 1))
    path = out / "sweep.yaml"
    base = ROOT / "fixtures" / "scenarios" / "itp-cluster10.yaml"
    path.write_text(yaml.safe_dump({"scenario": str(base), "seeds": seeds}, sort_keys=False))
    folder = out / "sweep"
    wall, rss, _ = timed([*CLI, "sweep", str(path), "--out", str(folder), "--workers", str(workers), "--no-cache"])
    lines = (folder / "results.csv").read_text().splitlines()
    print(
        f"sweep of {len(lines) - 1} runs (cluster10, seeds 1-{seeds[-1]}, CP-SAT and greedy) with {workers} workers: "
        f"{wall:.1f} s, largest worker's peak RSS {rss:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["cluster10", "cluster04", "cluster05", "all-itp", "sweep", "kueue"])
    parser.add_argument("--first", type=int, help="cluster04: only the first N jobs")
    parser.add_argument("--time-scale", type=float, help="compress arrivals (cluster04; cluster05: 40)")
    parser.add_argument("--timeout", type=float, help="stop a replay after this many seconds (reported unfinished)")
    parser.add_argument("--solvers", nargs="+", default=["cpsat", "greedy"])
    parser.add_argument("--runs", type=int, default=100, help="sweep: runs (half the seeds, both solvers)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    global TIMEOUT
    TIMEOUT = args.timeout
    with tempfile.TemporaryDirectory(prefix="gpu-preempt-bench-") as folder:
        out = Path(folder)
        if args.what == "cluster10":
            print(HEADER)
            for solver in args.solvers:
                found = replay(ROOT / "fixtures" / "scenarios" / "itp-cluster10.yaml", out, solver)
                print(row("itp-cluster10", solver, found), flush=True)
        elif args.what == "cluster04":
            cluster04(out, args.first, args.time_scale, args.solvers)
        elif args.what == "cluster05":
            cluster05(out, args.time_scale or 40.0, args.solvers)
        elif args.what == "all-itp":
            all_itp(out, args.solvers)
        elif args.what == "kueue":
            kueue(out, args.solvers)
        else:
            sweep(out, args.runs, args.workers)


if __name__ == "__main__":
    main()
