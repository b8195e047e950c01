"""Quota enforcement (docs/rules.md, "Quota enforcement"): CP-SAT against exhaustive search on small random queue trees.

Hypothesis draws small trees (a leaf, or a parent with two children, some with
guaranteed quotas), a few running jobs (GPU and CPU, elastic or not, some not
preemptible), a lowered limit on one queue and sometimes a ``quota_miss``. The
search tries **every** subset of every job's running tasks, keeps the sets the
independent verifier accepts as ``enforced`` and takes the best under the
objective; when there is none and ``quota_miss`` > 0 (or ``quota_overshoot: never``), it keeps the sets it
accepts as ``partial`` and takes the one closest to the limit (per over
resource, GPUs first), then the best under the objective (``best_effort``:
whatever remains). Among sets equal under the objective, the one freeing the
least of each over resource (GPUs first) wins. CP-SAT's decision must reach
exactly that, or evict nothing when no set is allowed. The search
shares no code with the rule module or the model: it only builds decisions and
asks the verifier.
"""

from __future__ import annotations

import itertools
from typing import Any

from conftest import examples
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpu_preempt.actions.quota_enforcement import enforce
from gpu_preempt.check.verifier import verify
from gpu_preempt.models import MILLI, snapshot_from_data
from gpu_preempt.models.decision import VictimTasks
from gpu_preempt.models.quota_decision import QuotaDecision
from gpu_preempt.state.cluster import ClusterState

NOW = 1_767_268_800  # 2026-01-01T12:00:00Z


