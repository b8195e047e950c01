"""gpu-preempt: exact, explainable victim selection for GPU batch clusters.

The installed package ``gpu_preempt`` is this repository: ``gpu_preempt.models``
(the snapshot vocabulary, from ``models/``) and ``gpu_preempt.solver`` (the
decision engine, from ``solver/``). The public API of :mod:`gpu_preempt.solver`
(load, decide, run a cycle, verify; examples there) is re-exported here.
"""

from .solver import *  # noqa: F403 - exactly the names of gpu_preempt.solver.__all__
from .solver import __all__ as __all__

__version__ = "0.1.0"
