"""Kueue's quota for one preemptor, as rows of a problem (docs/rules.md, "Kueue's preemption" and "Kueue's fair
sharing"): the cohort quota the chunk must fit once the victims go, and the shares each victim's ClusterQueue must
keep. Each row checks a set of freed amounts in exact integers; the CP-SAT model states the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from gpu_preempt.models import Resources
from gpu_preempt.models.cohort_quotas import CohortQuotas

__all__ = ["FINAL_SHARE", "INITIAL_SHARE", "CohortRows", "FairRows", "QuotaNumbers", "at_most", "below"]


@dataclass(frozen=True)
class QuotaNumbers:
    """The queue tree's quota as the CP-SAT model reads it: numbers per queue and resource, no arithmetic left to do.

    ``subtree`` and ``local`` are each queue's subtree and local quota, ``potential`` the most it could have with
    nothing used (Kueue's ``potentialAvailable``; :class:`~gpu_preempt.models.cohort_quotas.CohortQuotas` defines
    them all); ``used`` what each ClusterQueue holds before the decision.

    >>> tree, nominal = {"pool": None, "a": "pool"}, {"pool": {"gpu": 4}, "a": {"gpu": 8}}
    >>> quotas = CohortQuotas(tree, nominal, lending={"a": {"gpu": 2}})
    >>> numbers = QuotaNumbers.of(quotas)
    >>> numbers.subtree["pool"], numbers.local["a"], numbers.potential["a"]
    ({'gpu': 6}, {'gpu': 6}, {'gpu': 12})
    """

    parents: Mapping[str, str | None]
    nominal: Mapping[str, Resources]
    borrowing: Mapping[str, Resources]
    lending: Mapping[str, Resources]
    used: Mapping[str, Resources]
    subtree: Mapping[str, Resources]
    local: Mapping[str, Resources]
    potential: Mapping[str, Resources]

    @classmethod
    def of(cls, quotas: CohortQuotas) -> QuotaNumbers:
        groups = (quotas.nominal, quotas.borrowing, quotas.lending, quotas.used)
        resources = sorted({r for group in groups for amounts in group.values() for r in amounts})
        queues = list(quotas.parents)
        return cls(
            quotas.parents,
            quotas.nominal,
            quotas.borrowing,
            quotas.lending,
            quotas.used,
            {q: {r: quotas.subtree_quota(q, r) for r in resources} for q in queues},
            {q: {r: quotas.local_quota(q, r) for r in resources} for q in queues},
            {q: {r: quotas.potential_available(q, r) for r in resources} for q in queues},
        )


@dataclass(frozen=True)
class CohortRows:
    """Kueue's quota for one preemptor (docs/rules.md, "Kueue's preemption"): after the victims go, the chunk fits
    what its ClusterQueue ``queue`` has available (``quotas``, evaluated with each ClusterQueue's usage less what its
    victims free), in one of the attempts ``modes`` allows: with borrowing (``True``), or without, when the queue
    also ends within its nominal quota. A victim of ``while_nominal`` may go only in an attempt without borrowing.
    """

    quotas: CohortQuotas
    queue: str
    victims: dict[str, tuple[int, ...]]
    """Per ClusterQueue, the victims in it."""
    modes: tuple[bool, ...] = (True,)
    while_nominal: tuple[int, ...] = ()

    @cached_property
    def numbers(self) -> QuotaNumbers:
        """The tree's quota in numbers, for the model."""
        return QuotaNumbers.of(self.quotas)

    def fits(self, freed: dict[int, Resources], placed: Resources, *, borrowing: bool) -> bool:
        """Whether ``placed`` fits once the victims free ``freed`` (per victim), in the attempt ``borrowing``."""
        used = {queue: dict(amounts) for queue, amounts in self.quotas.used.items()}
        for queue, members in self.victims.items():
            for v in members:
                for r, a in freed.get(v, {}).items():
                    used.setdefault(queue, {})[r] = used.get(queue, {}).get(r, 0) - a
        return self.quotas.with_used(used).fits(self.queue, placed, borrowing=borrowing)

    def available_after(self, freed: dict[int, Resources], resource: str) -> int:
        """What the preemptor's ClusterQueue has available of ``resource`` once ``freed`` is freed."""
        used = {queue: dict(amounts) for queue, amounts in self.quotas.used.items()}
        for queue, members in self.victims.items():
            for v in members:
                amount = freed.get(v, {}).get(resource, 0)
                used.setdefault(queue, {})[resource] = used.get(queue, {}).get(resource, 0) - amount
        return max(0, self.quotas.with_used(used).available(self.queue, resource))

    def allows(self, freed: dict[int, Resources], placed: Resources) -> bool:
        """Whether some attempt ``modes`` allows admits ``placed`` once ``freed`` is freed."""
        taken = {v for v, amounts in freed.items() if any(a > 0 for a in amounts.values())}
        return any(
            self.fits(freed, placed, borrowing=borrowing)
            for borrowing in self.modes
            if not (borrowing and taken & set(self.while_nominal))
        )


FINAL_SHARE = "LessThanOrEqualToFinalShare"
"""Kueue's fair-sharing strategy: the preemptor's share after the preemption at most the target's."""
INITIAL_SHARE = "LessThanInitialShare"
"""Kueue's fair-sharing strategy: the preemptor's share after below the target's before its last victim goes."""


