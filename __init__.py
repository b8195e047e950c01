"""gpu-preempt: exact, explainable victim selection for GPU batch clusters.

The installed package ``gpu_preempt`` is this repository: ``gpu_preempt.models``
(the snapshot vocabulary, from ``models/``) and ``gpu_preempt.solver`` (the
decision engine, from ``solver/``). The public API of :mod:`gpu_preempt.solver`
(load, decide, run a cycle, verify; examples there) is re-exported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import solver
from .solver import __all__ as __all__

if TYPE_CHECKING:
    from .solver import *  # noqa: F403 - exactly the names of gpu_preempt.solver.__all__


def __getattr__(name: str) -> Any:
    """The names of :mod:`gpu_preempt.solver`, imported on first use like there."""
    if name in __all__:
        return getattr(solver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"
