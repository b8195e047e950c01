"""The queue tree, on a networkx ``DiGraph``.

Edges point from parent to child. A virtual root (:data:`ROOT`, the empty
name, which no queue may have) sits above the top-level queues, so that any two
queues have a common ancestor and top-level queues are siblings, as in KAI.

Examples
--------
>>> from gpu_preempt.models import parse_snapshot
>>> snap = parse_snapshot('''
... now: 0
... nodes: []
... queues: [{name: d1}, {name: q1, parent: d1}, {name: q2, parent: d1}, {name: d2}, {name: q3, parent: d2}]
... ''')
>>> tree = QueueTree(snap)
>>> tree.leaves()
['q1', 'q2', 'q3']
>>> tree.lca("q1", "q2"), tree.lca("q1", "q3")
('d1', None)
>>> tree.leveled_pair("q1", "q3")
('d1', 'd2')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import networkx as nx

from gpu_preempt.models import Queue, Snapshot

__all__ = ["ROOT", "QueueTree"]

ROOT: Final = ""
"""Name of the virtual root above the top-level queues."""


class QueueTree:
    """Read-only view of a snapshot's queues as a rooted tree."""

    def __init__(self, snapshot: Snapshot) -> None:
        graph: nx.DiGraph = nx.DiGraph()
        graph.add_node(ROOT)
        for queue in snapshot.queues:
            graph.add_node(queue.name, queue=queue)
        for queue in snapshot.queues:
            graph.add_edge(queue.parent or ROOT, queue.name)
        self.graph = graph
        self.source = snapshot.queues
        """The list of queues the tree was built from (a later snapshot holding the same list has the same tree)."""
        self._parent: dict[str, str | None] = {q.name: q.parent for q in snapshot.queues}
        self._order = {q.name: i for i, q in enumerate(snapshot.queues)}
        self._queues: list[str] | None = None
        self._children: dict[str, list[str]] = {}
        self._lca: dict[tuple[str, str], str | None] = {}
        self._leaves_under: dict[str, list[str]] = {}

    def queue(self, name: str) -> Queue:
        queue: Queue = self.graph.nodes[name]["queue"]
        return queue

    def queues(self) -> list[str]:
        """Every queue, depth first: each parent just before its subtree (siblings in document order)."""
        if self._queues is None:
            self._queues = list(nx.dfs_preorder_nodes(self.graph, ROOT, sort_neighbors=self._sorted))[1:]
        return list(self._queues)

    def children(self, name: str | None) -> list[str]:
        """Children of ``name``; ``None`` or :data:`ROOT` gives the top-level queues."""
        key = name or ROOT
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = self._sorted(self.graph.successors(key))
        return list(found)

    def parent(self, name: str) -> str | None:
        """Parent queue, ``None`` for a top-level queue."""
        return self._parent[name]

    def is_leaf(self, name: str) -> bool:
        return bool(self.graph.out_degree(name) == 0)

    def leaves(self) -> list[str]:
        return [q for q in self.queues() if self.is_leaf(q)]

    def leaves_under(self, name: str) -> list[str]:
        """Leaf queues of the subtree rooted at ``name`` (``name`` itself if it is a leaf)."""
        found = self._leaves_under.get(name)
        if found is None:
            below = nx.descendants(self.graph, name) | {name}
            found = self._leaves_under[name] = [q for q in self.queues() if q in below and self.is_leaf(q)]
        return list(found)

    def upward(self, name: str) -> list[str]:
        """``name`` and its ancestors, nearest first, ending with a top-level queue."""
        chain = []
        current: str | None = name
        while current is not None:
            chain.append(current)
            current = self._parent[current]
        return chain

    def path(self, name: str) -> list[str]:
        """Queues from the top level down to ``name``."""
        return self.upward(name)[::-1]

    def top_level(self, name: str) -> str:
        return self.upward(name)[-1]

    def lca(self, a: str, b: str) -> str | None:
        """Lowest common ancestor of two queues; ``None`` when only the virtual root is common."""
        key = (a, b)
        if key not in self._lca:
            common: str = nx.lowest_common_ancestor(self.graph, a, b)
            self._lca[key] = None if common == ROOT else common
        return self._lca[key]

    def leveled_pair(self, reclaimer_leaf: str, victim_leaf: str) -> tuple[str, str]:
        """The two siblings under the LCA on the path to each leaf (KAI ``getLeveledQueues``).

        This is the first pair at which the root-to-leaf paths differ: ``(rq, vq)``.
        Raises ``ValueError`` when one queue lies on the other's path (no such pair).
        """
        for rq, vq in zip(self.path(reclaimer_leaf), self.path(victim_leaf), strict=False):
            if rq != vq:
                return rq, vq
        raise ValueError(f"queues '{reclaimer_leaf}' and '{victim_leaf}' lie on one path; there is no leveled pair")

    def _sorted(self, names: Iterable[str]) -> list[str]:
        return sorted(names, key=self._order.__getitem__)
