"""The queue tree on networkx: leaves, ancestors, LCA and the leveled pair."""

import pytest
from conftest import build

from gpu_preempt.state.queue_tree import ROOT, QueueTree

QUEUES = [
    {"name": "A"},
    {"name": "B", "parent": "A"},
    {"name": "C", "parent": "B"},
    {"name": "D", "parent": "B"},
    {"name": "leaf1", "parent": "C"},
    {"name": "leaf2", "parent": "C"},
    {"name": "leaf3", "parent": "D"},
    {"name": "Z"},
]


@pytest.fixture
def tree():
    return QueueTree(build(queues=QUEUES, jobs=[], priority_classes=[]))


def test_graph_is_a_rooted_tree(tree):
    import networkx as nx

    assert nx.is_arborescence(tree.graph)
    assert set(tree.graph.successors(ROOT)) == {"A", "Z"}


def test_leaves_and_order(tree):
    assert tree.leaves() == ["leaf1", "leaf2", "leaf3", "Z"]
    assert tree.queues() == ["A", "B", "C", "leaf1", "leaf2", "D", "leaf3", "Z"]
    assert tree.leaves_under("B") == ["leaf1", "leaf2", "leaf3"]
    assert tree.leaves_under("leaf3") == ["leaf3"]


def test_ancestors(tree):
    assert tree.upward("leaf3") == ["leaf3", "D", "B", "A"]
    assert tree.path("leaf1") == ["A", "B", "C", "leaf1"]
    assert tree.parent("A") is None
    assert tree.top_level("leaf2") == "A"


@pytest.mark.parametrize(
    ("a", "b", "lca", "pair"),
    [
        ("leaf1", "leaf2", "C", ("leaf1", "leaf2")),
        ("leaf1", "leaf3", "B", ("C", "D")),
        ("leaf3", "leaf1", "B", ("D", "C")),
        ("leaf1", "Z", None, ("A", "Z")),  # different top-level trees: top-level queues are siblings
    ],
)
def test_lca_and_leveled_pair(tree, a, b, lca, pair):
    assert tree.lca(a, b) == lca
    assert tree.leveled_pair(a, b) == pair


def test_no_leveled_pair_on_one_path(tree):
    with pytest.raises(ValueError, match="one path"):
        tree.leveled_pair("leaf1", "leaf1")