@dataclass(frozen=True)
class FairRows:
    """Kueue's fair sharing for one preemptor (docs/rules.md, "Kueue's fair sharing"). Once the victims go and the
    chunk is added to ClusterQueue ``queue``: if the queue then borrows in no resource of ``needs``, any victim may go;
    otherwise each other ClusterQueue losing victims passes one of ``strategies``, comparing the shares of the pair
    ``pairs[t]`` (the children of their lowest common ancestor on the preemptor's and the target's side):
    ``LessThanOrEqualToFinalShare``, the preemptor's share at most the target's after; ``LessThanInitialShare``,
    below the target's before its last victim goes (one victim only when it is the sole strategy)."""

    quotas: CohortQuotas
    queue: str
    victims: dict[str, tuple[int, ...]]
    pairs: dict[str, tuple[str, str]]
    weights: dict[str, Fraction]
    strategies: tuple[str, ...]
    needs: tuple[str, ...]
    resources: tuple[str, ...]
    """The resources shares are counted in: every resource of a quota."""

    @cached_property
    def numbers(self) -> QuotaNumbers:
        """The tree's quota in numbers, for the model."""
        return QuotaNumbers.of(self.quotas)

    def state(self, freed: dict[int, Resources], placed: Resources, back: int | None = None) -> CohortQuotas:
        """The quota once ``freed`` is freed (but ``back``'s part) and ``placed`` is added to the queue."""
        return self._with_back(self._used(freed, placed), freed, back)

    def _with_back(
        self, used: dict[str, dict[str, int]], freed: dict[int, Resources], back: int | None
    ) -> CohortQuotas:
        """The quota of ``used`` with ``back``'s freed part given back to its queue (``used`` left as it is)."""
        if back is not None and back in self._queue_of:
            queue = self._queue_of[back]
            used = {**used, queue: dict(used.get(queue, {}))}
            for r, a in freed.get(back, {}).items():
                used[queue][r] = used[queue].get(r, 0) + a
        return self.quotas.with_used(used)

    @cached_property
    def _queue_of(self) -> dict[int, str]:
        return {v: queue for queue, members in self.victims.items() for v in members}

    def _used(self, freed: dict[int, Resources], placed: Resources) -> dict[str, dict[str, int]]:
        """What each ClusterQueue uses once ``freed`` is freed and ``placed`` added (shallow: copy a queue's
        amounts before changing them)."""
        used = {queue: dict(amounts) for queue, amounts in self.quotas.used.items()}
        queue_of = self._queue_of
        for v, amounts in freed.items():
            queue = queue_of.get(v)
            if queue is None:
                continue
            mine = used.setdefault(queue, {})
            for r, a in amounts.items():
                mine[r] = mine.get(r, 0) - a
        mine = used.setdefault(self.queue, {})
        for r, a in placed.items():
            mine[r] = mine.get(r, 0) + a
        return used

    def share(self, quotas: CohortQuotas, queue: str) -> int | None:
        return quotas.share(queue, self.weights.get(queue, Fraction(1)), self.resources)

    def out_of_reach(self, freed: dict[int, Resources], placed: Resources) -> frozenset[int]:
        """Victims no answer can take, by a bound on the shares: a target's victims may go only if the share of
        the preemptor's side, at its lowest (``placed`` added, every victim on that side gone, ``freed`` giving
        what each frees), is at most the target side's share before anything goes, which is its highest. Empty
        when the preemptor may end within its nominal quota (then the shares are not compared)."""
        mine_side = self._under(self.queue)
        least = self.state({v: a for v, a in freed.items() if v in mine_side}, placed)
        nominal = self.quotas.nominal.get(self.queue, {})
        if all(least.usage(self.queue, r) <= nominal.get(r, 0) for r in self.needs):
            return frozenset()
        before = self.state({}, placed)
        out: set[int] = set()
        for target, members in self.victims.items():
            if target == self.queue:
                continue
            mine, theirs = self.pairs[target]
            side = self._under(mine)
            lowest = self.state({v: a for v, a in freed.items() if v in side}, placed)
            if not at_most(self.share(lowest, mine), self.share(before, theirs)):
                out.update(members)
        return frozenset(out)

    def _under(self, ancestor: str) -> frozenset[int]:
        """The victims whose ClusterQueue is ``ancestor`` or below it."""
        parents = self.quotas.parents
        found: set[int] = set()
        for queue, members in self.victims.items():
            at: str | None = queue
            while at is not None and at != ancestor:
                at = parents[at]
            if at == ancestor:
                found.update(members)
        return frozenset(found)

    def allows(self, freed: dict[int, Resources], placed: Resources) -> bool:
        used = self._used(freed, placed)
        after = self.quotas.with_used(used)
        nominal = self.quotas.nominal.get(self.queue, {})
        if all(after.usage(self.queue, r) <= nominal.get(r, 0) for r in self.needs):
            return True  # Kueue's FairSharingPreemptWithinNominal
        for target, members in self.victims.items():
            taken = [v for v in members if any(a > 0 for a in freed.get(v, {}).values())]
            if target == self.queue or not taken:
                continue
            mine, theirs = self.pairs[target]
            ours = self.share(after, mine)
            if FINAL_SHARE in self.strategies and at_most(ours, self.share(after, theirs)):
                continue
            lasts = taken if FINAL_SHARE in self.strategies or len(taken) == 1 else []
            if INITIAL_SHARE in self.strategies and any(
                below(ours, self.share(self._with_back(used, freed, w), theirs)) for w in lasts
            ):
                continue
            return False
        return True


def at_most(a: int | None, b: int | None) -> bool:
    """``a <= b`` between shares, ``None`` being infinite."""
    return b is None or (a is not None and a <= b)


def below(a: int | None, b: int | None) -> bool:
    """``a < b`` between shares, ``None`` being infinite."""
    return a is not None and (b is None or a < b)
