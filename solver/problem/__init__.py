"""The victim problem in numbers, and the builder that makes it from the state and the rules.

:mod:`.data` holds the solver-neutral problem (nodes' room, the chunk to place,
the candidates' slots, the rows of every rule) and its solution; :mod:`.builder`
turns a pending job, an action and the cluster state into one. Imports
``models``, ``solver.state`` and ``solver.rules``.
"""

__all__ = []
