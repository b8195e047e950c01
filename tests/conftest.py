"""Shared helpers: build small snapshots from plain data, and run the CLI."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from typer.testing import CliRunner

from gpu_preempt.cli import app
from gpu_preempt.models import Snapshot, snapshot_from_data

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
NOW = "2026-01-01T12:00:00Z"

THOROUGH = "thorough"
settings.register_profile(THOROUGH)


def examples(thorough: int) -> int:
    """How many random instances a costly property test draws: all ``thorough`` of them under ``pytest
    --hypothesis-profile thorough`` (the long run CI adds, docs/development.md), a third in the README's test
    command: the same properties, checked on fewer draws."""
    return thorough if settings.get_current_profile_name() == THOROUGH else max(20, thorough // 3)


def base_document() -> dict[str, Any]:
    """A small valid snapshot: two 8-GPU nodes, queues a and b under dept, one running and one pending job."""
    return {
        "now": NOW,
        "nodes": [
            {"name": "n0", "resources": {"gpu": 8, "cpu": 64}},
            {"name": "n1", "resources": {"gpu": 8, "cpu": 64}},
        ],
        "queues": [
            {"name": "dept", "deserved": {"gpu": 16}},
            {"name": "a", "parent": "dept", "deserved": {"gpu": 8}},
            {"name": "b", "parent": "dept", "deserved": {"gpu": 8}},
        ],
        "priority_classes": [{"name": "train", "value": 50}],
        "jobs": [
            {
                "name": "run",
                "queue": "a",
                "priority_class": "train",
                "task_resources": {"gpu": 4, "cpu": 8},
                "tasks": [{"node": "n0"}, {"node": "n1"}],
            },
            {"name": "wait", "queue": "b", "task_resources": {"gpu": 2}, "tasks": [{}]},
        ],
    }


def build(document: dict[str, Any] | None = None, **top: Any) -> Snapshot:
    """Validate ``document`` (default :func:`base_document`) with top-level keys replaced by ``top``."""
    data = copy.deepcopy(document if document is not None else base_document())
    data.update(top)
    return snapshot_from_data(data)


@pytest.fixture
def cli(tmp_path: Path) -> Any:
    """Run the CLI on a document written to a temporary YAML file; returns the click result."""
    import yaml

    runner = CliRunner()

    def run(*args: str, document: dict[str, Any] | None = None, text: str | None = None) -> Any:
        argv = list(args)
        if document is not None or text is not None:
            path = tmp_path / "snapshot.yaml"
            path.write_text(text if text is not None else yaml.safe_dump(document), encoding="utf-8")
            argv.append(str(path))
        return runner.invoke(app, argv)

    return run


def generated_cases(
    nodes: int, seed: int, pending: int, cordoned: int = 0, *, shared: bool | str = False, ordered: bool = False
) -> tuple[Snapshot, list[tuple[Any, str]]]:
    """A cluster from benchmarks/generate.py and its (pending job, action) pairs for reclaim and preempt; with
    ``cordoned``, every ``cordoned``-th node (the first one included) is unschedulable; ``shared``: its twin with
    shares of a GPU (benchmarks/sharing.py; ``"spread"``: some of them on two devices); ``ordered``: every elastic
    job orders its tasks (docs/rules.md, "Task order"), the first one last."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate
    from sharing import shared_twin

    data = generate(nodes, seed=seed, pending=pending)
    if shared:
        data = shared_twin(data, seed, spread=shared == "spread")
    for node in data["nodes"][::cordoned] if cordoned else ():
        node["schedulable"] = False
    for job in data["jobs"] if ordered else ():
        if "min_available" in job and job["tasks"][0]:
            job["tasks"] = [{**task, "order": len(job["tasks"]) - i} for i, task in enumerate(job["tasks"])]
    snapshot = snapshot_from_data(data)
    jobs = [job for job in snapshot.jobs if job.name.startswith("pending-")]
    return snapshot, [(job, action) for job in jobs for action in ("reclaim", "preempt")]


@pytest.fixture
def beat_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress heartbeat beats once as soon as its block starts, then keeps its interval: a test sees a beat
    whatever the machine's speed (no race between the work and the clock)."""
    import threading
    import types

    from gpu_preempt.cli import progress

    class FirstWaitReturns(threading.Event):
        first = True

        def wait(self, timeout: float | None = None) -> bool:
            if self.first:
                self.first = False
                return False
            return super().wait(timeout)

    # the progress module's own view of threading, not threading.Event itself: a thread's start waits on an Event
    # too, and must wait for real
    seen = types.SimpleNamespace(
        **{name: getattr(threading, name) for name in dir(threading) if not name.startswith("_")}
    )
    seen.Event = FirstWaitReturns
    monkeypatch.setattr(progress, "threading", seen)
