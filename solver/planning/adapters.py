"""Other public traces where they serve a replay (docs/scenario-format.md, "workload"; docs/planning.md, "Traces").

* **Philly runtimes** (``workload.durations: {format: philly}``): the Philly
  trace's task runtimes (one ``runtime`` column of seconds, 83,154 rows) as a
  distribution. Each job keeps its arrival and size but draws its duration: the
  empirical quantile at a number fixed by the seed and the job's id
  (:func:`runtime_at`), raised to ``minimum`` (Philly records zeros).
* **Helios VC sizes** (``queues_from: {format: helios}``): SenseTime Helios'
  ``cluster_gpu_number.csv`` (a ``date`` column, one column per virtual cluster,
  a ``total``) as leaf queues, one per VC, deserved = its GPUs on ``date``;
  the default queue assignment then weights VCs by those GPUs. With ``fit``
  the quotas are scaled to add up to the cluster's GPUs (largest remainders, so
  the sum is exact); ``days`` later days become quota changes, one per day of
  simulated time.

* **PAI machines** (``cluster: {machines: {format: pai}}``): Alibaba PAI's
  ``pai_machine_spec.csv`` (no header: machine, gpu_type, cap_cpu, cap_mem in GB,
  cap_gpu) as node groups, one per kind of machine (GPU type, GPUs, CPUs and
  memory; the machines without GPUs too), in order of first appearance; ``scale``
  keeps that share of each kind (rounded, at least one machine).

A bad row is an error naming the file and line (header = line 1; the machine table has none).

Examples
--------
>>> runtime_at([10.0, 20.0, 30.0, 40.0], 0.5)
30.0
>>> fit_quotas({"a": 72, "b": 64, "c": 0}, 100)
{'a': 53, 'b': 47, 'c': 0}
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_preempt.models import SnapshotError
from gpu_preempt.models.errors import shown

__all__ = ["Quotas", "fit_quotas", "helios_queues", "read_machines", "read_quotas", "read_runtimes", "runtime_at"]


def read_runtimes(path: Path, where: str) -> list[float]:
    """The sorted runtimes of a Philly runtime file; ``where`` names the scenario field in errors."""
    header, body = _rows(path, where)
    if header != ["runtime"]:
        raise SnapshotError.single(where, f"{path}:1: expected the one column 'runtime', got {header}")
    found = []
    for line, row in body:
        try:
            value = float(row[0])
        except (ValueError, IndexError):
            raise SnapshotError.single(where, f"{path}:{line}: runtime is not a number: {row}") from None
        if not math.isfinite(value) or value < 0:
            raise SnapshotError.single(where, f"{path}:{line}: runtime must be a finite number >= 0, got {value}")
        found.append(value)
    if not found:
        raise SnapshotError.single(where, f"{path}: no runtimes")
    return sorted(found)


def runtime_at(runtimes: list[float], u: float) -> float:
    """The empirical quantile of the sorted ``runtimes`` at ``u`` in [0, 1) (the value with ``u`` of them below)."""
    return runtimes[min(len(runtimes) - 1, int(u * len(runtimes)))]


@dataclass(frozen=True)
class Quotas:
    """GPUs per virtual cluster on each day of a quota file, in file order."""

    days: list[str]
    gpus: list[dict[str, int]]

    def on(self, date: str | None, where: str) -> int:
        """The index of ``date`` (``None``: the first day)."""
        if date is None:
            return 0
        if date not in self.days:
            held = f"the file holds {self.days[0]} to {self.days[-1]}"
            raise SnapshotError.single(where, f"no such day {shown(date)} ({held})")
        return self.days.index(date)


def read_quotas(path: Path, where: str) -> Quotas:
    """A Helios ``cluster_gpu_number.csv``: ``date``, one column per VC, optionally ``total`` (checked)."""
    header, body = _rows(path, where)
    if not header or header[0] != "date":
        raise SnapshotError.single(where, f"{path}:1: the first column must be 'date', got {header[:1]}")
    vcs = [h for h in header[1:] if h != "total"]
    days, gpus = [], []
    for line, row in body:
        if len(row) != len(header):
            raise SnapshotError.single(where, f"{path}:{line}: {len(row)} fields, the header has {len(header)}")
        entry = dict(zip(header, row, strict=True))
        try:
            counts = {vc: int(entry[vc]) for vc in vcs}
        except ValueError:
            raise SnapshotError.single(where, f"{path}:{line}: GPU counts must be whole numbers") from None
        if any(c < 0 for c in counts.values()):
            raise SnapshotError.single(where, f"{path}:{line}: GPU counts must be >= 0")
        if "total" in entry and entry["total"].strip() and int(entry["total"]) != sum(counts.values()):
            raise SnapshotError.single(where, f"{path}:{line}: total {entry['total']} is not the sum of the VCs")
        days.append(entry["date"])
        gpus.append(counts)
    if not days:
        raise SnapshotError.single(where, f"{path}: no days")
    return Quotas(days, gpus)


def fit_quotas(quotas: dict[str, int], total: int) -> dict[str, int]:
    """``quotas`` scaled to add up to ``total`` exactly (largest remainders; ties by name)."""
    held = sum(quotas.values())
    if held == 0:
        return dict(quotas)
    exact = {vc: q * total / held for vc, q in quotas.items()}
    out = {vc: math.floor(x) for vc, x in exact.items()}
    left = total - sum(out.values())
    for vc in sorted(exact, key=lambda v: (-(exact[v] - out[v]), v))[:left]:
        out[vc] += 1
    return out


def helios_queues(
    quotas: Quotas, first: int, days: int, gpus: int | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Queue documents for the day ``first`` and the scheduled changes of the ``days`` after it (``gpus``: fit to)."""

    def day(index: int) -> dict[str, int]:
        counts = quotas.gpus[index]
        return fit_quotas(counts, gpus) if gpus is not None else dict(counts)

    unlimited = {"cpu": "unlimited", "memory": "unlimited"}
    queues = [{"name": vc, "deserved": {"gpu": n, **unlimited}} for vc, n in day(first).items()]
    changes = []
    before = day(first)
    for offset, index in enumerate(range(first + 1, min(len(quotas.days), first + 1 + days)), start=1):
        now = day(index)
        changed = {f"queues.{vc}.deserved.gpu": n for vc, n in now.items() if n != before[vc]}
        if changed:
            changes.append({"at": offset * 86400.0, "set": changed})
        before = now
    return queues, changes


