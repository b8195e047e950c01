"""Exact reductions that keep large decisions small.

A cluster of 10,000 nodes has tens of thousands of candidate victims, but a
64-GPU gang needs eight nodes. These modules shrink the problem before CP-SAT
sees it, each with a short proof that the optimum is kept:

* :mod:`.units` splits the candidates into independent *units* (a node with its
  single-node victims; or the nodes a multi-node victim spans, kept together so
  that gangs stay exact) and drops what can never help (nodes where even
  evicting everything leaves no room for one task, unschedulable nodes);
* :mod:`.options` finds, per unit and per number of tasks it could host, the
  least disruptive way to make that room (the undominated victim options);
* :mod:`.select` keeps, for each number of tasks, only the best ``K`` units
  (``K`` = tasks to place), using lower bounds so most units are never
  enumerated, and groups identical units into classes with counts.

The reduced problem ignores the rows that bind units together (queue limits,
the reclaim guarantee, the saturation rule). Its optimum is therefore a lower
bound; when the solution it yields also satisfies every row, it is optimal for
the whole problem. Otherwise the caller solves the full model.

The reductions never build or solve: they read a :class:`~.pipeline.Demand` and
answer with a :class:`~.pipeline.Restriction`; :mod:`gpu_preempt.actions.reduced_path`
has the formulation write the restricted problem and CP-SAT solve it. Imports
``models``, ``state``, ``rules``, ``problem`` and the formulation's node rooms
(``formulate.rooms``), so that the reductions count a node as the problem does.
"""

__all__ = []
