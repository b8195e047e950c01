"""GPU sharing at scale: a generated cluster decided with whole GPUs, and the same cluster with half of its jobs
taking shares of a GPU (docs/snapshot-format.md, "GPU sharing").

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/sharing.py                 # 1,000 nodes, seven rounds
    .venv/bin/python benchmarks/sharing.py --nodes 200 --rounds 3
    .venv/bin/python benchmarks/sharing.py --spread        # some shares on two devices (gpu_devices 2)

The whole-GPU cluster is benchmarks/generate.py's. Its shared twin turns two thirds of the running one-GPU jobs each
into two half-GPU jobs on one device of the same node, or (one in four) into one half alone on its device, which
leaves half a device free that no whole-GPU task can use; about half of the jobs are shares. Every second pending
job of one GPU asks for a half. With ``--spread``, half of the running two-GPU jobs of one task take a half on each
of two devices instead, and every second pending half (pending-0001 among them) asks for one on two devices. Both
decide the same pending jobs: a cycle of all of
them, and the three cases of benchmarks/run.py (a 64-GPU gang and a 1-GPU job that must reclaim, a 16-GPU job
that preempts), each on its own. Rounds alternate the two clusters; medians are reported with their ratio, as a
Markdown table (docs/performance.md quotes it).
"""

from __future__ import annotations

import argparse
import copy
import gc
import random
import statistics
import time
from typing import Any

from generate import generate

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import snapshot_from_data
from gpu_preempt.state.cluster import ClusterState

CASES = [("pending-0000", "reclaim"), ("pending-0001", "reclaim"), ("pending-0002", "preempt")]


def shared_twin(document: dict[str, Any], seed: int, spread: bool = False) -> dict[str, Any]:
    """``document`` with two thirds of its running one-GPU jobs split into two halves on one device each (or one half
    alone), and every second pending one-GPU job asking for a half. With ``spread``, half of the running two-GPU jobs
    of one task take a half on each of two devices instead, and every second pending half is one on two devices."""
    rng = random.Random(seed)
    out = copy.deepcopy(document)
    devices: dict[str, int] = {}  # node -> devices given to shares so far
    jobs = []
    for job in out["jobs"]:
        tasks = job["tasks"]
        pair = len(tasks) == 1 and job["task_resources"]["gpu"] == 2 and "node" in tasks[0]
        if spread and pair and rng.random() < 0.5:
            node = tasks[0]["node"]
            device = devices.get(node, 0)
            devices[node] = device + 2
            job["task_resources"] = {"gpu": "500m", "cpu": 4, "memory": "32Gi"}
            job["gpu_devices"] = 2
            job["tasks"] = [{"node": node, "devices": [device, device + 1]}]
            jobs.append(job)
            continue
        single = len(tasks) == 1 and job["task_resources"]["gpu"] == 1 and "node" in tasks[0]
        if single and rng.random() < 2 / 3:
            node = tasks[0]["node"]
            device = devices.get(node, 0)
            devices[node] = device + 1
            for half in ("a", "b") if rng.random() < 0.75 else ("a",):
                twin = copy.deepcopy(job)
                twin["name"] = f"{job['name']}-{half}"
                twin["task_resources"] = {"gpu": "500m", "cpu": 4, "memory": "32Gi"}
                twin["tasks"] = [{"node": node, "devices": [device]}]
                jobs.append(twin)
            continue
        jobs.append(job)
    for job in jobs:
        if job["name"].startswith("pending-") and job["task_resources"]["gpu"] == 1 and int(job["name"][-4:]) % 2:
            job["task_resources"] = {"gpu": "500m", "cpu": 4, "memory": "32Gi"}
            if spread and int(job["name"][-4:]) % 4 == 1:
                job["gpu_devices"] = 2
    out["jobs"] = jobs
    return out


def timed(document: dict[str, Any]) -> dict[str, float]:
    """Seconds to load and decide: the cycle over every pending job, and each case alone."""
    snapshot = snapshot_from_data(document)
    found: dict[str, float] = {}
    gc.collect()  # the earlier rounds' garbage is not collected inside a timed decision
    start = time.perf_counter()
    result = run_cycle(snapshot)
    found["cycle"] = time.perf_counter() - start
    assert all(not verify(s, d) for s, d in zip(result.states, result.decisions, strict=True))
    for name, action in CASES:
        gc.collect()
        start = time.perf_counter()
        cluster = ClusterState.of(snapshot)
        decision = attempt(cluster, snapshot.job(name), action)  # type: ignore[arg-type]
        found[f"{name} {action}"] = time.perf_counter() - start
        assert decision.outcome != "unknown", decision.to_dict()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pending", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spread", action="store_true", help="some shares on two devices (shared_twin)")
    args = parser.parse_args()
    whole = generate(args.nodes, seed=args.seed, pending=args.pending)
    shared = shared_twin(whole, args.seed, spread=args.spread)
    count = sum(1 for j in shared["jobs"] if str(j["task_resources"]["gpu"]).endswith("m"))
    print(f"{args.nodes} nodes: {len(whole['jobs'])} jobs whole; {len(shared['jobs'])} jobs, {count} of them shares")
    times: dict[str, list[list[float]]] = {}
    for _ in range(args.rounds):
        for k, document in enumerate((whole, shared)):
            for key, seconds in timed(document).items():
                times.setdefault(key, [[], []])[k].append(seconds)
    print("\n| decision | whole GPUs (s) | half of the jobs shared (s) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for key, (plain, with_shares) in times.items():
        a, b = statistics.median(plain), statistics.median(with_shares)
        print(f"| {key} | {a:.3f} | {b:.3f} | {b / a:.2f}x |")


if __name__ == "__main__":
    main()
