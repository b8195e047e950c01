"""Kueue's classical preemption: which running workloads a pending one may preempt, and in which class.

docs/rules.md, "Kueue's preemption"; Kueue ``pkg/scheduler/preemption/classical/hierarchical_preemption.go``
and ``preemption.go``. Under ``config.policy: kueue`` one action, ``preempt``, covers the preemptor's own
ClusterQueue and its cohort:

* the resources **needing preemption** are those the workload asks for beyond what its ClusterQueue has
  available; a candidate must use one of them. When there are none the quota fits, and Kueue admits the workload
  without preempting (it waits for room on the nodes);
* **in its ClusterQueue**, by ``within_cluster_queue``: ``LowerPriority`` (strictly lower), or
  ``LowerOrNewerEqualPriority`` (or equal priority and a later queue-order time than the preemptor's);
* **in the cohort**, by ``reclaim_within_cohort`` (``LowerPriority`` or ``Any``), from ClusterQueues that use
  more than their nominal quota in a resource needing preemption, found by walking the preemptor's ancestors
  upward and descending only into cohorts that use more than their subtree quota. Each such workload has a class:
  *hierarchical* when the request fits the quota of the preemptor's subtree at the level where it was found;
  otherwise *without borrowing* (the preemptor must end within its nominal quota) when ``borrow_within_cohort``
  is ``Never``, the candidate's priority is not below the preemptor's, or it is above
  ``max_priority_threshold``; else *while borrowing*.

A job the other protections (non-preemptible, min-runtime, toleration) guard is left out as under KAI. Kueue
evicts whole workloads: a candidate is the whole job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from gpu_preempt.models import Job, Resources, format_quantity
from gpu_preempt.models.cohort_quotas import CohortQuotas
from gpu_preempt.models.queue import Preemption
from gpu_preempt.state.cluster import ClusterState

from .candidates import Candidate, CandidateSet, Excluded
from .protection import EvictingAction, Protection, protections
from .requeue import queue_order_time

__all__ = [
    "KueueTerms",
    "Variant",
    "kueue_candidates",
    "needing_preemption",
    "no_kueue_candidate",
    "policy_of",
    "quotas_of",
]

Variant = Literal["in-queue", "hierarchical", "without-borrowing", "while-borrowing", "fair"]
"""A candidate's class (Kueue's ``WithinCQ``, ``HiearchicalReclaim``, ``ReclaimWithoutBorrowing``,
``ReclaimWhileBorrowing``; ``fair``: a cohort candidate under fair sharing)."""


@dataclass(frozen=True)
class KueueTerms:
    """What Kueue's rules add to the candidates of one preemptor."""

    queue: str
    """The preemptor's ClusterQueue."""
    needs: tuple[str, ...]
    """The resources needing preemption."""
    quotas: CohortQuotas
    """The quota arithmetic of the state decided in."""
    variants: dict[str, Variant] = field(default_factory=dict)
    """Per candidate job, its class."""
    found_at: dict[str, str] = field(default_factory=dict)
    """Per cohort candidate, the ancestor of the preemptor's ClusterQueue where it was found."""
    modes: tuple[bool, ...] = (True,)
    """The attempts Kueue makes, each with borrowing allowed (``True``) or not."""


def quotas_of(cluster: ClusterState) -> CohortQuotas:
    """The quota arithmetic of ``cluster``'s state: the snapshot's queues, each ClusterQueue using what its
    running, allocated, pipelined and releasing tasks hold (found once per state)."""
    kept = cluster.for_state(_Quotas)
    if kept.found is None:
        tree = cluster.tree
        used = {leaf: dict(cluster.usage[leaf].allocated) for leaf in tree.leaves() if leaf in cluster.usage}
        kept.found = CohortQuotas.of(cluster.snapshot.queues, used)
    return kept.found


@dataclass
class _Quotas:
    """A state's quota arithmetic (:func:`quotas_of`)."""

    found: CohortQuotas | None = None


def needing_preemption(quotas: CohortQuotas, queue: str, request: Resources) -> tuple[str, ...]:
    """The resources of ``request`` beyond what ``queue`` has available (Kueue's ``Preempt`` assignment mode)."""
    return tuple(sorted(r for r, a in request.items() if a > 0 and a > max(0, quotas.available(queue, r))))


def policy_of(cluster: ClusterState, queue: str) -> Preemption:
    """A ClusterQueue's preemption policies (Kueue's defaults when it gives none)."""
    return cluster.tree.queue(queue).preemption or Preemption()


