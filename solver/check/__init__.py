"""Independent verifiers: every decision re-checked in plain Python.

The checks read the snapshot's state and the rules' definitions, never the
problem, the reductions or a solver (``models``, ``solver.state`` and
``solver.rules`` only), so a modelling mistake cannot hide itself.
"""

__all__ = []
