"""Kueue's preemption (docs/rules.md, "Kueue's preemption"): CP-SAT against exhaustive search on small random
cohorts.

Hypothesis draws a cohort of two or three ClusterQueues (sometimes under a nested cohort with a quota of its own),
with nominal quotas, borrowing and lending limits, and preemption policies of every value; running workloads of
several priorities and ages; and one pending workload whose quota does not fit. The exhaustive search of
``test_exhaustive`` tries every subset of every running job's tasks with every placement and keeps what the
independent verifier accepts (its Kueue part re-derives classes, attempts and quota on its own); CP-SAT must reach
its best objective. Kueue's own search (the greedy baseline under ``policy: kueue``) must return only sets the
verifier accepts, never better than the optimum.
"""

from __future__ import annotations

from typing import Any

from conftest import examples
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from test_exhaustive import NOW, exhaustive, key

from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.check.verifier import verify
from gpu_preempt.formulate.builder import prepare
from gpu_preempt.models import snapshot_from_data
from gpu_preempt.problem.bounds import could_fit, could_fit_kueue
from gpu_preempt.state.cluster import ClusterState

POLICIES = {
    "within_cluster_queue": ["Never", "LowerPriority", "LowerPriority", "LowerOrNewerEqualPriority"],
    "reclaim_within_cohort": ["Never", "LowerPriority", "Any", "Any"],
}


@st.composite
def cohorts(draw: st.DrawFn, fair: bool = False, large: bool = False) -> dict[str, Any]:
    nodes = [{"name": f"n{i}", "resources": {"gpu": draw(st.integers(3, 4))}} for i in range(draw(st.integers(1, 2)))]
    nested = draw(st.booleans())
    queues: list[dict[str, Any]] = [{"name": "pool"}]
    if nested:
        queues.append({"name": "dept", "parent": "pool", **({"nominal": {"gpu": 1}} if draw(st.booleans()) else {})})
    leaves = ["a", "b", "c"][: draw(st.integers(2, 3))]
    for i, leaf in enumerate(leaves):
        nominal = draw(st.integers(0, 4))
        queue: dict[str, Any] = {
            "name": leaf,
            "parent": "dept" if nested and i < 2 else "pool",
            "nominal": {"gpu": nominal},
        }
        if draw(st.booleans()):
            queue["borrowing_limit"] = {"gpu": draw(st.integers(0, 3))}
        if nominal and draw(st.booleans()):
            queue["lending_limit"] = {"gpu": draw(st.integers(0, nominal))}
        preemption = {field: draw(st.sampled_from(values)) for field, values in POLICIES.items()}
        borrow = draw(st.sampled_from([None, None, 10, 20]))
        if borrow is not None:
            preemption["borrow_within_cohort"] = {"policy": "LowerPriority", "max_priority_threshold": borrow}
        elif draw(st.booleans()):
            preemption["borrow_within_cohort"] = {"policy": "LowerPriority"}
        queue["preemption"] = preemption
        queues.append(queue)
    free = {n["name"]: n["resources"]["gpu"] for n in nodes}
    jobs = []
    for j in range(draw(st.integers(3, 6))):
        size = draw(st.integers(1, 2))
        tasks = []
        for _ in range(draw(st.integers(1, 2))):
            spots = [name for name, room in free.items() if room >= size]
            if not spots:
                break
            name = draw(st.sampled_from(spots))
            free[name] -= size
            tasks.append({"node": name})
        if tasks:
            jobs.append(
                {
                    "name": f"r{j}",
                    "queue": draw(st.sampled_from(leaves)),
                    "priority": draw(st.sampled_from([10, 20, 30])),
                    "task_resources": {"gpu": size},
                    "created_at": NOW - draw(st.integers(100, 200)),
                    "started_at": NOW - draw(st.integers(60, 99)),
                    "tasks": tasks,
                }
            )
    if fair:  # the preemptor's queue borrows, so that shares decide
        want_queue = draw(st.sampled_from(leaves))
        for queue in queues:
            if queue["name"] == want_queue:
                queue["nominal"] = {"gpu": draw(st.integers(0, 1))}
                queue.pop("lending_limit", None)
    want = {
        "name": "want",
        "queue": want_queue if fair else draw(st.sampled_from(leaves)),
        "priority": draw(st.sampled_from([20, 30, 30])),
        "task_resources": {"gpu": draw(st.integers(1, 2))},
        "created_at": NOW - draw(st.integers(100, 200)),
        "tasks": [{} for _ in range(draw(st.integers(1, 2)))],
    }
    config: dict[str, Any] = {"policy": "kueue"}
    if fair:  # docs/rules.md, "Kueue's fair sharing"
        config["fair_sharing"] = True
        config["fair_sharing_strategies"] = draw(
            st.sampled_from([None, None, ["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"]])
        )
        for queue in queues:
            if queue["name"] != "pool" and draw(st.booleans()):
                queue["fair_sharing_weight"] = draw(st.sampled_from([0, 0.5, 2]))
    if large:  # memory in bytes that share no large divisor, weights in thousandths: products past 64 bits
        for node in nodes:
            node["resources"]["memory"] = str(node["resources"]["gpu"] * LARGE + 100)
        for job in [*jobs, want]:
            job["task_resources"]["memory"] = str(job["task_resources"]["gpu"] * LARGE)
        for queue in queues:
            if "nominal" in queue:
                queue["nominal"]["memory"] = str(queue["nominal"]["gpu"] * LARGE + 1)
            if "fair_sharing_weight" in queue or queue["name"] != "pool":
                queue["fair_sharing_weight"] = draw(st.sampled_from([0, 0.5, 1.013, 2]))
    return {"now": NOW, "config": config, "nodes": nodes, "queues": queues, "jobs": [*jobs, want]}


