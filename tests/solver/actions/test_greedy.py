"""The greedy baseline on prefixes of its victim order gives the answer it gives on every candidate."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FIXTURES, generated_cases

from gpu_preempt.actions import greedy
from gpu_preempt.actions.job_solver import named_victims
from gpu_preempt.formulate.builder import Prepared, prepare
from gpu_preempt.models import load_snapshot, snapshot_from_data
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution
from gpu_preempt.state.cluster import ClusterState


def answer(cluster: ClusterState, problem: Problem, solution: Solution) -> tuple[Any, ...]:
    """A solution in names: status, victims with their tasks, and placements per node."""
    victims = [(v.job, v.tasks, v.whole_job) for v in named_victims(cluster, problem, solution)]
    placed = sorted((t, problem.nodes[n].name, k) for (t, n), k in solution.placed.items() if k)
    return solution.status, sorted(victims), placed


def both(prepared: Prepared) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    full = prepared.problem
    assert full is not None
    problem, solution = greedy.solve_prepared(prepared)
    return answer(prepared.cluster, full, greedy.solve(full)), answer(prepared.cluster, problem, solution)


FIXTURE_CASES = [
    (path.name, job.name, action)
    for path in sorted(FIXTURES.glob("*.yaml"))
    for job in load_snapshot(path).jobs
    if job.tasks and all(t.status == "pending" for t in job.tasks)
    for action in ("reclaim", "preempt")
]


@pytest.mark.parametrize(("fixture", "job", "action"), FIXTURE_CASES)
def test_prefixes_of_one_give_every_fixture_the_full_answer(monkeypatch, fixture: str, job: str, action: str):
    monkeypatch.setattr(greedy, "FIRST_PREFIX", 1)  # the smallest prefixes, so that they grow
    snapshot = load_snapshot(FIXTURES / fixture)
    prepared = prepare(ClusterState.of(snapshot), snapshot.job(job), action)  # type: ignore[arg-type]
    if prepared.skip is None:
        expected, found = both(prepared)
        assert found == expected


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_prefixes_give_a_generated_cluster_the_full_answer(monkeypatch, seed: int):
    monkeypatch.setattr(greedy, "FIRST_PREFIX", 4)
    snapshot, cases = generated_cases(150, seed=seed, pending=6)
    cluster = ClusterState.of(snapshot)
    compared = 0
    for job, action in cases:
        prepared = prepare(cluster, job, action)
        if prepared.skip is None and prepared.candidates is not None and len(prepared.candidates.candidates) > 4:
            expected, found = both(prepared)
            assert found == expected, (job.name, action)
            compared += 1
    assert compared >= 4


def test_candidates_alike_but_for_their_names_are_popped_last_name_first(monkeypatch):
    """Candidates of equal priority, elasticity and age are popped by name, the last first (KAI pops the larger UID
    first), on a prefix of one as on every candidate, whatever their order in the document."""
    monkeypatch.setattr(greedy, "FIRST_PREFIX", 1)
    names = [f"job-{i}" for i in (7, 3, 9, 1, 5, 8, 2, 6, 4)]
    alike = {"queue": "q", "priority": 1, "task_resources": {"gpu": 1}, "created_at": "2026-01-01T10:00:00Z"}
    snapshot = snapshot_from_data(
        {
            "now": "2026-01-01T12:00:00Z",
            "nodes": [{"name": f"n{i}", "resources": {"gpu": 1}} for i in range(len(names))],
            "queues": [{"name": "q", "deserved": {"gpu": 16}}],
            "jobs": [
                *({"name": name, **alike, "tasks": [{"node": f"n{i}"}]} for i, name in enumerate(names)),
                {"name": "urgent", "queue": "q", "priority": 10, "task_resources": {"gpu": 1}, "tasks": [{}]},
            ],
        }
    )
    prepared = prepare(ClusterState.of(snapshot), snapshot.job("urgent"), "preempt")
    assert prepared.candidates is not None and len(prepared.candidates.candidates) == len(names)
    expected, found = both(prepared)
    assert found == expected
    assert found[1] == [("job-9", ("job-9-0",), True)]
