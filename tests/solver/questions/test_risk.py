"""``risk``: the running jobs ranked by the smallest pending request that makes each a victim (docs/operations.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import FIXTURES, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_preempt.actions.cycle import final_decision, solve_one
from gpu_preempt.models import load_snapshot, snapshot_from_data
from gpu_preempt.questions import Probe, risk, with_job
from gpu_preempt.state.cluster import ClusterState

GPU_PREEMPT = str(Path(sys.executable).parent / "gpu-preempt")


def test_the_example_ranks_the_reclaimable_jobs_first_and_lists_what_protects_the_others():
    found = risk(load_snapshot(FIXTURES / "example-cluster.yaml"))
    assert [(r.job, r.request.gpus if r.request else None) for r in found.ranked] == [
        ("nlp-finetune", 1),
        ("vision-pretrain", 1),
        ("nlp-eval", 7),
    ]
    protected = {r.job: r.protections for r in found.unranked}
    assert protected["serving-api"] == ("non-preemptible",)
    assert protected["serving-batch"][0].startswith("min-runtime until 2026-01-01T12:03:00Z")


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = [{"name": f"n{i}", "resources": {"gpu": 4}} for i in range(draw(st.integers(1, 2)))]
    free = {n["name"]: 4 for n in nodes}
    jobs = []
    for j in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        spots = [name for name, room in free.items() if room >= size]
        if not spots:
            break
        node = draw(st.sampled_from(spots))
        free[node] -= size
        jobs.append(
            {
                "name": f"r{j}",
                "queue": draw(st.sampled_from(["a", "b"])),
                "priority": draw(st.sampled_from([10, 50])),
                "task_resources": {"gpu": size},
                "started_at": "2026-01-01T11:00:00Z",
                "tasks": [{"node": node}],
            }
        )
    return {
        "now": "2026-01-01T12:00:00Z",
        "nodes": nodes,
        "queues": [{"name": "a", "deserved": {"gpu": draw(st.integers(0, 4))}}, {"name": "b", "deserved": {"gpu": 2}}],
        "priority_classes": [{"name": "low", "value": 10}, {"name": "high", "value": 50}],
        "jobs": jobs,
    }


def brute_force(document: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per running job, the smallest (GPUs, priority) of every request of every size that takes it."""
    snapshot = snapshot_from_data(document)
    best: dict[str, tuple[int, int]] = {}
    for gpus, tasks in [(1, 1), (2, 1), (3, 1), (4, 1), *((4 * k, k) for k in range(2, len(document["nodes"]) + 1))]:
        for priority in (10, 50):  # the classes' values, the default (50) among them
            for queue in ("a", "b"):
                probe = Probe(queue, priority, gpus, tasks)
                state = with_job(snapshot, probe.job())
                decision = final_decision(solve_one(ClusterState.of(state), state.job(probe.job().name), "auto"))
                for victim in decision.victims:
                    best[victim.job] = min(best.get(victim.job, (gpus, priority)), (gpus, priority))
    return best


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_ranking_is_the_smallest_request_found_by_brute_force(document: dict[str, Any]):
    found = risk(snapshot_from_data(document), top=10)
    ranked = {r.job: (r.request.gpus, r.request.priority) for r in found.ranked if r.request is not None}
    assert ranked == brute_force(document)
    assert [ranked[r.job] for r in found.ranked] == sorted(ranked.values())


def test_the_command_ranks_and_exits_zero_and_refuses_an_unknown_queue():
    path = str(FIXTURES / "example-cluster.yaml")
    result = subprocess.run([GPU_PREEMPT, "risk", path, "--top", "2", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert [r["job"] for r in document["at_risk"]] == ["nlp-finetune", "vision-pretrain"]
    assert document["searched_up_to_gpus"] == 1
    bad = subprocess.run([GPU_PREEMPT, "risk", path, "--queue", "nowhere"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown queue 'nowhere'" in bad.stderr
