"""``whatif``: the decision a submitted job would get now, and the nearest variants that run (docs/operations.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, ROOT

from gpu_preempt.models import Job, load_snapshot, parse_snapshot
from gpu_preempt.questions import whatif

GPU_PREEMPT = str(Path(sys.executable).parent / "gpu-preempt")
NOW = "2026-01-01T12:00:00Z"


def cluster(jobs: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None, **config: Any):
    document = {
        "now": NOW,
        "config": config,
        "nodes": nodes or [{"name": "n0", "resources": {"gpu": 8}}],
        "queues": [{"name": "q"}, {"name": "r"}],
        "jobs": jobs,
    }
    return parse_snapshot(yaml.safe_dump(document))


def job(**fields: Any) -> Job:
    return Job.model_validate({"name": "want", "queue": "q", "tasks": [{}], **fields})


def test_a_job_that_fits_gets_its_decision_and_no_variants():
    answer = whatif(load_snapshot(FIXTURES / "example-cluster.yaml"), job(queue="serving", task_resources={"gpu": 1}))
    assert answer.decision.placed
    assert answer.variants == []


def test_a_job_too_large_gets_the_largest_size_that_runs():
    """5 of the node's 8 GPUs run a job it may not take: 3 GPUs a task is the largest that runs, and 4 does not."""
    busy = {"name": "busy", "queue": "q", "priority": 90, "task_resources": {"gpu": 5}, "tasks": [{"node": "n0"}]}
    snapshot = cluster([busy])
    answer = whatif(snapshot, job(priority=10, task_resources={"gpu": 6}))
    assert not answer.decision.placed
    (smaller,) = [v for v in answer.variants if v.change.startswith("fewer GPUs")]
    assert smaller.change == "fewer GPUs a task: 3" and smaller.decision.placed
    assert not whatif(snapshot, job(priority=10, task_resources={"gpu": 4})).decision.placed


def test_a_gang_too_large_gets_the_largest_number_of_tasks_that_runs():
    busy = {"name": "busy", "queue": "q", "priority": 90, "task_resources": {"gpu": 2}, "tasks": [{"node": "n0"}]}
    answer = whatif(cluster([busy]), job(priority=10, task_resources={"gpu": 2}, tasks=[{}] * 4))
    fewer = [v for v in answer.variants if v.change.startswith("fewer tasks")]
    assert [v.change for v in fewer] == ["fewer tasks: 3"]


def test_a_job_that_runs_only_on_another_gpu_model():
    label = "nvidia.com/gpu.product"
    nodes = [
        {"name": "a100", "resources": {"gpu": 8}, "labels": {label: "A100"}},
        {"name": "h100", "resources": {"gpu": 8}, "labels": {label: "H100"}},
    ]
    busy = {"name": "busy", "queue": "q", "priority": 90, "task_resources": {"gpu": 8}, "tasks": [{"node": "a100"}]}
    wanted = job(priority=10, task_resources={"gpu": 8}, placement={"node_selector": {label: "A100"}})
    answer = whatif(cluster([busy], nodes), wanted)
    assert not answer.decision.placed
    (model,) = [v for v in answer.variants if v.change.startswith("GPU model")]
    assert model.change == "GPU model H100" and model.decision.placements == {"want-0": "h100"}


def test_a_job_that_runs_later_runs_when_the_protection_ends():
    """The only victim is protected by preempt-min-runtime for 10 minutes from its start at 11:55."""
    low = {
        "name": "low",
        "queue": "q",
        "priority": 10,
        "task_resources": {"gpu": 8},
        "started_at": "2026-01-01T11:55:00Z",
        "tasks": [{"node": "n0"}],
    }
    snapshot = cluster([low], preempt_min_runtime="10m")
    answer = whatif(snapshot, job(priority=90, task_resources={"gpu": 8}))
    assert not answer.decision.placed
    (later,) = [v for v in answer.variants if v.at is not None]
    assert later.at == snapshot.now + 300
    assert [v.job for v in later.decision.victims] == ["low"]


def test_a_name_already_taken_is_refused():
    with pytest.raises(ValueError, match="in the snapshot already"):
        whatif(load_snapshot(FIXTURES / "example-cluster.yaml"), job(name="serving-new"))


def test_the_command_prints_the_variants_and_json():
    args = [GPU_PREEMPT, "whatif", str(FIXTURES / "example-cluster.yaml")]
    submit = str(ROOT / "docs" / "examples" / "submit-vision.yaml")
    text = subprocess.run([*args, "--submit", submit], capture_output=True, text=True, check=False)
    assert text.returncode == 0, text.stderr
    assert "does not run now" in text.stdout and "fewer GPUs a task: 4" in text.stdout
    raw = subprocess.run([*args, "--submit", submit, "--json"], capture_output=True, text=True, check=False)
    document = json.loads(raw.stdout)
    assert document["runs"] is False
    assert [v["change"] for v in document["variants"]] == ["fewer GPUs a task: 4", "fewer tasks: 1"]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("name: x\nqueue: nowhere\ntask_resources: {gpu: 1}\ntasks: [{}]\n", "queue"),
        ("name: x\nqueue: vision\ntask_resources: {gpu: -1}\ntasks: [{}]\n", "task_resources.gpu"),
        ("- not a job\n", "a job is a mapping"),
    ],
)
def test_a_bad_job_exits_2_naming_the_field(tmp_path: Path, content: str, words: str):
    bad = tmp_path / "job.yaml"
    bad.write_text(content)
    args = [GPU_PREEMPT, "whatif", str(FIXTURES / "example-cluster.yaml"), "--submit", str(bad)]
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    assert result.returncode == 2, result.stdout
    assert "Traceback" not in result.stderr and words in result.stderr


def test_a_pod_manifest_is_read_as_import_reads_it():
    """The KAI queue label names the queue, the priority class its priority: the pod preempts in vision."""
    args = [GPU_PREEMPT, "whatif", str(FIXTURES / "example-cluster.yaml"), "--json"]
    pod = str(ROOT / "docs" / "examples" / "submit-pod.yaml")
    result = subprocess.run([*args, "--submit", pod], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["job"] == "vision/sweep-0" and document["runs"] is True
    assert document["decision"]["action"] == "preempt"
    assert [v["job"] for v in document["decision"]["victims"]] == ["vision-pretrain"]


def test_a_job_that_runs_later_runs_when_a_running_job_is_expected_to_end():
    """The node's only job may not be taken (higher priority), and is expected to end at 13:00: the job runs then."""
    busy = {
        "name": "busy",
        "queue": "q",
        "priority": 90,
        "task_resources": {"gpu": 8},
        "expected_end": "2026-01-01T13:00:00Z",
        "tasks": [{"node": "n0"}],
    }
    snapshot = cluster([busy])
    answer = whatif(snapshot, job(priority=10, task_resources={"gpu": 8}))
    (later,) = [v for v in answer.variants if v.at is not None]
    assert later.at == snapshot.now + 3600 and later.change.endswith("when busy is expected to end")
    assert later.decision.action == "allocate" and not later.decision.victims
