"""KAI-Scheduler's victim queue: the order in which its reclaim and preempt take victims (docs/rules.md, "The greedy
baseline"), as a pure function of the candidates' entries and their queues' facts (:mod:`.queue_facts` reads them
off the cluster).

KAI keeps the candidate jobs in a tree of queues (``pkg/scheduler/actions/utils/job_order_by_queue.go``, built with
``VictimQueue``) and, for every pop, walks it from the top-level queues down to a leaf, at each level taking the
queue that the proportion plugin's order (``plugins/proportion/queue_order/queue_order.go``), reversed, puts first;
the leaf's next job goes. Victims come first from the queue

1. over its fair share in every one of GPU, CPU and memory;
2. above its deserved quota in some resource;
3. of lower priority;
4. holding something of a resource whose fair share is 0;
5. of the highest dominant resource share once the jobs already popped from its best leaf, and that leaf's next
   job, are taken away: the order re-balances between queues after every pop;
6. of the highest dominant resource share;
7. then by name (KAI compares the queues' allocatable shares and creation times, which a snapshot does not carry).

A queue's dominant resource share is the largest, over its resources, of what it holds over its fair share (a
resource whose fair share is 0 counts as held a billion times over). A parent is compared on its own amounts, with
the victims of its best leaf.

Within a leaf (KAI's ``JobOrderFn`` reversed): the lowest job priority first, then a job above its
``min_available`` (one with an elastic surplus), then the newest, then the last name (KAI: the larger UID). A pop
takes one surplus task of an elastic job, which goes back to its leaf with the tasks it keeps, or all the tasks the
job has left (``GetTasksToEvict``). As in KAI, a popped job counts among its leaf's victims with every task it had
when popped.

>>> queue = VictimQueue.of({"a": {"gpu": 1}, "b": {"gpu": 1}}, {"a": {"gpu": 3}, "b": {"gpu": 3}}, [
...     VictimEntry("a", 0, 0.0, "a1", {"gpu": 1}), VictimEntry("a", 0, 1.0, "a2", {"gpu": 1}),
...     VictimEntry("b", 0, 0.0, "b1", {"gpu": 1}), VictimEntry("b", 0, 1.0, "b2", {"gpu": 1})])
>>> list(queue.pops())  # newest first within a queue, alternating between the queues as they re-balance
[(1, False), (3, False), (0, False), (2, False)]
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

import numpy as np

from gpu_preempt.models import UNLIMITED, Resources

__all__ = [
    "KAI_RESOURCES",
    "NO_SHARE",
    "Descending",
    "Pop",
    "QueueFacts",
    "VictimEntry",
    "VictimOrder",
    "VictimQueue",
    "leaf_stream",
    "peel_order",
]

NO_SHARE = 1e9
"""What a unit held of a resource whose fair share is 0 counts for in the dominant share (KAI's
``noFairShareDrfMultiplier``)."""

KAI_RESOURCES = ("gpu", "cpu", "memory")
T = TypeVar("T")
"""The resources KAI's queue order reads."""


class VictimEntry(NamedTuple):
    """A candidate job as the victim queue sees it."""

    queue: str
    priority: int
    newest: float
    """Larger is newer (created, else started; a job with neither is the oldest)."""
    name: str
    held: Resources
    """What its running tasks hold."""
    peels: tuple[Resources, ...] = ()
    """Each surplus task's requests, in the order it gives them up (an elastic job above ``min_available``)."""
    whole: bool = True
    """Whether it may lose every task once its surplus is gone."""


Pop = tuple[int, bool]
"""The entry popped (its index) and whether one surplus task goes (``True``) or every task it has left."""


@dataclass(frozen=True)
class QueueFacts:
    """What the queue order reads of one queue."""

    name: str
    parent: str | None
    priority: int
    allocated: Resources
    fair: Resources
    deserved: Resources

    @property
    def over_fair_share(self) -> bool:
        return all(self.allocated.get(r, 0) > self.fair.get(r, 0) for r in KAI_RESOURCES)

    @property
    def starved(self) -> bool:
        """At or below its deserved quota in every resource."""
        return all(
            (limit := self.deserved.get(r, 0)) == UNLIMITED or a <= limit for r, a in self.allocated.items() if a > 0
        )

    @property
    def zero_share_held(self) -> bool:
        return any(a > 0 and self.fair.get(r, 0) <= 0 for r, a in self.allocated.items())

    def static_order(self) -> tuple[bool, bool, int, bool]:
        """The first criteria of the reversed queue order, which no pop changes: smaller goes first."""
        return not self.over_fair_share, self.starved, self.priority, not self.zero_share_held

    def share_terms(self) -> list[tuple[str, int, int]]:
        """Per resource it holds: the resource, what it holds and its fair share (what :meth:`dominant_share`
        reads)."""
        return [(r, a, self.fair.get(r, 0)) for r, a in self.allocated.items()]

    def dominant_share(self, *taken: Resources) -> float:
        """The largest ``held / fair share`` over its resources, once the amounts ``taken`` are taken away."""
        share = 0.0
        fair_of = self.fair
        for resource, amount in self.allocated.items():
            held = amount - sum(t.get(resource, 0) for t in taken)
            fair = fair_of.get(resource, 0)
            value = held / fair if fair > 0 else held * NO_SHARE
            if value > share:
                share = value
        return share


