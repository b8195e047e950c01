"""The CP-SAT backend: the only package of gpu-preempt that imports OR-Tools.

:func:`solve` takes a :class:`~gpu_preempt.solver.problem.data.Problem` and
returns a :class:`~gpu_preempt.solver.problem.data.Solution`: the least
disruptive victims under the problem's lexicographic objective, with the
placement of the pending chunk, proved optimal or honestly marked otherwise.
:func:`.reduced.solve_reduced` solves a large decision through the exact
reductions (:mod:`gpu_preempt.solver.reduce`): the same model over the units
that can matter. Imports every layer up to ``solver.reduce``.
"""

from .search import solve as solve

__all__ = ["solve"]
