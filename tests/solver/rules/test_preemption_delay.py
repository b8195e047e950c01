"""KAI's preemption delay (docs/rules.md, "Preemption delay"): a waiting job reclaims and preempts only once it has
waited its delay, counted from its creation or its last eviction; it is allocated into free room at once; the delay
protects nobody."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES

from gpu_preempt import decide, verify
from gpu_preempt.models import SnapshotError, snapshot_from_data
from gpu_preempt.models.decision import Decision, VictimTasks

DOCUMENT: dict[str, Any] = yaml.safe_load((FIXTURES / "kai-preemption-delay.yaml").read_text())
DOCUMENT.pop("expect")


def with_fresh(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    document["jobs"][1].update(changes)
    return document


def test_within_its_delay_a_job_does_not_preempt_and_after_it_does() -> None:
    decision = decide(snapshot_from_data(with_fresh()), "fresh", "preempt")
    assert decision.outcome == "skipped"
    assert decision.reason == "preemption delay: it may reclaim or preempt from 2026-01-01T12:50:00Z (3000s from now)"
    later = decide(snapshot_from_data(with_fresh(created_at="2026-01-01T10:59:00Z")), "fresh")
    assert later.outcome == "pipelined" and [v.job for v in later.victims] == ["low"]


def test_an_eviction_opens_the_window_again() -> None:
    evicted = {"count": 1, "evicted_at": "2026-01-01T11:30:00Z", "requeue_at": "2026-01-01T11:31:00Z"}
    document = with_fresh(created_at="2026-01-01T09:00:00Z", requeue=evicted)
    decision = decide(snapshot_from_data(document), "fresh", "reclaim")
    assert decision.outcome == "skipped" and "from 2026-01-01T12:30:00Z" in str(decision.reason)


def test_within_its_delay_a_job_is_allocated_into_free_room() -> None:
    document = with_fresh()
    document["nodes"][0]["resources"]["gpu"] = 16
    decision = decide(snapshot_from_data(document), "fresh")
    assert decision.action == "allocate" and decision.outcome == "allocated"


def test_the_delay_protects_nobody() -> None:
    """low, within a delay of its own, is still preempted."""
    document = with_fresh(created_at="2026-01-01T10:00:00Z")
    document["jobs"][0].update(created_at="2026-01-01T11:59:00Z", preemption_delay="1h")
    decision = decide(snapshot_from_data(document), "fresh")
    assert decision.outcome == "pipelined" and [v.job for v in decision.victims] == ["low"]


def test_the_verifier_refuses_a_preemption_within_the_delay() -> None:
    snapshot = snapshot_from_data(with_fresh())
    decision = Decision("fresh", "preempt", "pipelined", [VictimTasks("low", ("low-0",), True)], {"fresh-0": "n0"})
    assert "preemption delay: fresh may preempt only from 2026-01-01T12:50:00Z" in verify(snapshot, decision)


def test_a_delay_needs_the_creation_time_it_runs_from(tmp_path: Path) -> None:
    document = with_fresh()
    del document["jobs"][1]["created_at"]
    with pytest.raises(SnapshotError, match=r"jobs\[1\]\.preemption_delay: the delay runs from created_at"):
        snapshot_from_data(document)
    document["jobs"][1].update(created_at="2026-01-01T11:50:00Z", preemption_delay="soon")
    with pytest.raises(SnapshotError, match=r"jobs\[1\]\.preemption_delay"):
        snapshot_from_data(document)
