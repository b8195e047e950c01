"""A replay whose cycles start from the last cycle's per-node results (free hosts, device counts, rooms: kept for the
nodes that did not change) writes the same files as one that counts every node afresh every cycle, timings aside:
on a contended trace, with shares of a GPU, and with production shapes (shares, jobs without GPUs, per-task CPU and
memory, GPU models) on a heterogeneous cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import contended_workload, write_scenario
from test_memo_replay import folder

from gpu_preempt.planning.run import simulate

PRODUCTION = """id,submit,duration,gpus,tasks,cpu,memory,gpu_model,queue
""" + "".join(
    f"j{i},{i * 37 % 900},{600 + i * 131 % 5400},{g},{t},{c},{m}Gi,{model},{q}\n"
    for i, (g, t, c, m, model, q) in enumerate(
        [
            (0.5, "", 2, 8, "", "a"),
            (1, "", 4, 16, "T4", "b"),
            (0, "", 8, 32, "", "a"),
            (0.25, "", 1, 4, "", "b"),
            (16, 2, 32, 64, "A100", "a"),
            (2, "", 8, 16, "", "b"),
            (0, "", 4, 8, "", "b"),
            (1, "", 12, 32, "A100|T4", "a"),
        ]
        * 12
    )
)


def production(tmp_path: Path) -> dict[str, object]:
    (tmp_path / "trace.csv").write_text(PRODUCTION)
    columns = {c: c for c in ("id", "submit", "duration", "gpus", "tasks", "cpu", "memory", "gpu_model", "queue")}
    return {
        "cluster": {
            "nodes": [
                {"name": "cpu", "count": 2, "gpu": 0, "cpu": 32, "memory": "128Gi"},
                {"name": "t4", "count": 3, "gpu": 2, "cpu": 16, "memory": "64Gi", "gpu_model": "T4"},
                {"name": "a100", "count": 3, "gpu": 8, "cpu": 48, "memory": "256Gi", "gpu_model": "A100"},
            ]
        },
        "workload": {"trace": {"format": "csv", "path": "trace.csv", "columns": columns}},
    }


SCENARIOS = {
    "contended": lambda _: {"workload": contended_workload(120)},
    "shares of a GPU": lambda _: {
        "workload": {
            **contended_workload(160),
            "assign": {
                "queue": {"weights": {"a": 2, "b": 1}},
                "gpu_share": {"weights": {"1": 1, "0.5": 2, "0.25": 2}},
            },
        },
        "cluster": {"nodes": [{"count": 2, "gpu": 8, "cpu": 64, "memory": "512Gi"}]},
    },
    "production shapes": production,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_replay_writes_the_same_files_with_and_without_the_incremental_state(tmp_path: Path, name: str):
    path = write_scenario(tmp_path, **SCENARIOS[name](tmp_path))
    kept = simulate(path, tmp_path / "kept", check=True)
    afresh = simulate(path, tmp_path / "afresh", incremental=False)
    assert kept.simulator.problems == []
    assert folder(tmp_path / "kept") == folder(tmp_path / "afresh")
    assert kept.summary["solver"]["decisions"] == afresh.summary["solver"]["decisions"] > 0
