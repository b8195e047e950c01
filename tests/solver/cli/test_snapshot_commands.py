"""The command line on the bundled fixtures: validate, schema, and the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, base_document

FIXTURE_FILES = sorted(FIXTURES.glob("*.yaml"))


def test_there_are_fixtures():
    assert FIXTURE_FILES


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.name for p in FIXTURE_FILES])
def test_every_fixture_validates(cli, path):
    result = cli("validate", str(path))
    assert result.exit_code == 0, result.output
    assert "valid snapshot" in result.stdout


def test_validate_summary_of_the_example(cli):
    result = cli("validate", str(FIXTURES / "example-cluster.yaml"))
    text = result.stdout
    assert "nodes: 4 (4 schedulable); GPUs: 32 (32 x NVIDIA H100 80GB HBM3)" in text
    assert "jobs: 5 running, 1 pending, 0 releasing" in text
    assert "  vision" in text  # the tree is indented
    assert "reclaim-min-runtime" in text and "10m against any other queue" in text
    assert "non-preemptible" in text


def test_validate_json_summary(cli):
    result = cli("validate", "--json", str(FIXTURES / "example-cluster.yaml"))
    report = json.loads(result.stdout)
    assert report["valid"] is True
    rows = {row["name"]: row for row in report["queues"]}
    assert rows["research"]["allocated"]["gpu"] == 24000
    assert rows["research"]["fair_share"]["gpu"] == 16000
    assert rows["vision"]["depth"] == 1
    protected = {(p["job"], p["rule"]) for p in report["protected"]}
    assert ("serving-api", "non-preemptible") in protected
    assert ("serving-batch", "preempt-min-runtime") in protected


def test_schema_describes_the_format(cli):
    result = cli("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["required"] == ["now", "nodes", "queues"]
    assert schema["additionalProperties"] is False
    for name in ("Node", "Queue", "Job", "Task", "PriorityClass", "Config"):
        assert name in schema["$defs"]
    assert "requeue" in schema["$defs"]["Job"]["properties"]  # docs/rules.md, "Requeue with backoff"
    assert "RequeueConfig" in schema["$defs"]
    # docs/snapshot-format.md, "Placement"
    assert "placement" in schema["$defs"]["Job"]["properties"] and "taints" in schema["$defs"]["Node"]["properties"]
    operators = schema["$defs"]["NodeRequirement"]["properties"]["operator"]["enum"]
    assert operators == ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


def test_validate_accepts_its_own_example_document(cli):
    assert cli("validate", document=base_document()).exit_code == 0


SCRIPT = Path(sys.executable).parent / "gpu-preempt"


@pytest.mark.skipif(not SCRIPT.exists(), reason="console script not installed next to this Python")
def test_installed_console_script_exit_codes(tmp_path):
    good = subprocess.run([SCRIPT, "validate", str(FIXTURES / "example-cluster.yaml")], capture_output=True)
    assert good.returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("now: 0\nnodes: [{name: n, resources: {gpu: 0.5}}]\nqueues: []\n")
    result = subprocess.run([SCRIPT, "validate", str(bad)], capture_output=True, text=True)
    assert result.returncode == 2
    assert "nodes[0].resources.gpu: a node has whole GPU devices, not 0.5" in result.stderr
    assert "Traceback" not in result.stderr


def test_validate_lists_the_first_protected_jobs_and_counts_the_rest(cli):
    """A large cluster protects thousands of jobs: the table shows the first PROTECTED_ROWS, a line counts them all
    by rule, and --json lists every one."""
    from gpu_preempt.cli.render import PROTECTED_ROWS

    many = PROTECTED_ROWS + 5
    jobs = [
        {
            "name": f"young-{i}",
            "queue": "q",
            "task_resources": {"gpu": 1},
            "started_at": "2026-01-01T11:59:00Z",
            "tasks": [{"node": "n0"}],
            **({"preemptible": False} if i % 2 else {}),
        }
        for i in range(many)
    ]
    document = {
        "now": "2026-01-01T12:00:00Z",
        "config": {"preempt_min_runtime": "10m"},
        "nodes": [{"name": "n0", "resources": {"gpu": many}}],
        "queues": [{"name": "q"}],
        "jobs": jobs,
    }
    text = cli("validate", document=document).stdout
    assert text.count("young-") == PROTECTED_ROWS
    rows = many + many // 2  # every job by min-runtime, the odd ones also non-preemptible
    assert (
        f"protected: {rows} rows in all, {many} jobs ({many // 2} by non-preemptible, {many} by preempt-min-runtime)"
        in text
    )
    assert len(json.loads(cli("validate", "--json", document=document).stdout)["protected"]) == rows


def test_names_are_printed_as_they_are_not_as_markup(cli):
    """Names are the user's: rich must not read "[bold]" as a style tag or ":fire:" as an emoji code (a queue named
    "q[bold]" was shown as "q"), in tables, lines and errors alike."""
    document = {
        "now": 100,
        "nodes": [{"name": "n[red]1", "resources": {"gpu": 8}}],
        "queues": [{"name": "q[bold]"}],
        "jobs": [
            {
                "name": "j:fire:1",
                "queue": "q[bold]",
                "priority": 10,
                "task_resources": {"gpu": 8},
                "started_at": 40,
                "tasks": [{"node": "n[red]1"}],
            },
            {"name": "p[x]", "queue": "q[bold]", "priority": 200, "task_resources": {"gpu": 8}, "tasks": [{}]},
        ],
    }
    assert "│ q[bold] │" in cli("validate", document=document).stdout
    decided = cli("solve", "--job", "p[x]", "--action", "preempt", document=document).stdout
    assert "│ j:fire:1 │ q[bold] │" in decided and "placements: n[red]1: p[x]-0" in decided
    missing = cli("solve", "--job", "zz[bold]", document=document)
    assert missing.exit_code == 2 and "unknown job 'zz[bold]' (the jobs: j:fire:1, p[x])" in missing.stderr
