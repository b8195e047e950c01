"""Where a task may run (docs/rules.md, "Placement"): Kubernetes' matching of selectors, affinity terms and
tolerations; the nodes excluded per constraint, counted; the domain a required topology pins."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_preempt.models import snapshot_from_data
from gpu_preempt.models.placement import NO_PLACEMENT, NodeRequirement, Placement, Taint, TaintToleration
from gpu_preempt.rules.placement import eligibility, eligible, excluded_text, exclusions, placement_mask
from gpu_preempt.state.cluster import ClusterState

NOW = "2026-01-01T12:00:00Z"
DEDICATED = Taint(key="dedicated", value="gpu", effect="NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, DEDICATED, True),
        ({"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}, DEDICATED, False),
        ({"key": "dedicated", "value": "gpu"}, DEDICATED, True),  # an empty effect matches every effect
        ({"key": "dedicated", "value": "gpu", "effect": "NoExecute"}, DEDICATED, False),
        ({"key": "dedicated", "operator": "Exists"}, DEDICATED, True),
        ({"operator": "Exists"}, DEDICATED, True),  # an empty key with Exists tolerates every taint
        ({"operator": "Exists", "effect": "NoExecute"}, DEDICATED, False),
        ({"key": "other", "operator": "Exists"}, DEDICATED, False),
        ({"key": "spot"}, Taint(key="spot", effect="NoExecute"), True),  # Equal, both values empty
    ],
)
def test_tolerations_follow_kubernetes(toleration: dict[str, str], taint: Taint, tolerated: bool):
    assert TaintToleration.model_validate(toleration).tolerates(taint) is tolerated


@pytest.mark.parametrize(
    ("expression", "labels", "matches"),
    [
        ({"key": "gpu", "operator": "In", "values": ["H100", "H200"]}, {"gpu": "H200"}, True),
        ({"key": "gpu", "operator": "In", "values": ["H100"]}, {}, False),
        ({"key": "gpu", "operator": "NotIn", "values": ["H100"]}, {}, True),  # absent: not in the list
        ({"key": "gpu", "operator": "NotIn", "values": ["H100"]}, {"gpu": "H100"}, False),
        ({"key": "spot", "operator": "Exists"}, {"spot": ""}, True),
        ({"key": "spot", "operator": "DoesNotExist"}, {"spot": ""}, False),
        ({"key": "gpus", "operator": "Gt", "values": ["4"]}, {"gpus": "8"}, True),
        ({"key": "gpus", "operator": "Lt", "values": ["4"]}, {"gpus": "8"}, False),
        ({"key": "gpus", "operator": "Gt", "values": ["4"]}, {"gpus": "eight"}, False),  # not an integer: no match
        ({"key": "gpus", "operator": "Gt", "values": ["4"]}, {}, False),
        ({"key": "metadata.name", "operator": "In", "values": ["n0"]}, {}, True),  # matchFields on the node's name
    ],
)
def test_node_requirements_follow_kubernetes(expression: dict[str, Any], labels: dict[str, str], matches: bool):
    assert NodeRequirement.model_validate(expression).matches(labels, "n0") is matches


def test_any_term_of_the_affinity_matches_and_an_empty_term_matches_nothing():
    gpu = {"key": "gpu", "operator": "In", "values": ["H100"]}
    name = {"key": "metadata.name", "operator": "In", "values": ["n7"]}
    affinity = Placement.model_validate({"node_affinity": [[gpu], [name]]})
    assert affinity.affinity_matches({"gpu": "A100"}, "n7") and affinity.affinity_matches({"gpu": "H100"}, "n0")
    assert not affinity.affinity_matches({"gpu": "A100"}, "n0")
    assert not Placement.model_validate({"node_affinity": [[]]}).affinity_matches({"gpu": "H100"}, "n0")
    assert Placement().affinity_matches({}, "n0")  # no affinity: every node


def cluster(nodes: list[dict[str, Any]], jobs: list[dict[str, Any]], **config: Any) -> ClusterState:
    document = {"now": NOW, "config": config, "nodes": nodes, "queues": [{"name": "q"}], "jobs": jobs}
    return ClusterState.of(snapshot_from_data(document))


def test_excluded_nodes_are_counted_by_the_first_constraint_they_fail():
    """32 nodes: 24 H100 nodes tainted dedicated=gpu:NoSchedule, 8 A100 nodes, and one more H100 node cordoned.
    The job selects H100 and tolerates nothing: 24 excluded by the taint, 8 by the selector, 1 as not schedulable
    (each node counted once)."""
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    nodes = [{"name": f"h{i}", "resources": {"gpu": 8}, "labels": {"gpu": "H100"}, "taints": taint} for i in range(24)]
    nodes += [{"name": f"a{i}", "resources": {"gpu": 8}, "labels": {"gpu": "A100"}} for i in range(8)]
    nodes.append({"name": "cordoned", "resources": {"gpu": 8}, "labels": {"gpu": "H100"}, "schedulable": False})
    job = {"name": "j", "queue": "q", "task_resources": {"gpu": 8}, "placement": {"node_selector": {"gpu": "H100"}}}
    state = cluster(nodes, [{**job, "tasks": [{}]}])
    found = exclusions(state, state.snapshot.job("j"))
    assert excluded_text(found) == (
        "33 nodes excluded: 24 by taint dedicated=gpu:NoSchedule, 8 by node_selector gpu=H100, 1 by not schedulable"
    )
    assert not placement_mask(state, state.snapshot.job("j")).any()


def test_prefer_no_schedule_keeps_no_one_out_and_no_execute_does():
    nodes = [
        {"name": "soft", "resources": {"gpu": 8}, "taints": [{"key": "x", "effect": "PreferNoSchedule"}]},
        {"name": "hard", "resources": {"gpu": 8}, "taints": [{"key": "x", "effect": "NoExecute"}]},
    ]
    state = cluster(nodes, [{"name": "j", "queue": "q", "task_resources": {"gpu": 8}, "tasks": [{}]}])
    assert placement_mask(state, state.snapshot.job("j")).tolist() == [True, False]


def test_a_running_task_on_a_node_it_does_not_tolerate_stays_running():
    """IgnoredDuringExecution: a NoExecute taint does not make the engine evict what runs there, and the node's room
    is still used by what runs."""
    nodes = [{"name": "n0", "resources": {"gpu": 8}, "taints": [{"key": "x", "effect": "NoExecute"}]}]
    jobs = [{"name": "old", "queue": "q", "task_resources": {"gpu": 8}, "tasks": [{"node": "n0"}]}]
    state = cluster(nodes, jobs)
    assert state.status["old-0"] == "running" and state.final_load("n0")["gpu"] == 8_000


def racks(count: int = 4) -> list[dict[str, Any]]:
    return [{"name": f"n{i}", "resources": {"gpu": 4}, "labels": {"rack": f"r{i // 2}"}} for i in range(count)]


def test_a_required_topology_is_pinned_by_the_tasks_the_job_holds():
    """A gang of three, one task running on n2 (rack r1): its new tasks may go to rack r1 only; with tasks on two
    racks (an earlier split), nowhere; with none held, to every labelled node, the domain left to the decision."""
    placement = {"topology": {"required": "rack"}}
    base = {"name": "g", "queue": "q", "task_resources": {"gpu": 1}, "placement": placement}
    held = cluster(racks(), [{**base, "tasks": [{"node": "n2"}, {}, {}]}], topology=["rack"])
    where = eligibility(held, held.snapshot.job("g"))
    assert where.mask.tolist() == [False, False, True, True] and where.required is None
    split = cluster(racks(), [{**base, "tasks": [{"node": "n0"}, {"node": "n2"}, {}]}], topology=["rack"])
    assert not eligibility(split, split.snapshot.job("g")).mask.any()
    unlabelled = [*racks(), {"name": "bare", "resources": {"gpu": 4}}]
    free = cluster(unlabelled, [{**base, "tasks": [{}, {}]}], topology=["rack"])
    where = eligibility(free, free.snapshot.job("g"))
    assert where.mask.tolist() == [True, True, True, True, False] and where.required is not None
    assert where.required.tolist()[:4] == [0, 0, 1, 1]


def test_a_preferred_level_counts_an_unlabelled_node_as_a_domain_of_its_own():
    nodes = [*racks(2), {"name": "bare-0", "resources": {"gpu": 4}}, {"name": "bare-1", "resources": {"gpu": 4}}]
    job = {"name": "g", "queue": "q", "task_resources": {"gpu": 1}, "placement": {"topology": {"preferred": "rack"}}}
    state = cluster(nodes, [{**job, "tasks": [{"node": "bare-0"}, {}]}], topology=["rack"])
    where = eligibility(state, state.snapshot.job("g"))
    assert where.preferred is not None
    ids = where.preferred.tolist()
    assert ids[0] == ids[1] and len({ids[0], ids[2], ids[3]}) == 3
    assert where.held == frozenset({ids[2]})


def test_the_mask_on_columns_is_the_rule_node_by_node():
    """placement_mask judges each distinct label value and set of taints once; it must agree with
    :func:`eligible` on every node, for selectors, affinity terms (names included) and tolerations."""
    taints = [
        [],
        [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        [{"key": "spot", "effect": "NoExecute"}],
    ]
    nodes = [
        {
            "name": f"n{i}",
            "resources": {"gpu": 8},
            "labels": {"gpu": ["H100", "A100", "L4"][i % 3], **({"gpus": str(i)} if i % 2 else {})},
            "taints": taints[i % 3 if i % 4 else 0],
            "schedulable": i != 5,
        }
        for i in range(12)
    ]
    placements = [
        {"node_selector": {"gpu": "H100"}},
        {"node_affinity": [[{"key": "gpus", "operator": "Gt", "values": ["4"]}], [{"key": "gpu", "operator": "In",
                                                                                  "values": ["L4"]}]]},
        {"node_affinity": [[{"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n2"]},
                            {"key": "gpus", "operator": "DoesNotExist"}]]},
        {"tolerations": [{"key": "dedicated", "operator": "Exists"}], "node_selector": {"gpu": "A100"}},
        {"tolerations": [{"operator": "Exists"}]},
        {"node_affinity": [[]]},
    ]  # fmt: skip
    jobs = [
        {"name": f"j{k}", "queue": "q", "task_resources": {"gpu": 1}, "placement": p, "tasks": [{}]}
        for k, p in enumerate(placements)
    ]
    state = cluster(nodes, [*jobs, {"name": "plain", "queue": "q", "task_resources": {"gpu": 1}, "tasks": [{}]}])
    for job in state.snapshot.jobs:
        expected = [eligible(node, job.placement or NO_PLACEMENT) for node in state.snapshot.nodes]
        assert placement_mask(state, job).tolist() == expected, job.name
