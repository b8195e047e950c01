"""A snapshot's jobs, each made when first read.

A decision at 100,000 nodes reads about one job model in six (the pending job, the victims considered, their
explanations); the rest of the solver works on columns (:mod:`.columns`). :class:`JobList` is the ``jobs`` list of a
large snapshot read on the struct path (:mod:`.build`): it holds what each job is made from (its shape, a small
integer: :class:`.jobs.Extras`) until the job is read by index, and makes every job before anything reads the list
as a whole (iteration, comparison, search, copy, pickle). pydantic-core serializes and compares a list's items
without asking the list, so the snapshot makes every job first there (:meth:`.snapshot.Snapshot.made_tasks`).

Examples
--------
>>> jobs = JobList([b"a", "b", b"c"], made=lambda i, item: f"{i}:{item.decode()}", raw=bytes, names=[])
>>> jobs.left, jobs[0], list.__getitem__(jobs, 2), jobs.left
(2, '0:a', b'c', 1)
>>> list(jobs), jobs.left
(['0:a', 'b', '2:c'], 0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, SupportsIndex, overload

__all__ = ["JobIndex", "JobList"]

_get, _set = list.__getitem__, list.__setitem__


class JobList(list):  # type: ignore[type-arg]  # of Job; typed loosely: it holds what jobs are made of until then
    """A list whose items of type ``raw`` are made (``made(position, item)``, of another type) when first read, and
    kept in place."""

    def __init__(self, items: list[Any], *, made: Callable[[int, Any], Any], raw: type, names: list[str]) -> None:
        super().__init__(items)
        self._made, self._raw = made, raw
        self.names = names
        """Each item's name, known without making it."""
        self.left = sum(type(item) is raw for item in items)
        """How many items are not made yet."""
        self.topology: list[int] = []
        """The positions of the items whose placement names a topology (set by their maker)."""

    @overload
    def __getitem__(self, index: SupportsIndex) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        if isinstance(index, slice):
            self.make_all()
            return _get(self, index)
        item = _get(self, index)
        if type(item) is self._raw:
            position = index.__index__()
            item = self._made(position if position >= 0 else position + len(self), item)
            _set(self, index, item)
            self.left -= 1
        return item

    def make_all(self) -> None:
        """Make every item not made yet."""
        if self.left:
            raw, made = self._raw, self._made
            for i in range(len(self)):
                item = _get(self, i)
                if type(item) is raw:
                    _set(self, i, made(i, item))
            self.left = 0

    def __iter__(self) -> Iterator[Any]:
        self.make_all()
        return super().__iter__()

    def by_name(self) -> JobIndex | None:
        """Name -> item; ``None`` if a name is given twice."""
        positions = dict(zip(self.names, range(len(self.names)), strict=True))
        return JobIndex(self, positions) if len(positions) == len(self) else None

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return list, (list(self),)  # copies and pickles are plain lists of made items


def _whole(name: str) -> Callable[..., Any]:
    method = getattr(list, name)

    def whole(self: JobList, *args: Any, **kwargs: Any) -> Any:
        self.make_all()
        return method(self, *args, **kwargs)

    whole.__name__ = name
    return whole


# Methods that read items in C without asking __getitem__: they make every item first.
for _name in (
    "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__mul__", "__rmul__",
    "__reversed__", "__repr__", "copy", "count", "index", "pop", "remove", "sort",
):  # fmt: skip
    setattr(JobList, _name, _whole(_name))


class JobIndex(Mapping[str, Any]):
    """Job name -> job, through positions in a :class:`JobList` (the job is made when looked up)."""

    def __init__(self, jobs: JobList, positions: dict[str, int]) -> None:
        self._jobs, self._positions = jobs, positions

    def __getitem__(self, name: str) -> Any:
        return self._jobs[self._positions[name]]

    def __contains__(self, name: object) -> bool:
        return name in self._positions

    def position(self, name: str) -> int:
        """Where the job ``name`` is in the list (nothing is made)."""
        return self._positions[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)
