"""The two loads of every node: what it holds once releasing tasks are gone (final), and what it holds now (current).

A state counted task by task has both as maps of every node. A state counted from a large snapshot's task columns
sums a node's loads when first asked for (a decision on 100,000 nodes reads a few dozen), the nodes a problem is
built over in one numpy pass (:meth:`NodeLoads.load_nodes`), and every node's once more than
:data:`NODE_LOOKUPS` were asked for. A state derived from such a state keeps only the loads its changes touched and
reads the others from it (:class:`Overlay`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping

import numpy as np

from gpu_preempt.models import Resources
from gpu_preempt.models.columns import CODES, TaskColumns

__all__ = [
    "CURRENT",
    "CURRENT_CODES",
    "FINAL",
    "FINAL_CODES",
    "NODE_LOOKUPS",
    "PROMISED",
    "Loads",
    "NodeLoads",
    "Overlay",
    "shift",
]

FINAL = ("running", "allocated", "pipelined", "nominated")
"""Statuses that hold node capacity once releasing tasks are gone."""
CURRENT = ("running", "allocated", "releasing")
"""Statuses that hold node capacity now."""
PROMISED = ("pipelined", "nominated")
"""Statuses of tasks promised a place that releasing tasks free (docs/rules.md, "Nominations"): a higher-priority
decision may take it."""

FINAL_CODES = frozenset(CODES[s] for s in ("running", "nominated"))
"""The statuses a snapshot's tasks can have that count in the final load (:data:`FINAL`)."""
CURRENT_CODES = frozenset(CODES[s] for s in ("running", "releasing"))
"""The statuses a snapshot's tasks can have that count in the current load (:data:`CURRENT`)."""
NODE_LOOKUPS = 64
"""Loads counted from columns are summed for up to this many nodes (or an eighth of the nodes) one by one; past
that, the maps of every node are made at once."""

Loads = MutableMapping[str, Resources]


