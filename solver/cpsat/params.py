"""How CP-SAT searches, apart from what it decides: a budget and its clock, workers, a seed, and two settings for
small models. A :class:`~gpu_preempt.problem.records.Problem` says what to decide; these say how to search for it,
and within the budget the answer does not depend on them: ties are broken by a fixed rule (:mod:`.search`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpu_preempt.models import SolverConfig

__all__ = ["SolveParams"]


@dataclass(frozen=True)
class SolveParams:
    """The search settings of one solve (``config.solver``, the command line's ``--workers`` and ``--time-limit``).

    >>> SolveParams.of(SolverConfig(time_limit=2, workers=1))
    SolveParams(time_limit=2.0, workers=1, seed=0, clock='wall', full_linearization=False, light_presolve=False)
    """

    time_limit: float = 1.0
    """The budget of a decision: seconds on the ``wall`` clock, else units of CP-SAT's deterministic time."""
    workers: int = 0
    """CP-SAT search workers; 0: all cores."""
    seed: int = 0
    clock: Literal["wall", "work"] = "wall"
    """``work``: ``time_limit`` counts CP-SAT's deterministic time, searched by one worker (``config.solver.clock``)."""
    full_linearization: bool = False
    """Give CP-SAT's LP every constraint (``linearization_level`` 2). Victim choices without a chunk to place
    (quota enforcement) are covering problems whose optimum is proved by the LP bound; with the default level
    and one or two workers CP-SAT may not prove even a trivial one on a thousand candidates."""
    light_presolve: bool = False
    """One presolve pass, without probing or symmetry detection, and a search without inprocessing or cuts, its LP
    given every row at once. On models of a few dozen victims, solved several times each (stages, then the
    canonical tie-break), these cost more than the search they save (``benchmarks/small_models.py``)."""

    @classmethod
    def of(cls, solver: SolverConfig) -> SolveParams:
        """The settings a snapshot's ``config.solver`` gives."""
        return cls(time_limit=solver.time_limit, workers=solver.workers, seed=solver.seed, clock=solver.clock)
