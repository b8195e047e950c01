"""Protected jobs in a decision's output (docs/snapshot-format.md, "Commands and output"): counts by rule and the
total always; the jobs that matter (those the optimum would have taken but for their protection) by default, every
one with ``--explain all``, none with ``--explain counts``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from conftest import FIXTURES, ROOT
from typer.testing import CliRunner

from gpu_preempt import decide
from gpu_preempt.cli import app
from gpu_preempt.models import snapshot_from_data

EXAMPLE = FIXTURES / "example-cluster.yaml"


def solve(path: Path, *args: str) -> dict:
    result = CliRunner().invoke(
        app, ["solve", str(path), "--job", "serving-new", "--action", "reclaim", "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["decisions"][0]


def test_the_protected_job_the_optimum_would_take_is_listed_with_the_counts():
    decision = solve(EXAMPLE)
    assert [p["job"] for p in decision["protected"]] == ["vision-pretrain"]
    assert decision["protected_counts"] == {"min-runtime": 1} and decision["protected_total"] == 1
    assert solve(EXAMPLE, "--explain", "counts")["protected"] == []


def test_without_its_protection_the_optimum_takes_the_job_that_matters():
    """The independent check of "matters": vision-pretrain started long ago is no longer protected, and the same
    decision takes it."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document.pop("expect", None)
    job = next(j for j in document["jobs"] if j["name"] == "vision-pretrain")
    job["started_at"] = "2026-01-01T09:00:00Z"
    taken = decide(snapshot_from_data(document), "serving-new", "reclaim")
    assert "vision-pretrain" in [v.job for v in taken.victims]


def test_on_a_large_cluster_only_the_jobs_that_matter_are_listed(tmp_path: Path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(generate(300, seed=1, pending=3)))
    args = ["solve", str(path), "--job", "pending-0001", "--action", "reclaim", "--json"]
    shown = json.loads(CliRunner().invoke(app, args).stdout)["decisions"][0]
    every = json.loads(CliRunner().invoke(app, [*args, "--explain", "all"]).stdout)["decisions"][0]
    total = shown["protected_total"]
    assert total == len({p["job"] for p in every["protected"]}) > 100
    assert sum(shown["protected_counts"].values()) == len(every["protected"])
    assert len(shown["protected"]) < 10
    assert {p["job"] for p in shown["protected"]} <= {p["job"] for p in every["protected"]}
    text = " ".join(CliRunner().invoke(app, args[:-1]).output.split())
    assert f"protected: {total} job(s)" in text and "--explain all lists every one" in text


def test_the_jobs_that_matter_are_the_victims_of_the_decision_without_their_protections():
    """The independent check on generated clusters: the same snapshot without min-runtimes, every shielded job
    preemptible and without a class that tolerates, decided again; its victims among the shielded jobs are the jobs
    that matter."""
    import copy

    from gpu_preempt.actions import protection_matters
    from gpu_preempt.actions.cycle import final_decision, solve_one
    from gpu_preempt.state.cluster import ClusterState

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    compared = 0
    for seed in range(3):
        data = generate(40, seed=seed, pending=7)
        snapshot = snapshot_from_data(copy.deepcopy(data))
        cluster = ClusterState.of(snapshot)
        for job in [j for j in snapshot.jobs if j.name.startswith("pending-")]:
            decision = final_decision(solve_one(cluster, job, "reclaim"))
            shielded = {p.job for p in decision.protected if p.rule in protection_matters.LIFTED}
            if not decision.placed or not shielded:
                continue
            matter = protection_matters.taken_but_for_protection(cluster, job, decision)
            lifted = copy.deepcopy(data)  # no min-runtime anywhere; the shielded preemptible, with no class
            lifted["config"].update(preempt_min_runtime=0, reclaim_min_runtime=0)
            for queue in lifted["queues"]:
                queue.pop("reclaim_min_runtime", None)
                queue.pop("preempt_min_runtime", None)
            for entry in lifted["jobs"]:
                if entry["name"] in shielded:
                    value = snapshot.job(entry["name"]).resolved_priority
                    entry.pop("priority_class", None)
                    entry.update(priority=value, preemptible=True)
            again = decide(snapshot_from_data(lifted), job.name, "reclaim")
            assert matter == sorted(v.job for v in again.victims if v.job in shielded), (seed, job.name)
            compared += 1
    assert compared >= 3


def test_a_job_that_matters_is_found_among_hundreds_shielded():
    """Hundreds of shielded jobs, one task each, on nodes the pending job may not use, and the one it needs, of two
    tasks, on the node it may: every shielded job is judged, not only those an optimum would seem to reach first."""
    from gpu_preempt.actions.protection_matters import taken_but_for_protection
    from gpu_preempt.state.cluster import ClusterState

    others = [f"n{i}" for i in range(1, 251)]
    document = {
        "now": "2026-01-01T12:00:00Z",
        "config": {"reclaim_min_runtime": "1h"},
        "nodes": [{"name": n, "resources": {"gpu": 8}, "labels": {"pool": "a" if n == "n0" else "b"}}
                  for n in ["n0", *others]],
        "queues": [{"name": "mine", "deserved": {"gpu": 8}}, {"name": "theirs", "deserved": {"gpu": 0}}],
        "jobs": [
            {"name": "needed", "queue": "theirs", "task_resources": {"gpu": 4}, "started_at": "2026-01-01T11:50:00Z",
             "tasks": [{"node": "n0"}, {"node": "n0"}]},
            *({"name": f"small-{n}", "queue": "theirs", "task_resources": {"gpu": 8},
               "started_at": "2026-01-01T11:50:00Z", "tasks": [{"node": n}]} for n in others),
            {"name": "new", "queue": "mine", "task_resources": {"gpu": 4},
             "placement": {"node_selector": {"pool": "a"}}, "tasks": [{}]},
        ],
    }  # fmt: skip
    snapshot = snapshot_from_data(document)
    cluster = ClusterState.of(snapshot)
    decision = decide(snapshot, "new", "reclaim")
    assert decision.outcome == "infeasible" and len({p.job for p in decision.protected}) == 251
    assert taken_but_for_protection(cluster, snapshot.job("new"), decision) == ["needed"]