def kueue_candidates(cluster: ClusterState, preemptor: Job, request: Resources) -> tuple[CandidateSet, KueueTerms]:
    """Kueue's candidates for ``preemptor`` asking for ``request``, and their classes."""
    quotas = quotas_of(cluster)
    queue = preemptor.queue
    needs = needing_preemption(quotas, queue, request)
    terms = KueueTerms(queue, needs, quotas)
    result = CandidateSet("preempt", preemptor.name)
    if not needs:
        return result, terms
    policy = policy_of(cluster, queue)
    seen: set[str] = set()
    for job, variant, found_at in _reach(cluster, quotas, preemptor, request, needs):
        seen.add(job.name)
        if job.name == preemptor.name:
            continue
        refused = _refusal(cluster, preemptor, job, policy, needs)
        if refused is not None:
            result.judged.append(refused)
            continue
        if variant in ("without-borrowing", "while-borrowing"):
            variant = _borrow_variant(policy, job.resolved_priority, preemptor.resolved_priority)
        result.candidates.append(Candidate(job.name, cluster.running_count(job), 0, whole_job=True))
        terms.variants[job.name] = variant
        if found_at is not None:
            terms.found_at[job.name] = found_at
    for leaf, jobs in cluster.running_by_queue().items():  # every other running job: out of reach, and why
        why: str | None = None  # one reason per queue, written when first needed
        for job in jobs:
            if job.name not in seen and job.name != preemptor.name:
                if why is None:
                    why = _out_of_reach(cluster, quotas, preemptor, leaf, needs)
                result.judged.append(Excluded(job.name, "policy", why))
    fair = bool(cluster.snapshot.config.fair_sharing)
    borrowing_forbidden = policy.borrow_within_cohort.policy == "Never"
    cohort = [v for v in terms.variants.values() if v != "in-queue"]
    under_nominal = all(quotas.usage(queue, r) < quotas.nominal.get(queue, {}).get(r, 0) for r in needs)
    if fair or not cohort or (borrowing_forbidden and not under_nominal):
        modes: tuple[bool, ...] = (True,)
    elif borrowing_forbidden and "hierarchical" not in cohort:
        modes = (False, True)
    else:
        modes = (True, False)
    return result, KueueTerms(queue, needs, quotas, terms.variants, terms.found_at, modes)


def no_kueue_candidate(cluster: ClusterState, preemptor: Job, request: Resources) -> bool:
    """Whether ``preemptor`` asking for ``request`` needs preemption (the quota does not fit) and finds no
    candidate: what :func:`kueue_candidates` would say with an empty list, found without writing why each running
    job is left out."""
    quotas = quotas_of(cluster)
    needs = needing_preemption(quotas, preemptor.queue, request)
    if not needs:
        return False
    policy = policy_of(cluster, preemptor.queue)
    for job, _, _ in _reach(cluster, quotas, preemptor, request, needs):
        if job.name == preemptor.name or _policy_refuses(cluster, preemptor, job, policy) is not None:
            continue  # the cheapest test first: most jobs within reach are of equal or higher priority
        if _uses(cluster, job, needs) and not _protections(cluster, preemptor, job):
            return False
    return True


def _reach(
    cluster: ClusterState, quotas: CohortQuotas, preemptor: Job, request: Resources, needs: tuple[str, ...]
) -> Iterator[tuple[Job, Variant, str | None]]:
    """The running jobs within the reach of the preemptor's ClusterQueue's policy, each with its class before
    borrowing is judged and the ancestor where it was found (``None`` in the queue itself)."""
    queue, tree = preemptor.queue, cluster.tree
    policy = policy_of(cluster, queue)
    by_queue = cluster.running_by_queue()
    if policy.within_cluster_queue != "Never":
        for job in by_queue.get(queue, []):
            yield job, "in-queue", None
    fair = bool(cluster.snapshot.config.fair_sharing)
    if fair and tree.parent(queue) is not None and policy.reclaim_within_cohort != "Never":
        top = tree.upward(queue)[-1]  # docs/rules.md, "Kueue's fair sharing": any borrowing queue of the tree
        for leaf in tree.leaves_under(top):
            if leaf != queue and any(quotas.borrowing_now(leaf, r) for r in needs):
                for job in by_queue.get(leaf, []):
                    yield job, "fair", tree.lca(queue, leaf)
    elif tree.parent(queue) is not None and policy.reclaim_within_cohort != "Never":
        advantage, left = quotas.fits_in_quota(queue, request)
        below = queue
        for ancestor in tree.upward(queue)[1:]:
            for leaf in _over_nominal_leaves(cluster, quotas, ancestor, below, needs):
                for job in by_queue.get(leaf, []):
                    yield job, "hierarchical" if advantage else "without-borrowing", ancestor
            fits, left = quotas.fits_in_quota(ancestor, left)
            advantage = advantage or fits
            below = ancestor


