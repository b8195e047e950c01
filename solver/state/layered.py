"""A mapping that shares its parent's entries and keeps only its own changes: a derived state's task maps.

A decision applied to a 100,000-node cluster changes the status of a few tasks out of hundreds of thousands;
copying the status, node and running-count maps for the new state would cost more than the rest of applying it. A
:class:`Layered` map reads its own entries first, then the base's; a layer over a layer copies the lower one's
few entries onto the shared base (so reads never go deeper than two dicts), and when its own entries grow past
a quarter of the base it becomes a plain copy again.

The base is never written to: states derived from one parent share it.

>>> base = {"a": 1, "b": 2}
>>> child = Layered(base)
>>> child["b"] = 5
>>> grandchild = Layered(child)
>>> grandchild["a"] = 0
>>> dict(grandchild), dict(child), base
({'a': 0, 'b': 5}, {'a': 1, 'b': 5}, {'a': 1, 'b': 2})
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import TypeVar

__all__ = ["FLATTEN", "Layered"]

K = TypeVar("K")
V = TypeVar("V")

FLATTEN = 4
"""A layer whose own entries exceed ``1 / FLATTEN`` of its base is made a plain copy instead."""


class Layered(MutableMapping[K, V]):
    """``below``'s entries, with this map's own changes on top. Keys are ``below``'s: new keys and deletions are
    refused (a state's tasks and jobs are its snapshot's)."""

    __slots__ = ("_base", "_own")

    def __init__(self, below: Mapping[K, V]) -> None:
        if isinstance(below, Layered):
            base, own = below._base, dict(below._own)
            if len(own) * FLATTEN > len(base):
                base, own = {**base, **own}, {}
        else:
            base, own = below, {}
        self._base: Mapping[K, V] = base
        self._own: dict[K, V] = own

    def __getitem__(self, key: K) -> V:
        own = self._own
        if key in own:
            return own[key]
        return self._base[key]

    def get(self, key: K, default: V | None = None) -> V | None:  # type: ignore[override]
        own = self._own
        if key in own:
            return own[key]
        return self._base.get(key, default)

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self._base:
            raise KeyError(f"{key!r}: a layer takes no new keys")
        self._own[key] = value

    def __delitem__(self, key: K) -> None:
        raise TypeError("a layer's keys are its base's: none is deleted")

    def __contains__(self, key: object) -> bool:
        return key in self._base

    def __iter__(self) -> Iterator[K]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)

    def base_and_changes(self) -> tuple[Mapping[K, V], dict[K, V]]:
        """The shared base and this layer's own entries (read only), for loops that read every value faster from
        the base and then patch the few changed ones."""
        return self._base, self._own

    def __repr__(self) -> str:
        return f"Layered({len(self._own)} of {len(self._base)} entries changed)"
