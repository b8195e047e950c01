"""Progress of long work on stderr: a rich progress display on a terminal, a one-line heartbeat every few seconds
elsewhere (a log file, CI), and what an interruption or a bad input ends it with."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpu_preempt.models import SnapshotError

from .render import err, other_kind, print_problems

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn

__all__ = ["HEARTBEAT", "Rate", "Stopped", "clock", "heartbeat", "nothing_written", "replay_progress", "stop_signals"]

HEARTBEAT = 5.0
"""Seconds between two heartbeat lines when stderr is not a terminal (``GPU_PREEMPT_HEARTBEAT`` sets another, or
``off`` for none)."""


@contextmanager
def replay_progress(
    source: Path,
    kind: str,
    *columns: ProgressColumn,
    describe: Callable[[], str],
    interrupted: Callable[[], str],
) -> Iterator[Progress]:
    """A progress display on stderr while a replay or a sweep runs (``describe()``: the heartbeat line when stderr
    is not a terminal). A scenario, sweep or trace found bad on the way ends it, and the command exits 2 with every
    problem (``source``: the ``kind`` of file the command reads; one line for a bad option), and a hint when the
    file is another kind. Ctrl-C ends it too (exit 130), saying ``interrupted()``: what was kept and what was not;
    so do SIGTERM and SIGHUP, as ``timeout``, batch systems and a closed terminal send them (exit 128 + the signal's
    number)."""
    from rich.progress import Progress

    with Progress(*columns, console=err, transient=True) as progress, heartbeat(describe), stop_signals():
        try:
            yield progress
        except SnapshotError as error:
            progress.stop()
            first = error.errors[0]
            if len(error.errors) == 1 and first.path.startswith("--"):  # an option of the command, not the file
                err.print(f"error: {first.path}: {first.message}")
            else:
                print_problems(f"{source} is not a valid {kind}", error.errors)
                hint = other_kind(source, kind)
                if hint is not None:
                    err.print(hint)
            raise typer.Exit(2) from None
        except KeyboardInterrupt as stop:
            progress.stop()
            number = stop.signal if isinstance(stop, Stopped) else signal.SIGINT
            by = "" if number == signal.SIGINT else f" by {signal.Signals(number).name}"
            err.print(f"interrupted{by}: {interrupted()}")
            raise typer.Exit(128 + number) from None


class Stopped(KeyboardInterrupt):
    """A stop asked for by a signal other than SIGINT, handled as Ctrl-C is."""

    def __init__(self, number: int) -> None:
        super().__init__(signal.Signals(number).name)
        self.signal = number


@contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Stopped` in the main thread, as SIGINT raises
    ``KeyboardInterrupt``, so the same clean-up runs; the handlers before are put back after. Elsewhere than the main
    thread (where Python cannot take signals) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number: int, _frame: object) -> None:
        raise Stopped(number)

    wanted = [s for s in ("SIGTERM", "SIGHUP") if hasattr(signal, s)]
    before = {name: signal.signal(getattr(signal, name), stop) for name in wanted}
    try:
        yield
    finally:
        for name, handler in before.items():
            signal.signal(getattr(signal, name), handler)


@contextmanager
def heartbeat(describe: Callable[[], str]) -> Iterator[None]:
    """While the block runs, ``describe()`` on stderr every :data:`HEARTBEAT` seconds, when stderr is not a
    terminal (where the progress display shows nothing) and ``GPU_PREEMPT_HEARTBEAT`` is not ``off``."""
    setting = os.environ.get("GPU_PREEMPT_HEARTBEAT", "")
    if err.is_terminal or setting.strip().lower() == "off":
        yield
        return
    try:
        every = float(setting or HEARTBEAT)
    except ValueError:
        every = HEARTBEAT
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            err.print(describe(), highlight=False)

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def nothing_written(out: Path) -> str:
    """What an interrupted command that writes the folder ``out`` kept of it."""
    return f"nothing was written to {out} (an earlier output folder there is left as it was)"


def clock(seconds: float) -> str:
    """``seconds`` as ``h:mm:ss``."""
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Rate:
    """Work done against wall time since it started: elapsed time and the time left at that rate."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self, done: float, total: float | None) -> str:
        """About how long the rest takes at the rate so far, or ``?`` before anything is done."""
        if not total or done <= 0:
            return "?"
        return clock(self.elapsed() * max(0.0, total - done) / done)
