"""What a job is made from besides the columns: its shape (which optional fields it and its tasks give, a small
integer), the values given that the columns do not keep, and what a rich job gives beyond the plainest one.

A shape keeps a job's and its tasks' given fields exact (pydantic's ``model_fields_set``) without keeping the
structs they were decoded into: Python keeps one object per small integer, so a list of shapes costs a pointer a job.

>>> from msgspec import UNSET
>>> shapes([[1, UNSET], [UNSET, UNSET]], {0}, 2) == [RICH | 0b10, 0b11]
True
"""

from __future__ import annotations

from typing import Any

from .checked import LARGE_COLUMN, unset_mask
from .structs import UNSET

__all__ = ["OPTIONAL", "RICH", "TASK_FIELDS", "Extras", "shapes"]


class Extras:
    """What the jobs give beyond the columns, checked, by position: which fields each job and task gives (their
    shapes), the priorities, preemptibility and gang minimums given, tasks' order (by task position in the
    document), and the job fields beyond the common ones (by job position). Tasks' devices are in
    :attr:`.checked.Gathered.devices`."""

    def __init__(self, starts: list[int]) -> None:
        self.starts = starts
        self.shapes: list[int] = []
        """Per job, the fields of :data:`OPTIONAL` it leaves out (bit ``k`` for the ``k``-th) and :data:`RICH`."""
        self.task_shapes: list[int] = []
        """Per task, the fields of :data:`TASK_FIELDS` it leaves out (bit ``k`` for the ``k``-th)."""
        self.given: dict[str, dict[int, Any]] = {}
        """``priority``, ``preemptible``, ``min_available`` -> job position -> the value given (not null)."""
        self.order: dict[int, int] = {}
        self.fields: dict[int, dict[str, Any]] = {}


OPTIONAL = ("priority_class", "priority", "preemptible", "min_available", "task_resources", "created_at", "started_at")
"""The fields of the common job that it may leave out."""
TASK_FIELDS = ("node", "name", "status", "devices", "order")
"""The fields a task of a job made when read may give (one that gives its ``resources`` is built at once)."""
RICH = 1 << len(OPTIONAL)
"""The bit of a job's shape that says it gives more than the plainest job (tasks made with it, extra fields)."""


def shapes(columns: list[list[Any]], marked: set[int], count: int, unset: list[Any] | None = None) -> list[int]:
    """Per position, bit ``k`` set where ``columns[k]`` holds :data:`UNSET`, and :data:`RICH` at the positions
    ``marked``: small integers, which Python keeps one of each. ``unset``: the columns' :func:`unset_mask`, when
    known."""
    if count <= LARGE_COLUMN:  # a small snapshot: numpy is not loaded for it
        found = [sum(1 << k for k, column in enumerate(columns) if column[i] is UNSET) for i in range(count)]
        for i in marked:
            found[i] |= RICH
        return found
    import numpy as np

    bits = np.zeros(count, dtype=np.int16)
    for k, mask in enumerate(unset or map(unset_mask, columns)):
        if mask is True:
            bits |= 1 << k
        elif mask is not False:
            bits |= mask.astype(np.int16) << k
    if len(marked) == count:
        bits |= RICH
    elif marked:
        bits[np.fromiter(marked, dtype=np.int64, count=len(marked))] |= RICH
    return bits.tolist()
