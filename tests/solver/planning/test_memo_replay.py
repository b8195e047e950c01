"""A replay with the memo of standing outcomes (:mod:`gpu_preempt.actions.memo`) writes the same files as one that
searches every waiting job every cycle, timings aside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from helpers import contended_workload, write_scenario

from gpu_preempt.planning.run import simulate


def folder(out: Path) -> dict[str, Any]:
    """A replay's output files, timings aside."""
    summary = json.loads((out / "summary.json").read_text())
    summary["solver"].pop("time_ms")
    return {
        "summary": summary,
        "events": (out / "events.jsonl").read_text(),
        "jobs": pq.read_table(out / "jobs.parquet").to_pylist(),
        "timeseries": (out / "timeseries.csv").read_text(),
    }


SCENARIOS = {
    "contended": {"workload": contended_workload(120)},
    "deep queue, backoff and min-runtime": {
        "workload": {**contended_workload(160), "time_scale": 400},
        "config": {"preempt_min_runtime": "10m", "reclaim_min_runtime": "5m", "requeue": {"backoff_base": "5m"}},
        "priority_classes": [{"name": "low", "value": 10}, {"name": "high", "value": 90}],
    },
    "time-based fair share": {  # docs/rules.md, "Time-based fair share": usage moves the shares cycle by cycle
        "workload": contended_workload(120),
        "queues": [
            {"name": "a", "deserved": {"gpu": 0, "cpu": "unlimited", "memory": "unlimited"}},
            {"name": "b", "deserved": {"gpu": 2, "cpu": "unlimited", "memory": "unlimited"}},
        ],
        "config": {"fair_share_usage": {"k_value": 5, "window": "2h", "half_life": "30m"}},
    },
    "a quota change mid-run": {
        "workload": contended_workload(120),
        "events": [{"at": 3000, "set": {"queues.b.deserved.gpu": 4}}],
    },
    "shares of a GPU": {  # docs/snapshot-format.md, "GPU sharing": most one-GPU jobs take a half or a quarter
        "workload": {
            **contended_workload(160),
            "assign": {
                "queue": {"weights": {"a": 2, "b": 1}},
                "gpu_share": {"weights": {"1": 1, "0.5": 2, "0.25": 2}},
            },
        },
        "cluster": {"nodes": [{"count": 1, "gpu": 8, "cpu": 64, "memory": "512Gi"}]},
    },
}

KUEUE_QUEUES = [  # two ClusterQueues of one cohort, each lending what it does not use
    {"name": "pool"},
    {
        "name": "a",
        "parent": "pool",
        "nominal": {"gpu": 4, "cpu": 32, "memory": "256Gi"},
        "preemption": {"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any"},
    },
    {
        "name": "b",
        "parent": "pool",
        "nominal": {"gpu": 12, "cpu": 96, "memory": "768Gi"},
        "preemption": {"within_cluster_queue": "LowerOrNewerEqualPriority", "reclaim_within_cohort": "Any"},
    },
]
KUEUE = {
    "queues": KUEUE_QUEUES,
    "workload": {**contended_workload(160), "time_scale": 400},
    "config": {"policy": "kueue", "preempt_min_runtime": "10m", "reclaim_min_runtime": "5m"},
    "priority_classes": [{"name": "low", "value": 10}, {"name": "high", "value": 90}],
}
SCENARIOS["Kueue's classical preemption, deep queue"] = KUEUE
SCENARIOS["Kueue's fair sharing, deep queue"] = {**KUEUE, "config": {**KUEUE["config"], "fair_sharing": True}}
SCENARIOS["Kueue's own search, deep queue"] = {
    **KUEUE,
    "simulation": {"period": 10, "grace_period": 30, "seed": 1, "solver": "greedy"},
}


SLOW = {
    "deep queue, backoff and min-runtime",
    "time-based fair share",
    *(name for name in SCENARIOS if name.startswith("Kueue")),
}
"""The longest replays (about 10 s each): CI's long run checks them, the README's test command the others."""


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(SCENARIOS)]
)
def test_a_replay_writes_the_same_files_with_and_without_the_memo(tmp_path: Path, name: str):
    changes = dict(SCENARIOS[name])
    if "priority_classes" in changes:
        changes["workload"] = {
            **changes["workload"],
            "assign": {**changes["workload"]["assign"], "priority_class": {"weights": {"low": 3, "high": 1}}},
        }
    path = write_scenario(tmp_path, **changes)
    remembered = simulate(path, tmp_path / "memo")
    searched = simulate(path, tmp_path / "every", memo=False)
    assert folder(tmp_path / "memo") == folder(tmp_path / "every")
    assert remembered.simulator.log.repeated > 0
    attempts = remembered.summary["solver"]["decisions"]
    assert attempts == searched.summary["solver"]["decisions"]
