"""One instance per class, made when first asked for: the caches that layers above the state keep in it.

A rule that keeps results for a state or a snapshot defines a small class for them (a dataclass of its module, made
with no arguments) and asks for it by that class, so that every cached thing has a name, a type and one owner.

>>> from dataclasses import dataclass, field
>>> @dataclass
... class Names:
...     names: list[str] = field(default_factory=list)
>>> caches = Caches()
>>> caches.of(Names).names.append("a")
>>> caches.of(Names).names
['a']
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["Caches"]

K = TypeVar("K")


class Caches:
    """Class -> its one instance."""

    __slots__ = ("_found",)

    def __init__(self) -> None:
        self._found: dict[type, object] = {}

    def of(self, kind: type[K]) -> K:
        """The one instance of ``kind``, made with no arguments when first asked for."""
        found = self._found.get(kind)
        if found is None:
            found = self._found[kind] = kind()
        return found  # type: ignore[return-value]
