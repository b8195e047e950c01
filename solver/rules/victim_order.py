"""The canonical order of victims: how ties between equally good victim sets are broken (docs/snapshot-format.md,
"Victim choice").

When the objective cannot tell two victim sets apart, the one that spares the
victims that come *last* in this order wins, in every solving path (the full
model, the reduced model, the greedy baseline):

1. the victim queue furthest over its fair share first (the largest share of its
   fair share it uses, in the resource where that share is largest; a queue
   holding anything of a resource whose fair share is 0 comes first);
2. then the queue of lower priority;
3. then the newest job (``created_at``, else ``started_at``; a job with neither
   counts as the oldest);
4. then the job's name.

:func:`evict_key` sorts victims in that order (smallest first). Among victim
sets, one set is better than another when the most keep-worthy victim (the
largest key) in which they differ is in the other set: sorting each set's keys
from largest to smallest, plain tuple comparison says which is better
(:class:`Keep`).

Examples
--------
>>> Keep([(0, "b")]) + Keep([(1, "a")])
Keep([(1, 'a'), (0, 'b')])
>>> Keep([(0, "b")]) < Keep([(1, "a")])  # sparing the later victim is better
True
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gpu_preempt.models import Job
from gpu_preempt.state.cluster import ClusterState

__all__ = ["INFINITE", "NO_VICTIMS", "EvictKey", "Keep", "evict_key", "keep_order", "over_share", "ranked"]

INFINITE = Fraction(10**18)
"""The share of a queue holding something whose fair share is 0 (above any real share)."""

EvictKey = tuple[Fraction, int, float, str]


def over_share(cluster: ClusterState, queue: str) -> Fraction:
    """How far ``queue`` is over its fair share: the largest ``allocated / fair share`` over its resources."""
    share = cluster.shares[queue]
    ratio = Fraction(0)
    for resource, amount in cluster.usage[queue].allocated.items():
        if amount <= 0:
            continue
        fair = share.get(resource, 0)
        ratio = max(ratio, INFINITE if fair <= 0 else Fraction(amount, fair))
    return ratio


def evict_key(cluster: ClusterState, job: Job, shares: dict[str, Fraction] | None = None) -> EvictKey:
    """The sort key of ``job`` as a victim: smaller keys are evicted first (see the module docstring).

    ``shares`` caches ``-over_share(...)`` per queue across calls: the jobs of one queue share one object.
    """
    if shares is None:
        shares = {}
    negated = shares.get(job.queue)
    if negated is None:
        negated = shares[job.queue] = -over_share(cluster, job.queue)
    created = job.created_at if job.created_at is not None else job.started_at
    return (negated, cluster.tree.queue(job.queue).priority, -(created if created is not None else -1e300), job.name)


def keep_order(cluster: ClusterState, jobs: list[str]) -> tuple[int, ...]:
    """Indices of ``jobs`` from the most worth keeping to the least: the canonical order reversed."""
    shares: dict[str, Fraction] = {}
    keys = ranked([evict_key(cluster, cluster.snapshot.job(name), shares) for name in jobs])
    return tuple(sorted(range(len(jobs)), key=keys.__getitem__, reverse=True))


def ranked(keys: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``keys`` with their first element (a :class:`Fraction`) replaced by its rank among the distinct ones.

    The order and the ties are the same, but a sort of hundreds of thousands of keys then compares integers, not
    fractions, whose equality test is Python code.

    >>> ranked([(Fraction(1, 2), "a"), (Fraction(-1), "b"), (Fraction(1, 2), "c")])
    [(1, 'a'), (0, 'b'), (1, 'c')]
    """
    distinct = {id(key[0]): key[0] for key in keys}  # by identity first: the keys of one queue share their object
    rank = {value: i for i, value in enumerate(sorted(set(distinct.values())))}
    by_id = {ident: rank[value] for ident, value in distinct.items()}
    return [(by_id[id(key[0])], *key[1:]) for key in keys]


class Keep(tuple[Any, ...]):
    """A set of victims, as their :func:`evict_key` from the largest (most worth keeping) down.

    Smaller is better: tuple comparison finds the most keep-worthy victim in which two sets differ and prefers
    the set without it. Adding two sets merges them.
    """

    __slots__ = ()

    def __new__(cls, keys: Any = ()) -> Keep:
        return super().__new__(cls, sorted(keys, reverse=True))

    def __add__(self, other: Any) -> Keep:
        return Keep((*self, *other))

    def __repr__(self) -> str:
        return f"Keep({list(self)!r})"


NO_VICTIMS = Keep()
"""The empty set of victims: the least tie-break value (one shared instance: tuples do not change)."""
