"""Where a sweep's runs are replayed: this process, local worker processes, or a Ray cluster (docs/scenario-format.md).

Every backend calls the same function (:func:`~gpu_preempt.planning.sweep.replay_document`) on the same
documents and hands back summaries keyed by run, so the results do not depend on the backend or on the number of
workers. Runs already in the cache are not replayed.

* ``local`` with one worker: in this process, one run after the other;
* ``local`` with N workers: N processes (``spawn``: no state shared with this one);
* ``ray``: one task per run on the cluster ``ray.init()`` finds (``RAY_ADDRESS``, else a local instance);
  Ray is an optional extra (``pip install gpu-preempt[ray]``).
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Literal

from gpu_preempt.models import SnapshotError

from .sweep import Cache, Run, replay_document

__all__ = ["Backend", "Done", "replay_runs"]

Backend = Literal["local", "ray"]
Done = Callable[[Run, bool], None]
"""Called after each run with whether it came from the cache."""


def replay_runs(
    runs: list[Run],
    base_dir: Path,
    *,
    cache: Cache | None = None,
    backend: Backend = "local",
    workers: int = 1,
    on_done: Done | None = None,
) -> dict[str, dict[str, Any]]:
    """The summary of every run, by run key; raises :class:`SnapshotError` if a run's input is bad."""
    results: dict[str, dict[str, Any]] = {}
    todo: dict[str, Run] = {}
    for run in runs:
        if run.key in results or run.key in todo:
            continue
        found = cache.get(run.key) if cache is not None else None
        if found is not None:
            results[run.key] = found
            if on_done is not None:
                on_done(run, True)
        else:
            todo[run.key] = run
    if backend == "ray":
        replayed = _ray(list(todo.values()), base_dir)
    elif workers > 1 and len(todo) > 1:
        replayed = _processes(list(todo.values()), base_dir, workers)
    else:
        replayed = ((run, replay_document(run.document, str(base_dir))) for run in todo.values())
    errors = []
    for run, figures in replayed:
        if "error" in figures:
            label = ", ".join(f"{p}={v}" for p, v in run.axes)
            errors += [f"{problem} (in the run {label})" for problem in figures["error"]]
            continue
        results[run.key] = figures
        if cache is not None:
            cache.put(run.key, figures)
        if on_done is not None:
            on_done(run, False)
    if errors:
        raise SnapshotError.single("", "; ".join(errors))
    return results


def _processes(runs: list[Run], base_dir: Path, workers: int) -> Iterator[tuple[Run, dict[str, Any]]]:
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        futures = {pool.submit(replay_document, run.document, str(base_dir)): run for run in runs}
        for future in as_completed(futures):
            yield futures[future], future.result()
    except BaseException:  # Ctrl-C, a stop signal or a failed run: no run is waited for
        pool.shutdown(wait=False, cancel_futures=True)
        _stop_workers(pool)
        raise
    pool.shutdown()


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the workers still replaying: a signal sent to this process alone (SIGTERM from ``timeout``) does not
    reach them, and the interpreter would wait for their runs at exit."""
    stop = getattr(pool, "terminate_workers", None)  # Python 3.14
    if stop is not None:
        stop()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _ray(runs: list[Run], base_dir: Path) -> Iterator[tuple[Run, dict[str, Any]]]:
    try:
        import ray
    except ImportError:
        raise SnapshotError.single("--backend", "ray is an optional extra: pip install 'gpu-preempt[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        remote = ray.remote(num_cpus=1)(replay_document)
        refs = {remote.remote(run.document, str(base_dir)): run for run in runs}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)
    finally:
        if started:
            ray.shutdown()
