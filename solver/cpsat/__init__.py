"""The CP-SAT backend: the only package of gpu-preempt that imports OR-Tools.

:func:`solve` takes a :class:`~solver.problem.Problem` and returns a
:class:`~solver.problem.Solution`: the least disruptive victims under the
problem's lexicographic objective, with the placement of the pending chunk,
proved optimal or honestly marked otherwise.
"""

from .search import solve as solve

__all__ = ["solve"]
