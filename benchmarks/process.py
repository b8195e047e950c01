"""Whole processes at 1,000, 10,000 and 100,000 nodes: ``gpu-preempt solve`` against a plain ``json.load`` of the file.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/process.py                        # 1,000, 10,000 and 100,000 nodes
    .venv/bin/python benchmarks/process.py --sizes 1000 10000     # choose sizes
    .venv/bin/python benchmarks/process.py --keep /tmp/snapshots  # keep (and reuse) the generated files

For each size the generator (benchmarks/generate.py) writes a JSON snapshot with three pending jobs. Then, each
in a fresh process and in this order, one after the other (never two at once):

* ``python -c "import json; json.load(open(F))"``: the floor, reading the bytes;
* ``gpu-preempt validate F``: load, validate, summarize (fair shares, protected jobs), print, exit;
* ``gpu-preempt solve F --job pending-0001 --action reclaim`` (a 1-GPU job) with CP-SAT, then with ``--solver
  greedy``: load, validate, decide, print, exit; its ratios to the floor and to ``validate``; then the same for
  ``pending-0000``, the 64-GPU gang, the costliest decision at 1,000 nodes;
* an in-process probe that splits the same work into load (read and validate), decide (cluster state and the
  decision), and a further decision after a small change (the decision applied, then the next pending job); run
  twice: with Python's cyclic garbage collector on (a library's default; the loaded snapshot then frozen out of its
  passes, as docs/performance.md advises a long-running program) and off (as the CLI runs).

Wall times and peak RSS (``wait4``) are per process; ratios are taken within one run, since this machine is noisy.
The package's modules are compiled first, as installing a wheel does: with ``PYTHONDONTWRITEBYTECODE`` set (this
sandbox sets it) a child would otherwise compile every module it imports from source, 0.1 s of each small run.
Results print as a Markdown table; docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "gpu-preempt")
JOB = "pending-0001"
GANG = "pending-0000"

PROBE = """
import gc, json, sys, time
if sys.argv[3] == "off":
    gc.disable()
from gpu_preempt.models import load_snapshot
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.state.cluster import ClusterState
path, solver = sys.argv[1], sys.argv[2]
started = time.perf_counter()
snapshot = load_snapshot(path)
if gc.isenabled():
    gc.freeze()  # a long-running program's step after loading a large snapshot (docs/performance.md)
loaded = time.perf_counter()
cluster = ClusterState.of(snapshot)
first = attempt(cluster, snapshot.job("pending-0001"), "reclaim", solver=solver)
decided = time.perf_counter()
after = cluster.with_changes(first.changes())
second = attempt(after, snapshot.job("pending-0002"), "preempt", solver=solver)
again = time.perf_counter()
print(json.dumps({"load": loaded - started, "decide": decided - loaded, "again": again - decided,
                  "outcome": first.outcome, "optimal": first.optimal, "victims": len(first.victims)}))
"""


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB (``wait4``; Linux counts it in KiB) and standard output of one child process."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(argv)} failed:\n{err.read()[-3000:]}")
        return wall, usage.ru_maxrss / 1024, out.read()


def snapshot_file(nodes: int, folder: Path) -> Path:
    path = folder / f"snapshot-{nodes}.json"
    if not path.exists():
        with path.open("w") as handle:
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate.py"), str(nodes), "--pending", "3"],
                           stdout=handle, check=True)  # fmt: skip
    return path


def compile_package() -> None:
    """Write the bytecode of the package's own modules, as ``pip install`` of the wheel does."""
    for part in ("models", "solver"):
        compileall.compile_dir(ROOT / part, quiet=1)


def measure(nodes: int, folder: Path) -> dict[str, float | str]:
    path = snapshot_file(nodes, folder)
    floor, _, _ = timed([sys.executable, "-c", f"import json; json.load(open({str(path)!r}))"])
    row: dict[str, float | str] = {"nodes": nodes, "MB": path.stat().st_size / 1e6, "json": floor}
    row["validate"], _, _ = timed([CLI, "validate", str(path)])
    for solver in ("cpsat", "greedy"):
        argv = [CLI, "solve", str(path), "--job", JOB, "--action", "reclaim", "--solver", solver]
        wall, rss, _ = timed(argv)
        row[f"{solver}_wall"], row[f"{solver}_rss"] = wall, rss
        row[f"{solver}_gang"], _, _ = timed([CLI, "solve", str(path), "--job", GANG, "--action", "reclaim",
                                             "--solver", solver])  # fmt: skip
        _, _, out = timed([sys.executable, "-c", PROBE, str(path), solver, "on"])
        probe = json.loads(out)
        for key in ("load", "decide", "again"):
            row[f"{solver}_{key}"] = probe[key]
        _, _, out = timed([sys.executable, "-c", PROBE, str(path), solver, "off"])
        quiet = json.loads(out)
        share = quiet["again"] / quiet["decide"]
        row[f"{solver}_off"] = f"{quiet['decide']:.2f} s / {quiet['again']:.2f} s ({share:.0%})"
        row[f"{solver}_outcome"] = f"{probe['outcome']}{', optimal' if probe['optimal'] else ''}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    parser.add_argument("--keep", type=Path, help="a folder for the generated snapshots (reused when present)")
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        rows = [measure(n, folder) for n in args.sizes]
    print(
        "| nodes | file | `json.load` | `validate` process | solver | `solve` process | ratio to `json.load` "
        "| ratio to `validate` | peak RSS | load | decide | again | decide / again, collector off "
        "| gang `solve` process | gang ratio to `validate` |"
    )
    print("| --- " * 15 + "|")
    for r in rows:
        for solver in ("cpsat", "greedy"):
            wall = float(r[f"{solver}_wall"])
            print(
                f"| {int(r['nodes']):,} | {float(r['MB']):.0f} MB | {float(r['json']):.2f} s | "
                f"{float(r['validate']):.2f} s | {solver} ({r[f'{solver}_outcome']}) | {wall:.2f} s | "
                f"{wall / float(r['json']):.1f}x | {wall / float(r['validate']):.2f}x | "
                f"{float(r[f'{solver}_rss']):.0f} MiB | {float(r[f'{solver}_load']):.2f} s | "
                f"{float(r[f'{solver}_decide']):.2f} s | {float(r[f'{solver}_again']):.2f} s | {r[f'{solver}_off']} | "
                f"{float(r[f'{solver}_gang']):.2f} s | {float(r[f'{solver}_gang']) / float(r['validate']):.2f}x |"
            )


if __name__ == "__main__":
    main()
