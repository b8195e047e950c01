"""Snapshots of every style users write, at 100,000 nodes: whole processes against a plain ``json.load`` of the file.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/load_styles.py                          # 100,000 nodes, every style
    .venv/bin/python benchmarks/load_styles.py --nodes 10000 --styles named
    .venv/bin/python benchmarks/load_styles.py --keep /tmp/snapshots    # keep (and reuse) the generated files

For each style of ``benchmarks/generate.py`` (``node``, ``named``, ``mixed``) it writes the same cluster as a JSON
snapshot with three pending jobs, then runs, each in a fresh process, one after the other:

* ``python -c "import json; json.load(open(F))"``: the floor;
* ``gpu-preempt validate F``: load, validate, summarize, print, exit;
* ``gpu-preempt solve F --job pending-0001 --action reclaim``, then with ``--json``.

Targets (issue 54, 2 cores): ``validate`` within 1.5x the floor, ``solve`` within 2.5x, peak RSS at most 1 GB.
Prints a Markdown table; docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import STYLES
from process import CLI, JOB, ROOT, compile_package, timed


def snapshot_file(nodes: int, style: str, folder: Path) -> Path:
    path = folder / f"snapshot-{nodes}-{style}.json"
    if not path.exists():
        import subprocess

        with path.open("w") as handle:
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate.py"), str(nodes), "--pending", "3",
                            "--style", style], stdout=handle, check=True)  # fmt: skip
    return path


def measure(nodes: int, style: str, folder: Path) -> str:
    path = snapshot_file(nodes, style, folder)
    floor, _, _ = timed([sys.executable, "-c", f"import json; json.load(open({str(path)!r}))"])
    validate, validate_rss, _ = timed([CLI, "validate", str(path)])
    solve, solve_rss, _ = timed([CLI, "solve", str(path), "--job", JOB, "--action", "reclaim"])
    as_json, json_rss, out = timed([CLI, "solve", str(path), "--job", JOB, "--action", "reclaim", "--json"])
    peak = max(validate_rss, solve_rss, json_rss)
    return (
        f"| {style} | {nodes:,} | {path.stat().st_size / 1e6:.0f} MB | {floor:.2f} s | {validate:.2f} s "
        f"({validate / floor:.2f}x) | {solve:.2f} s ({solve / floor:.2f}x) | {as_json:.2f} s ({as_json / floor:.2f}x), "
        f"{len(out) / 1e3:.0f} kB | {peak:,.0f} MiB |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--styles", nargs="*", choices=STYLES, default=list(STYLES))
    parser.add_argument("--keep", type=Path, help="a folder for the generated snapshots (reused when present)")
    args = parser.parse_args()
    compile_package()
    print("| style | nodes | file | `json.load` | `validate` | `solve` | `solve --json`, output | peak RSS |")
    print("| --- " * 8 + "|")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for style in args.styles:
            print(measure(args.nodes, style, folder), flush=True)


if __name__ == "__main__":
    main()
