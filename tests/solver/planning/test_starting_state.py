"""A cluster snapshot's own jobs as the replay's starting state (docs/scenario-format.md, "What goes in": ``cluster``).

The snapshot's instant is simulated time 0; its jobs keep their tasks' statuses and nodes, their start times (the
min-runtime clock) and requeue states, and run for the work ``cluster.remaining`` gives them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import write_scenario

from gpu_preempt import run_cycle
from gpu_preempt.models import SnapshotError, load_snapshot
from gpu_preempt.planning.run import simulate

QUEUES = [
    {"name": "a", "deserved": {"gpu": 0, "cpu": "unlimited", "memory": "unlimited"}},
    {"name": "b", "deserved": {"gpu": 8, "cpu": "unlimited", "memory": "unlimited"}},
]
COLUMNS = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus", "queue": "queue"}


def scenario(folder: Path, jobs: list[dict[str, Any]], cluster: dict[str, Any], **config: Any) -> Path:
    """An 8-GPU node (and a 1-GPU one) in a snapshot taken at 10:00 holding ``jobs``; the trace's B (queue b, 8 GPUs,
    500 s) comes 100 s after its first job, which runs for 1 s on the small node."""
    snapshot = {
        "now": "2026-03-01T10:00:00Z",
        "config": config,
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}, {"name": "n1", "resources": {"gpu": 1}}],
        "queues": QUEUES,
        "jobs": jobs,
    }
    (folder / "cluster.yaml").write_text(yaml.safe_dump(snapshot, sort_keys=False))
    (folder / "trace.csv").write_text("id,submit,duration,gpus,queue\nfirst,0,1,1,b\nB,100,500,8,b\n")
    return write_scenario(
        folder,
        cluster={"snapshot": "cluster.yaml", **cluster},
        queues=QUEUES,
        workload={"trace": {"format": "csv", "path": "trace.csv", "columns": COLUMNS}},
    )


def running_a(started: str) -> dict[str, Any]:
    return {"name": "A", "queue": "a", "task_resources": {"gpu": 8}, "started_at": started, "tasks": [{"node": "n0"}]}


def test_a_running_job_of_the_snapshot_is_reclaimed_like_a_traced_one(tmp_path: Path):
    """As in the hand-computed reclaim of test_simulator, with A already running when the replay starts: B reclaims
    A at 100 (A's 100 s x 8 GPUs of progress lost), runs 130 to 630,
    and A runs its 1000 s again from 630. A has no wait of its own: the waits are those of the trace's two jobs."""
    path = scenario(tmp_path, [running_a("2026-03-01T09:00:00Z")], {"remaining": "1000s"})
    replay = simulate(path, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    a = sim.jobs["A"]
    assert (a.first_start, a.finish, a.evictions, a.lost) == (-3600.0, 1630.0, 1, 800.0)
    b = sim.jobs["B"]
    assert (b.first_start, b.finish, b.evictions) == (130.0, 630.0, 0)
    overall = replay.summary["overall"]
    assert overall["jobs"] == 2 and overall["starting_jobs"] == 1
    assert replay.summary["preemptions"]["total"] == 1
    assert replay.summary["gpu_hours"]["lost"] == round(800 / 3600, 3)


def test_the_min_runtime_clock_runs_from_the_snapshot_start_time(tmp_path: Path):
    """reclaim_min_runtime 2h and A started at 09:00: A is protected until 11:00, simulated time 3600. B waits
    until then, A loses 3600 s x 8 GPUs, B runs 3630 to 4130 and A its 5000 s again from 4130."""
    path = scenario(tmp_path, [running_a("2026-03-01T09:00:00Z")], {"remaining": "5000s"}, reclaim_min_runtime="2h")
    sim = simulate(path, None, check=True).simulator
    assert sim.problems == []
    a, b = sim.jobs["A"], sim.jobs["B"]
    assert (a.finish, a.evictions, a.lost) == (9130.0, 1, 3600.0 * 8)
    assert (b.first_start, b.finish) == (3630.0, 4130.0)


def test_waiting_and_releasing_jobs_start_where_the_snapshot_left_them(tmp_path: Path):
    """R's 4 GPUs are releasing (gone after the 30 s grace); W (queue b, 4 GPUs, remaining_of 200 s, waiting since
    09:30) takes them at 30, before R comes back. A dump at 0 is the snapshot moved to the replay's clock, and
    `cycle` on it decides what the replay decided."""
    jobs = [
        {"name": "R", "queue": "a", "task_resources": {"gpu": 4}, "tasks": [{"node": "n0", "status": "releasing"}]},
        {
            "name": "S",
            "queue": "a",
            "task_resources": {"gpu": 4},
            "started_at": "2026-03-01T09:59:00Z",
            "tasks": [{"node": "n0"}],
        },
        {"name": "W", "queue": "b", "task_resources": {"gpu": 4}, "created_at": "2026-03-01T09:30:00Z", "tasks": [{}]},
    ]
    path = scenario(tmp_path, jobs, {"remaining": "10000s", "remaining_of": {"W": "200s"}})
    replay = simulate(path, tmp_path / "out", check=True, dump_at=0.0)
    sim = replay.simulator
    assert sim.problems == []
    assert sim.jobs["W"].spec.submit == -1800.0
    assert (sim.jobs["W"].first_start, sim.jobs["W"].finish) == (30.0, 230.0)
    assert sim.jobs["R"].first_start is not None and sim.jobs["R"].first_start >= 30.0
    dump = json.loads((tmp_path / "out" / "dump.json").read_text())
    assert {j["name"] for j in dump["jobs"]} >= {"R", "S", "W"}
    dumped = json.loads((tmp_path / "out" / "dump-decisions.json").read_text())
    result = run_cycle(load_snapshot(tmp_path / "out" / "dump.json"))
    assert [d.to_dict(timing=False) for d in result.decisions] == dumped["decisions"]


@pytest.mark.parametrize(
    ("cluster", "path", "words"),
    [
        ({}, "cluster.remaining", "give the work they have left"),
        ({"remaining_of": {"A": "1h"}, "remaining": "1h", "nodes": []}, "cluster.remaining_of", "no job 'Z'"),
    ],
)
def test_without_remaining_work_the_replay_refuses(tmp_path: Path, cluster: dict[str, Any], path: str, words: str):
    cluster = {k: v for k, v in cluster.items() if k != "nodes"}
    if path == "cluster.remaining_of":
        cluster["remaining_of"] = {"Z": "1h"}
    scenario_path = scenario(tmp_path, [running_a("2026-03-01T09:00:00Z")], cluster)
    with pytest.raises(SnapshotError) as caught:
        simulate(scenario_path, tmp_path / "out")
    assert [e.path for e in caught.value.errors] == [path]
    assert words in caught.value.errors[0].message
    assert not (tmp_path / "out").exists()


def test_a_running_share_by_memory_is_held_as_its_part_of_a_device(tmp_path: Path):
    """M holds 20Gi of device 0 of n0 (80Gi devices): the replay counts it as a quarter of a GPU, and refuses a
    share on several devices by name."""
    share = {
        "name": "M",
        "queue": "a",
        "task_resources": {"gpu_memory": "20Gi"},
        "tasks": [{"node": "n0", "devices": [0]}],
    }
    path = scenario(tmp_path, [share], {"remaining": "100s"})
    snapshot = yaml.safe_load((tmp_path / "cluster.yaml").read_text())
    for node in snapshot["nodes"]:
        node["gpu_memory"] = "80Gi"
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(snapshot, sort_keys=False))
    replay = simulate(path, tmp_path / "out", check=True)
    assert replay.simulator.problems == []
    assert replay.simulator.jobs["M"].spec.task_gpu_milli == (250,)
    snapshot["jobs"][0].update(task_resources={"gpu": "500m"}, gpu_devices=2, tasks=[{"node": "n0", "devices": [0, 1]}])
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(snapshot, sort_keys=False))
    with pytest.raises(SnapshotError, match=r"cluster: jobs\[0\] \(M\): a share on several devices"):
        simulate(path, tmp_path / "out2")
    snapshot["jobs"][0].update(task_resources={"gpu": 1}, gpu_devices=1, tasks=[{"node": "n0"}])
    snapshot["jobs"][0].update(created_at="2026-03-01T09:00:00Z", preemption_delay="10m")
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(snapshot, sort_keys=False))
    with pytest.raises(SnapshotError, match=r"\(M\): a preemption delay or a task order, which the replay"):
        simulate(path, tmp_path / "out3")
