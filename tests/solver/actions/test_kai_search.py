"""The greedy baseline searches as KAI's job solver does (docs/rules.md, "The greedy baseline"): scenarios of the
jobs on the last pop's node, then of the fewest nodes that cover the job, probes of part of the chunk whose victims
stay, and victims placed again where they were or elsewhere."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpu_preempt import decide, verify
from gpu_preempt.models import snapshot_from_data
from gpu_preempt.models.decision import Decision
from gpu_preempt.state.cluster import ClusterState

NOW = "2026-01-01T12:00:00Z"


def victims(decision: Decision) -> dict[str, tuple[str, ...]]:
    return {v.job: v.tasks for v in decision.victims}


def snapshot(nodes: dict[str, int], jobs: list[dict[str, Any]], **extra: Any) -> Any:
    document = {
        "now": NOW,
        "nodes": [{"name": n, "resources": {"gpu": g}} for n, g in nodes.items()],
        "queues": extra.pop("queues", [{"name": "q"}]),
        "jobs": jobs,
        **extra,
    }
    return snapshot_from_data(document)


def running(name: str, node: str, gpus: int, priority: int = 10, minute: int = 0, **extra: Any) -> dict[str, Any]:
    created = f"2026-01-01T10:{minute:02d}:00Z"
    return {
        "name": name,
        "queue": extra.pop("queue", "q"),
        "priority": priority,
        "task_resources": {"gpu": gpus},
        "created_at": created,
        "tasks": [{"node": node}],
        **extra,
    }


def test_a_scenario_holds_only_the_jobs_of_the_last_pops_node():
    """The newest job goes first but frees a node the preemptor may not use; KAI's next scenario holds only the jobs
    of the second job's node, so the first is not evicted."""
    found = snapshot(
        {"a": 4, "b": 4},
        [
            running("useless", "a", 4, minute=30),
            running("useful", "b", 4, minute=10),
            {
                "name": "p",
                "queue": "q",
                "priority": 90,
                "task_resources": {"gpu": 4},
                "tasks": [{}],
                "placement": {"node_affinity": [[{"key": "metadata.name", "operator": "In", "values": ["b"]}]]},
            },
        ],
    )
    decision = decide(found, "p", "preempt", solver="greedy")
    assert victims(decision) == {"useful": ("useful-0",)}


def test_when_no_node_alone_will_do_the_fewest_nodes_that_cover_the_job():
    """The team's department is at its limit: the 4-GPU job needs 4 GPUs freed of the department and room for 4 on
    one node. Each node's jobs alone free too little quota, so KAI's node-local scenarios fail; its multi-node
    generator then takes the jobs of both nodes."""
    found = snapshot(
        {"n0": 4, "n1": 4},
        [
            running("a1", "n0", 3, minute=10, queue="team"),
            running("a2", "n1", 3, minute=20, queue="team"),
            {"name": "boss", "queue": "team", "priority": 90, "task_resources": {"gpu": 4}, "tasks": [{}]},
        ],
        queues=[{"name": "dept", "limit": {"gpu": 6}}, {"name": "team", "parent": "dept"}],
    )
    for solver in ("greedy", "cpsat"):
        decision = decide(found, "boss", "preempt", solver=solver)  # type: ignore[arg-type]
        assert verify(ClusterState.of(found), decision) == []
        assert victims(decision) == {"a1": ("a1-0",), "a2": ("a2-0",)}, solver


def test_the_first_probes_victims_stay_in_every_later_scenario():
    """A gang of two 4-GPU tasks: KAI first places one task, over the newest job (on n0), and keeps that victim
    while it looks for room for the second, which it finds over the 8-GPU job on n1. Evicting that job alone would
    have done: the exact answer."""
    found = snapshot(
        {"n0": 4, "n1": 8},
        [
            running("newest", "n0", 4, minute=50),
            running("big", "n1", 8, minute=10),
            {"name": "gang", "queue": "q", "priority": 90, "task_resources": {"gpu": 4}, "tasks": [{}, {}]},
        ],
    )
    assert victims(decide(found, "gang", "preempt", solver="greedy")) == {"newest": ("newest-0",), "big": ("big-0",)}
    assert victims(decide(found, "gang", "preempt")) == {"big": ("big-0",)}


def test_a_victim_that_fits_back_where_it_was_is_not_evicted():
    """Three 1-GPU jobs on a 2-GPU node, two of them halves of device 0; a whole GPU preempts. KAI pops the newest
    half, then the whole-GPU job; the scenario of their node evicts both, the job takes device 1, and the half goes
    back to device 0: only the whole-GPU job is evicted."""
    found = snapshot(
        {"n": 2},
        [
            {
                **running("half-a", "n", 1, minute=10),
                "task_resources": {"gpu": "500m"},
                "tasks": [{"node": "n", "devices": [0]}],
            },
            running("whole", "n", 1, minute=20),
            {
                **running("half-b", "n", 1, minute=30),
                "task_resources": {"gpu": "500m"},
                "tasks": [{"node": "n", "devices": [0]}],
            },
            {"name": "p", "queue": "q", "priority": 90, "task_resources": {"gpu": 1}, "tasks": [{}]},
        ],
    )
    decision = decide(found, "p", "preempt", solver="greedy")
    assert victims(decision) == {"whole": ("whole-0",)}
    assert verify(ClusterState.of(found), decision) == []


