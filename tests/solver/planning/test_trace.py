"""Trace adapters: the ITP traces and a CSV with a column mapping become one job table; bad rows name their line."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import CLUSTER10

from gpu_preempt.models import SnapshotError
from gpu_preempt.models.scenario import TraceSpec
from gpu_preempt.planning.trace import read_trace


def test_the_bundled_itp_sample_reads_whole():
    jobs = read_trace(TraceSpec(format="itp", path=CLUSTER10.name), CLUSTER10.parent)
    assert len(jobs) == 260
    assert jobs[0].id == "5dc7d9cd-c300-9a4f-c3cd-dc2cc0935548"
    assert (jobs[0].submit, jobs[0].duration, jobs[0].gpus) == (2266647.0, 604.0, 16)
    assert sum(j.gpus for j in jobs) == sum(int(line.split(",")[3]) for line in CLUSTER10.read_text().split()[1:])


def test_a_csv_with_a_column_mapping(tmp_path: Path):
    (tmp_path / "jobs.csv").write_text("name,t,secs,g,team\nx,30,100,2,a\ny,10,50,1,b\n")
    columns = {"id": "name", "submit": "t", "duration": "secs", "gpus": "g", "queue": "team"}
    jobs = read_trace(TraceSpec(format="csv", path="jobs.csv", columns=columns), tmp_path)
    assert [(j.id, j.submit, j.queue) for j in jobs] == [("y", 10.0, "b"), ("x", 30.0, "a")]  # by submit time


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("job_id,submission_time,duration\na,1,2\n", "line 1", "missing column num_gpu (gpus)"),
        ("job_id,submission_time,duration,num_gpu\na,1,600,1\nb,2,-5,1\n", "line 3", "duration: '-5' is not"),
        ("job_id,submission_time,duration,num_gpu\na,1,600,1\nb,2,600,two\n", "line 3", "num_gpu: not a whole"),
        ("job_id,submission_time,duration,num_gpu\na,x,600,1\n", "line 2", "submission_time: not a number"),
        ("job_id,submission_time,duration,num_gpu\na,1,600,0\n", "line 2", "0 GPUs"),
        ("job_id,submission_time,duration,num_gpu\na,1,600,1\na,2,600,1\n", "line 3", "appears twice"),
        ("job_id,submission_time,duration,num_gpu\na,1,600\n", "line 2", "3 fields"),
    ],
)
def test_a_bad_row_names_its_line(tmp_path: Path, text: str, where: str, message: str):
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(SnapshotError) as caught:
        read_trace(TraceSpec(format="itp", path="t.csv"), tmp_path)
    [error] = caught.value.errors
    assert error.path.endswith(where) and message in error.message, str(error)


def test_a_csv_mapping_must_name_the_required_columns(tmp_path: Path):
    with pytest.raises(SnapshotError, match="missing duration"):
        read_trace(TraceSpec(format="csv", path="t.csv", columns={"id": "a", "submit": "b", "gpus": "c"}), tmp_path)
