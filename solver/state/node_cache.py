"""Per-node results of a state, passed on to the states that follow it for the nodes that did not change.

A result kept here is a list (:meth:`NodeCache.values`) or a map (:meth:`NodeCache.map`) with one entry per node,
each depending only on that node's loads and promises and on what stays fixed for a session. A state derived from
another (:meth:`.cluster.ClusterState.with_changes`), or the next cycle of a replay over the same nodes, starts from its
predecessor's results and recomputes only the nodes that changed since.

Results are named by keys: instances of a frozen dataclass of the module that owns the result (:class:`NodeKey`),
so that each has a name, a type and one owner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gpu_preempt.models import Node

__all__ = ["NodeCache", "NodeKey"]

T = TypeVar("T")


@dataclass(frozen=True)
class NodeKey:
    """The name of a per-node result; subclasses add the fields it depends on (a priority, resources)."""


class NodeCache:
    """This state's per-node results, and those its predecessors passed on with the nodes changed since."""

    def __init__(self, inherited: dict[NodeKey, tuple[Any, frozenset[str]]] | None = None) -> None:
        self.own: dict[NodeKey, Any] = {}
        self.inherited: dict[NodeKey, tuple[Any, frozenset[str]]] = inherited or {}

    def __contains__(self, key: NodeKey) -> bool:
        return key in self.own

    def get(self, key: NodeKey) -> Any:
        """This state's result under ``key``, or ``None``."""
        return self.own.get(key)

    def put(self, key: NodeKey, value: Any) -> None:
        self.own[key] = value

    def before(self, key: NodeKey) -> tuple[Any, frozenset[str]] | None:
        """The result a predecessor passed on under ``key``, with the nodes changed since; or ``None``."""
        return self.inherited.get(key)

    def values(
        self,
        key: NodeKey,
        nodes: list[Node],
        index: dict[str, int],
        compute: Callable[[int, Node], T],
        every: Callable[[], list[T]] | None = None,
    ) -> list[T]:
        """``compute(position, node)`` for every node of ``nodes`` (``index``: their positions), kept under ``key``;
        an inherited list is patched where nodes changed (when fewer than half did). ``every``, if given, computes
        the whole list at once (the same values), when nothing can be reused."""
        found = self.own.get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
        before = self.inherited.get(key)
        if before is not None and len(before[1]) < len(nodes) // 2:
            values = list(before[0])
            for name in before[1]:
                i = index[name]
                values[i] = compute(i, nodes[i])
        else:
            values = [compute(i, node) for i, node in enumerate(nodes)] if every is None else every()
        self.own[key] = values
        return values

    def map(self, key: NodeKey) -> dict[str, Any]:
        """A per-node map under ``key``, filled by the caller node by node, started from an inherited map's entries
        for the nodes that have not changed since."""
        found = self.own.get(key)
        if found is None:
            before = self.inherited.get(key)
            found = {} if before is None else {n: v for n, v in before[0].items() if n not in before[1]}
            self.own[key] = found
        return found

    def passed_on(self, changed: frozenset[str]) -> NodeCache:
        """The cache a state that differs from this one on the ``changed`` nodes starts with (it holds no reference
        to this one)."""
        inherited = {key: (values, since | changed) for key, (values, since) in self.inherited.items()}
        inherited.update((key, (values, changed)) for key, values in self.own.items())
        return NodeCache(inherited)
