"""A generator of realistic GPU clusters for the benchmarks (deterministic for a given seed).

Shape: ``nodes`` 8-GPU nodes (96 CPUs, 1Ti) grouped in racks; a two-level queue tree (departments of teams)
whose deserved GPU quotas add up to the cluster (CPU and memory unlimited, as in KAI's default queues);
priority classes train (50), build (100, non-preemptible), inference (125) and a toleration class; running jobs
of 1, 2, 4 and 8 GPUs, multi-node gangs of 8-GPU tasks and elastic jobs, started over the last hours (some
inside their min-runtime), filling about 97% of the GPUs; and pending jobs from 1 GPU to 64-GPU gangs.

Styles (``--style``), the ways users write the same cluster:

* ``node``: each running task gives only its node (``{"node": "node-000001"}``);
* ``named``: each task gives its name, node and status, as docs/snapshot-format.md's examples write them;
* ``mixed``: named tasks, and some jobs with labels and annotations, a placement, a requeue state, a checkpoint,
  releasing tasks, a pending task beside running ones, task order, and shares of a GPU on named devices.

``python benchmarks/generate.py NODES [--seed S] [--pending N] [--style node|named|mixed] > snapshot.json``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpu_preempt.models import Job
    from gpu_preempt.state.cluster import ClusterState

NOW = 1_767_268_800  # 2026-01-01T12:00:00Z
GPUS = 8
UNLIMITED = {"cpu": "unlimited", "memory": "unlimited"}
"""CPU and memory quotas of every queue, as KAI's default queues declare them (quota -1): GPUs are what is shared."""


STYLES = ("node", "named", "mixed")


