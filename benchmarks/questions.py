"""The operator's questions on a generated cluster (docs/operations.md): ``whatif``, ``risk --top 20`` and
``audit``, each timed as a user runs it (the command in a child process, start to end).

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/questions.py                 # 1,000 nodes, seed 0, 20 pending jobs
    .venv/bin/python benchmarks/questions.py --nodes 200

The cluster is ``benchmarks/generate.py``'s (about 97% of the GPUs busy); the submitted job asks for two 8-GPU
tasks in the first team's queue at the train priority.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate

CLI = str(Path(sys.executable).parent / "gpu-preempt")


def timed(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}")
    return time.perf_counter() - started, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pending", type=int, default=20)
    args = parser.parse_args()
    document = generate(args.nodes, seed=args.seed, pending=args.pending)
    leaf = next(q["name"] for q in document["queues"] if q.get("parent"))
    with tempfile.TemporaryDirectory(prefix="gpu-preempt-questions-") as folder:
        snapshot = Path(folder) / "cluster.json"
        snapshot.write_text(json.dumps(document))
        job = Path(folder) / "job.yaml"
        submitted = {"name": "submitted", "queue": leaf, "priority_class": "train", "task_resources": {"gpu": 8}}
        job.write_text(yaml.safe_dump({**submitted, "tasks": [{}, {}]}))
        print(f"{args.nodes} nodes, {len(document['jobs'])} jobs ({args.pending} pending), seed {args.seed}")
        print("| command | wall | answer |")
        print("| --- | ---: | --- |")
        wall, out = timed([CLI, "whatif", str(snapshot), "--submit", str(job), "--json"])
        answer = json.loads(out)
        said = f"runs: {answer['runs']}, {answer['decision']['action']}; {len(answer['variants'])} variant(s)"
        print(f"| whatif (two 8-GPU tasks) | {wall:.1f} s | {said} |", flush=True)
        wall, out = timed([CLI, "risk", str(snapshot), "--top", "20", "--json"])
        found = json.loads(out)
        ranked, asked, most = len(found["at_risk"]), found["decisions"], found["searched_up_to_gpus"]
        said = f"{ranked} ranked after {asked} requests, up to {most} GPUs"
        print(f"| risk --top 20 | {wall:.1f} s | {said} |", flush=True)
        wall, out = timed([CLI, "audit", str(snapshot), "--json"])
        totals = json.loads(out)["totals"]
        said = f"{totals['decisions']} decisions: {totals['over-eviction']} over-evict, {totals['missed']} missed"
        print(f"| audit | {wall:.1f} s | {said} |", flush=True)


if __name__ == "__main__":
    main()
