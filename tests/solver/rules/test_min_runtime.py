"""The min-runtime design (docs/rules.md, "Min-runtime"): reclaim-min-runtime and preempt-min-runtime, with the
design's own trees."""

from __future__ import annotations

import pytest
from conftest import build

from gpu_preempt.models import parse_time
from gpu_preempt.rules.min_runtime import preempt_min_runtime, protected_until, reclaim_min_runtime
from gpu_preempt.rules.protection import protections
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.queue_tree import QueueTree

# The min-runtime design (docs/rules.md, "Min-runtime"), reclaim tree: A > B (600s) > {C > {leaf1 (0s), leaf2 (180s)},
# D (60s) > leaf3}
RECLAIM_TREE = [
    {"name": "A"},
    {"name": "B", "parent": "A", "reclaim_min_runtime": 600},
    {"name": "C", "parent": "B"},
    {"name": "D", "parent": "B", "reclaim_min_runtime": 60},
    {"name": "leaf1", "parent": "C", "reclaim_min_runtime": 0},
    {"name": "leaf2", "parent": "C", "reclaim_min_runtime": 180},
    {"name": "leaf3", "parent": "D"},
]

# The min-runtime design (docs/rules.md, "Min-runtime"), preempt tree: A > B (600s) > C > {leaf1 (300s), leaf2}
PREEMPT_TREE = [
    {"name": "A"},
    {"name": "B", "parent": "A", "preempt_min_runtime": 600},
    {"name": "C", "parent": "B"},
    {"name": "leaf1", "parent": "C", "preempt_min_runtime": 300},
    {"name": "leaf2", "parent": "C"},
]


def tree_of(queues, **config):
    snapshot = build(queues=queues, nodes=[], jobs=[], priority_classes=[], config=config)
    return QueueTree(snapshot), snapshot.config


@pytest.mark.parametrize(
    ("reclaimer", "victim", "expected"),
    [
        ("leaf1", "leaf3", 60),  # resolved for root.A.B.D
        ("leaf1", "leaf2", 180),  # resolved for root.A.B.C.leaf2
        ("leaf3", "leaf1", 600),  # root.A.B.C inherits 600s from root.A.B
    ],
)
def test_seed_000_reclaim_lca_examples(reclaimer, victim, expected):
    tree, config = tree_of(RECLAIM_TREE)
    assert reclaim_min_runtime(tree, config, reclaimer, victim) == expected


def test_lca_step_down_can_land_on_the_victim_leaf_with_zero():
    # leaf2 -> leaf1: the LCA is C, one step down towards the victim is leaf1 itself, set to 0s.
    tree, config = tree_of(RECLAIM_TREE)
    assert reclaim_min_runtime(tree, config, "leaf2", "leaf1") == 0


def test_lca_across_top_level_trees_uses_the_victims_top_level_queue():
    queues = [
        {"name": "X", "reclaim_min_runtime": 120},
        {"name": "x1", "parent": "X", "reclaim_min_runtime": 5},
        {"name": "Y"},
        {"name": "y1", "parent": "Y", "reclaim_min_runtime": 7},
    ]
    tree, config = tree_of(queues, reclaim_min_runtime=30)
    assert reclaim_min_runtime(tree, config, "y1", "x1") == 120  # X's own value, not x1's
    assert reclaim_min_runtime(tree, config, "x1", "y1") == 30  # Y unset: node-pool default


def test_queue_resolution_walks_from_the_victim_leaf():
    tree, config = tree_of(RECLAIM_TREE, min_runtime_resolve="queue", reclaim_min_runtime=1)
    assert reclaim_min_runtime(tree, config, "leaf1", "leaf3") == 60  # leaf3 unset -> D
    assert reclaim_min_runtime(tree, config, "leaf3", "leaf1") == 0  # leaf1 itself
    assert reclaim_min_runtime(tree, config, "leaf3", "leaf2") == 180


def test_unset_everywhere_falls_back_to_the_node_pool_default():
    tree, config = tree_of(
        [{"name": "p"}, {"name": "q", "parent": "p"}, {"name": "r", "parent": "p"}],
        reclaim_min_runtime="15m",
        preempt_min_runtime="1m",
    )
    assert reclaim_min_runtime(tree, config, "q", "r") == 900
    assert preempt_min_runtime(tree, config, "r") == 60


@pytest.mark.parametrize(("leaf", "expected"), [("leaf1", 300), ("leaf2", 600)])
def test_seed_000_preempt_examples(leaf, expected):
    tree, config = tree_of(PREEMPT_TREE)
    assert preempt_min_runtime(tree, config, leaf) == expected


def test_protection_window_is_half_open():
    assert protected_until(None, 600) is None  # never started: never protected
    assert protected_until(100.0, 0) is None
    assert protected_until(100.0, 600) == 700.0


def running_job(name, queue, started, **extra):
    return {
        "name": name,
        "queue": queue,
        "priority": 10,
        "task_resources": {"gpu": 1},
        "started_at": started,
        "tasks": [{"node": "n0"}] * extra.pop("tasks", 1),
        **extra,
    }


@pytest.mark.parametrize(
    ("started", "protected"),
    [
        ("2026-01-01T11:59:00Z", True),  # 60 s ago, min-runtime 180 s
        ("2026-01-01T11:57:00.001Z", True),
        ("2026-01-01T11:57:00Z", False),  # exactly at started + min-runtime: no longer protected
        ("2026-01-01T11:00:00Z", False),
        (None, False),
    ],
)
def test_min_runtime_protection_against_a_reclaimer(started, protected):
    snapshot = build(
        queues=RECLAIM_TREE,
        nodes=[{"name": "n0", "resources": {"gpu": 8}}],
        priority_classes=[],
        jobs=[
            running_job("victim", "leaf2", started),
            {"name": "reclaimer", "queue": "leaf1", "task_resources": {"gpu": 1}, "tasks": [{}]},
        ],
    )
    cluster = ClusterState.of(snapshot)
    found = protections(cluster, snapshot.job("victim"), snapshot.job("reclaimer"), "reclaim")
    assert [p.rule for p in found] == (["min-runtime"] if protected else [])
    if protected:
        assert found[0].until == parse_time(started) + 180


def test_elastic_jobs_keep_only_min_available_while_protected():
    snapshot = build(
        queues=PREEMPT_TREE,
        nodes=[{"name": "n0", "resources": {"gpu": 8}}],
        priority_classes=[],
        jobs=[
            running_job("elastic", "leaf1", "2026-01-01T11:58:00Z", tasks=3, min_available=1),
            running_job("gang", "leaf1", "2026-01-01T11:58:00Z", tasks=2),
            {"name": "boss", "queue": "leaf1", "priority": 90, "task_resources": {"gpu": 1}, "tasks": [{}]},
        ],
    )
    cluster = ClusterState.of(snapshot)
    boss = snapshot.job("boss")
    (elastic,) = protections(cluster, snapshot.job("elastic"), boss, "preempt")
    (gang,) = protections(cluster, snapshot.job("gang"), boss, "preempt")
    assert elastic.surplus_only and elastic.until == parse_time("2026-01-01T12:03:00Z")
    assert not gang.surplus_only
