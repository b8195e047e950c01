"""Other traces where they serve: Philly runtimes as job durations, Helios per-VC quotas as queues (and their daily
changes as scheduled changes); bad files exit 2 naming the field and the line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES
from helpers import CLUSTER10, write_scenario
from typer.testing import CliRunner

from gpu_preempt.cli import app
from gpu_preempt.planning.run import load_scenario, simulate

RUN = CliRunner()
QUOTAS = "date,vcA,vcB,vcC,total\n2020-01-01,6,2,0,8\n2020-01-02,6,2,0,8\n2020-01-03,2,6,0,8\n"


def helios(tmp_path: Path, text: str = QUOTAS, **source: object) -> Path:
    (tmp_path / "quotas.csv").write_text(text)
    trace = "id,submit,duration,gpus\nj0,0,600,1\nj1,10,600,2\nj2,259200,600,1\n"
    (tmp_path / "jobs.csv").write_text(trace)
    columns = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus"}
    return write_scenario(
        tmp_path,
        queues=[],
        queues_from={"format": "helios", "path": "quotas.csv", **source},
        workload={"trace": {"format": "csv", "path": "jobs.csv", "columns": columns}},
    )


def test_helios_quotas_become_queues_scaled_to_the_cluster(tmp_path: Path):
    _, workload = load_scenario(helios(tmp_path, date="2020-01-01"))
    deserved = {q.name: q.deserved["gpu"] // 1000 for q in workload.snapshot.queues}
    assert deserved == {"vcA": 12, "vcB": 4, "vcC": 0}  # 6:2:0 scaled to 2 x 8 GPUs
    assert workload.events == []
    assert any("Helios VC quotas of 2020-01-01" in s for s in workload.synthetic)


def test_later_days_are_replayed_as_quota_changes_one_per_simulated_day(tmp_path: Path):
    path = helios(tmp_path, date="2020-01-01", days=5, fit=False)
    _, workload = load_scenario(path)
    assert [(e.at, e.set) for e in workload.events] == [
        (2 * 86400.0, {"queues.vcA.deserved.gpu": 2, "queues.vcB.deserved.gpu": 6})
    ]
    replay = simulate(path, None)  # the last job arrives on day 3, after the change
    assert {q.name: q.deserved["gpu"] // 1000 for q in replay.simulator.queues}["vcB"] == 6
    assert replay.summary["overall"]["completed"] == 3


def test_the_bundled_helios_scenario_runs(tmp_path: Path):
    replay = simulate(FIXTURES / "scenarios" / "itp-cluster10-helios-quotas.yaml", None)
    assert len(replay.simulator.queues) == 25 and replay.summary["overall"]["completed"] == 260
    assert sum(q.deserved["gpu"] for q in replay.workload.snapshot.queues) == 256 * 1000


def test_philly_runtimes_become_durations(tmp_path: Path):
    (tmp_path / "runtime.csv").write_text("runtime\n0.0\n100\n200\n300\n")
    workload = {
        "trace": {"format": "itp", "path": str(CLUSTER10)},
        "window": {"first": 50},
        "durations": {"format": "philly", "path": "runtime.csv", "minimum": "30s"},
    }
    _, found = load_scenario(write_scenario(tmp_path, workload=workload))
    durations = [j.duration for j in found.jobs]
    assert set(durations) <= {30.0, 100.0, 200.0, 300.0} and len(set(durations)) == 4
    assert any("Philly runtimes" in s for s in found.synthetic)
    _, again = load_scenario(write_scenario(tmp_path, workload=workload))
    assert [j.duration for j in again.jobs] == durations  # the seed decides


@pytest.mark.parametrize(
    ("kind", "change", "message"),
    [
        ("helios", {"date": "2021-01-01"}, "queues_from.date: no such day '2021-01-01'"),
        ("helios", {"text": "date,vcA,total\n2020-01-01,4,5\n"}, "quotas.csv:2: total 5 is not the sum"),
        ("helios", {"text": "date,vcA\n2020-01-01,x\n"}, "quotas.csv:2: GPU counts must be whole numbers"),
        ("philly", {"text": "runtime\n10\n-3\n"}, "runtime.csv:3: runtime must be a finite number >= 0"),
        ("both", {}, "queues_from: give queues or queues_from, not both"),
    ],
)
def test_bad_files_exit_2_naming_the_field_and_line(tmp_path: Path, kind: str, change: dict[str, str], message: str):
    if kind == "helios":
        text = change.pop("text", QUOTAS)
        path = helios(tmp_path, text, **change)
    elif kind == "philly":
        (tmp_path / "runtime.csv").write_text(change["text"])
        workload = {
            "trace": {"format": "itp", "path": str(CLUSTER10)},
            "durations": {"format": "philly", "path": "runtime.csv"},
        }
        path = write_scenario(tmp_path, workload=workload)
    else:
        path = helios(tmp_path)
        document = yaml.safe_load(path.read_text())
        document["queues"] = [{"name": "a", "deserved": {"gpu": 8}}]
        path.write_text(yaml.safe_dump(document))
    out = tmp_path / "out"
    result = RUN.invoke(app, ["simulate", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not out.exists()
