"""Importing Kubernetes dumps at real size: ``gpu-preempt import`` against a plain parse of the same file.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/import_dump.py                        # the three dumps below
    .venv/bin/python benchmarks/import_dump.py --keep /tmp/dumps      # keep (and reuse) the generated files

Dumps (benchmarks/dump.py): a 10,000-node KAI cluster with 100,000 pods (half running, a tenth pending, the rest
finished; pod groups, queues, priority classes, taints and selectors) as JSON and as YAML, and a List of 200,000
finished pods. Each in a fresh process, one after the other: the floor (``json.load``, or ``yaml.load`` with
libyaml's C loader for YAML), then ``gpu-preempt import FILE --now ... -o snapshot.json``. Wall time and peak RSS
(``wait4``) per process; ratios within one run.

Targets (issue 54, 2 cores): JSON within 2x ``json.load``, YAML within 3x ``yaml.load``, the 200,000 finished pods
in at most 5 s, peak memory at most 3x the file's size. Prints a Markdown table; docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from process import CLI, ROOT, compile_package, timed

NOW = "2026-01-01T12:00:00Z"
DUMPS = {  # name: (nodes, pods, extra arguments of dump.py)
    "10,000 nodes, 100,000 pods (JSON)": ("d10k.json", 10_000, 100_000, []),
    "10,000 nodes, 100,000 pods (YAML)": ("d10k.yaml", 10_000, 100_000, ["--yaml"]),
    "200,000 finished pods (JSON)": ("finished200k.json", 100, 200_000, ["--finished-only"]),
}


def dump_file(folder: Path, name: str, nodes: int, pods: int, extra: list[str]) -> Path:
    path = folder / name
    if not path.exists():
        with path.open("w") as handle:
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "dump.py"), str(nodes), str(pods), *extra],
                           stdout=handle, check=True)  # fmt: skip
    return path


def measure(label: str, path: Path, out: Path) -> str:
    if path.suffix == ".yaml":
        floor_code = f"import yaml; yaml.load(open({str(path)!r}), Loader=yaml.CSafeLoader)"
        floor_name = "`yaml.load` (C)"
    else:
        floor_code = f"import json; json.load(open({str(path)!r}))"
        floor_name = "`json.load`"
    floor, floor_rss, _ = timed([sys.executable, "-c", floor_code])
    wall, rss, _ = timed([CLI, "import", str(path), "--now", NOW, "-o", str(out), "--force"])
    size = path.stat().st_size / 2**20
    return (
        f"| {label} | {size:.0f} MiB | {floor_name} {floor:.2f} s, {floor_rss:,.0f} MiB | {wall:.2f} s "
        f"({wall / floor:.2f}x) | {rss:.0f} MiB ({rss / size:.2f}x the file) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="a folder for the generated dumps (reused when present)")
    args = parser.parse_args()
    compile_package()
    print("| dump | file | floor | `import` | peak RSS |")
    print("| --- " * 5 + "|")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for label, (name, nodes, pods, extra) in DUMPS.items():
            path = dump_file(folder, name, nodes, pods, extra)
            print(measure(label, path, Path(scratch) / "snapshot.json"), flush=True)


if __name__ == "__main__":
    main()