def generate(nodes: int, *, seed: int = 0, pending: int = 1, fill: float = 1.0, style: str = "node") -> dict[str, Any]:
    rng = random.Random(seed)
    departments = max(2, min(8, nodes // 250 or 2))
    teams = 4
    total = nodes * GPUS
    queues: list[dict[str, Any]] = []
    leaves: list[str] = []
    for d in range(departments):
        dept = f"dept-{d}"
        quota = int(total * 0.9) // departments
        queues.append({"name": dept, "deserved": {"gpu": quota, **UNLIMITED}, "reclaim_min_runtime": "10m"})
        for t in range(teams):
            team = f"{dept}-team-{t}"
            queues.append({"name": team, "parent": dept, "deserved": {"gpu": quota // teams, **UNLIMITED}})
            leaves.append(team)
    # the last team of dept-0 is the reclaimer: it runs nothing, so its pending work may reclaim
    idle_team = leaves[teams - 1]
    classes = [
        {"name": "train", "value": 50},
        {"name": "build", "value": 100},
        {"name": "inference", "value": 125},
        {
            "name": "train-sticky",
            "value": 50,
            "preemption_toleration": {"minimum_preemptable_priority": 125, "toleration_seconds": 1800},
        },
    ]
    node_list = [
        {
            "name": f"node-{i:06d}",
            "resources": {"gpu": GPUS, "cpu": 96, "memory": "1Ti"},
            "gpu_model": "NVIDIA H100 80GB HBM3",
            "labels": {"rack": f"rack-{i // 32:04d}"},
        }
        for i in range(nodes)
    ]
    # dept-0 (the reclaimer's) runs little, so the others are above their deserved quota and can be reclaimed
    busy = [q for q in leaves if q != idle_team]
    weights = [0.3 if q.startswith("dept-0-") else 1.0 for q in busy]
    free = [GPUS] * nodes
    jobs: list[dict[str, Any]] = []
    target = int(total * fill)
    used = 0
    cursor = 0
    serial = 0

    def place(size: int) -> int | None:
        nonlocal cursor
        for _ in range(nodes):
            if free[cursor] >= size:
                free[cursor] -= size
                return cursor
            cursor = (cursor + 1) % nodes
        return None

    shares: dict[str, int] = {}
    misses = 0
    while used < target and misses < 50 + nodes // 10:
        serial += 1
        team = rng.choices(busy, weights=weights)[0]
        kind = rng.random()
        cls = rng.choices(["train", "build", "inference", "train-sticky"], weights=[80, 5, 5, 10])[0]
        started = NOW - rng.randint(60, 8 * 3600)
        if kind < 0.02 and nodes >= 4:  # multi-node gang of 8-GPU tasks
            width = rng.choice([2, 2, 4])
            hosts = []
            for _ in range(width):
                node = place(GPUS)
                if node is None:
                    break
                hosts.append(node)
            if len(hosts) < width:
                for h in hosts:
                    free[h] += GPUS
                misses += 1
                continue
            tasks = [{"node": node_list[h]["name"]} for h in hosts]
            size = GPUS
        elif kind < 0.1:  # elastic job of 1-GPU tasks on one node
            size = 1
            count = rng.choice([2, 4, 8])
            node = place(count)
            if node is None:
                misses += 1
                continue
            tasks = [{"node": node_list[node]["name"]}] * count
        else:
            size = rng.choices([1, 2, 4, 8], weights=[65, 20, 10, 5])[0] if misses < 20 else 1
            node = place(size)
            if node is None:
                misses += 1
                continue
            tasks = [{"node": node_list[node]["name"]}]
        job: dict[str, Any] = {
            "name": f"job-{serial:07d}",
            "queue": team,
            "priority_class": cls,
            "task_resources": {"gpu": size, "cpu": 8 * size, "memory": f"{64 * size}Gi"},
            "created_at": started - rng.randint(0, 600),
            "started_at": started,
            "tasks": tasks,
        }
        if 0.02 <= kind < 0.1:
            job["min_available"] = max(1, len(tasks) // 2)
        if style != "node":
            job["tasks"] = [{"name": f"{job['name']}-{i}", **t, "status": "running"} for i, t in enumerate(tasks)]
        if style == "mixed":
            _vary(job, rng, started, shares)
        used += size * len(tasks)
        jobs.append(job)
    # pending work: the first three are the benchmark's cases (a 64-GPU gang and a 1-GPU job that must reclaim,
    # a 16-GPU job that preempts in its own busy team); the rest mix sizes and queues
    sizes = [64, 1, 16, 8, 4, 32, 2]
    for p in range(pending):
        gpus = sizes[p % len(sizes)]
        width = max(1, gpus // GPUS)
        per_task = gpus // width
        job = {
            "name": f"pending-{p:04d}",
            "queue": idle_team if p < 2 else rng.choice(busy),
            "priority_class": "train",
            "task_resources": {"gpu": per_task, "cpu": 8 * per_task, "memory": f"{64 * per_task}Gi"},
            "created_at": NOW - 60 - p,
            "tasks": [{}] * width,
        }
        if p == 2 or (p > 2 and rng.random() < 0.3):
            del job["priority_class"]
            job["priority"] = 90  # preemptible, above train: may preempt in its own queue
        jobs.append(job)
    return {
        "now": NOW,
        "config": {"preempt_min_runtime": "5m", "reclaim_min_runtime": "2m", "solver": {"time_limit": "30s"}},
        "nodes": node_list,
        "queues": queues,
        "priority_classes": classes,
        "jobs": jobs,
    }


def _vary(job: dict[str, Any], rng: random.Random, started: int, shares: dict[str, int]) -> None:
    """Give a running job of the ``mixed`` style what some users' jobs give (each kind to a few jobs in a hundred).
    ``shares``: how many shares of a GPU each node holds so far (each on its own device)."""
    draw = rng.random()
    tasks = job["tasks"]
    if draw < 0.10:
        job["labels"] = {"team": job["queue"], "app": f"app-{rng.randint(0, 50)}"}
        job["annotations"] = {"owner": f"user-{rng.randint(0, 500)}"}
    elif draw < 0.14:
        job["placement"] = {
            "node_affinity": [[{"key": "rack", "operator": "Exists"}]],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        }
    elif draw < 0.16:
        job["requeue"] = {"count": 1, "evicted_at": started - 900, "requeue_at": started - 840}
    elif draw < 0.20:
        job["checkpointed_at"] = started + 30
    elif draw < 0.23:
        tasks[-1]["status"] = "releasing"
    elif draw < 0.25 and "min_available" in job and len(tasks) > 1:
        del tasks[-1]["node"]
        tasks[-1]["status"] = "pending"
    elif draw < 0.27 and "min_available" in job:
        for order, task in enumerate(tasks):
            task["order"] = order
    elif draw < 0.30 and job["task_resources"]["gpu"] == 1 and len(tasks) == 1:
        node = tasks[0]["node"]
        job["task_resources"] = {"gpu": 0.5, "cpu": 4, "memory": "32Gi"}
        tasks[0]["devices"] = [shares.get(node, 0)]
        shares[node] = shares.get(node, 0) + 1


def pending_decisions(nodes: int, seed: int) -> Iterator[tuple[ClusterState, Job, str]]:
    """Every pending job of a generated cluster with seven of them, for reclaim and for preempt, with the cluster's
    state: the decisions the comparisons run."""
    from gpu_preempt.models import snapshot_from_data
    from gpu_preempt.state.cluster import ClusterState

    snapshot = snapshot_from_data(generate(nodes, seed=seed, pending=7))
    cluster = ClusterState.of(snapshot)
    for job in snapshot.jobs:
        if job.name.startswith("pending-"):
            for action in ("reclaim", "preempt"):
                yield cluster, job, action


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("nodes", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pending", type=int, default=1)
    parser.add_argument("--style", choices=STYLES, default="node")
    args = parser.parse_args()
    json.dump(generate(args.nodes, seed=args.seed, pending=args.pending, style=args.style), sys.stdout)


if __name__ == "__main__":
    main()
