"""Quota enforcement (docs/rules.md, "Quota enforcement") on generated clusters: how long one enforce-quota decision
takes.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/quota_enforcement.py                 # 1,000 nodes
    .venv/bin/python benchmarks/quota_enforcement.py --nodes 10000

The generator (benchmarks/generate.py) builds the cluster; the benchmark then lowers two limits to 80% of what the
queue holds (the leaf holding the most GPUs, and the last top-level queue) with the delay passed, and times one
decision for each, re-checked by the verifier. The time limit is the generator's (30 s). Results print as a
Markdown table; docs/performance.md quotes them.
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

from generate import generate

from gpu_preempt.actions.quota_enforcement import enforce
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import MILLI, snapshot_from_data
from gpu_preempt.state.cluster import ClusterState


def lowered(document: dict[str, Any], queue: str, limit: int) -> dict[str, Any]:
    """``document`` with ``queue``'s GPU limit set to ``limit`` since an hour ago, with a one-minute delay."""
    out = copy.deepcopy(document)
    out["config"]["quota_preemption_enabled"] = True
    for spec in out["queues"]:
        if spec["name"] == queue:
            spec["limit"] = {**spec.get("limit", {}), "gpu": limit}
            deserved = spec.get("deserved", {})
            if isinstance(deserved.get("gpu"), int):
                deserved["gpu"] = min(deserved["gpu"], limit)
            spec["limit_changed_at"] = out["now"] - 3600
            spec["quota_preemption_delay"] = 60
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    document = generate(args.nodes, seed=args.seed, pending=10)
    cluster = ClusterState.of(snapshot_from_data(document))
    leaf = max(cluster.tree.leaves(), key=lambda q: cluster.usage[q].allocated.get("gpu", 0))
    top = [q.name for q in cluster.snapshot.queues if q.parent is None][-1]
    print("| nodes | queue | kind | GPUs held | new limit | candidates | outcome | optimal | victims | tasks | time |")
    print("| ---: | --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |")
    for queue in (leaf, top):
        held = cluster.usage[queue].allocated.get("gpu", 0) // MILLI
        limit = held * 8 // 10
        state = ClusterState.of(snapshot_from_data(lowered(document, queue, limit)))
        start = time.perf_counter()
        decision = enforce(state, queue)
        elapsed = time.perf_counter() - start
        assert verify(state, decision) == [], verify(state, decision)
        kind = "leaf" if state.tree.is_leaf(queue) else "parent"
        print(
            f"| {args.nodes:,} | {queue} | {kind} | {held:,} | {limit:,} | {decision.candidates:,} "
            f"| {decision.outcome} | {'yes' if decision.optimal else 'no'} | {len(decision.victims)} "
            f"| {decision.objective.get('tasks', 0)} | {elapsed:.2f} s |"
        )


if __name__ == "__main__":
    main()