def test_a_victim_is_not_placed_again_beyond_its_queues_limit():
    """Putting the victim back where it was would keep the department over its limit: it stays evicted."""
    found = snapshot(
        {"n0": 8},
        [
            running("old", "n0", 4, queue="team"),
            {"name": "boss", "queue": "team", "priority": 90, "task_resources": {"gpu": 4}, "tasks": [{}]},
        ],
        queues=[{"name": "dept", "limit": {"gpu": 4}}, {"name": "team", "parent": "dept"}],
    )
    decision = decide(found, "boss", "preempt", solver="greedy")
    assert victims(decision) == {"old": ("old-0",)} and not decision.moves


@pytest.mark.parametrize("moves", [True, False])
def test_a_move_only_when_moves_are_on(moves: bool):
    """KAI's reclaim moves a 1-GPU job to free a node for a 2-GPU job (its test "queue0 is under deserved quota,
    queue1 is over deserved quota but not over fair share"); with ``config.moves: false`` the job is evicted."""
    found = snapshot(
        {"node0": 3, "node1": 2},
        [
            running("q0-job0", "node0", 2, priority=50, queue="queue0"),
            running("q0-job1", "node1", 1, priority=50, queue="queue0", minute=5),
            {"name": "q1-job0", "queue": "queue1", "priority": 50, "task_resources": {"gpu": 2}, "tasks": [{}]},
        ],
        queues=[
            {"name": "queue0", "deserved": {"gpu": 2}, "over_quota_weight": 1},
            {"name": "queue1", "deserved": {"gpu": 2}, "over_quota_weight": 0},
        ],
        config={"moves": moves},
    )
    decision = decide(found, "q1-job0", "reclaim", solver="greedy")
    assert verify(ClusterState.of(found), decision) == []
    if moves:
        assert not decision.victims and {m.task: m.node for m in decision.moves} == {"q0-job1-0": "node0"}
    else:
        assert victims(decision) == {"q0-job1": ("q0-job1-0",)} and not decision.moves


def random_cluster(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    nodes = [{"name": f"n{i}", "resources": {"gpu": rng.choice([2, 4, 8])}} for i in range(rng.randint(2, 4))]
    room = {n["name"]: n["resources"]["gpu"] for n in nodes}
    jobs: list[dict[str, Any]] = []
    for j in range(rng.randint(3, 8)):
        size = rng.choice([1, 2, 4])
        count = rng.choice([1, 1, 2, 3])
        tasks = []
        for _ in range(count):
            spots = [n for n, free in room.items() if free >= size]
            if not spots:
                break
            node = rng.choice(spots)
            room[node] -= size
            tasks.append({"node": node})
        if not tasks:
            continue
        job: dict[str, Any] = {
            "name": f"r{j}",
            "queue": rng.choice("ab"),
            "priority": rng.choice([10, 20]),
            "task_resources": {"gpu": size},
            "created_at": f"2026-01-01T10:{rng.randint(0, 59):02d}:00Z",
            "tasks": tasks,
        }
        if len(tasks) > 1 and rng.random() < 0.5:
            job["min_available"] = 1
        jobs.append(job)
    jobs.append({"name": "p", "queue": "a", "priority": 30, "task_resources": {"gpu": rng.choice([1, 2, 4])},
                 "tasks": [{} for _ in range(rng.choice([1, 2, 3]))]})  # fmt: skip
    queues = [{"name": q, "deserved": {"gpu": rng.randint(0, 6)}} for q in "ab"]
    return {"now": NOW, "config": {"moves": rng.random() < 0.7}, "nodes": nodes, "queues": queues, "jobs": jobs}


@pytest.mark.parametrize("seed", range(60))
def test_every_answer_is_allowed_and_never_better_than_the_exact_one(seed: int):
    found = snapshot_from_data(random_cluster(seed))
    cluster = ClusterState.of(found)
    for action in ("reclaim", "preempt"):
        greedy = decide(found, "p", action, solver="greedy")  # type: ignore[arg-type]
        assert verify(cluster, greedy) == [], greedy.to_dict()
        exact = decide(found, "p", action)  # type: ignore[arg-type]
        if greedy.placed:
            assert exact.placed, (greedy.to_dict(), exact.to_dict())
            order = found.config.objective
            assert exact.objective_key(order) <= greedy.objective_key(order)
