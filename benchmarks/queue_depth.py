"""The cost of a replay's cycle against the length of its queue, with and without the memo of standing outcomes.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/queue_depth.py                       # cluster04's first 2,500 jobs at 2x
    .venv/bin/python benchmarks/queue_depth.py --first 1500 --time-scale 2
    .venv/bin/python benchmarks/queue_depth.py --plot docs/cycle-cost.png   # also the plot of docs/performance.md
    .venv/bin/python benchmarks/queue_depth.py --workload cluster05 --time-scale 40 --memo-only   # queues of 500

Every cycle of the replay is timed (``run_cycle`` alone: not the snapshot it is given, nor applying it) with the
number of jobs waiting when it starts; cycles are grouped by that number, and the mean time of a group is printed
for a replay that lets outcomes stand (the default) and one that searches every waiting job every cycle. The two
replays make the same decisions (tests/solver/planning/test_memo_replay.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared" / "traces" / "microsoft-itp-elasticflow" / "cluster04.csv"
CLUSTER05 = ROOT / "fixtures" / "traces" / "itp-cluster05" / "cluster05.csv"
BUCKETS = [(0, 10), (10, 50), (50, 100), (100, 200), (200, 400), (400, 600), (600, 10**9)]


def timed_cycles(path: Path, memo: bool) -> tuple[float, list[tuple[int, float]]]:
    import gpu_preempt.planning.simulator as simulator
    from gpu_preempt.planning.run import simulate

    found: list[tuple[int, float]] = []
    inner = simulator.run_cycle

    def cycle(snapshot: Any, **options: Any) -> Any:
        waiting = sum(1 for job in snapshot.jobs if any(t.status == "pending" for t in job.tasks))
        started = time.perf_counter()
        result = inner(snapshot, **options)
        found.append((waiting, time.perf_counter() - started))
        return result

    simulator.run_cycle = cycle  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        simulate(path, None, memo=memo)
        return time.perf_counter() - started, found
    finally:
        simulator.run_cycle = inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=["cluster04", "cluster05"], default="cluster04")
    parser.add_argument("--first", type=int, default=2500, help="cluster04: its first N jobs")
    parser.add_argument("--time-scale", type=float, default=2.0)
    parser.add_argument("--memo-only", action="store_true", help="skip the replay that searches every job")
    parser.add_argument("--plot", type=Path, help="also draw each cycle's time against the jobs waiting (PNG)")
    args = parser.parse_args()
    if args.workload == "cluster04":
        document = yaml.safe_load((ROOT / "benchmarks" / "scenarios" / "itp-cluster04.yaml").read_text())
        document["workload"]["trace"]["path"] = str(TRACE)
        document["workload"]["window"] = {"first": args.first}
        title = f"cluster04, first {args.first:,} jobs at {args.time_scale:g}x"
    else:  # the bundled scenario's 32 x 8 GPUs
        document = yaml.safe_load((ROOT / "fixtures" / "scenarios" / "itp-cluster10.yaml").read_text())
        document["workload"]["trace"]["path"] = str(CLUSTER05)
        title = f"cluster05 on 32 x 8 GPUs at {args.time_scale:g}x"
    document["workload"]["time_scale"] = args.time_scale
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.yaml"
        path.write_text(yaml.safe_dump(document))
        runs = {memo: timed_cycles(path, memo) for memo in ((True,) if args.memo_only else (True, False))}
    print(f"{title}; mean time of a cycle by jobs waiting")
    print("| jobs waiting | cycles | outcomes stand | every job searched | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for low, high in BUCKETS:
        kept = [t for w, t in runs[True][1] if low <= w < high]
        every = [t for w, t in runs[False][1] if low <= w < high] if False in runs else []
        if not kept:
            continue
        a = statistics.mean(kept) * 1000
        label = f"{low}-{high - 1}" if high < 10**9 else f"{low}+"
        if every:
            b = statistics.mean(every) * 1000
            print(f"| {label} | {len(kept):,} | {a:.1f} ms | {b:.1f} ms | {b / a:.2f}x |")
        else:
            print(f"| {label} | {len(kept):,} | {a:.1f} ms | - | - |")
    without = f", {runs[False][0]:.1f} s without" if False in runs else ""
    print(f"whole replay: {runs[True][0]:.1f} s with the memo{without}")
    if args.plot is not None:
        plot(runs, args.plot, title)


def plot(runs: dict[bool, tuple[float, list[tuple[int, float]]]], path: Path, title: str) -> None:
    """Each cycle's time against the jobs waiting when it started, with and without the memo."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    for memo, label, color in ((False, "every job searched", "tab:red"), (True, "outcomes stand", "tab:blue")):
        if memo not in runs:
            continue
        waiting = [w for w, _ in runs[memo][1]]
        times = [t * 1000 for _, t in runs[memo][1]]
        axes.scatter(waiting, times, s=3, alpha=0.3, color=color, label=label)
    axes.set_xlabel("jobs waiting when the cycle starts")
    axes.set_ylabel("cycle time (ms)")
    axes.set_yscale("log")
    axes.set_title(title)
    axes.legend(markerscale=4)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
