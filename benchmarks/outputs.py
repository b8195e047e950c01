"""Every output of the engine, as files to compare between two commits: a refactoring must leave them byte for byte.

``python benchmarks/outputs.py OUT [fixtures|big|scenarios|all]`` writes, per fixture, ``validate --json``, ``cycle``
(JSON with ``--verify``, the same with the greedy baseline, the text), ``enforce-quota``, and every pending job's
``solve`` under each action and with greedy; each bundled Kubernetes dump imported; a generated 10,000-node
snapshot's decisions; and the hashes of every file the bundled scenarios and sweeps write. Timings are left out
(``--no-timing``; ``solver.time_ms`` of summaries, durations in text). ``diff -r`` two such folders
(docs/development.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from gpu_preempt.cli import app
from gpu_preempt.models import SnapshotError, load_snapshot

ROOT = Path(__file__).resolve().parent.parent
RUNNER = CliRunner()
DURATION = re.compile(r"\d+(\.\d+)? ?(ms|s)\b")
"""A duration in a text output: left out, as timings differ from run to run."""


def write(out: Path, name: str, args: list[str], *, text: bool = False) -> None:
    """``gpu-preempt ARGS``'s exit code and standard output, as file ``name`` of ``out`` (``text``: durations out)."""
    result = RUNNER.invoke(app, args, catch_exceptions=True)
    body = DURATION.sub("<t>", result.stdout) if text else result.stdout
    crash = result.exception is not None and not isinstance(result.exception, SystemExit)
    trace = f"EXC {type(result.exception).__name__}: {result.exception}\n" if crash else ""
    (out / name).write_text(f"exit {result.exit_code}\n{trace}{body}".replace(str(out), "OUT"))


def pending_jobs(path: Path) -> list[str]:
    try:
        snapshot = load_snapshot(path)
    except SnapshotError:
        return []
    return [job.name for job in snapshot.jobs if not job.tasks or any(task.node is None for task in job.tasks)]


def fixtures(out: Path) -> None:
    for path in sorted((ROOT / "fixtures").glob("*.yaml")):
        file, name = str(path), path.stem
        write(out, f"{name}.validate", ["validate", file, "--json"])
        write(out, f"{name}.cycle", ["cycle", file, "--json", "--no-timing", "--verify"])
        write(out, f"{name}.cycle-greedy", ["cycle", file, "--json", "--no-timing", "--verify", "--solver", "greedy"])
        write(out, f"{name}.cycle-text", ["cycle", file, "--verify"], text=True)
        write(out, f"{name}.enforce", ["enforce-quota", file, "--json", "--no-timing", "--verify"])
        for job in pending_jobs(path):
            solve = ["solve", file, "--job", job, "--json", "--no-timing", "--verify"]
            for action in ("auto", "allocate", "reclaim", "preempt"):
                write(out, f"{name}.solve.{job}.{action}", [*solve, "--action", action])
            write(out, f"{name}.solve.{job}.greedy", [*solve, "--solver", "greedy"])
            write(out, f"{name}.solve.{job}.text", ["solve", file, "--job", job, "--verify"], text=True)
    for path in sorted((ROOT / "fixtures" / "kube").iterdir()):
        into = str(out / f"kube-{path.stem}.yaml")
        write(out, f"kube-{path.name}.import", ["import", str(path), "--now", "2026-11-23T12:00:00Z", "-o", into])


def big(out: Path) -> None:
    path = out / "big10k.json"
    with path.open("w") as file:
        generate = [sys.executable, str(ROOT / "benchmarks" / "generate.py"), "10000", "--pending", "6"]
        subprocess.run(generate, stdout=file, check=True)
    for job in pending_jobs(path):
        solve = ["solve", str(path), "--job", job, "--json", "--no-timing"]
        write(out, f"big.solve.{job}", [*solve, "--verify"])
        write(out, f"big.solve.{job}.greedy", [*solve, "--solver", "greedy"])
    write(out, "big.cycle", ["cycle", str(path), "--json", "--no-timing"])
    write(out, "big.validate", ["validate", str(path), "--json"])
    path.unlink()


def without_timings(path: Path) -> bytes:
    """The file's bytes; a summary's (or each sweep run's) ``solver.time_ms`` and a run's cache key left out."""
    data = path.read_bytes()
    if path.name == "summary.json":
        summary = json.loads(data)
        summary.get("solver", {}).pop("time_ms", None)
        return json.dumps(summary).encode()
    if path.name == "runs.jsonl":
        runs = [json.loads(line) for line in data.decode().splitlines()]
        for run in runs:
            run.get("summary", {}).get("solver", {}).pop("time_ms", None)
            run.pop("key", None)  # a hash of the engine's source
        return json.dumps(runs).encode()
    return data


def scenarios(out: Path) -> None:
    for path in sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml")):
        folder = out / f"sim-{path.stem}"
        shutil.rmtree(folder, ignore_errors=True)
        if path.stem.startswith("sweep"):
            args = ["sweep", str(path), "--out", str(folder), "--workers", "1", "--no-cache"]
        else:
            args = ["simulate", str(path), "--out", str(folder), "--check"]
        write(out, f"sim-{path.stem}.log", args, text=True)
        files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []
        hashes = [f"{hashlib.sha256(without_timings(p)).hexdigest()} {p.relative_to(folder)}" for p in files]
        (out / f"sim-{path.stem}.hashes").write_text("\n".join(hashes) + "\n")
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("part", nargs="?", choices=["fixtures", "big", "scenarios", "all"], default="all")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for part, write_part in (("fixtures", fixtures), ("big", big), ("scenarios", scenarios)):
        if args.part in (part, "all"):
            write_part(args.out)


if __name__ == "__main__":
    main()
