"""The order in which a cycle takes pending jobs: KAI's job order (docs/snapshot-format.md, "Commands and output";
docs/rules.md, "The cycle and the job order").

At every level of the queue tree, from the root down, the queue goes first that
is judged best *by its best placeable pending job* (the job it would offer next):

1. queues that stay within their deserved quota with that job added come first
   (*starved*: in every resource the queue holds or the job asks for; an
   undeclared quota is 0, an unlimited one no bound);
2. then the lowest share with the job added: the largest, over those resources,
   of ``(allocated + job) / allocatable share``, the allocatable share being
   ``max(deserved, fair share)`` capped by the limit (KAI's DRF share);
3. then the queue's name.

Within a leaf queue, the best job is the one of highest priority, then the
oldest (its queue-order time: creation, or the last eviction of a requeued job,
docs/rules.md, "Requeue with backoff"), then by name. A queue offers its best *placeable* job, and only a
queue with no placeable job offers another (after every queue that has one), so
that a job that cannot be placed does not hold its queue back (KAI skips such
jobs before any search). Placeable depends on the action: in ``allocate``, the
tasks the job needs next fit the room there is now, every promise (docs/rules.md, "Nominations")
holding whatever the job's priority, so that no judgement depends on another
(a gang no free room can take cannot be allocated, and must not speak for its
queue: judged by it, a queue below its guarantee would let an evicted job take
back the room just made for one of its small jobs; nor may a job of higher
priority, judged by room a promise holds, take back the room a reclaim just
promised); in ``reclaim`` and ``preempt``, each fits some schedulable node's
capacity (whatever runs there). Only the nodes the job may use count (docs/rules.md, "Placement"), inside one
domain of a required topology.

Why it matters: judged by the job it would place, a queue below its guarantee
goes ahead of a queue over it, so a job evicted for a starved queue is never
handed the room back before the job it made room for (no ping-pong); victims of
this cycle are releasing and not re-allocated within it anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial

import numpy as np

from gpu_preempt.models import Job, Node, Resources
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.node_cache import NodeKey
from gpu_preempt.state.queue_tree import ROOT

from .placement import Eligibility, eligibility, placement_matters
from .requeue import queue_order_time

__all__ = [
    "INFINITE",
    "PROMISE_ROOMS",
    "FitsSomeNode",
    "Placeable",
    "PromiseRooms",
    "WaitingOrder",
    "chunk_request",
    "next_job",
]

INFINITE = Fraction(10**18)


def next_job(
    cluster: ClusterState, waiting: Iterable[Job], action: str = "reclaim", fits: Placeable | None = None
) -> Job:
    """The job a cycle takes next among ``waiting`` (pending jobs of leaf queues) for ``action``, in the state
    ``cluster``; ``fits`` (from :class:`Placeable`, for this very state and action) keeps what was judged placeable
    across picks in one state."""
    offer = WaitingOrder(cluster, waiting, fits or Placeable(cluster, action)).pop()
    assert offer is not None, "no waiting job"
    return offer


class WaitingOrder:
    """The waiting jobs of one state, taken in :func:`next_job`'s order as the set shrinks by the job taken.

    Each leaf's jobs are sorted once (their keys do not change while the state
    lasts), so taking all ``n`` jobs costs ``n log n``, not ``n`` times ``n``.
    """

    def __init__(self, cluster: ClusterState, waiting: Iterable[Job], fits: Placeable) -> None:
        self.cluster, self.fits = cluster, fits
        by_leaf: dict[str, list[Job]] = {}
        for job in waiting:
            by_leaf.setdefault(job.queue, []).append(job)
        rank = partial(_rank, cluster)
        self.orders = {leaf: _placeable_first(sorted(jobs, key=rank), fits) for leaf, jobs in by_leaf.items()}
        self.heads = dict.fromkeys(self.orders, 0)
        self.offers: dict[str, tuple[tuple[object, ...], Job] | None] = {}
        """Per queue, the job its subtree offers and that queue's key with it (:func:`_queue_key`), kept until a
        job of one of its leaves is taken: a pop judges again only the queues on the taken job's path."""
        self.paths: dict[str, tuple[str, ...]] = {}

    def pop_run(self) -> list[Job]:
        """The next job and the jobs after it in its leaf that give every queue the keys it gives: :meth:`pop`
        would take them one after the other while the state lasts (empty when every job was taken)."""
        found = self._offer(ROOT)
        if found is None:
            return []
        leaf = found[1].queue
        jobs, start = self.orders[leaf], self.heads[leaf]
        mark = self._mark(jobs[start])
        end = start + 1
        while end < len(jobs) and self._mark(jobs[end]) == mark:
            end += 1
        self.heads[leaf] = end
        for queue in self._path(leaf):
            self.offers.pop(queue, None)
        return jobs[start:end]

    def pop(self) -> Job | None:
        """The next job (``None`` when every one was taken)."""
        found = self._offer(ROOT)
        if found is None:
            return None
        offer = found[1]
        leaf = offer.queue
        head = self.heads[leaf] = self.heads[leaf] + 1
        path = self._path(leaf)
        offers = self.offers
        jobs = self.orders[leaf]
        if head < len(jobs) and self._mark(offer) == self._mark(jobs[head]):
            # the leaf's next job has the same queue keys: every queue on the path offers it in the same place
            after = jobs[head]
            for queue in path:
                kept = offers.get(queue)
                if kept is not None:
                    offers[queue] = (kept[0], after)
            return offer
        for queue in path:
            offers.pop(queue, None)
        return offer

    def _path(self, leaf: str) -> tuple[str, ...]:
        """The queues from ``leaf`` up to the root."""
        path = self.paths.get(leaf)
        if path is None:
            path = self.paths[leaf] = (*self.cluster.tree.upward(leaf), ROOT)
        return path

    def _mark(self, job: Job) -> tuple[bool, tuple[tuple[str, int], ...]]:
        """What :func:`_queue_key` reads of a job (its placeability and chunk request): jobs of equal marks give
        every queue the same key."""
        return self.fits(job), _chunk_of(self.cluster, job, self.fits)

    def _offer(self, queue: str) -> tuple[tuple[object, ...], Job] | None:
        """The job ``queue``'s subtree offers, with ``queue``'s key: its own best job (a leaf), or the offer of its
        best child (the first least key among the children, in order)."""
        offers = self.offers
        if queue in offers:
            return offers[queue]
        jobs = self.orders.get(queue)
        job: Job | None = None
        if jobs is not None:
            head = self.heads[queue]
            if head < len(jobs):
                job = jobs[head]
        else:
            best: tuple[object, ...] | None = None
            for child in self.cluster.tree.children(queue):
                found = self._offer(child)
                if found is not None and (best is None or found[0] < best):
                    best, job = found[0], found[1]
        if job is None:
            result = None
        else:  # the key its parent compares it by (the root has none)
            result = ((), job) if queue == ROOT else (_queue_key(self.cluster, queue, job, self.fits), job)
        offers[queue] = result
        return result


