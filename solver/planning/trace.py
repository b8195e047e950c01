"""Trace adapters: each trace format becomes one canonical job table (docs/scenario-format.md, "workload").

A :class:`TraceJob` carries what a trace can say about a job: its id, submit
time and duration in seconds, GPUs in all (0: a job without GPUs; below 1: a
share of one GPU), and, when the trace has them, its queue and priority class,
its tasks (a gang), each task's CPU and memory, and the GPU models it may run on.
Everything else is assigned later (:mod:`.workload`).

* ``itp``: the Microsoft ITP (ElasticFlow) traces, ``job_id, submission_time,
  duration, num_gpu`` (docs/planning.md, "Traces");
* ``csv``: any CSV with a header, ``columns`` mapping the canonical names
  ``id, submit, duration, gpus`` (and optionally ``queue``, ``priority_class``,
  ``tasks``, ``cpu``, ``memory``, ``gpu_model``) to the file's headers; ``units``
  gives the unit of plain numbers in ``cpu`` and ``memory`` (default: cores and
  bytes; e.g. ``{cpu: m, memory: Mi}``).

A bad row is an error naming the file and line (header = line 1), never skipped.

Examples
--------
>>> import io
>>> jobs = read_rows(io.StringIO("job_id,submission_time,duration,num_gpu\\na,5,600,8\\n"), ITP_COLUMNS, "t.csv")
>>> jobs[0].id, jobs[0].submit, jobs[0].duration, jobs[0].gpus, jobs[0].queue
('a', 5.0, 600.0, 8, None)
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gpu_preempt.models import MILLI, SnapshotError, parse_quantity
from gpu_preempt.models.duration import MAX_DURATION
from gpu_preempt.models.errors import shown
from gpu_preempt.models.scenario import TraceSpec

__all__ = [
    "ITP_COLUMNS",
    "MAX_JOB_GPUS",
    "MAX_TASKS",
    "OPTIONAL",
    "REQUIRED",
    "UNITS",
    "TraceJob",
    "read_rows",
    "read_trace",
]

ITP_COLUMNS = {"id": "job_id", "submit": "submission_time", "duration": "duration", "gpus": "num_gpu"}
REQUIRED = ("id", "submit", "duration", "gpus")
OPTIONAL = ("queue", "priority_class", "tasks", "cpu", "memory", "gpu_model")
UNITS = ("cpu", "memory")
"""Columns whose plain numbers ``units`` may give a unit (a Kubernetes quantity suffix)."""
MAX_TASKS = 2**16
"""The most tasks one job of a trace may have."""
MAX_JOB_GPUS = 2**20
"""The most GPUs one job of a trace may ask for (its tasks are built one per node's worth of GPUs)."""


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace: submit time and duration in seconds (trace time), GPUs in all (0: none; below one: a share
    of one GPU, docs/snapshot-format.md, "GPU sharing"); where the trace gives them, its tasks, each task's CPU and
    memory (milli-units) and the GPU models it may run on."""

    id: str
    submit: float
    duration: float
    gpus: float
    queue: str | None = None
    priority_class: str | None = None
    tasks: int | None = None
    cpu: int | None = None
    memory: int | None = None
    gpu_model: tuple[str, ...] | None = None


def read_trace(spec: TraceSpec, base: Path) -> list[TraceJob]:
    """The canonical job table of the trace ``spec`` describes (``path`` relative to ``base``), by submit time."""
    path = base / spec.path
    if spec.format == "itp":
        if spec.columns or spec.units:
            what = "columns" if spec.columns else "units"
            raise SnapshotError.single(f"workload.trace.{what}", "the itp format has fixed columns; use format csv")
        columns = ITP_COLUMNS
    else:
        columns = dict(spec.columns)
        missing = [c for c in REQUIRED if c not in columns]
        unknown = sorted(set(columns) - set(REQUIRED) - set(OPTIONAL))
        if missing or unknown:
            what = f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(unknown)}"
            known = ", ".join((*REQUIRED, *OPTIONAL))
            raise SnapshotError.single("workload.trace.columns", f"{what} (canonical columns: {known})")
        unused = sorted(set(spec.units) - set(columns))
        if unused:
            message = "a unit for a column the trace does not map"
            raise SnapshotError.single(f"workload.trace.units.{unused[0]}", message)
    try:
        with path.open(newline="", encoding="utf-8") as file:
            jobs = read_rows(file, columns, str(path), {str(c): unit for c, unit in spec.units.items()})
    except csv.Error as err:  # a NUL byte, a field over the csv module's size limit, ...
        raise SnapshotError.single("workload.trace.path", f"{path}: not a CSV file ({err})") from None
    except FileNotFoundError:
        raise SnapshotError.single("workload.trace.path", f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SnapshotError.single("workload.trace.path", f"{path}: cannot read ({err})") from None
    return sorted(jobs, key=lambda j: j.submit)  # stable: rows with equal submit times keep the file's order


def read_rows(
    lines: Iterable[str], columns: Mapping[str, str], source: str, units: Mapping[str, str] | None = None
) -> list[TraceJob]:
    """Parse CSV ``lines`` whose header holds ``columns`` (canonical name -> header); ``units``: the unit of plain
    numbers in ``cpu`` and ``memory``."""
    units = units or {}
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
        at = f"{source} line {line}"
        gpus = _gpus(cell["gpus"], columns["gpus"], source, line)
        tasks = _tasks(cell.get("tasks", ""), columns.get("tasks", ""), at, gpus)
        cpu, memory = (_amount(cell.get(c, ""), columns.get(c, ""), units.get(c, ""), at) for c in UNITS)
        if gpus == 0 and not cpu and not memory:
            mapped = "cpu" in columns or "memory" in columns
            asked = "no cpu or memory" if mapped else "no cpu or memory column"
            raise SnapshotError.single(at, f"{columns['gpus']}: 0 GPUs and {asked}: the job asks for nothing")
        models = tuple(m.strip() for m in cell.get("gpu_model", "").split("|") if m.strip()) or None
        if models is not None and gpus == 0:
            raise SnapshotError.single(at, f"{columns['gpu_model']}: a GPU model for a job of 0 GPUs")
        jobs.append(
            TraceJob(
                job_id,
                _number(cell["submit"], columns["submit"], source, line, positive=False),
                _number(cell["duration"], columns["duration"], source, line, positive=True),
                gpus,
                cell.get("queue") or None,
                cell.get("priority_class") or None,
                tasks,
                cpu,
                memory,
                models,
            )
        )
    return jobs


def _tasks(text: str, column: str, where: str, gpus: float) -> int | None:
    """The tasks of a gang (empty: not given), over which the job's GPUs split evenly: whole GPUs each, or one
    share of a GPU each."""
    if not text:
        return None
    try:
        tasks = int(text)
    except ValueError:
        raise SnapshotError.single(where, f"{column}: not a whole number of tasks ({shown(text)})") from None
    if not 1 <= tasks <= MAX_TASKS:
        raise SnapshotError.single(where, f"{column}: {shown(tasks)} tasks; a job has 1 to {MAX_TASKS:,}")
    milli = round(gpus * MILLI)
    each, left = divmod(milli, tasks)
    if left or (each > MILLI and each % MILLI):
        message = f"{column}: {gpus:g} GPUs do not split over {tasks} tasks (whole GPUs or one share of a GPU each)"
        raise SnapshotError.single(where, message)
    return tasks


def _amount(text: str, column: str, unit: str, where: str) -> int | None:
    """A task's CPU or memory in milli-units (empty: not given): a Kubernetes quantity, or a plain number in
    ``unit``."""
    if not text:
        return None
    plain = text.replace(".", "", 1).isdigit()
    try:
        return parse_quantity(text + unit if plain else text)
    except ValueError as error:
        raise SnapshotError.single(where, f"{column}: {error}") from None


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
    """Whole GPUs (0: a job without GPUs), or a share of one GPU below 1 in thousandths (``0.5``, ``0.125``)."""
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
    if not 0 <= whole <= MAX_JOB_GPUS:
        raise SnapshotError.single(where, f"{column}: {shown(whole)} GPUs; a job asks for 0 to {MAX_JOB_GPUS:,}")
    return whole
