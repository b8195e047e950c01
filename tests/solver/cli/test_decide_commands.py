"""``gpu-preempt solve`` and ``cycle``: the spec's JSON shape, human tables, exit codes, --verify."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from gpu_preempt import decide
from gpu_preempt.models import load_snapshot
from gpu_preempt.state.cluster import ClusterState

EXAMPLE = str(FIXTURES / "example-cluster.yaml")


def test_solve_json_has_the_spec_shape(cli):
    result = cli("solve", EXAMPLE, "--job", "serving-new", "--action", "reclaim", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    (decision,) = document["decisions"]
    for key in ("job", "action", "outcome", "victims", "placements", "optimal", "objective", "protected", "solve_ms"):
        assert key in decision
    assert decision["outcome"] == "pipelined" and decision["optimal"] is True
    assert decision["objective"] == {"priority": [2], "jobs": 2, "tasks": 4, "lost_work": 10200.0}
    assert document["jobs"]["serving-new"]["tasks"]["serving-new-0"] == {"status": "pipelined", "node": "node-2"}
    assert document["jobs"]["nlp-eval"]["tasks"]["nlp-eval-0"] == {"status": "releasing", "node": "node-2"}
    assert decision["protected"][0]["job"] == "vision-pretrain"


def test_solve_auto_reports_every_attempt(cli):
    result = cli("solve", EXAMPLE, "--job", "serving-new", "--json", "--no-timing")
    document = json.loads(result.stdout)
    assert [a["action"] for a in document["attempts"]] == ["allocate", "reclaim"]
    assert document["decisions"][0]["action"] == "reclaim"
    assert "solve_ms" not in document["decisions"][0]


def test_cycle_json_and_verify(cli):
    result = cli("cycle", EXAMPLE, "--json", "--verify")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    outcomes = [(d["job"], d["action"], d["outcome"]) for d in document["decisions"]]
    assert outcomes == [("serving-new", "allocate", "infeasible"), ("serving-new", "reclaim", "pipelined")]
    assert "re-checked, all sound" in result.stderr


def test_cycle_human_output_explains(cli):
    result = cli("cycle", EXAMPLE)
    text = result.stdout
    assert "serving-new: reclaim -> pipelined (optimal" in text
    assert "nlp-finetune" in text and "whole job" in text
    assert "queue research holds 24 gpu, 8 above its deserved 16" in text
    assert "protected: vision-pretrain: min-runtime until 2026-01-01T12:05:00Z" in text
    assert "objective: 2 job(s) (2 at priority 50), 4 task(s), 10200 GPU-seconds lost" in text


def test_greedy_solver_is_selectable(cli):
    result = cli(
        "solve",
        str(FIXTURES / "kai-1966-gpu-footprint-tie.yaml"),
        "--job",
        "boss",
        "--action",
        "preempt",
        "--solver",
        "greedy",
        "--json",
    )
    (decision,) = json.loads(result.stdout)["decisions"]
    assert decision["solver"] == "greedy" and decision["optimal"] is False
    assert decision["victims"][0]["job"] == "two-gpu"


def test_unknown_job_and_bad_choices_exit_2(cli):
    assert cli("solve", EXAMPLE, "--job", "nope").exit_code == 2
    assert cli("solve", EXAMPLE, "--job", "serving-new", "--action", "evict").exit_code == 2
    assert cli("cycle", EXAMPLE, "--actions", "allocate,steal").exit_code == 2
    assert cli("cycle", EXAMPLE, "--solver", "magic").exit_code == 2


def test_bad_snapshot_exits_2_for_solve_and_cycle(cli):
    bad = "now: 0\nnodes: [{name: n, resources: {gpu: 0.5}}]\nqueues: []\n"
    for command in (["solve", "--job", "x"], ["cycle"]):
        result = cli(*command, text=bad)
        assert result.exit_code == 2
        assert "nodes[0].resources.gpu" in result.stderr


def test_actions_subset(cli):
    result = cli("cycle", EXAMPLE, "--actions", "allocate", "--json")
    document = json.loads(result.stdout)
    assert [d["action"] for d in document["decisions"]] == ["allocate"]
    assert document["jobs"]["serving-new"]["tasks"]["serving-new-0"]["status"] == "pending"


def test_many_protected_jobs_are_summed_up_in_human_output(cli):
    jobs = [
        {
            "name": f"young-{i}",
            "queue": "q",
            "priority": 10,
            "task_resources": {"gpu": 1},
            "started_at": "2026-01-01T11:59:00Z",
            "tasks": [{"node": "n0"}],
        }
        for i in range(12)
    ]
    document = {
        "now": "2026-01-01T12:00:00Z",
        "config": {"preempt_min_runtime": "10m"},
        "nodes": [{"name": "n0", "resources": {"gpu": 12}}],
        "queues": [{"name": "q"}],
        "jobs": [*jobs, {"name": "boss", "queue": "q", "priority": 90, "task_resources": {"gpu": 1}, "tasks": [{}]}],
    }
    result = cli("solve", "--job", "boss", "--action", "preempt", document=document)
    assert result.exit_code == 0  # one young job frees the GPU boss needs: the one that matters
    assert result.stdout.count("  protected: young-") == 1
    assert "protected: 12 job(s) (12 by min-runtime); shown: those the optimum" in " ".join(result.stdout.split())
    every = cli("solve", "--job", "boss", "--action", "preempt", "--explain", "all", document=document)
    assert every.stdout.count("  protected: young-") == 8
    assert "protected: 12 jobs in all (12 by min-runtime); --json lists every one" in every.stdout


def test_solve_shows_the_first_victims_and_counts_the_rest(cli):
    """A decision may evict hundreds of jobs (the greedy baseline at 100,000 nodes: about 900): the table and the
    requeue lines show the first VICTIM_ROWS, a line counts them all, and --json lists every one."""
    from gpu_preempt.cli.render import VICTIM_ROWS

    many = VICTIM_ROWS + 5
    low = [
        {
            "name": f"low-{i:03d}",
            "queue": "q",
            "priority": 10,
            "task_resources": {"gpu": 1},
            "started_at": "2026-01-01T11:00:00Z",
            "tasks": [{"node": "n0"}],
        }
        for i in range(many)
    ]
    boss = {"name": "boss", "queue": "q", "priority": 1000, "task_resources": {"gpu": many}, "tasks": [{}]}
    document = {
        "now": "2026-01-01T12:00:00Z",
        "nodes": [{"name": "n0", "resources": {"gpu": many}}],
        "queues": [{"name": "q"}],
        "jobs": [*low, boss],
    }
    result = cli("solve", "--job", "boss", "--action", "preempt", document=document)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("│ low-")]
    assert len(rows) == VICTIM_ROWS and rows[0].startswith("│ low-000 ")
    assert f"victims: {many} jobs in all, {many} tasks; the first {VICTIM_ROWS} are shown" in result.stdout
    assert result.stdout.count("  requeue: low-") == VICTIM_ROWS
    assert f"requeue: {many} jobs in all" in result.stdout
    document_out = json.loads(cli("solve", "--job", "boss", "--action", "preempt", "--json", document=document).stdout)
    assert len(document_out["decisions"][0]["victims"]) == many


@pytest.mark.parametrize(
    "name",
    [
        "kai-move-binpack-fullest",  # a move
        "kai-reclaim-move-instead-of-evict",
        "device-share-on-two-devices-needs-both",  # a share placed on devices, two victims
        "kai-preempt-memory-two-tasks-two-devices",
        "kai-reclaim-fraction-consolidation",  # a running share moved to another device
        "elastic-peel-preferred",  # part of a job evicted
        "allocate-pipelined-on-releasing",
    ],
)
def test_solve_json_gives_each_touched_task_as_the_state_after_the_decision_holds_it(cli, name):
    """The ``jobs`` of ``solve --json``: the decided job's, the victims' and the moved jobs' tasks, each with the
    status, node and devices the state derived from the decision gives it."""
    path = FIXTURES / f"{name}.yaml"
    snapshot = load_snapshot(path)
    job = snapshot.expect["job"] if snapshot.expect else None
    assert job is not None
    decision = decide(snapshot, job)
    after = ClusterState.of(snapshot).with_changes(decision.changes(), decision.devices)
    result = cli("solve", str(path), "--job", job, "--json")
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.stdout)["jobs"]
    assert set(jobs) == {job, *(v.job for v in decision.victims), *(m.job for m in decision.moves)}
    for name_, shown in jobs.items():
        for task in snapshot.job(name_).tasks:
            expected = {"status": after.status[str(task.name)], "node": after.node_of[str(task.name)]}
            if str(task.name) in after.task_devices and expected["status"] != "pending":
                expected["devices"] = list(after.task_devices[str(task.name)])
            assert shown["tasks"][str(task.name)] == expected
