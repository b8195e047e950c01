"""The CP-SAT backend: the only package of gpu-preempt that imports OR-Tools.

:func:`solve` takes a :class:`~gpu_preempt.problem.records.Problem` and
returns a :class:`~gpu_preempt.problem.solution.Solution`: the least
disruptive victims under the problem's lexicographic objective, with the
placement of the pending chunk, proved optimal or honestly marked otherwise.
It reads the closed problem (its records, quota rows, solution checks and devices: every module of
:mod:`gpu_preempt.problem` but the builder and :mod:`~gpu_preempt.formulate.queue_facts`) and nothing else of
gpu-preempt: the job solver chooses between the full problem and the reduced one
(:mod:`gpu_preempt.actions.reduced_path`).
"""

from .params import SolveParams as SolveParams
from .search import solve as solve

__all__ = ["SolveParams", "solve"]