LARGE = 109_951_162_777_607
"""Bytes of memory per GPU in the large draws: about 100 TiB, odd."""


SETTINGS = settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cohorts())
def test_kueue_preemption_matches_exhaustive_search(document: dict[str, Any]) -> None:
    check(document)


@SETTINGS
@given(cohorts(fair=True))
def test_kueue_fair_sharing_matches_exhaustive_search(document: dict[str, Any]) -> None:
    check(document)


def _running(name: str, queue: str, gpus: int, node: str) -> dict[str, Any]:
    """A running job of one task of ``gpus`` GPUs and as many times :data:`LARGE` bytes of memory."""
    return {
        "name": name,
        "queue": queue,
        "priority": 10,
        "task_resources": {"gpu": gpus, "memory": str(gpus * LARGE)},
        "created_at": 1_767_268_700,
        "started_at": 1_767_268_740,
        "tasks": [{"node": node}],
    }


MANY_ZERO_WEIGHTS_RUNNING = [("r0", "a", 2, "n0"), ("r1", "a", 1, "n0"), ("r2", "a", 1, "n1"), ("r3", "a", 1, "n1"),
                             ("r4", "b", 1, "n1")]  # fmt: skip

MANY_ZERO_WEIGHTS = {
    "now": 1_767_268_800,
    "config": {"policy": "kueue", "fair_sharing": True, "fair_sharing_strategies": None},
    "nodes": [
        {"name": "n0", "resources": {"gpu": 3, "memory": "329853488332921"}},
        {"name": "n1", "resources": {"gpu": 3, "memory": "329853488332921"}},
    ],
    "queues": [
        {"name": "pool"},
        {"name": "dept", "parent": "pool", "fair_sharing_weight": 0.5},
        {
            "name": "a",
            "parent": "dept",
            "nominal": {"gpu": 1, "memory": "109951162777608"},
            "lending_limit": {"gpu": 0},
            "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "Never"},
            "fair_sharing_weight": 0,
        },
        {
            "name": "b",
            "parent": "dept",
            "nominal": {"gpu": 0, "memory": "1"},
            "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "Never"},
            "fair_sharing_weight": 0,
        },
        {
            "name": "c",
            "parent": "pool",
            "nominal": {"gpu": 0, "memory": "1"},
            "preemption": {"within_cluster_queue": "Never", "reclaim_within_cohort": "LowerPriority"},
            "fair_sharing_weight": 0,
        },
    ],
    "jobs": [
        *(_running(name, queue, gpus, node) for name, queue, gpus, node in MANY_ZERO_WEIGHTS_RUNNING),
        {
            "name": "want",
            "queue": "c",
            "priority": 20,
            "task_resources": {"gpu": 1, "memory": str(LARGE)},
            "created_at": 1_767_268_700,
            "tasks": [{}],
        },
    ],
}
"""Four queues of weight 0 and 100 TiB of memory: a share above every finite one must stay small, or the sum of the
model's domains passes 64 bits."""


@SETTINGS
@given(cohorts(fair=True, large=True))
@example(MANY_ZERO_WEIGHTS)
def test_kueue_fair_sharing_with_large_amounts_matches_exhaustive_search(document: dict[str, Any]) -> None:
    """Shares whose exact arithmetic passes CP-SAT's 64-bit integers are still decided, never refused."""
    check(document)


def check(document: dict[str, Any]) -> None:
    snapshot = snapshot_from_data(document)
    cluster = ClusterState.of(snapshot)
    decision = attempt(cluster, snapshot.job("want"), "preempt")
    if decision.outcome == "skipped":  # the quota fits: Kueue does not preempt
        assert "has quota for it" in (decision.reason or ""), decision.reason
        event("skipped: the quota fits")
        return
    best = exhaustive(cluster, "preempt")
    event(f"{decision.outcome} with {len(decision.victims)} victim(s)")
    problem = prepare(cluster, snapshot.job("want"), "preempt").problem
    assert problem is not None
    if problem.victims and could_fit(problem) and not could_fit_kueue(problem):  # the lines' and shares' bound
        event("refused by the bound on lines and shares")
        assert best is None
    levels = sorted({j.resolved_priority for j in snapshot.jobs if j.name != "want" and cluster.running_count(j)})
    levels.reverse()
    greedy = attempt(cluster, snapshot.job("want"), "preempt", solver="greedy")
    if greedy.placed:
        assert verify(cluster, greedy) == [], greedy.to_dict()
        assert best is not None and key(cluster, greedy.victims, levels, []) >= best[:-1]
    if best is None:
        assert not decision.placed, decision.to_dict()
        return
    assert decision.placed and decision.optimal, (decision.to_dict(), best)
    assert (*key(cluster, decision.victims, levels, decision.moves), 0) == best, decision.to_dict()
    assert verify(cluster, decision) == []
