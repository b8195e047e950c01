"""gpu-preempt: exact, explainable victim selection for GPU batch clusters.

The installed package ``gpu_preempt`` is this repository: ``gpu_preempt.models``
(the snapshot vocabulary, from ``models/``) and ``gpu_preempt.solver`` (the
decision engine, from ``solver/``). The public API is re-exported here; see
:mod:`gpu_preempt.solver` for examples.
"""

from .solver import (
    Cluster,
    CycleResult,
    Decision,
    QuotaDecision,
    Snapshot,
    SnapshotError,
    decide,
    load_snapshot,
    parse_snapshot,
    run_cycle,
    snapshot_from_data,
    verify,
    verify_cycle,
)

__version__ = "0.1.0"

__all__ = [
    "Cluster",
    "CycleResult",
    "Decision",
    "QuotaDecision",
    "Snapshot",
    "SnapshotError",
    "decide",
    "load_snapshot",
    "parse_snapshot",
    "run_cycle",
    "snapshot_from_data",
    "verify",
    "verify_cycle",
]
