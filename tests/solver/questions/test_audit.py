"""``audit``: KAI's own search held against the least disruptive decision, on the same state (docs/operations.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from conftest import FIXTURES

from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.models import load_snapshot
from gpu_preempt.models.decision import VictimTasks
from gpu_preempt.questions import audit, stray_victims
from gpu_preempt.state.cluster import ClusterState

GPU_PREEMPT = str(Path(sys.executable).parent / "gpu-preempt")


def test_the_probe_that_keeps_its_first_victim_over_evicts_by_one_job():
    """KAI's probes keep the newest job as a victim although the 8-GPU job alone frees room for the gang."""
    found = audit(load_snapshot(FIXTURES / "kai-probe-keeps-first-victim.yaml"))
    (finding,) = found.findings
    assert finding.kind == "over-eviction"
    assert sorted(v.job for v in finding.search.victims) == ["big", "newest"]
    assert [v.job for v in finding.exact.victims] == ["big"]
    assert (finding.extra_jobs, finding.extra_tasks) == (1, 1)
    assert found.totals()["over-eviction"] == 1


def test_a_search_that_finds_the_minimum_is_minimal():
    found = audit(load_snapshot(FIXTURES / "example-cluster.yaml"))
    assert [f.kind for f in found.findings] == ["minimal"]
    assert found.totals()["extra_jobs"] == 0


def test_the_minimum_is_never_worse_than_the_search_on_the_fixtures():
    """On every fixture whose name says KAI or Kueue, each decision the search places is at best as good as the
    exact one, by the snapshot's objective."""
    for path in sorted(FIXTURES.glob("k*.yaml")):
        snapshot = load_snapshot(path)
        order = snapshot.config.objective
        for f in audit(snapshot).findings:
            if f.search.placed and f.exact.placed:
                assert f.exact.objective_key(order) <= f.search.objective_key(order), (path.name, f.job)
            assert f.kind != "missed" or not f.search.placed


def test_a_victim_on_no_node_the_job_lands_on_and_not_needed_is_freed_for_no_one():
    """The example's reclaim with one more victim on another node: the verifier accepts the decision without it,
    so it is stray; the decision's own victims are not."""
    snapshot = load_snapshot(FIXTURES / "example-cluster.yaml")
    state = ClusterState.of(snapshot)
    decision = attempt(state, snapshot.job("serving-new"), "reclaim")
    assert decision.placed and stray_victims(state, decision) == ()
    landing = set(decision.placements.values())
    taken = {v.job for v in decision.victims}
    other = next(
        j
        for j in snapshot.jobs
        if j.name not in taken
        and j.tasks
        and all(t.node not in landing for t in j.tasks if t.node)
        and any(t.node for t in j.tasks)
    )
    extra = VictimTasks(other.name, tuple(str(t.name) for t in other.tasks if t.node), whole_job=True)
    padded = replace(decision, victims=[*decision.victims, extra])
    assert stray_victims(state, padded) == (other.name,)


def test_the_command_prints_a_table_and_json_and_exits_zero_whatever_it_finds():
    path = str(FIXTURES / "kai-probe-keeps-first-victim.yaml")
    text = subprocess.run([GPU_PREEMPT, "audit", path], capture_output=True, text=True, check=False)
    assert text.returncode == 0, text.stderr
    assert "1 over-evicting" in text.stdout and "big, newest" in text.stdout
    raw = subprocess.run([GPU_PREEMPT, "audit", path, "--json"], capture_output=True, text=True, check=False)
    assert raw.returncode == 0
    document = json.loads(raw.stdout)
    assert document["totals"]["extra_jobs"] == 1
    assert document["findings"][0]["finding"] == "over-eviction"


def test_a_bad_snapshot_is_refused_with_exit_2(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: [{name: n0, resources: {gpu: -1}}]\nqueues: []\njobs: []\n")
    result = subprocess.run([GPU_PREEMPT, "audit", str(bad)], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "gpu" in result.stderr
