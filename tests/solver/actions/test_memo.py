"""Outcomes that stand (:mod:`gpu_preempt.actions.memo`): a cycle that lets a waiting job's last outcome stand must
decide exactly as one that searches every job again, on every fixture and generated clusters (whole replays:
tests/solver/planning/test_memo_replay.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT

from gpu_preempt.actions.cycle import CycleResult, run_cycle
from gpu_preempt.actions.memo import OutcomeMemo
from gpu_preempt.actions.next_snapshot import next_snapshot
from gpu_preempt.models import read_document, snapshot_from_data


def outcomes(result: CycleResult) -> tuple[list[dict[str, Any]], Counter[tuple[str, str, str]]]:
    """The decisions that changed something, in order, and how many times each job got each other outcome (a
    standing outcome counted as made again)."""
    changing = [d.to_dict(timing=False) for d in result.decisions if d.placed or d.victims]
    others = Counter((d.job, d.action, d.outcome) for d in result.decisions if not (d.placed or d.victims))
    others.update((d.job, d.action, d.outcome) for d in result.repeats)
    return changing, others


def second_cycles_agree(document: dict[str, Any], later: float) -> int:
    """Cycle 1 with a memo, its decisions carried out, the clock moved ``later`` seconds; cycle 2 with that memo
    and without one must agree. Returns how many outcomes stood."""
    memo = OutcomeMemo()
    first = run_cycle(snapshot_from_data(document), memo=memo)
    following = next_snapshot(document, first)
    following["now"] = snapshot_from_data(document).now + later
    snapshot = snapshot_from_data(following)
    remembered = run_cycle(snapshot, memo=memo)
    searched = run_cycle(snapshot)
    assert outcomes(remembered) == outcomes(searched)
    return len(remembered.repeats)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.yaml")), ids=lambda p: p.stem)
@pytest.mark.parametrize("later", [0.0, 600.0])
def test_a_standing_outcome_is_what_a_search_finds_on_every_fixture(path: Path, later: float):
    document = read_document(path)
    assert isinstance(document, dict)
    second_cycles_agree(document, later)


@pytest.mark.parametrize("seed", range(3))
def test_a_standing_outcome_is_what_a_search_finds_on_generated_clusters(seed: int):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    document = generate(40 + 10 * seed, seed=seed, pending=12)
    assert second_cycles_agree(document, 120.0) >= 1


def test_a_reclaim_that_found_no_victim_stands_until_a_protection_ends():
    """infeasible-all-protected: every job a-job could reclaim is protected until 12:05. Its reclaim stands without
    a search at 12:04, and is searched again (and places it) at 12:06."""
    document = read_document(FIXTURES / "infeasible-all-protected.yaml")
    assert isinstance(document, dict)
    memo = OutcomeMemo()
    first = run_cycle(snapshot_from_data(document), memo=memo)
    assert [(d.action, d.outcome) for d in first.decisions if d.job == "a-job"] == [
        ("allocate", "infeasible"),
        ("reclaim", "infeasible"),
        ("preempt", "infeasible"),
    ]
    still = run_cycle(snapshot_from_data({**document, "now": "2026-01-01T12:04:00Z"}), memo=memo)
    assert ("a-job", "reclaim", "infeasible") in {(d.job, d.action, d.outcome) for d in still.repeats}
    assert not [d for d in still.decisions if d.action == "reclaim"]
    later = run_cycle(snapshot_from_data({**document, "now": "2026-01-01T12:06:00Z"}), memo=memo)
    assert [(d.action, d.placed) for d in later.decisions if d.job == "a-job"] == [("reclaim", True)]


def test_a_reclaim_that_no_victim_set_could_serve_stands_until_room_could_be_made():
    """a-job's gang of two 4-GPU tasks: evicting b-0 frees n0 only, as b-1 (non-preemptible) holds n1. The reclaim
    stands while that holds, and is searched again (and places the gang) once b-1 has gone."""
    job = {"queue": "b", "started_at": "2026-01-01T11:00:00Z"}
    document: dict[str, Any] = {
        "now": "2026-01-01T12:00:00Z",
        "nodes": [{"name": "n0", "resources": {"gpu": 4}}, {"name": "n1", "resources": {"gpu": 4}}],
        "queues": [{"name": "a", "deserved": {"gpu": 8}}, {"name": "b", "deserved": {"gpu": 0}}],
        "jobs": [
            {"name": "b-0", **job, "task_resources": {"gpu": 1}, "tasks": [{"node": "n0"}]},
            {"name": "b-1", **job, "task_resources": {"gpu": 4}, "preemptible": False, "tasks": [{"node": "n1"}]},
            {"name": "a-job", "queue": "a", "task_resources": {"gpu": 4}, "tasks": [{}, {}]},
        ],
    }
    memo = OutcomeMemo()
    first = run_cycle(snapshot_from_data(document), memo=memo)
    (reclaim,) = [d for d in first.decisions if d.action == "reclaim"]
    assert reclaim.outcome == "infeasible" and (reclaim.reason or "").startswith("even evicting all 1 candidate")
    still = run_cycle(snapshot_from_data({**document, "now": "2026-01-01T12:01:00Z"}), memo=memo)
    assert ("a-job", "reclaim", "infeasible") in {(d.job, d.action, d.outcome) for d in still.repeats}
    gone = [j for j in document["jobs"] if j["name"] != "b-1"]
    later = run_cycle(snapshot_from_data({**document, "now": "2026-01-01T12:02:00Z", "jobs": gone}), memo=memo)
    assert [(d.action, d.placed) for d in later.decisions] == [("allocate", False), ("reclaim", True)]
