"""The ``gpu-preempt`` command line: one module per command group, all printing in :mod:`.render`.

``validate FILE`` checks a snapshot and summarizes it, ``schema`` prints its
JSON Schema (:mod:`.snapshot`); ``solve`` decides for one pending job, ``cycle``
runs a whole scheduling cycle, ``enforce-quota`` brings queues above their limit
back within it (:mod:`.decide`); ``inventory`` lists this machine's GPUs through
NVML (:mod:`.inventory`); ``simulate`` replays a capacity-planning scenario
(:mod:`.simulate`) and ``sweep`` runs it over axes (:mod:`.sweep`); ``import`` reads Kubernetes objects into a
snapshot and ``plan`` writes a decision's evictions for review (:mod:`.kube`). Exit codes are in :mod:`.app`.
"""

from __future__ import annotations

from typing import Any

from . import decide, inventory, kube, simulate, snapshot, sweep
from .app import app

__all__ = ["app", "decide", "inventory", "kube", "main", "simulate", "snapshot", "sweep"]


def main() -> Any:
    """Console-script entry point."""
    return app()
