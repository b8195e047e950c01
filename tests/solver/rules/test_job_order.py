"""The job order taken run by run is the job order taken job by job (docs/rules.md, "The cycle and the job order")."""

from __future__ import annotations

import random

import pytest
from conftest import FIXTURES

from gpu_preempt.models import Snapshot, load_snapshot, snapshot_from_data
from gpu_preempt.rules.job_order import Placeable, WaitingOrder
from gpu_preempt.state.cluster import ClusterState


def crowded(seed: int) -> Snapshot:
    """Three teams, 60 waiting jobs of three shapes and two priorities, a half-full cluster."""
    draw = random.Random(seed)
    jobs = [
        {"name": f"run{i}", "queue": "a", "task_resources": {"gpu": 4}, "tasks": [{"node": f"n{i}"}]} for i in range(3)
    ]
    for i in range(60):
        jobs.append(
            {
                "name": f"w{i:02d}",
                "queue": draw.choice("abc"),
                "priority": draw.choice([10, 10, 50]),
                "created_at": draw.randrange(1000),
                "task_resources": {"gpu": draw.choice([1, 2, 8])},
                "tasks": [{}] * draw.choice([1, 1, 2]),
            }
        )
    return snapshot_from_data(
        {
            "now": 2000,
            "nodes": [{"name": f"n{i}", "resources": {"gpu": 8}} for i in range(6)],
            "queues": [
                {"name": "org", "deserved": {"gpu": 48}},
                *({"name": q, "parent": "org", "deserved": {"gpu": 16}} for q in "abc"),
            ],
            "jobs": jobs,
        }
    )


def one_by_one(cluster: ClusterState, action: str) -> list[str]:
    order = WaitingOrder(cluster, cluster.waiting_jobs(), Placeable(cluster, action))
    taken = []
    while (job := order.pop()) is not None:
        taken.append(job.name)
    return taken


def run_by_run(cluster: ClusterState, action: str) -> list[list[str]]:
    order = WaitingOrder(cluster, cluster.waiting_jobs(), Placeable(cluster, action))
    runs = []
    while run := order.pop_run():
        runs.append([job.name for job in run])
    return runs


SNAPSHOTS = [*(pytest.param(crowded(seed), id=f"crowded-{seed}") for seed in range(4))] + [
    pytest.param(load_snapshot(path), id=path.stem) for path in sorted(FIXTURES.glob("cycle-*.yaml"))
]


@pytest.mark.parametrize("snapshot", SNAPSHOTS)
@pytest.mark.parametrize("action", ["allocate", "reclaim", "preempt"])
def test_runs_take_the_jobs_in_the_order_pop_takes_them(snapshot: Snapshot, action: str):
    cluster = ClusterState.of(snapshot)
    runs = run_by_run(cluster, action)
    assert [name for run in runs for name in run] == one_by_one(cluster, action)
    for run in runs:  # a run is jobs of one leaf
        assert len({snapshot.job(name).queue for name in run}) == 1


def test_a_crowded_queue_is_taken_in_fewer_runs_than_jobs():
    cluster = ClusterState.of(crowded(0))
    runs = run_by_run(cluster, "reclaim")
    assert len(runs) < sum(map(len, runs))
