"""A problem under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption" and "Kueue's fair sharing"): Kueue's
quota for the chunk, each cohort victim's queue still over its quota before its last workload goes, its fair-sharing
rows and Kueue's victim order."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

from gpu_preempt.models import Job
from gpu_preempt.problem.quota_rows import FINAL_SHARE, INITIAL_SHARE, CohortRows, FairRows
from gpu_preempt.problem.records import (
    GuaranteeRow,
    LimitRow,
    Problem,
    Victim,
)
from gpu_preempt.rules.kueue_preemption import KueueTerms, quotas_of
from gpu_preempt.state.cluster import ClusterState

from .chunk import requested

if TYPE_CHECKING:
    from .builder import Prepared

__all__ = ["kueue_problem"]


def kueue_problem(prepared: Prepared, problem: Problem) -> Problem:
    """``problem`` under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption"): Kueue's quota for the
    chunk, each cohort victim's queue still over its quota before its last workload goes, Kueue's victim order."""
    cluster, job, terms = prepared.cluster, prepared.job, prepared.kueue
    victims = tuple(replace(v, whole_chunk=v.held) for v in problem.victims)  # Kueue evicts whole workloads
    limits = problem.limits
    rows: CohortRows | None = None
    fair: FairRows | None = None
    guarantees: tuple[GuaranteeRow, ...] = ()
    if terms is None:  # allocate: within what the ClusterQueue has available, a constant
        quotas = quotas_of(cluster)
        for resource in sorted(r for r, a in requested(job, [t for t, _ in prepared.chunk]).items() if a > 0):
            headroom = max(0, quotas.available(job.queue, resource))
            most = quotas.usage(job.queue, resource) + headroom
            limits += (LimitRow(job.queue, resource, headroom, (), "nominal quota plus what it may borrow", most),)
    else:
        index = {v.job: k for k, v in enumerate(victims)}
        by_queue: dict[str, list[int]] = {}
        for k, victim in enumerate(victims):
            by_queue.setdefault(victim.queue, []).append(k)
        without = tuple(
            sorted(index[j] for j, variant in terms.variants.items() if variant == "without-borrowing" and j in index)
        )
        rows = CohortRows(terms.quotas, terms.queue, {q: tuple(ks) for q, ks in by_queue.items()}, terms.modes, without)
        guarantees = _nominal_rows(cluster, terms, victims, index)
        if cluster.snapshot.config.fair_sharing:
            fair = _fair_rows(cluster, terms, rows.victims)
    return replace(
        problem,
        victims=victims,
        limits=limits,
        guarantees=guarantees,
        guarantee_rule="last_chunk",
        saturation=(),
        greedy_order=_kueue_order(cluster, job, victims, terms),
        victim_order=None,
        cohort=rows,
        fair=fair,
    )


def _fair_rows(cluster: ClusterState, terms: KueueTerms, victims: dict[str, tuple[int, ...]]) -> FairRows:
    """docs/rules.md, "Kueue's fair sharing": the shares to compare for each ClusterQueue losing victims."""
    tree, config = cluster.tree, cluster.snapshot.config
    queues = cluster.snapshot.queues
    return FairRows(
        quotas=terms.quotas,
        queue=terms.queue,
        victims=victims,
        pairs={t: tree.leveled_pair(terms.queue, t) for t in victims if t != terms.queue},
        weights={q.name: Fraction(q.fair_sharing_weight).limit_denominator(10**6) for q in queues},
        strategies=tuple(config.fair_sharing_strategies or (FINAL_SHARE, INITIAL_SHARE)),
        needs=terms.needs,
        resources=tuple(sorted({r for q in queues for r in q.nominal})),
    )


def _nominal_rows(
    cluster: ClusterState, terms: KueueTerms, victims: tuple[Victim, ...], index: dict[str, int]
) -> tuple[GuaranteeRow, ...]:
    """Kueue takes a cohort candidate only while its ClusterQueue, and every cohort between it and the ancestor
    where it was found, uses more than its quota in a resource needing preemption: as a set, each such queue is
    still above its quota before its last (largest) workload goes (rows read as ``last_chunk``)."""
    quotas, tree = terms.quotas, cluster.tree
    members: dict[str, list[int]] = {}
    for name, ancestor in terms.found_at.items():
        if name not in index:
            continue  # not among the victims of this problem
        for queue in tree.upward(victims[index[name]].queue):
            if queue == ancestor:
                break
            members.setdefault(queue, []).append(index[name])
    rows = []
    for queue in sorted(members):
        leaf = tree.is_leaf(queue)
        for resource in terms.needs:
            threshold = (
                quotas.nominal.get(queue, {}).get(resource, 0) if leaf else quotas.subtree_quota(queue, resource)
            )
            kind = "nominal quota" if leaf else "subtree quota"
            held = quotas.usage(queue, resource)
            rows.append(GuaranteeRow(queue, resource, held, threshold, kind, tuple(sorted(members[queue]))))
    return tuple(rows)


def _kueue_order(
    cluster: ClusterState, job: Job, victims: tuple[Victim, ...], terms: KueueTerms | None
) -> tuple[int, ...]:
    """The victims in Kueue's order (``CandidatesOrdering`` within each class): hierarchical cohort candidates,
    then the other cohort candidates, then the preemptor's own ClusterQueue; in each, lower priority first, then
    the most recently started, then by name."""
    if terms is None:
        return ()
    snapshot = cluster.snapshot
    group = {"hierarchical": 0, "without-borrowing": 1, "while-borrowing": 1, "fair": 1, "in-queue": 2}

    def key(k: int) -> tuple[int, int, float, str]:
        victim = victims[k]
        started = snapshot.job(victim.job).started_at
        return group[terms.variants[victim.job]], victim.priority, -(started or 0.0), victim.job

    return tuple(sorted(range(len(victims)), key=key))