def read_machines(path: Path, where: str, scale: float) -> list[dict[str, Any]]:
    """Node group documents of a PAI machine table (see the module docstring)."""
    header, body = _rows(path, where)
    kinds: dict[tuple[str, int, int, int], int] = {}
    for line, row in [(1, header), *body]:
        if len(row) != 5:
            raise SnapshotError.single(where, f"{path}:{line}: {len(row)} fields, a machine has 5")
        _, model, cpu_text, memory_text, gpus_text = row
        try:
            kind = (model, int(gpus_text), int(cpu_text), int(memory_text))
        except ValueError:
            raise SnapshotError.single(
                where, f"{path}:{line}: cap_cpu, cap_mem and cap_gpu must be whole numbers"
            ) from None
        if min(kind[1:]) < 0:
            raise SnapshotError.single(where, f"{path}:{line}: cap_cpu, cap_mem and cap_gpu must be >= 0")
        kinds[kind] = kinds.get(kind, 0) + 1
    groups = []
    for (gpu_type, gpus, cpu, memory), count in kinds.items():
        alike = sum(1 for k in kinds if k[0] == gpu_type and bool(k[1]) == bool(gpus))
        name = gpu_type.lower() if alike == 1 else f"{gpu_type}-{memory}g".lower()
        group: dict[str, Any] = {
            "name": name if gpus else f"{name}-cpu" if gpu_type.lower() != "cpu" else name,
            "count": max(1, round(count * scale)),
            "gpu": gpus,
            "cpu": str(cpu),
            "memory": f"{memory}G",
        }
        if gpus:
            group["gpu_model"] = gpu_type
        groups.append(group)
    if not any(g["gpu"] for g in groups):
        raise SnapshotError.single(where, f"{path}: no machine with GPUs")
    return groups


def _rows(path: Path, where: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the non-blank rows with their line numbers."""
    try:
        with path.open(newline="", encoding="utf-8") as file:
            rows = [row for row in csv.reader(file)]
    except FileNotFoundError:
        raise SnapshotError.single(where, f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise SnapshotError.single(where, f"{path}: cannot read ({err})") from None
    if not rows:
        raise SnapshotError.single(where, f"{path}: empty file")
    body = [(i, [c.strip() for c in row]) for i, row in enumerate(rows[1:], start=2) if any(c.strip() for c in row)]
    return [h.strip() for h in rows[0]], body