_Head = tuple[tuple[int, int, float, str] | None, int, int, Resources]
"""A leaf's next job: its key (``None`` when no job was pushed back, as nothing is compared), entry index, surplus
tasks already gone, and what it holds now."""


class _Leaf:
    """A leaf's jobs: the entries in their order (read as far as asked), merged with the jobs pushed back after
    losing a surplus task."""

    def __init__(self, entries: _Stream[int]) -> None:
        self.entries, self.read = entries, 0
        self.pushed: list[tuple[tuple[int, int, float, str], int, int, Resources]] = []
        self.popped: dict[str, int] = {}
        self._head: _Head | None = None
        self._known = False

    def head(self, queue: VictimQueue) -> _Head | None:
        """The next job (found once per pop)."""
        if self._known:
            return self._head
        pushed = self.pushed
        best: _Head | None = pushed[0] if pushed else None
        found = self.entries.get(self.read)
        if found is not None:
            entry = queue.entries(found)
            if not pushed:
                best = (None, found, 0, entry.held)
            elif (key := _key(entry, 0)) < pushed[0][0]:
                best = (key, found, 0, entry.held)
        self._head, self._known = best, True
        return best

    def pop(self, queue: VictimQueue) -> Pop | None:
        head = self.head(queue)
        if head is None:
            return None
        self._known = False
        _, index, peeled, held = head
        if self.pushed and self.pushed[0] is head:
            heapq.heappop(self.pushed)
        else:
            self.read += 1
        popped = self.popped
        for r, a in held.items():
            popped[r] = popped.get(r, 0) + a
        entry = queue.entries(index)
        if peeled < len(entry.peels):
            left = {r: a - entry.peels[peeled].get(r, 0) for r, a in held.items()}
            if peeled + 1 < len(entry.peels) or entry.whole:
                heapq.heappush(self.pushed, (_key(entry, peeled + 1), index, peeled + 1, left))
            return index, True
        return index, False


def _key(entry: VictimEntry, peeled: int) -> tuple[int, int, float, str]:
    return entry.priority, 0 if peeled < len(entry.peels) else 1, -entry.newest, Descending(entry.name)


