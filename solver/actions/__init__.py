"""The actions: one job's decision, the scheduling cycle, quota enforcement, and what they leave.

:mod:`.job_solver` decides one action for one pending job (reductions, the
greedy baseline of :mod:`.greedy`, CP-SAT, reasons); :mod:`.cycle` runs every
action over every pending job; :mod:`.quota_enforcement` brings queues back
within their limit (with :mod:`.quota_hint`); :mod:`.next_snapshot` writes the
state a cycle leaves. Imports every layer below: models, state, rules, problem,
reduce, cpsat, explain.
"""

__all__ = []
