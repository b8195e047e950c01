"""A cycle gives a job the decision an equal job got in the same state without a second search: the decisions must
be exactly those of searching every time (``reuse=False``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, generated_cases

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.models import Snapshot, load_snapshot
from gpu_preempt.planning.run import simulate


def same_with_and_without_reuse(snapshot: Snapshot) -> int:
    """Asserts the two cycles agree; returns how many decisions they made."""
    reused = run_cycle(snapshot).to_dict(timing=False)
    searched = run_cycle(snapshot, reuse=False).to_dict(timing=False)
    assert reused == searched
    return len(reused["decisions"])


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.yaml")), ids=lambda p: p.stem)
def test_reuse_changes_no_fixture_cycle(path: Path):
    same_with_and_without_reuse(load_snapshot(path))


@pytest.mark.parametrize("seed", range(3))
def test_reuse_changes_no_generated_cycle(seed: int):
    snapshot, _ = generated_cases(40 + 10 * seed, seed, pending=12)
    assert same_with_and_without_reuse(snapshot) >= 12


@pytest.mark.parametrize("minutes", [47, 50, 60, 75])
def test_reuse_changes_no_cycle_of_a_replay(tmp_path: Path, minutes: int):
    """States of the bundled replay where many equal jobs wait at once (the case reuse is for)."""
    simulate(FIXTURES / "scenarios" / "itp-cluster10.yaml", tmp_path / "out", dump_at=minutes * 60.0)
    snapshot = load_snapshot(tmp_path / "out" / "dump.json")
    assert sum(1 for job in snapshot.jobs if job.tasks[0].status == "pending") >= 5
    assert same_with_and_without_reuse(snapshot) >= 15


def judged_afresh(snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job order kept across placements (:meth:`Placeable.carried`) must give the cycle a fresh judgement gives."""
    from gpu_preempt.rules.job_order import Placeable

    kept = run_cycle(snapshot).to_dict(timing=False)
    with monkeypatch.context() as patch:
        patch.setattr(Placeable, "carried", lambda self, cluster, changed, shrunk: Placeable(cluster, self.action))
        fresh = run_cycle(snapshot).to_dict(timing=False)
    assert kept == fresh


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_order_kept_across_placements_is_a_fresh_judgement_on_every_fixture(
    path: Path, monkeypatch: pytest.MonkeyPatch
):
    judged_afresh(load_snapshot(path), monkeypatch)


@pytest.mark.parametrize("seed", range(3))
def test_the_order_kept_across_placements_is_a_fresh_judgement_on_generated_clusters(
    seed: int, monkeypatch: pytest.MonkeyPatch
):
    snapshot, _ = generated_cases(40 + 10 * seed, seed, pending=12)
    judged_afresh(snapshot, monkeypatch)


def test_the_order_kept_across_placements_is_a_fresh_judgement_in_a_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    simulate(FIXTURES / "scenarios" / "itp-cluster10.yaml", tmp_path / "out", dump_at=50 * 60.0)
    judged_afresh(load_snapshot(tmp_path / "out" / "dump.json"), monkeypatch)