def chunk_request(cluster: ClusterState, job: Job) -> Resources:
    """What the job asks for next: its missing gang tasks, or one more task once its gang runs (kept on the job
    model, for the states that have not changed its tasks: a replay keeps an unchanged job's model from cycle to
    cycle)."""
    given = job.name not in cluster.changed_jobs
    if given:
        found: Resources | None = job.__dict__.get("_next_chunk")
        if found is not None:
            return found
    pending = cluster.tasks(job, "pending", "nominated")
    need = max(1, job.gang_minimum - cluster.active_count(job))
    total: Resources = {}
    for task in pending[:need]:
        total = add(total, job.requests(task))
    if given:
        job.__dict__["_next_chunk"] = total
    return total


@dataclass
class FitsSomeNode:
    """Whether the tasks of a request shape each fit some schedulable node's allocatable (kept for the node models)."""

    shapes: dict[tuple[object, ...], bool] = field(default_factory=dict)
    """Request shapes (with the nodes a placement allows, when it narrows them) -> the judgement."""


@dataclass(frozen=True)
class PromiseRooms(NodeKey):
    """Every node's room with every promise holding, as a map (``None`` for an unschedulable node)."""


PROMISE_ROOMS = PromiseRooms()


class Placeable:
    """Whether a job can be placed by ``action`` (see the module docstring), remembered per job while the state
    ``cluster`` lasts."""

    def __init__(self, cluster: ClusterState, action: str) -> None:
        self.cluster, self.action = cluster, action
        self.known: dict[str, bool] = {}
        self.rooms: list[Resources | None] | None = None
        """Room per node with every promise holding (``None``: not schedulable)."""
        self.shapes: dict[tuple[object, ...], bool] = {}
        """Judgements by the requests of the tasks needed next."""
        self.counts: dict[tuple[tuple[str, int], ...], np.ndarray | None] = {}
        """Per task request, how many such tasks each node's room takes, every promise holding (``None``: a room
        does not fit 64 bits)."""
        self.chunks: dict[str, tuple[tuple[str, int], ...]] = {}
        self.queue_keys: dict[tuple[str, tuple[tuple[str, int], ...], bool], tuple[object, ...]] = {}
        self.needs: dict[str, tuple[list[Resources], tuple[object, ...]]] = {}
        """Per job, the requests of the tasks it needs next and their shape."""

    def carried(self, cluster: ClusterState, changed: set[str], *, shrunk: bool) -> Placeable:
        """This judgement for ``cluster``, a state derived from this one's by changing only the jobs ``changed``:
        what depends on each job alone is kept for the others (and, in reclaim and preempt, judged on capacities
        alone, whether each fits); what depends on the state's room and usage is judged again, but for the jobs
        of one kind of task that found no room, when the room only ``shrunk`` (no promise was given up)."""
        new = Placeable(cluster, self.action)
        new.chunks.update((name, chunk) for name, chunk in self.chunks.items() if name not in changed)
        new.needs.update((name, need) for name, need in self.needs.items() if name not in changed)
        if self.action != "allocate":  # static: node capacities only
            new.known = {name: value for name, value in self.known.items() if name not in changed}
            return new
        if not shrunk:
            return new
        # tasks of one kind that found no room still do not: their first fit is the number each node takes
        for name, placeable in self.known.items():
            if not placeable and name not in changed:
                requests = self.needs[name][0]
                if all(r == requests[0] for r in requests):
                    new.known[name] = False
        return new

    def __call__(self, job: Job) -> bool:
        found = self.known.get(job.name)
        if found is None:
            found = self.known[job.name] = self._kept(job)
        return found

    def _kept(self, job: Job) -> bool:
        """:meth:`_judge`; in reclaim and preempt kept on the job model for the node models, while its tasks are
        as given."""
        cluster = self.cluster
        if self.action == "allocate" or job.name in cluster.changed_jobs:
            return self._judge(job)
        token = cluster.for_nodes(FitsSomeNode)
        kept: tuple[FitsSomeNode, bool] | None = job.__dict__.get("_fits_some")
        if kept is not None and kept[0] is token:
            return kept[1]
        found = self._judge(job)
        job.__dict__["_fits_some"] = (token, found)
        return found

    def _judge(self, job: Job) -> bool:
        cluster = self.cluster
        requests, key, sets = self._shape(job)
        if self.action != "allocate":  # static: node capacities only
            known = cluster.for_nodes(FitsSomeNode).shapes
            found = known.get(key)
            if found is None:
                nodes = cluster.snapshot.nodes
                groups = [[n for n in range(len(nodes)) if nodes[n].schedulable]] if sets is None else sets
                found = known[key] = any(
                    all(any(_fits(r, nodes[n].resources) for n in group) for r in requests) for group in groups
                )
            return found
        judged = self.shapes.get(key)
        if judged is None:
            node_groups: list[list[int] | None] = [None] if sets is None else list(sets)
            judged = self.shapes[key] = any(self._first_fit(requests, group) for group in node_groups)
        return judged

    def _shape(self, job: Job) -> tuple[list[Resources], tuple[object, ...], list[list[int]] | None]:
        """The requests of the tasks the job needs next, what the judgement is kept by (their shape, and the sets of
        nodes they may go to together when the job may not use every node), and those sets; kept on the job model
        for the node models, while its tasks are as given."""
        cluster = self.cluster
        given = job.name not in cluster.changed_jobs
        token = cluster.for_nodes(FitsSomeNode)
        if given:
            kept = job.__dict__.get("_fit_shape")
            if kept is not None and kept[0] is token:
                self.needs[job.name] = kept[4]
                return kept[1], kept[2], kept[3]
        need = self.needs.get(job.name)
        if need is None:
            need = self.needs[job.name] = self._need(job)
        requests, shape = need
        where = eligibility(cluster, job) if placement_matters(cluster, job) else None
        sets = None if where is None else _node_sets(where)
        key: tuple[object, ...] = shape if sets is None else (shape, *map(tuple, sets))
        if given:
            job.__dict__["_fit_shape"] = (token, requests, key, sets, need)
        return requests, key, sets

    def _need(self, job: Job) -> tuple[list[Resources], tuple[object, ...]]:
        """The requests of the tasks the job needs next, and their shape (kept on the job model, as
        :func:`chunk_request` keeps its answer)."""
        cluster = self.cluster
        given = job.name not in cluster.changed_jobs
        if given:
            found: tuple[list[Resources], tuple[object, ...]] | None = job.__dict__.get("_next_need")
            if found is not None:
                return found
        if job.uniform and not cluster.active_count(job):  # the common case: a whole gang of equal tasks waits
            waiting = cluster.count(job, "pending", "nominated")
            requests = [job.task_resources] * min(max(1, job.gang_minimum), waiting)
        else:
            needed = cluster.tasks(job, "pending", "nominated")[: max(1, job.gang_minimum - cluster.active_count(job))]
            requests = [job.requests(t) for t in needed]
        need = requests, tuple(tuple(sorted(r.items())) for r in requests)
        if given:
            job.__dict__["_next_need"] = need
        return need

    def _first_fit(self, requests: list[Resources], nodes: list[int] | None = None) -> bool:
        """Whether every request finds room now, first fit over the nodes in order (``nodes`` only, if given),
        every promise holding. Tasks all alike are counted on the room matrix at once: first fit places as many on
        each node as its room takes, so they all find room exactly when those counts add up to them."""
        if requests and all(r == requests[0] for r in requests):
            counts = self._counts(requests[0])
            if counts is not None:
                taken = counts if nodes is None else counts[nodes]
                return int(np.minimum(taken, len(requests)).sum()) >= len(requests)
        rooms = self.rooms
        if rooms is None:
            cluster = self.cluster

            def room(_: int, node: Node) -> Resources | None:
                return _room(node.resources, cluster.final_load(node.name)) if node.schedulable else None

            rooms = self.rooms = cluster.node_values(PROMISE_ROOMS, room)
        order = range(len(rooms)) if nodes is None else nodes
        spots: dict[int, Resources] = {}  # the rooms this judgement used, copied on first use
        for request in requests:
            index = next(
                (i for i in order if rooms[i] is not None and _fits(request, spots.get(i, rooms[i]))),  # type: ignore
                None,
            )
            if index is None:
                return False
            spot = spots.setdefault(index, dict(rooms[index]))  # type: ignore[arg-type]
            for r, a in request.items():
                spot[r] = spot.get(r, 0) - a
        return True

    def _counts(self, request: Resources) -> np.ndarray | None:
        """How many tasks of ``request`` each node's room takes, every promise holding (0 on an unschedulable
        node); ``None`` when a room does not fit 64 bits."""
        key = tuple(sorted((r, a) for r, a in request.items() if a > 0))
        if key in self.counts:
            return self.counts[key]
        cluster = self.cluster
        schedulable = cluster.index.schedulable
        counts: np.ndarray | None
        if not key:
            counts = np.where(schedulable, 2**62, 0).astype(np.int64)  # a request for nothing fits any number
        else:
            matrix = cluster.room_matrix(tuple(r for r, _ in key))
            if matrix is None:
                counts = None
            else:
                counts = np.min(np.maximum(matrix, 0) // np.array([a for _, a in key], dtype=np.int64), axis=1)
                counts[~schedulable] = 0
        self.counts[key] = counts
        return counts


def _node_sets(where: Eligibility) -> list[list[int]]:
    """The sets of nodes a job's tasks may go to together: the eligible ones, or each domain's eligible ones when a
    required topology is to be chosen (docs/rules.md, "Placement")."""
    eligible = np.flatnonzero(where.mask)
    if where.required is None:
        return [eligible.tolist()]
    found: dict[int, list[int]] = {}
    for n, d in zip(eligible.tolist(), where.required[eligible].tolist(), strict=True):
        found.setdefault(d, []).append(n)
    return list(found.values())


def _fits(request: Resources, room: Resources) -> bool:
    return all(a <= room.get(r, 0) for r, a in request.items() if a > 0)


def _room(capacity: Resources, load: Resources) -> Resources:
    return {r: capacity.get(r, 0) - load.get(r, 0) for r in {*capacity, *load}}


def _rank(cluster: ClusterState, job: Job) -> tuple[int, float, str]:
    """A job's place within its leaf but for placeability: highest priority, then oldest queue-order time, then
    name (kept on the job model: it reads the model and its snapshot's config only)."""
    found: tuple[int, float, str] | None = job.__dict__.get("_rank")
    if found is None:
        since = queue_order_time(cluster.snapshot, job)
        found = job.__dict__["_rank"] = (-job.resolved_priority, float("inf") if since is None else since, job.name)
    return found


def _placeable_first(jobs: list[Job], fits: Placeable) -> list[Job]:
    """``jobs`` (ranked) with the placeable ones first, each part in rank order."""
    flags = list(map(fits, jobs))
    if all(flags) or not any(flags):
        return jobs
    return [j for j, f in zip(jobs, flags, strict=True) if f] + [j for j, f in zip(jobs, flags, strict=True) if not f]


def _queue_key(cluster: ClusterState, queue: str, job: Job, fits: Placeable) -> tuple[object, ...]:
    """The queue's key with ``job`` offered: it reads the job's chunk request and placeability only."""
    chunk = _chunk_of(cluster, job, fits)
    placeable = fits(job)
    key = fits.queue_keys.get((queue, chunk, placeable))
    if key is None:
        key = fits.queue_keys[(queue, chunk, placeable)] = _judge_queue(cluster, queue, dict(chunk), placeable)
    return key


def _chunk_of(cluster: ClusterState, job: Job, fits: Placeable) -> tuple[tuple[str, int], ...]:
    """:func:`chunk_request` as a key (kept on the job model as :func:`chunk_request` keeps its answer)."""
    chunk = fits.chunks.get(job.name)
    if chunk is None:
        given = job.name not in cluster.changed_jobs
        chunk = job.__dict__.get("_chunk_key") if given else None
        if chunk is None:
            chunk = tuple(sorted(chunk_request(cluster, job).items()))
            if given:
                job.__dict__["_chunk_key"] = chunk
        fits.chunks[job.name] = chunk
    return chunk


def _judge_queue(cluster: ClusterState, queue: str, chunk: Resources, placeable: bool) -> tuple[object, ...]:
    spec = cluster.tree.queue(queue)
    holding = add(cluster.usage[queue].allocated, chunk)
    starved = True
    share = Fraction(0)
    for resource, amount in holding.items():
        if amount <= 0:
            continue
        deserved = spec.deserved_of(resource)
        if deserved is not None and amount > deserved:
            starved = False
        if deserved is None:
            continue  # an unlimited quota: no share of it is ever large
        allocatable = max(deserved, cluster.shares[queue].get(resource, 0))
        limit = spec.limit_of(resource)
        if limit is not None:
            allocatable = min(allocatable, limit)
        share = max(share, INFINITE if allocatable <= 0 else Fraction(amount, allocatable))
    return (not placeable, not starved, share, queue)
