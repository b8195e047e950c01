"""The session state: applied decisions update loads and usage as a fresh count from the task statuses would (plus,
for the current load, the old pods of moved tasks, which a status cannot show)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from gpu_preempt.models import Resources, load_snapshot
from gpu_preempt.models.quantity import add
from gpu_preempt.solver.actions.cycle import run_cycle
from gpu_preempt.solver.state.cluster import Cluster

ALL = sorted(FIXTURES.glob("*.yaml"))


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_applied_decisions_update_the_state_like_a_fresh_count(path: Path) -> None:
    """The cycle updates loads and usage incrementally; recounting from the task statuses gives the same."""
    result = run_cycle(load_snapshot(path))
    end = result.end
    fresh = Cluster(end.snapshot, end.tree, end.shares, dict(end.status), dict(end.node_of))

    def nonzero(amounts: Resources) -> Resources:
        return {r: a for r, a in amounts.items() if a}

    leaving: dict[str, Resources] = {}
    for decision in result.decisions:
        for move in decision.moves:
            job = end.snapshot.job(move.job)
            task = next(t for t in job.tasks if str(t.name) == move.task)
            leaving[move.source] = add(leaving.get(move.source, {}), job.requests(task))
    for node in end.snapshot.nodes:
        assert nonzero(end.final_load(node.name)) == nonzero(fresh.final_load(node.name)), node.name
        now = add(fresh.current_load(node.name), leaving.get(node.name, {}))
        assert nonzero(end.current_load(node.name)) == nonzero(now), node.name
    for job in end.snapshot.jobs:
        assert end.running_count(job) == fresh.running_count(job), job.name
        assert nonzero(end.running_on(job)) == nonzero(fresh.running_on(job)), job.name
    for queue in end.tree.queues():
        assert nonzero(end.usage[queue].allocated) == nonzero(fresh.usage[queue].allocated), queue
    assert end.running_by_queue() == fresh.running_by_queue()  # the end's lists were filtered, not recounted
    assert end.running_jobs() == fresh.running_jobs()


def test_a_state_after_evictions_lists_running_jobs_by_queue_like_a_fresh_count() -> None:
    snapshot = load_snapshot(FIXTURES / "example-cluster.yaml")
    state = Cluster.of(snapshot)
    before = state.running_by_queue()
    victims = [j for jobs in before.values() for j in jobs][:3]
    after = state.with_changes((str(t.name), "pending", None) for j in victims for t in j.tasks)
    assert "running by queue" in after.scratch  # passed on, filtered
    fresh = Cluster(snapshot, after.tree, after.shares, dict(after.status), dict(after.node_of))
    assert after.running_by_queue() == fresh.running_by_queue()
    assert not any(j in jobs for j in victims for jobs in after.running_by_queue().values())
