"""Explanations in words: why a decision is infeasible, what protected the jobs not taken, a snapshot's summary.

:mod:`.reasons` may re-solve a problem with one rule family left out, so it sits
above the solver (imports up to ``solver.cpsat``); :mod:`.summary` is what
``gpu-preempt validate`` reports.
"""

__all__ = []
