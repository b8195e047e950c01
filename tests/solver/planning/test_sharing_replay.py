"""Replays with shares of a GPU (docs/snapshot-format.md, "GPU sharing"; docs/scenario-format.md): a trace's
fractional GPUs, shares packed on one device, the whole-GPU job that finds no empty device, utilisation counting
fractions, fragmentation, and the bundled mixed example under the checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES
from helpers import CLUSTER10, write_scenario

from gpu_preempt.models import SnapshotError
from gpu_preempt.planning.run import simulate
from gpu_preempt.planning.trace import read_rows

COLUMNS = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus", "queue": "queue"}


def one_gpu(tmp_path: Path, rows: str) -> Path:
    """One node of one GPU, queues a and b, the trace ``rows`` (``id,submit,duration,gpus,queue``)."""
    (tmp_path / "trace.csv").write_text("id,submit,duration,gpus,queue\n" + rows)
    return write_scenario(
        tmp_path,
        cluster={"nodes": [{"count": 1, "gpu": 1}]},
        workload={"trace": {"format": "csv", "path": "trace.csv", "columns": COLUMNS}},
    )


def test_a_csv_trace_may_ask_for_a_share_of_one_gpu() -> None:
    rows = "id,submit,duration,gpus\na,0,60,0.5\nb,0,60,0.125\nc,0,60,2\n"
    assert [j.gpus for j in read_rows(rows.splitlines(), COLUMNS | {"queue": "id"}, "t.csv")] == [0.5, 0.125, 2]


@pytest.mark.parametrize(
    ("gpus", "words"),
    [
        ("1.5", "not a whole number of GPUs, nor a share of one GPU"),
        ("0.0001", "in thousandths"),
        ("0", "0 GPUs and no cpu or memory column: the job asks for nothing"),
    ],
)
def test_a_share_that_is_not_one_of_one_gpu_is_refused_naming_the_line(gpus: str, words: str) -> None:
    rows = f"id,submit,duration,gpus\na,0,60,1\nb,0,60,{gpus}\n"
    with pytest.raises(SnapshotError, match=rf"t.csv line 3.*{words}"):
        read_rows(rows.splitlines(), {k: v for k, v in COLUMNS.items() if k != "queue"}, "t.csv")


def test_two_halves_share_one_gpu_and_a_whole_gpu_waits_for_both(tmp_path: Path) -> None:
    """One GPU: halves H1 and H2 arrive at 0 for 100 s and run side by side on device 0; W (one whole GPU) arrives at
    10 and starts once both are gone, at 100, for 50 s. The GPU is fully held throughout: utilisation 1, and no
    device is ever partly used."""
    replay = simulate(one_gpu(tmp_path, "H1,0,100,0.5,b\nH2,0,100,0.5,b\nW,10,50,1,b\n"), tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    assert [(sim.jobs[n].first_start, sim.jobs[n].finish) for n in ("H1", "H2", "W")] == [
        (0.0, 100.0),
        (0.0, 100.0),
        (100.0, 150.0),
    ]
    s = replay.summary
    assert s["utilisation"] == 1.0
    assert s["gpu_hours"]["held"] == round((0.5 * 100 * 2 + 50) / 3600, 3)
    assert s["fragmentation"] == {"mean_gpus": 0.0, "max_gpus": 0}


def test_a_lone_half_leaves_its_gpu_partly_used(tmp_path: Path) -> None:
    """One GPU: H (a half) runs from 0 to 100; W (one whole GPU, arriving at 0) cannot use the other half and starts
    at 100. For those 100 s of 150 the device is partly used, and half of it is idle."""
    replay = simulate(one_gpu(tmp_path, "H,0,100,0.5,b\nW,0,50,1,b\n"), tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    assert (sim.jobs["W"].first_start, sim.jobs["W"].finish) == (100.0, 150.0)
    s = replay.summary
    assert s["fragmentation"] == {"mean_gpus": round(100 / 150, 3), "max_gpus": 1}
    assert s["utilisation"] == round((0.5 * 100 + 50) / 150, 4)
    assert s["gpu_hours"]["idle"] == round(0.5 * 100 / 3600, 3)
    samples = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert samples["fragmentation"]["max_gpus"] == 1


def test_a_share_assignment_must_name_shares_of_one_gpu(tmp_path: Path) -> None:
    path = write_scenario(
        tmp_path, workload={"trace": {"format": "itp", "path": "x.csv"}, "assign": {"gpu_share": {"weights": {"2": 1}}}}
    )
    with pytest.raises(SnapshotError, match=r"workload.assign.gpu_share.weights\[\"2\"\]: a share of one GPU"):
        simulate(path)


def test_the_bundled_mixed_example_holds_its_invariants_and_packs_shares(tmp_path: Path) -> None:
    bundled = FIXTURES / "scenarios" / "itp-cluster10-shared-inference.yaml"
    document = yaml.safe_load(bundled.read_text())
    document["workload"]["trace"]["path"] = str(CLUSTER10)
    document["workload"]["window"] = {"first": 120}  # the first 120 of its 260 jobs: the same mix, sooner
    scenario = tmp_path / "mixed.yaml"
    scenario.write_text(yaml.safe_dump(document))
    replay = simulate(scenario, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    shares = [j for j in sim.jobs.values() if j.spec.gpu_milli < 1000]
    assert len(shares) > 40 and all(j.spec.priority_class == "inference" for j in shares)
    assert replay.summary["fragmentation"]["max_gpus"] >= 1
    assert 0 < replay.summary["utilisation"] <= 1
