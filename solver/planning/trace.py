"""Trace adapters: each trace format becomes one canonical job table (docs/scenario-format.md, "workload").

A :class:`TraceJob` carries what a trace can say about a job: its id, submit
time and duration in seconds, GPUs in all, and, when the trace has them, its
queue and priority class. Everything else is assigned later (:mod:`.workload`).

* ``itp``: the Microsoft ITP (ElasticFlow) traces, ``job_id, submission_time,
  duration, num_gpu`` (docs/planning.md, "Traces");
* ``csv``: any CSV with a header, ``columns`` mapping the canonical names
  ``id, submit, duration, gpus`` (and optionally ``queue``, ``priority_class``)
  to the file's headers.

A bad row is an error naming the file and line (header = line 1), never skipped.

Examples
--------
>>> import io
>>> jobs = read_rows(io.StringIO("job_id,submission_time,duration,num_gpu\\na,5,600,8\\n"), ITP_COLUMNS, "t.csv")
>>> jobs[0]
TraceJob(id='a', submit=5.0, duration=600.0, gpus=8, queue=None, priority_class=None)
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gpu_preempt.models import MILLI, SnapshotError
from gpu_preempt.models.duration import MAX_DURATION
from gpu_preempt.models.errors import shown
from gpu_preempt.models.scenario import TraceSpec

__all__ = ["ITP_COLUMNS", "MAX_JOB_GPUS", "OPTIONAL", "REQUIRED", "TraceJob", "read_rows", "read_trace"]

ITP_COLUMNS = {"id": "job_id", "submit": "submission_time", "duration": "duration", "gpus": "num_gpu"}
REQUIRED = ("id", "submit", "duration", "gpus")
OPTIONAL = ("queue", "priority_class")
MAX_JOB_GPUS = 2**20
"""The most GPUs one job of a trace may ask for (its tasks are built one per node's worth of GPUs)."""


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace: submit time and duration in seconds (trace time), GPUs in all (below one: a share of one
    GPU, docs/snapshot-format.md, "GPU sharing")."""

    id: str
    submit: float
    duration: float
    gpus: float
    queue: str | None = None
    priority_class: str | None = None


def read_trace(spec: TraceSpec, base: Path) -> list[TraceJob]:
    """The canonical job table of the trace ``spec`` describes (``path`` relative to ``base``), by submit time."""
    path = base / spec.path
    if spec.format == "itp":
        if spec.columns:
            raise SnapshotError.single("workload.trace.columns", "the itp format has fixed columns; use format csv")
        columns = ITP_COLUMNS
    else:
        columns = dict(spec.columns)
        missing = [c for c in REQUIRED if c not in columns]
        unknown = sorted(set(columns) - set(REQUIRED) - set(OPTIONAL))
        if missing or unknown:
            what = f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(unknown)}"
            known = ", ".join((*REQUIRED, *OPTIONAL))
            raise SnapshotError.single("workload.trace.columns", f"{what} (canonical columns: {known})")
    try:
        with path.open(newline="", encoding="utf-8") as file:
            jobs = read_rows(file, columns, str(path))
    except csv.Error as err:  # a NUL byte, a field over the csv module's size limit, ...
        raise SnapshotError.single("workload.trace.path", f"{path}: not a CSV file ({err})") from None
    except FileNotFoundError:
        raise SnapshotError.single("workload.trace.path", f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SnapshotError.single("workload.trace.path", f"{path}: cannot read ({err})") from None
    return sorted(jobs, key=lambda j: j.submit)  # stable: rows with equal submit times keep the file's order


def read_rows(lines: Iterable[str], columns: Mapping[str, str], source: str) -> list[TraceJob]:
    """Parse CSV ``lines`` whose header holds ``columns`` (canonical name -> header)."""
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        raise SnapshotError.single(source, "empty file: expected a header line")
    index = {name: i for i, name in enumerate(h.strip() for h in header)}
    absent = [f"{columns[c]} ({c})" for c in columns if columns[c] not in index]
    if absent:
        raise SnapshotError.single(f"{source} line 1", f"missing column {', '.join(absent)}")
    where = {c: index[h] for c, h in columns.items()}
    jobs: list[TraceJob] = []
    seen: set[str] = set()
    for line, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise SnapshotError.single(f"{source} line {line}", f"{len(row)} fields, the header has {len(header)}")
        cell = {c: row[i].strip() for c, i in where.items()}
        job_id = cell["id"]
        if not job_id:
            raise SnapshotError.single(f"{source} line {line}", f"{columns['id']}: empty job id")
        if job_id in seen:
            raise SnapshotError.single(f"{source} line {line}", f"{columns['id']}: job {shown(job_id)} appears twice")
        seen.add(job_id)
        jobs.append(
            TraceJob(
                job_id,
                _number(cell["submit"], columns["submit"], source, line, positive=False),
                _number(cell["duration"], columns["duration"], source, line, positive=True),
                _gpus(cell["gpus"], columns["gpus"], source, line),
                cell.get("queue") or None,
                cell.get("priority_class") or None,
            )
        )
    return jobs


def _number(text: str, column: str, source: str, line: int, *, positive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SnapshotError.single(f"{source} line {line}", f"{column}: not a number ({shown(text)})") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0) or value > MAX_DURATION:
        need = "a positive number of seconds" if positive else "a number of seconds >= 0"
        message = f"{column}: {shown(text)} is not {need}, up to 10,000 years"
        raise SnapshotError.single(f"{source} line {line}", message)
    return value


def _gpus(text: str, column: str, source: str, line: int) -> float:
    """Whole GPUs, or a share of one GPU below 1 in thousandths (``0.5``, ``0.125``)."""
    where = f"{source} line {line}"
    try:
        whole = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        milli = value * MILLI
        if not (0 < value < 1 and abs(milli - round(milli)) < 1e-6):
            why = "a share of one GPU is below 1, in thousandths" if math.isfinite(value) and 0 < value < 1 else ""
            message = f"{column}: not a whole number of GPUs, nor a share of one GPU ({shown(text)})"
            raise SnapshotError.single(where, f"{message}{': ' + why if why else ''}") from None
        return round(milli) / MILLI
    if not 1 <= whole <= MAX_JOB_GPUS:
        raise SnapshotError.single(where, f"{column}: {shown(whole)} GPUs; a job needs 1 to {MAX_JOB_GPUS:,}")
    return whole
