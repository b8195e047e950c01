"""The ``gpu-preempt`` command line: one module per command group, all printing in :mod:`.render`.

``validate FILE`` checks a snapshot and summarizes it, ``schema`` prints its
JSON Schema (:mod:`.snapshot`); ``solve`` decides for one pending job, ``cycle``
runs a whole scheduling cycle, ``enforce-quota`` brings queues above their limit
back within it (:mod:`.decide`); ``inventory`` lists this machine's GPUs through
NVML (:mod:`.inventory`); ``simulate`` replays a capacity-planning scenario
(:mod:`.simulate`) and ``sweep`` runs it over axes (:mod:`.sweep`); ``import`` reads Kubernetes objects into a
snapshot and ``plan`` writes a decision's evictions for review (:mod:`.kube`); ``audit`` holds KAI's own victim
search against the minimum (:mod:`.questions`). Exit codes are in :mod:`.app`.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from typing import Any

from . import decide, inventory, kube, questions, simulate, snapshot, sweep
from .app import OwnProcess, app

__all__ = ["app", "decide", "inventory", "kube", "main", "questions", "simulate", "snapshot", "sweep"]


def main() -> Any:
    """Console-script entry point: run the command, flush its output, and end the process without freeing the heap.

    Freeing a 100,000-node snapshot object by object takes seconds after the answer is printed; the operating system
    reclaims the memory at once. The usual exit (``atexit`` handlers, finalizers) is kept when child processes or
    Ray are running, so that they are shut down properly.
    """
    OwnProcess.ours = True
    try:
        app()
        code: Any = 0
    except SystemExit as done:
        code = done.code
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    if multiprocessing.active_children() or "ray" in sys.modules:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
