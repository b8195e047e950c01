"""gpu-preempt: exact, explainable victim selection for GPU batch clusters, and its public API.

The package is ``solver/`` of the repository, with ``models/`` as :mod:`gpu_preempt.models` (the snapshot
vocabulary).

A folder per role, and imports go one way only (docs/architecture.md; the test
``tests/test_architecture.py`` fails on an import against the flow)::

    models <- state <- rules <- formulate <- reduce <- actions <- planning <- cli
    models <- problem <- cpsat <- explain <- actions
    check (the verifiers): models, state and rules only (planning may use them)
    inventory (NVML): models only

``state`` is the cluster, queue tree, usage and fair share; ``rules`` one module
a rule; ``problem`` the victim problem in numbers, closed (it imports ``models`` only);
``formulate`` makes one from the state and the rules; ``reduce`` the
exact reductions; ``cpsat`` the only code that imports OR-Tools; ``explain``
reasons in words (it may re-solve a relaxed problem); ``actions`` the job
solver, the cycle, quota enforcement and the greedy baseline; ``planning`` the
capacity-planning replay; ``check`` the independent verifiers; ``cli`` the
command line.

Examples
--------
Queue ``a`` (deserved 4 GPUs) runs two 4-GPU jobs on the only node; queue ``b``
(deserved 4) waits for 4 GPUs. ``a`` is above its quota by one job, and the one
that started last loses the least work:

>>> from gpu_preempt import decide, parse_snapshot, run_cycle, verify, verify_cycle
>>> snapshot = parse_snapshot('''
... now: 2026-01-01T12:00:00Z
... nodes: [{name: n0, resources: {gpu: 8}}]
... queues: [{name: a, deserved: {gpu: 4}}, {name: b, deserved: {gpu: 4}}]
... jobs:
... - {name: old, queue: a, task_resources: {gpu: 4}, started_at: 2026-01-01T09:00:00Z, tasks: [{node: n0}]}
... - {name: new, queue: a, task_resources: {gpu: 4}, started_at: 2026-01-01T11:00:00Z, tasks: [{node: n0}]}
... - {name: want, queue: b, task_resources: {gpu: 4}, tasks: [{}]}
... ''')
>>> decision = decide(snapshot, "want")
>>> decision.action, decision.outcome, [v.job for v in decision.victims], decision.optimal
('reclaim', 'pipelined', ['new'], True)
>>> verify(snapshot, decision)
[]

A whole cycle, each decision applied before the next, and every decision re-checked:

>>> result = run_cycle(snapshot)
>>> [(d.job, d.action, d.outcome) for d in result.decisions]
[('want', 'allocate', 'infeasible'), ('want', 'reclaim', 'pipelined')]
>>> verify_cycle(result)
[]

Will a job fit if it is submitted? :func:`whatif` gives the decision it would get now, and the nearest variants that
run when it would not; :func:`risk` ranks the running jobs by the smallest request that takes each;
:func:`forecast` estimates when the pending jobs start. Did KAI's own victim search evict more than it had to?
:func:`audit` holds each of its decisions of one cycle against the least disruptive one on the same state
(docs/operations.md).

Capacity planning: :func:`simulate` replays a scenario (a cluster, queues, a job trace) through the same engine and
:func:`sweep` replays it over axes (sizes, policies, seeds); see their examples and docs/planning.md.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from gpu_preempt.models import (
        GpuPreemptError,
        Snapshot,
        SnapshotError,
        UnknownJobError,
        load_snapshot,
        parse_snapshot,
        snapshot_from_data,
    )
    from gpu_preempt.models.decision import Decision
    from gpu_preempt.models.quota_decision import QuotaDecision

    from .actions.cycle import CycleResult, run_cycle
    from .api import decide, verify, verify_cycle
    from .planning.run import SimulationResult, simulate
    from .planning.run_sweep import SweepResult, sweep
    from .questions import Audit, Forecast, RiskReport, WhatIf, audit, audit_preemption, forecast, risk, whatif
    from .state.cluster import ClusterState

__all__ = [
    "Audit",
    "ClusterState",
    "CycleResult",
    "Decision",
    "Forecast",
    "GpuPreemptError",
    "QuotaDecision",
    "RiskReport",
    "SimulationResult",
    "Snapshot",
    "SnapshotError",
    "SweepResult",
    "UnknownJobError",
    "WhatIf",
    "audit",
    "audit_preemption",
    "decide",
    "forecast",
    "load_snapshot",
    "parse_snapshot",
    "risk",
    "run_cycle",
    "simulate",
    "snapshot_from_data",
    "sweep",
    "verify",
    "verify_cycle",
    "whatif",
]

_HOMES = {
    "Audit": "gpu_preempt.questions",
    "audit": "gpu_preempt.questions",
    "audit_preemption": "gpu_preempt.questions",
    "WhatIf": "gpu_preempt.questions",
    "RiskReport": "gpu_preempt.questions",
    "Forecast": "gpu_preempt.questions",
    "forecast": "gpu_preempt.questions",
    "risk": "gpu_preempt.questions",
    "whatif": "gpu_preempt.questions",
    "ClusterState": "gpu_preempt.state.cluster",
    "CycleResult": "gpu_preempt.actions.cycle",
    "Decision": "gpu_preempt.models.decision",
    "GpuPreemptError": "gpu_preempt.models",
    "QuotaDecision": "gpu_preempt.models.quota_decision",
    "Snapshot": "gpu_preempt.models",
    "SnapshotError": "gpu_preempt.models",
    "UnknownJobError": "gpu_preempt.models",
    "decide": "gpu_preempt.api",
    "load_snapshot": "gpu_preempt.models",
    "parse_snapshot": "gpu_preempt.models",
    "run_cycle": "gpu_preempt.actions.cycle",
    "SimulationResult": "gpu_preempt.planning.run",
    "simulate": "gpu_preempt.planning.run",
    "snapshot_from_data": "gpu_preempt.models",
    "SweepResult": "gpu_preempt.planning.run_sweep",
    "sweep": "gpu_preempt.planning.run_sweep",
    "verify": "gpu_preempt.api",
    "verify_cycle": "gpu_preempt.api",
}
"""Where each public name lives. They are imported on first use (PEP 562), so that importing a submodule (the CLI,
the plots) does not load OR-Tools and the whole engine."""


def __getattr__(name: str) -> _typing.Any:
    if name == "__version__":  # the installed version, looked up when asked: importlib.metadata is slow to import
        import importlib.metadata

        return importlib.metadata.version("gpu-preempt")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API, the version and the subpackages (no helper imported here)."""
    packages = [name for name in globals() if not name.startswith("_") and name not in __all__]
    return sorted([*__all__, "__version__", *packages])