class Descending(str):
    """A name that sorts after the names it is smaller than: KAI pops the larger UID first."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)

    def __gt__(self, other: str) -> bool:
        return str.__lt__(self, other)


class _Stream(Generic[T]):
    """Items produced on demand and kept, so that every walk reads the same (a leaf's entry indices, a queue's
    pops)."""

    def __init__(self, produce: Iterator[T]) -> None:
        self._produce, self._seen = produce, list[T]()

    def get(self, position: int) -> T | None:
        while len(self._seen) <= position:
            found = next(self._produce, None)
            if found is None:
                return None
            self._seen.append(found)
        return self._seen[position]

    def read(self) -> Iterator[T]:
        """Every item from the first."""
        position = 0
        while (found := self.get(position)) is not None:
            yield found
            position += 1


@dataclass
class VictimQueue:
    """KAI's victim queue over some candidates: :meth:`pops` walks it from the start.

    ``leaves`` gives each leaf's entry indices in the order of its jobs (KAI's ``JobOrderFn`` reversed, see the
    module docstring), produced when first read; ``entries`` the entry of an index.
    """

    facts: dict[str, QueueFacts]
    leaves: dict[str, _Stream[int]]
    entries: Callable[[int], VictimEntry]

    @classmethod
    def of(
        cls,
        fair: dict[str, Resources],
        allocated: dict[str, Resources],
        entries: Sequence[VictimEntry],
        *,
        parents: dict[str, str | None] | None = None,
        priorities: dict[str, int] | None = None,
        deserved: dict[str, Resources] | None = None,
    ) -> VictimQueue:
        """The queue over ``entries``, its queues described by their fair shares and allocations (flat, priority
        100 and nothing deserved unless given)."""
        facts = {
            q: QueueFacts(
                q,
                (parents or {}).get(q),
                (priorities or {}).get(q, 100),
                allocated[q],
                fair[q],
                (deserved or {}).get(q, {}),
            )
            for q in fair
        }
        return cls(facts, _leaves(entries), entries.__getitem__)

    def pops(self) -> Iterator[Pop]:
        """The pops in KAI's order, from a fresh queue, until no candidate is left.

        Each queue keeps its key and the leaf its victims come from; a pop changes only those of the popped leaf and
        its ancestors (as KAI re-sorts only the queues it marks), so only they are computed again.
        """
        facts = self.facts
        leaves = {name: _Leaf(stream) for name, stream in self.leaves.items()}
        children: dict[str | None, list[str]] = {}
        for name in facts:
            children.setdefault(facts[name].parent, []).append(name)
        parent = {name: f.parent for name, f in facts.items()}
        first = {name: f.static_order() for name, f in facts.items()}
        last = {name: (-f.dominant_share(), name) for name, f in facts.items()}
        terms = {name: f.share_terms() for name, f in facts.items()}
        # a queue's key: the static criteria, its dominant share after its best leaf's pops, the static ties (all
        # queues' first parts are tuples of one length, so these compare as the criteria laid end to end), its leaf
        own: dict[str, tuple[tuple[bool, bool, int, bool], float, tuple[float, str], str] | None] = {}

        def compute(name: str) -> None:
            leaf = leaves.get(name)
            if leaf is not None:
                head = leaf.head(self)
                if head is None:
                    own[name] = None
                    return
                at = name
            else:
                best = None
                for child in children.get(name, ()):
                    key = own.get(child)
                    if key is not None and (best is None or key < best):
                        best = key
                if best is None:
                    own[name] = None
                    return
                at = best[3]
                leaf = leaves[at]
                head = leaf.head(self)
                assert head is not None
            popped, held = leaf.popped, head[3]
            share = 0.0
            for resource, amount, fair in terms[name]:
                left = amount - popped.get(resource, 0) - held.get(resource, 0)
                value = left / fair if fair > 0 else left * NO_SHARE
                if value > share:
                    share = value
            own[name] = (first[name], -share, last[name], at)

        def settle(name: str | None) -> None:
            for child in children.get(name, ()):
                settle(child)
            if name is not None:
                compute(name)

        settle(None)
        top = children.get(None, [])
        while True:
            best = None
            for name in top:
                key = own.get(name)
                if key is not None and (best is None or key < best):
                    best = key
            if best is None:
                return
            at = best[3]
            popped = leaves[at].pop(self)
            if popped is None:
                return
            yield popped
            current: str | None = at
            while current is not None:
                compute(current)
                current = parent[current]


def _leaves(entries: Sequence[VictimEntry]) -> dict[str, _Stream[int]]:
    """Each leaf's entries (by index) in the leaf's order."""
    by_leaf: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        by_leaf.setdefault(entry.queue, []).append(i)
    return {
        leaf: _Stream(iter(sorted(members, key=lambda i: _key(entries[i], 0)))) for leaf, members in by_leaf.items()
    }


def leaf_stream(
    members: np.ndarray, priority: np.ndarray, elastic: np.ndarray, newest: np.ndarray, name: Callable[[int], str]
) -> _Stream[int]:
    """The entries ``members`` of one leaf in the leaf's order, from their columns (``elastic``: those with a surplus;
    ``newest``: larger is newer), ranked when first read; names are compared only within a tie, when it is reached."""

    def produce() -> Iterator[int]:
        order = np.lexsort((-newest, ~elastic, priority))
        p, e, n = priority[order], elastic[order], newest[order]
        starts = np.flatnonzero(np.r_[True, (p[1:] != p[:-1]) | (e[1:] != e[:-1]) | (n[1:] != n[:-1]), True])
        ranked = members[order]
        for start, end in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
            group = ranked[start:end].tolist()
            yield from group if len(group) == 1 else sorted(group, key=name, reverse=True)

    return _Stream(produce())


@dataclass(frozen=True)
class VictimOrder:
    """KAI's victim queue over a problem's victims, as plain data (a problem may cross to another process).

    ``entries`` has one entry per victim. ``fixed`` gives the pops instead:
    the first pops of a queue over more candidates than the problem holds (``complete``: all of them).
    """

    facts: dict[str, QueueFacts]
    entries: tuple[VictimEntry, ...]
    fixed: tuple[Pop, ...] | None = None
    complete: bool = True

    def pops(self) -> Iterator[Pop]:
        """The pops in KAI's order, from the start: the queue is walked once, and every later walk reads the pops
        found so far before it walks further."""
        if self.fixed is not None:
            return iter(self.fixed)
        walk: _Stream[Pop] | None = self.__dict__.get("_walk")
        if walk is None:
            walk = self.__dict__["_walk"] = _Stream(self._walk())
        return walk.read()

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.pop("_walk", None)  # a walk under way does not cross processes
        return state

    def _walk(self) -> Iterator[Pop]:
        return VictimQueue(self.facts, _leaves(self.entries), self.entries.__getitem__).pops()


def peel_order(tasks: Sequence[tuple[str, int | None]]) -> list[int]:
    """Positions of ``tasks`` (name, task order) in the order an elastic job gives them up (docs/rules.md, "Task
    order"): those without an order first, then the lowest order up; among equals the last name first (KAI evicts
    the newest pod first).

    >>> peel_order([("j-0", None), ("j-1", None), ("j-2", 5), ("j-3", 1)])
    [1, 0, 3, 2]
    """
    by_name = sorted(range(len(tasks)), key=lambda i: tasks[i][0], reverse=True)
    return sorted(by_name, key=lambda i: (tasks[i][1] is not None, tasks[i][1] or 0))
