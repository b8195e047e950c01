"""The victim problem in numbers: one decision stated without any solver, and closed (it imports ``models`` only).

:mod:`.records` holds the problem (nodes' room, the chunk to place, the candidates' slots, the rows of every rule),
:mod:`.quota_rows` Kueue's quota and fair-sharing rows, :mod:`.victim_queue` KAI's victim queue over the candidates;
:mod:`.solution` an answer and its checks in exact integers, :mod:`.devices` shares of a GPU device by device,
:mod:`.bounds` whether the chunk could fit at all. :mod:`gpu_preempt.formulate` makes a problem from the state and
the rules.
"""

__all__ = []
