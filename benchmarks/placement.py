"""The cost of placement: the same decisions with and without node selectors and taints (docs/rules.md, "Placement").

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/placement.py                 # 10,000 nodes
    .venv/bin/python benchmarks/placement.py --nodes 1000

The generator's cluster (benchmarks/generate.py) is decided as it is, then constrained: nodes alternate between
two GPU models rack by rack (label ``gpu-type``, H100 and A100), every other pair of racks is tainted
``dedicated=infer:NoSchedule``, and every job gets a node selector for a GPU model (a running job the model of
its first node, a pending one H100) and no toleration, so a pending job may use a quarter of the nodes. The three
benchmark decisions (a 64-GPU gang and a 1-GPU job that reclaim, a 16-GPU job that preempts) run seven times in
each cluster, in one process, and the medians are compared as ratios. The decisions are checked by the verifier.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

CASES = [
    ("pending-0000", "reclaim", "64-GPU gang"),
    ("pending-0001", "reclaim", "1 GPU"),
    ("pending-0002", "preempt", "16 GPUs"),
]
RACK = 32
"""Nodes per rack in the generator."""


def constrained(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with GPU-model labels, taints on half the nodes and a node selector on every job."""
    out = copy.deepcopy(document)
    model = {}
    for i, node in enumerate(out["nodes"]):
        rack = i // RACK
        model[node["name"]] = "H100" if rack % 2 == 0 else "A100"
        node["labels"] = {**node["labels"], "gpu-type": model[node["name"]]}
        if rack % 4 >= 2:
            node["taints"] = [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]
    for job in out["jobs"]:
        first = job["tasks"][0].get("node")
        job["placement"] = {"node_selector": {"gpu-type": model[first] if first else "H100"}}
    return out


def decide(document: dict[str, Any], repeat: int) -> list[dict[str, Any]]:
    from gpu_preempt.actions.job_solver import attempt
    from gpu_preempt.check.verifier import verify
    from gpu_preempt.models import snapshot_from_data
    from gpu_preempt.state.cluster import ClusterState

    snapshot = snapshot_from_data(document)
    rows = []
    for job, action, label in CASES:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            cluster = ClusterState.of(snapshot)
            decision = attempt(cluster, snapshot.job(job), action)  # type: ignore[arg-type]
            times.append(time.perf_counter() - started)
        problems = verify(cluster, decision)
        assert not problems, problems
        rows.append(
            {
                "job": label,
                "action": action,
                "outcome": decision.outcome,
                "optimal": decision.optimal,
                "victims": len(decision.victims),
                "decide_s": statistics.median(times),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    from generate import generate

    document = generate(args.nodes, seed=args.seed, pending=3)
    plain = decide(document, args.repeat)
    placed = decide(constrained(document), args.repeat)
    print(f"{args.nodes:,} nodes, medians of {args.repeat}")
    print("| job | action | unconstrained | with selectors and taints | ratio | outcome (victims) |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for a, b in zip(plain, placed, strict=True):
        outcome = f"{a['outcome']} ({a['victims']}) / {b['outcome']} ({b['victims']})"
        print(
            f"| {a['job']} | {a['action']} | {a['decide_s'] * 1000:.0f} ms | {b['decide_s'] * 1000:.0f} ms "
            f"| {b['decide_s'] / a['decide_s']:.2f}x | {outcome} |"
        )


if __name__ == "__main__":
    main()
