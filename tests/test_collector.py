"""Library calls leave Python's garbage collector as they find it: no pause, no freeze, no collection.

Only a process of our own tunes it: the command line turns it off for a one-shot command, and the replay freezes the
workload's objects while it runs (docs/performance.md says how a long-running program can do the same).
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from gpu_preempt import decide, load_snapshot, run_cycle, verify_cycle
from gpu_preempt.models import parse_snapshot
from gpu_preempt.models.load.document import parse_document


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The collector's tuning functions, recording every call."""
    made: list[str] = []
    for name in ("disable", "enable", "freeze", "unfreeze", "collect"):
        original = getattr(gc, name)
        monkeypatch.setattr(
            gc, name, lambda *a, _name=name, _original=original, **k: made.append(_name) or _original(*a, **k)
        )
    return made


def test_loading_deciding_and_a_cycle_leave_the_collector_alone(calls: list[str], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)  # the large-snapshot path, columns and all
    text = (FIXTURES / "example-cluster.yaml").read_text(encoding="utf-8")
    snapshot = parse_snapshot(text)
    as_json = tmp_path / "example.json"
    as_json.write_text(json.dumps(parse_document(text, json_format=False, source="x"), default=str), encoding="utf-8")
    frozen = gc.get_freeze_count()
    assert load_snapshot(as_json) == snapshot
    decision = decide(snapshot, "serving-new")
    result = run_cycle(snapshot)
    assert decision.outcome == "pipelined" and verify_cycle(result) == []
    assert calls == [] and gc.isenabled() and gc.get_freeze_count() == frozen