class NodeLoads:
    """Node -> final load and node -> current load, of the nodes holding a task (in the order of their first task).

    ``final`` and ``current`` are the two maps; ``None`` for both, with ``columns`` given, makes the loads lazy:
    summed from the columns when first asked for.
    """

    def __init__(
        self, final: Loads | None, current: Loads | None, *, columns: TaskColumns | None = None, nodes: int = 0
    ) -> None:
        self._final, self._current = final, current
        self.columns = columns
        """The task columns these loads are summed from (a fresh state's, counted from columns), else ``None``."""
        self._nodes = nodes
        self._names: list[str] | None = None
        self._index: dict[str, int] | None = None
        self._single: dict[str, tuple[Resources, Resources]] = {}
        """Nodes summed one at a time, before the maps exist."""
        self._by_node: tuple[np.ndarray, np.ndarray] | None = None
        self._by_node_lists: tuple[list[int], list[int], list[int]] | None = None

    @classmethod
    def lazy(cls, columns: TaskColumns, names: list[str], index: dict[str, int]) -> NodeLoads:
        """The loads of a snapshot's tasks, summed from ``columns`` when asked for (``names``: the node names in
        document order, ``index`` their positions)."""
        loads = cls(None, None, columns=columns, nodes=len(names))
        loads._names, loads._index = names, index
        return loads

    @property
    def final(self) -> Loads:
        """Node -> its final load (every node's map, made now if it does not exist)."""
        if self._final is None:
            self.fill()
        return self._final  # type: ignore[return-value]

    @property
    def current(self) -> Loads:
        """Node -> its current load (likewise)."""
        if self._current is None:
            self.fill()
        return self._current  # type: ignore[return-value]

    @property
    def every_node_summed(self) -> bool:
        """Whether both maps hold every node's loads of their own (neither lazy nor read through another state)."""
        return self._final is not None and type(self._final) is not Overlay

    def fill(self) -> None:
        """Make the two maps of a state counted from columns, every node at once."""
        columns, names = self.columns, self._names
        assert columns is not None and names is not None
        final = columns.node_dicts(("running", "nominated"), names)
        self._final, self._current = final, _current_loads(columns, names, final)
        self._single = {}

    def of(self, node: str) -> tuple[Resources, Resources]:
        """The final and current load of ``node``: from the maps when they exist, else summed over the node's tasks
        in the columns. Past :data:`NODE_LOOKUPS` nodes asked for, the maps are made."""
        final_map, current_map = self._final, self._current
        overlays = self._overlays()
        if overlays is not None:
            own_final, own_current = overlays[0].own.get(node), overlays[1].own.get(node)
            if own_final is None or own_current is None:  # one read of the origin for both
                origin = overlays[0].origin.of(node)
                return origin[0] if own_final is None else own_final, origin[1] if own_current is None else own_current
            return own_final, own_current
        if final_map is not None and current_map is not None:
            return final_map.get(node, {}), current_map.get(node, {})
        found = self._single.get(node)
        if found is not None:
            return found
        if len(self._single) >= max(NODE_LOOKUPS, self._nodes // 8):
            self.fill()
            return self.of(node)
        columns, index = self.columns, self._index
        assert columns is not None and index is not None
        at = index.get(node)
        final: Resources = {}
        current: Resources = {}
        if at is not None:
            statuses, rows, starts = self._tasks_by_node_lists(columns)
            first, end = starts[at], starts[at + 1]
            maps = columns.requests
            # each request map times its count, maps in the order of their first task: the same sums as task by
            # task in document order (columns.node_dicts), keys in the same order
            counted: tuple[dict[int, int], dict[int, int]] = ({}, {})
            for code, row in zip(statuses[first:end], rows[first:end], strict=True):
                if code in FINAL_CODES:
                    counted[0][row] = counted[0].get(row, 0) + 1
                if code in CURRENT_CODES:
                    counted[1][row] = counted[1].get(row, 0) + 1
            for target, counts in zip((final, current), counted, strict=True):
                for row, count in counts.items():
                    for r, a in maps[row].items():
                        target[r] = target.get(r, 0) + a * count
        self._single[node] = (final, current)
        return final, current

    def load_nodes(self, names: Iterable[str]) -> None:
        """Sum the loads of the nodes ``names`` at once, before a decision reads them node by node: the same maps as
        :meth:`of` would sum one node at a time, in one numpy pass. Nothing to do once every node's maps exist."""
        overlays = self._overlays()
        if overlays is not None:
            overlays[0].origin.load_nodes(n for n in names if n not in overlays[0].own or n not in overlays[1].own)
            return
        if self._final is not None and self._current is not None:
            return
        known, index, names_all = self._single, self._index, self._names
        assert index is not None and names_all is not None
        at = sorted({index[n] for n in names if n not in known and n in index})
        if not at:
            return
        if len(known) + len(at) >= max(NODE_LOOKUPS, self._nodes // 8):
            self.fill()
            return
        columns = self.columns
        assert columns is not None
        order, starts = self._tasks_by_node_arrays(columns)
        first, lengths = starts[at], starts[np.array(at) + 1] - starts[at]
        tasks = order[np.arange(int(lengths.sum())) + np.repeat(first - (np.cumsum(lengths) - lengths), lengths)]
        nodes, status, rows = columns.node[tasks], columns.status[tasks], columns.row[tasks]
        sums = [
            columns.group_dicts(nodes[chosen], rows[chosen], names_all)
            for chosen in (np.isin(status, list(FINAL_CODES)), np.isin(status, list(CURRENT_CODES)))
        ]
        for n in at:
            name = names_all[n]
            known[name] = (sums[0].get(name, {}), sums[1].get(name, {}))

    def derived(self) -> NodeLoads:
        """The loads of a state derived from this one, to be changed by it: copies of the maps, or, while this
        state's loads are not summed for every node, overlays that read the untouched nodes from the state they
        descend from."""
        if self._final is None or type(self._final) is Overlay:
            return NodeLoads(Overlay.over(self, 0), Overlay.over(self, 1))
        return NodeLoads(dict(self._final), dict(self.current))

    def shift(self, which: int, node: str, requests: Resources, sign: int, touched: set[tuple[int, str]]) -> None:
        """Add ``requests`` times ``sign`` to ``node``'s final (``which`` 0) or current (1) load, copying the node's
        map the first time a derivation touches it (``touched``: the nodes copied so far)."""
        loads = self.final if which == 0 else self.current
        if (which, node) not in touched:
            loads[node] = dict(loads.get(node, {}))
            touched.add((which, node))
        shift(loads[node], requests, sign)

    def _overlays(self) -> tuple[Overlay, Overlay] | None:
        """A derived state's final and current loads when both are read through one state (:class:`Overlay`)."""
        final_map, current_map = self._final, self._current
        if type(final_map) is Overlay and type(current_map) is Overlay and final_map.origin is current_map.origin:
            return final_map, current_map
        return None

    def _tasks_by_node_arrays(self, columns: TaskColumns) -> tuple[np.ndarray, np.ndarray]:
        """The columns' task positions sorted by node (stable) and where each node's start, as arrays."""
        if self._by_node is None:
            order = np.argsort(columns.node, kind="stable")
            starts = np.searchsorted(columns.node[order], np.arange(self._nodes + 1))
            self._by_node = (order, starts)
        return self._by_node

    def _tasks_by_node_lists(self, columns: TaskColumns) -> tuple[list[int], list[int], list[int]]:
        """The status and request-map row of the columns' tasks sorted by node (stable: document order within a
        node), and where each node's start: Python lists, so that a node's loads are summed without a numpy call."""
        if self._by_node_lists is None:
            order, starts = self._tasks_by_node_arrays(columns)
            self._by_node_lists = (columns.status[order].tolist(), columns.row[order].tolist(), starts.tolist())
        return self._by_node_lists


class Overlay(MutableMapping[str, Resources]):
    """A derived state's final (``which`` 0) or current (1) loads while the state counted from columns that it
    descends from (``origin``) has not summed every node's: its own entries for the nodes its changes touched, the
    others read from ``origin`` one node at a time. Applying a decision to a fresh 100,000-node state would
    otherwise sum every node's loads to change a few. Iterating, counting or comparing reads every node's
    (``origin`` sums them all then)."""

    def __init__(self, origin: NodeLoads, which: int, own: dict[str, Resources]) -> None:
        self.origin, self.which, self.own = origin, which, own

    @classmethod
    def over(cls, loads: NodeLoads, which: int) -> Overlay:
        """The loads of a state derived from the one of ``loads`` (changes are then made to them), sharing its
        origin."""
        mine = loads._final if which == 0 else loads._current
        if isinstance(mine, Overlay):
            return cls(mine.origin, which, dict(mine.own))
        return cls(loads, which, {})

    def get(self, node: str, default: Resources | None = None) -> Resources | None:  # type: ignore[override]
        found = self.own.get(node)
        return found if found is not None else self.origin.of(node)[self.which]

    def __getitem__(self, node: str) -> Resources:
        found = self.get(node)
        assert found is not None
        return found

    def __setitem__(self, node: str, load: Resources) -> None:
        self.own[node] = load

    def __delitem__(self, node: str) -> None:
        raise TypeError("node loads are changed, never removed")

    def _every(self) -> dict[str, Resources]:
        base = self.origin.final if self.which == 0 else self.origin.current
        return {**base, **self.own}

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())


def _current_loads(columns: TaskColumns, nodes: list[str], final: dict[str, Resources]) -> dict[str, Resources]:
    """``columns.node_dicts(("running", "releasing"), nodes)``, with the map of ``final`` itself for every node that
    has no releasing and no nominated task (the two loads are equal there; loads are copied before they change, see
    :meth:`NodeLoads.shift`)."""
    placed = columns.node >= 0
    odd = np.zeros(len(nodes), dtype=bool)
    odd[columns.node[columns.chosen(("releasing", "nominated")) & placed]] = True
    if not odd.any():
        return dict(final)
    chosen = columns.chosen(("running", "releasing")) & placed
    where, rows = columns.node[chosen], columns.row[chosen]
    redo = odd[where]
    again = columns.group_dicts(where[redo], rows[redo], nodes)
    present, first = np.unique(where, return_index=True)
    ordered = present[np.argsort(first, kind="stable")].tolist()
    return {nodes[n]: again[nodes[n]] if odd[n] else final[nodes[n]] for n in ordered}


def shift(target: dict[str, int], requests: Resources, sign: int) -> None:
    """Add ``requests`` times ``sign`` to ``target``, in place."""
    for r, a in requests.items():
        target[r] = target.get(r, 0) + sign * a
