"""``forecast``: start estimates of the pending jobs, by replaying the snapshot forward (docs/operations.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import FIXTURES

from gpu_preempt.planning.run import simulate
from gpu_preempt.questions import forecast
from gpu_preempt.questions.start_forecast import NO_ARRIVALS, scenario_of

GPU_PREEMPT = str(Path(sys.executable).parent / "gpu-preempt")
EXAMPLE = FIXTURES / "example-cluster.yaml"


def test_a_forecast_is_the_replays_it_runs(tmp_path: Path):
    """Each seed's start is the first start of the same job in the replay of the same scenario."""
    found = forecast(EXAMPLE, seeds=2)
    trace = tmp_path / "none.csv"
    trace.write_text(NO_ARRIVALS)
    for seed in (1, 2):
        sim = simulate(scenario_of(EXAMPLE.resolve(), trace, seed)).simulator
        jobs = {**{j.spec.name: j for j in sim.finished}, **sim.jobs}
        assert [p.starts[seed - 1] for p in found.pending] == [jobs[p.job].first_start for p in found.pending]
    assert found.to_dict() == forecast(EXAMPLE, seeds=2).to_dict()  # the same seeds, the same answer


def test_on_a_cluster_with_room_every_pending_job_starts_at_once(tmp_path: Path):
    document = {
        "now": "2026-01-01T12:00:00Z",
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}, {"name": "n1", "resources": {"gpu": 8}}],
        "queues": [{"name": "q", "deserved": {"gpu": 16}}],
        "jobs": [
            {"name": "running", "queue": "q", "task_resources": {"gpu": 4}, "tasks": [{"node": "n0"}]},
            {"name": "a", "queue": "q", "task_resources": {"gpu": 4}, "tasks": [{}]},
            {"name": "b", "queue": "q", "task_resources": {"gpu": 8}, "tasks": [{}]},
        ],
    }
    path = tmp_path / "room.yaml"
    path.write_text(yaml.safe_dump(document))
    found = forecast(path, seeds=3)
    assert {p.job: (p.p50, p.p90) for p in found.pending} == {"a": (0.0, 0.0), "b": (0.0, 0.0)}
    assert found.preempted == {}


def test_a_job_waits_for_the_expected_end_of_the_job_it_may_not_take(tmp_path: Path):
    document = {
        "now": "2026-01-01T12:00:00Z",
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}],
        "queues": [{"name": "q"}],
        "jobs": [
            {
                "name": "busy",
                "queue": "q",
                "priority": 90,
                "task_resources": {"gpu": 8},
                "expected_end": "2026-01-01T13:00:00Z",
                "tasks": [{"node": "n0"}],
            },
            {"name": "want", "queue": "q", "priority": 10, "task_resources": {"gpu": 8}, "tasks": [{}]},
        ],
    }
    path = tmp_path / "busy.yaml"
    path.write_text(yaml.safe_dump(document))
    (want,) = forecast(path, seeds=2).pending
    assert want.starts == (3600.0, 3600.0)


def test_the_command_prints_percentiles_and_json():
    text = subprocess.run([GPU_PREEMPT, "forecast", str(EXAMPLE), "--seeds", "2"], capture_output=True, text=True)
    assert text.returncode == 0, text.stderr
    assert "serving-new" in text.stdout and "preempted on the way" in text.stdout
    raw = subprocess.run(
        [GPU_PREEMPT, "forecast", str(EXAMPLE), "--seeds", "2", "--json"], capture_output=True, text=True
    )
    document = json.loads(raw.stdout)
    assert document["seeds"] == 2 and document["pending"][0]["job"] == "serving-new"
    bad = subprocess.run([GPU_PREEMPT, "forecast", str(EXAMPLE), "--remaining", "soon"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--remaining" in bad.stderr and "Traceback" not in bad.stderr


def test_arrivals_compete_with_the_pending_jobs(tmp_path: Path):
    """The node frees at 13:00; a job of a higher class arrives at 12:00:10 and runs first, for an hour."""
    document = {
        "now": "2026-01-01T12:00:00Z",
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}],
        "queues": [{"name": "q"}],
        "priority_classes": [{"name": "low", "value": 10}, {"name": "high", "value": 90}],
        "jobs": [
            {
                "name": "busy",
                "queue": "q",
                "priority_class": "high",
                "task_resources": {"gpu": 8},
                "expected_end": "2026-01-01T13:00:00Z",
                "tasks": [{"node": "n0"}],
            },
            {"name": "want", "queue": "q", "priority_class": "low", "task_resources": {"gpu": 8}, "tasks": [{}]},
        ],
    }
    path = tmp_path / "busy.yaml"
    path.write_text(yaml.safe_dump(document))
    arrivals = tmp_path / "arrivals.csv"
    arrivals.write_text("id,submit,duration,gpus,queue,priority_class\nurgent,10,3600,8,q,high\n")
    (alone,) = forecast(path, seeds=1).pending
    (behind,) = forecast(path, seeds=1, arrivals=arrivals).pending
    assert alone.starts == (3600.0,)
    assert behind.starts == (7200.0,)