def _refusal(
    cluster: ClusterState, preemptor: Job, job: Job, policy: Preemption, needs: tuple[str, ...]
) -> Excluded | None:
    """Why ``job``, within reach, is not a candidate of ``preemptor``, or ``None`` when it is."""
    if not _uses(cluster, job, needs):
        uses = ", ".join(needs)
        return Excluded(job.name, "policy", f"it uses none of the resources needing preemption ({uses})")
    why = _policy_refuses(cluster, preemptor, job, policy)
    if why is not None:
        return Excluded(job.name, "priority", why)
    found = _protections(cluster, preemptor, job)
    if found:
        first = found[0]
        return Excluded(job.name, first.rule, first.describe(), first.until)
    return None


def _over_nominal_leaves(
    cluster: ClusterState, quotas: CohortQuotas, ancestor: str, skip: str, needs: tuple[str, ...]
) -> list[str]:
    """The ClusterQueues under ``ancestor`` but not under ``skip`` that use more than their nominal quota in a
    resource of ``needs``, reached through cohorts that use more than their subtree quota (Kueue's
    ``collectCandidatesInSubtree``)."""
    tree, found = cluster.tree, []
    for child in tree.children(ancestor):
        if child == skip or quotas.within_nominal(child, list(needs)):
            continue
        if tree.is_leaf(child):
            found.append(child)
        else:
            found.extend(_over_nominal_leaves(cluster, quotas, child, skip, needs))
    return found


def _uses(cluster: ClusterState, job: Job, needs: tuple[str, ...]) -> bool:
    """Whether a running task of ``job`` uses a resource of ``needs``."""
    return any(job.requests(t).get(r, 0) > 0 for t in cluster.tasks(job, "running") for r in needs)


def _protections(cluster: ClusterState, preemptor: Job, job: Job) -> list[Protection]:
    """What protects ``job`` from ``preemptor``: a preempt in its own ClusterQueue, a reclaim in the cohort."""
    action: EvictingAction = "preempt" if job.queue == preemptor.queue else "reclaim"
    return protections(cluster, job, preemptor, action)


def _policy_refuses(cluster: ClusterState, preemptor: Job, job: Job, policy: Preemption) -> str | None:
    """Why the preemptor's policy leaves ``job`` alone (Kueue's ``priorityTooHighToPreempt``), or ``None``."""
    mine = job.queue == preemptor.queue
    rule = policy.within_cluster_queue if mine else policy.reclaim_within_cohort
    name = "within_cluster_queue" if mine else "reclaim_within_cohort"
    ours, theirs = preemptor.resolved_priority, job.resolved_priority
    if rule == "Any" or ours > theirs:
        return None
    if rule == "LowerOrNewerEqualPriority" and ours == theirs:
        snapshot = cluster.snapshot
        before, after = queue_order_time(snapshot, preemptor), queue_order_time(snapshot, job)
        if before is not None and after is not None and before < after:
            return None
        return f"{name} {rule}: priority {theirs} equals the preemptor's and it is not newer"
    return f"{name} {rule}: priority {theirs} is not below the preemptor's {ours}"


def _borrow_variant(policy: Preemption, candidate: int, incoming: int) -> Variant:
    """A cohort candidate without the hierarchical advantage: may it go while the preemptor borrows?"""
    borrow = policy.borrow_within_cohort
    if borrow.policy == "Never" or candidate >= incoming:
        return "without-borrowing"
    if borrow.max_priority_threshold is not None and candidate > borrow.max_priority_threshold:
        return "without-borrowing"
    return "while-borrowing"


def _out_of_reach(
    cluster: ClusterState, quotas: CohortQuotas, preemptor: Job, leaf: str, needs: tuple[str, ...]
) -> str:
    policy, queue = policy_of(cluster, preemptor.queue), preemptor.queue
    if leaf == queue:
        return "within_cluster_queue Never: the preemptor's ClusterQueue preempts nothing of its own"
    if cluster.tree.upward(queue)[-1] != cluster.tree.upward(leaf)[-1]:
        return f"ClusterQueue {leaf} is in another cohort tree"
    if policy.reclaim_within_cohort == "Never":
        return "reclaim_within_cohort Never: the preemptor's ClusterQueue reclaims nothing in its cohort"
    used = ", ".join(
        f"{format_quantity(r, quotas.usage(leaf, r))} {r} of nominal "
        f"{format_quantity(r, quotas.nominal.get(leaf, {}).get(r, 0))}"
        for r in needs
    )
    return f"ClusterQueue {leaf} (or a cohort above it) is within its nominal quota ({used})"