@st.composite
def trees(draw: st.DrawFn, best_effort: bool = False, never: bool = False) -> dict[str, Any]:
    """A small tree; ``best_effort``: a leaf whose parent's guarantee caps what it may lose, and a miss; ``never``:
    ``quota_overshoot: never``."""
    nested = best_effort or draw(st.booleans())
    queues: list[dict[str, Any]] = (
        [{"name": "d"}, {"name": "a", "parent": "d"}, {"name": "b", "parent": "d"}]
        if nested
        else [{"name": "a"}, {"name": "b"}]
    )
    for queue in queues:
        if draw(st.integers(0, 2)) == 0:
            queue["deserved"] = {"gpu": draw(st.integers(0, 3))}
            if draw(st.booleans()):
                queue["deserved"]["cpu"] = draw(st.integers(0, 3))
    leaves = ["a", "b"]
    jobs = []
    for j in range(draw(st.integers(2, 5))):
        count = draw(st.integers(1, 2))
        job: dict[str, Any] = {
            "name": f"r{j}",
            "queue": draw(st.sampled_from(leaves)),
            "priority": draw(st.sampled_from([10, 20, 30])),
            "task_resources": {"gpu": draw(st.integers(1, 2)), "cpu": draw(st.integers(0, 2))},
            "started_at": NOW - draw(st.integers(60, 3600)),
            "tasks": [{"node": "n0"}] * count,
        }
        if count == 2 and draw(st.booleans()):
            job["min_available"] = 1
        if draw(st.integers(0, 5)) == 0:
            job["preemptible"] = False
        jobs.append(job)
    target = "a" if best_effort else draw(st.sampled_from(["d", "a"] if nested else ["a"]))
    leaves_under = ["a", "b"] if target == "d" else [target]
    held = {"gpu": 0, "cpu": 0}
    for job in jobs:
        if job["queue"] in leaves_under:
            for r in held:
                held[r] += job["task_resources"][r] * len(job["tasks"])
    spec = next(q for q in queues if q["name"] == target)
    limit = {"gpu": draw(st.integers(held["gpu"] // 2, max(0, held["gpu"] - 1)))}
    if draw(st.booleans()):
        limit["cpu"] = draw(st.integers(held["cpu"] // 2, max(0, held["cpu"] - 1)))
    spec["limit"] = limit
    spec["deserved"] = {r: min(a, limit.get(r, a)) for r, a in spec.get("deserved", {}).items()}
    if target == "a" and nested and (best_effort or draw(st.booleans())):
        # the parent's guarantee caps what the leaf may lose: the best-effort ("miss") cases
        held_d = sum(j["task_resources"]["gpu"] * len(j["tasks"]) for j in jobs)
        queues[0]["deserved"] = {"gpu": max(0, held_d - draw(st.integers(1, 4)))}
    spec["limit_changed_at"] = NOW - 7200
    spec["quota_preemption_delay"] = 3600
    config = {
        "quota_preemption_enabled": True,
        "quota_miss": draw(
            st.sampled_from([0.25, 0.5, 0.9, "best_effort"] if best_effort else [0, 0.25, 0.5, 0.9, "best_effort"])
        ),
        "solver": {"workers": 1},
    }
    if never:
        config["quota_overshoot"] = "never"
    nodes = [{"name": "n0", "resources": {"gpu": 32, "cpu": 32}}]
    return {"now": NOW, "config": config, "nodes": nodes, "queues": queues, "jobs": jobs, "target": target}


def key(cluster: ClusterState, queue: str, victims: list[VictimTasks], levels: list[int]) -> tuple[int, ...]:
    """The objective, then what is freed of each over resource (GPUs first): the least beyond the excess wins."""
    snapshot = cluster.snapshot
    priorities = [snapshot.job(v.job).resolved_priority for v in victims]
    lost = 0
    for v in victims:
        job = snapshot.job(v.job)
        lost += len(v.tasks) * job.task_resources["gpu"] // MILLI * round((cluster.now - (job.started_at or 0)) * 1000)
    spec, usage = snapshot.queue(queue), cluster.usage[queue].allocated
    over = [r for r in sorted(spec.limit, key=lambda r: (r != "gpu", r)) if usage.get(r, 0) > spec.limit[r]]
    freed = [sum(len(v.tasks) * snapshot.job(v.job).task_resources.get(r, 0) for v in victims) for r in over]
    return (*[priorities.count(p) for p in levels], len(victims), sum(len(v.tasks) for v in victims), lost, *freed)


def excess(cluster: ClusterState, queue: str, victims: list[VictimTasks]) -> tuple[int, ...]:
    """How far above its limit the queue stays, per over resource (GPUs first, then by name)."""
    spec = cluster.snapshot.queue(queue)
    usage = cluster.usage[queue].allocated
    out = []
    for r in sorted(spec.limit, key=lambda r: (r != "gpu", r)):
        if usage.get(r, 0) > spec.limit[r]:
            freed = sum(len(v.tasks) * cluster.snapshot.job(v.job).task_resources.get(r, 0) for v in victims)
            out.append(max(0, usage.get(r, 0) - freed - spec.limit[r]))
    return tuple(out)


def exhaustive(cluster: ClusterState, queue: str, outcome: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    jobs = cluster.snapshot.jobs
    levels = sorted({j.resolved_priority for j in jobs}, reverse=True)
    choices = []
    for job in jobs:
        names = [str(t.name) for t in job.tasks]
        choices.append([s for r in range(len(names) + 1) for s in itertools.combinations(names, r)])
    best = None
    for picks in itertools.product(*choices):
        victims = [
            VictimTasks(job.name, tuple(tasks), whole_job=len(tasks) == len(job.tasks))
            for job, tasks in zip(jobs, picks, strict=True)
            if tasks
        ]
        if outcome == "partial" and not victims:
            continue
        score = (excess(cluster, queue, victims) if outcome == "partial" else (), key(cluster, queue, victims, levels))
        if best is not None and score >= best:
            continue
        decision = QuotaDecision("", "enforce-quota", outcome, victims, queue=queue)  # type: ignore[arg-type]
        problems = [p for p in verify(cluster, decision) if not p.startswith(("objective", "report", "requeue"))]
        if not problems:
            best = score
    return best


def check(document: dict[str, Any]) -> None:
    queue = document.pop("target")
    snapshot = snapshot_from_data(document)
    cluster = ClusterState.of(snapshot)
    decision = enforce(cluster, queue)
    event(f"{decision.outcome} with {len(decision.victims)} victim(s)")
    assert verify(cluster, decision) == [], decision.to_dict()
    if not excess(cluster, queue, []):  # drawn within its limit (nothing under it holds anything)
        assert decision.outcome == "skipped" and not decision.victims
        return
    levels = sorted({j.resolved_priority for j in snapshot.jobs}, reverse=True)
    best = exhaustive(cluster, queue, "enforced")
    if best is not None:
        assert decision.outcome == "enforced" and decision.optimal, (decision.to_dict(), best)
        assert key(cluster, queue, decision.victims, levels) == best[1], decision.to_dict()
        return
    assert decision.outcome != "enforced", decision.to_dict()
    miss = snapshot.config.quota_miss
    never = snapshot.config.quota_overshoot == "never"  # the closest set within the excess, whatever remains
    partial = exhaustive(cluster, queue, "partial") if never or miss == "best_effort" or miss > 0 else None
    if partial is None:
        assert decision.outcome == "infeasible" and not decision.victims, decision.to_dict()
        return
    assert decision.outcome == "partial" and decision.optimal, (decision.to_dict(), partial)
    score = (excess(cluster, queue, decision.victims), key(cluster, queue, decision.victims, levels))
    assert score == partial, decision.to_dict()


SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(trees())
def test_enforce_quota_matches_exhaustive_search(document):
    check(document)


@SETTINGS
@given(trees(best_effort=True))
def test_best_effort_matches_exhaustive_search(document):
    check(document)


@SETTINGS
@given(trees(never=True))
def test_enforcement_without_overshoot_matches_exhaustive_search(document):
    """``quota_overshoot: never``: the sets the verifier accepts as ``enforced`` end exactly at the limit, those it
    accepts as ``partial`` free no more than the excess."""
    check(document)
