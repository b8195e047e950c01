"""The operator's questions (docs/operations.md): ``audit`` (did the scheduler evict more than it had to).

The engine is imported inside each command, so that ``--help`` starts fast.
"""

from __future__ import annotations

import json

from .app import FileArg, JsonOpt, TimeOpt, WorkersOpt, command, hold_until_exit, snapshot_to_solve
from .render import print_audit

__all__ = ["audit"]


@command(example="gpu-preempt audit fixtures/kai-probe-keeps-first-victim.yaml")
def audit(
    file: FileArg,
    as_json: JsonOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
) -> None:
    """Hold KAI's own victim search against the least disruptive decision, for every reclaim and preempt of one
    cycle, on the same state: over-eviction, missed reclaims, victims freed for no one. Exit 0 whatever it finds."""
    snapshot = snapshot_to_solve(file, as_json, workers, time_limit)
    from gpu_preempt.questions import audit as run_audit

    found = run_audit(snapshot)
    hold_until_exit(found)
    if as_json:
        print(json.dumps(found.to_dict(), indent=2))
    else:
        print_audit(file, found)
