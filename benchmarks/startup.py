"""How fast the command line starts: ``--help``, ``schema``, ``validate`` and a whole ``cycle`` on the bundled example.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/startup.py            # 15 runs of each, median and best wall time
    .venv/bin/python benchmarks/startup.py --runs 30

Each command is the installed ``gpu-preempt`` in a child process, so the time includes starting Python; the first
row, ``python -c pass``, is that floor. The engine and OR-Tools are loaded only by the commands that solve, and
without pandas, which OR-Tools imports for helpers gpu-preempt never calls (``solver/cli/app.py:
import_cpsat_without_pandas``). docs/performance.md quotes the table.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "gpu-preempt")
EXAMPLE = str(ROOT / "fixtures" / "example-cluster.yaml")
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "gpu-preempt --help": [CLI, "--help"],
    "gpu-preempt --version": [CLI, "--version"],
    "gpu-preempt schema": [CLI, "schema"],
    "gpu-preempt validate example-cluster.yaml": [CLI, "validate", EXAMPLE],
    "gpu-preempt cycle example-cluster.yaml": [CLI, "cycle", EXAMPLE],
}


def wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for argv in COMMANDS.values():
        wall(argv)  # warm the file cache
    for _ in range(runs):  # interleaved, so that a noisy moment hits every command alike
        for name, argv in COMMANDS.items():
            times[name].append(wall(argv))
    floor = statistics.median(times["python -c pass"])
    print(f"| command ({runs} runs) | median | best | median minus Python's start |")
    print("| --- | --- | --- | --- |")
    for name, found in times.items():
        median = statistics.median(found)
        print(f"| `{name}` | {median:.2f} s | {min(found):.2f} s | {median - floor:.2f} s |")


if __name__ == "__main__":
    main()
