"""``could_fit`` is a relaxation: when it says no, the full model finds no answer either."""

from __future__ import annotations

from conftest import FIXTURES, base_document, build

from gpu_preempt import cpsat
from gpu_preempt.formulate.builder import prepare
from gpu_preempt.models import load_snapshot
from gpu_preempt.problem.bounds import could_fit, could_fit_kueue
from gpu_preempt.state.cluster import ClusterState


def test_a_refusal_is_never_wrong_on_any_fixture():
    refused = 0
    for path in sorted(FIXTURES.glob("*.yaml")):
        cluster = ClusterState.of(load_snapshot(path))
        for job in cluster.waiting_jobs():
            for action in ("allocate", "reclaim", "preempt"):
                prepared = prepare(cluster, job, action)
                problem = None if prepared.skip is not None else prepared.problem
                if problem is None or could_fit(problem):
                    continue
                refused += 1
                assert cpsat.solve(problem).status == "infeasible", (path.name, job.name, action)
    assert refused >= 10  # the fixtures exercise it


def test_the_bound_on_kueue_lines_and_shares_is_never_wrong_on_any_fixture():
    """Under ``policy: kueue`` a cohort queue frees at most what keeps it over its nominal quota before its last
    workload goes, and under fair sharing a queue whose share no answer lets go keeps its workloads: when that
    refuses, the full model finds no answer either (small random cohorts: tests/test_kueue_exhaustive.py)."""
    refused = 0
    for path in sorted(FIXTURES.glob("*.yaml")):
        snapshot = load_snapshot(path)
        if snapshot.config.policy != "kueue":
            continue
        cluster = ClusterState.of(snapshot)
        for job in cluster.waiting_jobs():
            prepared = prepare(cluster, job, "preempt")
            problem = None if prepared.skip is not None else prepared.problem
            if problem is None or could_fit_kueue(problem):
                continue
            refused += 1
            assert cpsat.solve(problem).status == "infeasible", (path.name, job.name)
    assert refused >= 1


def test_a_task_that_could_move_counts_on_its_node():
    """``g`` is below its queue's line (no victim), but moving it to n1 frees n0 whole: the bound must not refuse
    what a move makes possible, and refuses it once moves are off."""
    document = {
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}, {"name": "n1", "resources": {"gpu": 8}}],
        "queues": [
            {"name": "dept", "deserved": {"gpu": 16}},
            {"name": "a", "parent": "dept", "deserved": {"gpu": 8}},
            {"name": "b", "parent": "dept", "deserved": {"gpu": 8}},
        ],
        "jobs": [
            {"name": "g", "queue": "a", "task_resources": {"gpu": 4}, "tasks": [{"node": "n0"}]},
            {"name": "fill", "queue": "b", "task_resources": {"gpu": 4}, "tasks": [{"node": "n1"}]},
            {"name": "wait", "queue": "b", "task_resources": {"gpu": 8}, "tasks": [{}]},
        ],
    }
    decided = {}
    for moves in (True, False):
        snapshot = build({**base_document(), **document}, config={"moves": moves})
        problem = prepare(ClusterState.of(snapshot), snapshot.job("wait"), "reclaim").problem
        assert problem is not None
        decided[moves] = could_fit(problem), cpsat.solve(problem).status
    assert decided == {True: (True, "optimal"), False: (False, "infeasible")}


def _two_of_three(selector: dict[str, str] | None) -> tuple[bool, str]:
    """``x`` and ``y`` fill n0 and n1 (queue a is at its line: they may move, not be evicted); ``wait`` needs two
    whole nodes, or one whole node when it may use n0 and n1 only (``selector``)."""
    wait: dict[str, object] = {"name": "wait", "queue": "b", "task_resources": {"gpu": 8}, "tasks": [{}, {}]}
    if selector is not None:
        wait = {**wait, "tasks": [{}], "placement": {"node_selector": selector}}
    document = {
        "nodes": [
            {"name": "n0", "resources": {"gpu": 8}, "labels": {"pool": "p"}},
            {"name": "n1", "resources": {"gpu": 8}, "labels": {"pool": "p"}},
            {"name": "n2", "resources": {"gpu": 8}, "labels": {"pool": "q"}},
        ],
        "queues": [{"name": "a", "deserved": {"gpu": 16}}, {"name": "b", "deserved": {"gpu": 16}}],
        "jobs": [
            {"name": "x", "queue": "a", "task_resources": {"gpu": 8}, "tasks": [{"node": "n0"}]},
            {"name": "y", "queue": "a", "task_resources": {"gpu": 8}, "tasks": [{"node": "n1"}]},
            wait,
        ],
    }
    snapshot = build({**base_document(), **document})
    problem = prepare(ClusterState.of(snapshot), snapshot.job("wait"), "reclaim").problem
    assert problem is not None and problem.victims
    return could_fit(problem), cpsat.solve(problem).status


def test_a_move_between_nodes_the_chunk_may_use_of_a_task_its_size_frees_nothing():
    """Moving x to n2 frees n0 and fills n2: still one whole node, never two. The bound refuses it (CP-SAT agrees);
    when the job may not use n2, the same move frees a node for it, and the bound lets it through."""
    assert _two_of_three(None) == (False, "infeasible")
    assert _two_of_three({"pool": "p"}) == (True, "optimal")
