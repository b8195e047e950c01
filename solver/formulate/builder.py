"""From the cluster state and the rules to a :class:`~gpu_preempt.problem.records.Problem` for one job, one action.

What the pending job needs (docs/snapshot-format.md, "Gang and elastic"; KAI ``GetTasksToAllocate``):
while fewer than ``min_available`` of its tasks hold capacity, the *gang chunk*
(``min_available`` minus those) must be placed, all or nothing; once satisfied,
``allocate`` places as many more as fit and ``preempt``/``reclaim`` grant one
more task per attempt.

Who may lose tasks comes from :mod:`gpu_preempt.rules.candidates`; the rows that bind the
choice from the rules: queue limits and the non-preemptible quota at every level
of the job's path, and for reclaim the line of each leveled victim queue
(:mod:`gpu_preempt.rules.reclaim_line`) and KAI's parent-level saturation rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from gpu_preempt.models import MILLI, Job, Node, Resources, Task
from gpu_preempt.models.quantity import add
from gpu_preempt.problem.quota_rows import FINAL_SHARE, INITIAL_SHARE, CohortRows, FairRows
from gpu_preempt.problem.records import (
    Action,
    ChunkType,
    Devices,
    GuaranteeRow,
    LimitRow,
    NodeRoom,
    Problem,
    SaturationRow,
    Slot,
    Victim,
    share_size,
)
from gpu_preempt.problem.victim_queue import VictimEntry, VictimOrder
from gpu_preempt.rules.candidates import Candidate, CandidateSet, preempt_candidates, reclaim_candidates
from gpu_preempt.rules.kueue_preemption import KueueTerms, kueue_candidates, needing_preemption, quotas_of
from gpu_preempt.rules.placement import Eligibility, eligibility
from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.rules.reclaim_line import reclaim_line
from gpu_preempt.rules.victim_order import keep_order
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.node_cache import NodeKey

from .queue_facts import cluster_facts, entry_of

__all__ = ["MOVE_CANDIDATES", "MOVE_PAIRS", "NodeRooms", "Prepared", "node_devices", "prepare", "whole_chunk"]

_JOB, _PRIORITY = attrgetter("job"), itemgetter("_resolved_priority")

MOVE_CANDIDATES = 64
"""Moves are considered on decisions with at most this many candidate victims (evictable or movable)."""

MOVE_PAIRS = 2000
"""... and at most this many possible moves (a running task and a node whose free room takes it)."""


@dataclass(frozen=True)
class NodeRooms(NodeKey):
    """Per node, its :class:`NodeRoom` for a decision of ``priority`` asking for the resources ``asked``, with its
    devices when the snapshot has ``shares`` of a GPU (a replay's next cycle may have them where this one has none)."""

    priority: int
    asked: frozenset[str]
    shares: bool


@dataclass
class Prepared:
    """What one attempt needs: the chunk, the candidates, and the problem built from them on demand.

    ``skip`` is set (and nothing else is) when the job is not eligible for the action.
    """

    cluster: ClusterState
    job: Job
    action: Action
    chunk: list[tuple[Task, bool]] = field(default_factory=list)
    required: Resources = field(default_factory=dict)
    candidates: CandidateSet | None = None
    skip: str | None = None
    kueue: KueueTerms | None = None
    """Under ``config.policy: kueue``, what Kueue's rules add to the candidates (docs/rules.md, "Kueue's
    preemption")."""
    _problem: Problem | None = field(default=None, init=False, repr=False)
    _levels: tuple[int, ...] | None = field(default=None, init=False, repr=False)
    _moves: bool | None = field(default=None, init=False, repr=False)
    _where: Eligibility | None = field(default=None, init=False, repr=False)
    _running: dict[str, list[Task]] = field(default_factory=dict, init=False, repr=False)
    _entries: dict[tuple[str, int, bool], VictimEntry] = field(default_factory=dict, init=False, repr=False)

    def running(self, job: Job) -> list[Task]:
        """``job``'s running tasks, read once per decision (every prefix of the greedy baseline reads them again)."""
        found = self._running.get(job.name)
        if found is None:
            found = self._running[job.name] = self.cluster.tasks(job, "running")
        return found

    def victim_entry(self, job: Job, candidate: Candidate) -> VictimEntry:
        """``candidate`` (``job``) as KAI's victim queue sees it, made once per decision."""
        key = (candidate.job, candidate.surplus, candidate.whole_job)
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = entry_of(
                self.cluster, job, self.running(job), candidate.surplus, candidate.whole_job
            )
        return found

    @property
    def where(self) -> Eligibility:
        """Where the job's new tasks may go (docs/rules.md, "Placement")."""
        if self._where is None:
            self._where = eligibility(self.cluster, self.job)
        return self._where

    @property
    def problem(self) -> Problem | None:
        """The full problem over every candidate (built once, when first asked for)."""
        if self.skip is not None:
            return None
        if self._problem is None:
            self._problem = self.build()
        return self._problem

    @property
    def moves_possible(self) -> bool:
        """Whether moves are considered in this decision (docs/snapshot-format.md, "Moves"): some candidate's task
        could be moved to
        free room on another node, and the decision is small enough.

        A move needs a schedulable node other than the task's own whose free room (every promise kept) takes the
        task; when no candidate task has one, no answer moves anything (exact and cheap). Moves are considered on
        decisions with at most ``MOVE_CANDIDATES`` candidates and ``MOVE_PAIRS`` possible moves: they bind the
        nodes together, so a larger decision could not go through the exact reductions; it is made without moves
        (KAI bounds its consolidation likewise, to 16 victims by default).
        """
        if self._moves is None:
            self._moves = _moves_possible(self)
        return self._moves

    @property
    def levels(self) -> tuple[int, ...]:
        """Priority levels of the objective's ``priority`` vector: every candidate's priority, highest first."""
        if self._levels is None:
            snapshot = self.cluster.snapshot
            found = [] if self.candidates is None else self.candidates.candidates
            priorities = None if self.candidates is None else self.candidates.priorities
            if priorities is None:
                jobs = map(snapshot.jobs_by_name().__getitem__, map(_JOB, found))
                priorities = set(map(_PRIORITY, map(vars, jobs)))  # in C (Job.resolved_priority)
            self._levels = tuple(sorted(priorities, reverse=True))
        return self._levels

    def build(self, chosen: list[Candidate] | None = None, only_nodes: set[str] | None = None) -> Problem:
        """The problem over ``chosen`` candidates (default: all) and ``only_nodes`` (default: every useful node)."""
        cluster, job, action = self.cluster, self.job, self.action
        moves = self.moves_possible
        movable: list[Candidate] = []
        if chosen is None:
            chosen = [] if self.candidates is None else self.candidates.candidates
            if moves and self.candidates is not None:
                movable = self.candidates.movable
        victims_jobs = [cluster.snapshot.job(c.job) for c in (*chosen, *movable)]
        running = [self.running(j) for j in victims_jobs]
        allowed = self.where
        nodes, index = _nodes(cluster, job, self.chunk, running, allowed.mask, only_nodes, moves=moves)
        where = nodes if moves else ()
        fitting: dict[tuple[object, ...], tuple[int, ...]] = {}
        on_device = cluster.device_loads().placed if cluster.has_shares() else {}
        victims = tuple(
            _victim(cluster, j, tasks, c, index, where, fitting, on_device, evictable=k < len(chosen))
            for k, (j, tasks, c) in enumerate(zip(victims_jobs, running, (*chosen, *movable), strict=True))
        )
        positions = [cluster.node_index()[room.name] for room in nodes]
        config = cluster.snapshot.config
        required = self.required
        problem = Problem(
            job=job.name,
            action=action,
            nodes=nodes,
            chunk=_chunk_types(job, self.chunk),
            victims=victims,
            limits=_limit_rows(cluster, job, victims, self.chunk),
            guarantees=_line_rows(cluster, job, victims, required) if action == "reclaim" else (),
            guarantee_rule=config.reclaim_guarantee,
            saturation=_saturation_rows(cluster, job, victims, required) if action == "reclaim" else (),
            objective=config.objective,
            keep_order=keep_order(cluster, [victim.job for victim in victims]),
            victim_order=VictimOrder(  # movable ones too: KAI pops a job the reclaim line protects, to move it
                cluster_facts(cluster, {victim.queue for victim in victims}),
                tuple(self.victim_entry(j, c) for j, c in zip(victims_jobs, (*chosen, *movable), strict=True)),
            ),
            levels=self.levels,
            domains=() if allowed.required is None else tuple(allowed.required[positions].tolist()),
            spread=() if allowed.preferred is None else tuple(allowed.preferred[positions].tolist()),
            spread_held=allowed.held,
        )
        return self._kueue_problem(problem) if config.policy == "kueue" else problem

    def _kueue_problem(self, problem: Problem) -> Problem:
        """``problem`` under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption"): Kueue's quota for the
        chunk, each cohort victim's queue still over its quota before its last workload goes, Kueue's victim order."""
        cluster, job, terms = self.cluster, self.job, self.kueue
        victims = tuple(replace(v, whole_chunk=v.held) for v in problem.victims)  # Kueue evicts whole workloads
        limits = problem.limits
        rows: CohortRows | None = None
        fair: FairRows | None = None
        guarantees: tuple[GuaranteeRow, ...] = ()
        if terms is None:  # allocate: within what the ClusterQueue has available, a constant
            quotas = quotas_of(cluster)
            for resource in sorted(r for r, a in _total(job, [t for t, _ in self.chunk]).items() if a > 0):
                headroom = max(0, quotas.available(job.queue, resource))
                most = quotas.usage(job.queue, resource) + headroom
                limits += (LimitRow(job.queue, resource, headroom, (), "nominal quota plus what it may borrow", most),)
        else:
            index = {v.job: k for k, v in enumerate(victims)}
            by_queue: dict[str, list[int]] = {}
            for k, victim in enumerate(victims):
                by_queue.setdefault(victim.queue, []).append(k)
            without = tuple(
                sorted(
                    index[j] for j, variant in terms.variants.items() if variant == "without-borrowing" and j in index
                )
            )
            rows = CohortRows(
                terms.quotas, terms.queue, {q: tuple(ks) for q, ks in by_queue.items()}, terms.modes, without
            )
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


def prepare(cluster: ClusterState, job: Job, action: Action) -> Prepared:
    """The chunk of ``job`` to place by ``action`` and its candidates, or why the job is skipped (``job`` as the
    state's snapshot counts it: :func:`~gpu_preempt.state.cluster.decidable`)."""
    job = cluster.snapshot.job(job.name)
    if action != "allocate" and not job.may_evict:
        never = f"priority class {job.priority_class} has preemption_policy Never: it is placed only on free capacity"
        return Prepared(cluster, job, action, skip=never)
    chunk, skip = _chunk(cluster, job, action)
    if skip is not None:
        return Prepared(cluster, job, action, skip=skip)
    required = _total(job, [t for t, required in chunk if required])
    candidates: CandidateSet | None = None
    if cluster.snapshot.config.policy == "kueue":
        return _kueue_prepare(cluster, job, action, chunk, required)
    if action == "reclaim":
        closed = reclaim_gate(cluster, job, required)
        if closed is not None:
            return Prepared(cluster, job, action, skip=f"reclaim gate: {closed}")
        candidates = reclaim_candidates(cluster, job, required)
    elif action == "preempt":
        candidates = preempt_candidates(cluster, job)
    return Prepared(cluster, job, action, chunk, required, candidates)


def _kueue_prepare(
    cluster: ClusterState, job: Job, action: Action, chunk: list[tuple[Task, bool]], required: Resources
) -> Prepared:
    """``prepare`` under ``config.policy: kueue`` (docs/rules.md, "Kueue's preemption"): ``preempt`` covers the
    ClusterQueue and its cohort, and is tried only when the quota leaves no room."""
    if action == "reclaim":
        why = "policy kueue: one preemption covers the ClusterQueue and its cohort (action preempt)"
        return Prepared(cluster, job, action, skip=why)
    if action == "allocate":
        return Prepared(cluster, job, action, chunk, required)
    if not needing_preemption(quotas_of(cluster), job.queue, required):
        why = (
            f"ClusterQueue {job.queue} has quota for it: Kueue admits it without preempting, and it waits for room "
            "on the nodes"
        )
        return Prepared(cluster, job, action, skip=why)
    candidates, terms = kueue_candidates(cluster, job, required)
    return Prepared(cluster, job, action, chunk, required, candidates, kueue=terms)


def _chunk(cluster: ClusterState, job: Job, action: Action) -> tuple[list[tuple[Task, bool]], str | None]:
    """Pending tasks to place, each flagged required (gang chunk) or optional (growth by allocate)."""
    pending = cluster.tasks(job, "pending")
    if not pending:
        return [], "no pending tasks"
    active = cluster.active_count(job)
    if active < job.gang_minimum:
        need = job.gang_minimum - active
        if need > len(pending):
            return [], f"the gang needs {need} more tasks to reach min_available but only {len(pending)} are pending"
        extra = pending[need:] if action == "allocate" else []
        return [(t, True) for t in pending[:need]] + [(t, False) for t in extra], None
    if action == "allocate":
        return [(t, False) for t in pending], None
    return [(pending[0], True)], None


def _total(job: Job, tasks: list[Task]) -> Resources:
    total: Resources = {}
    for task in tasks:
        total = add(total, job.requests(task))
    return total


def _chunk_types(job: Job, chunk: list[tuple[Task, bool]]) -> tuple[ChunkType, ...]:
    groups: dict[tuple[tuple[str, int], ...], list[tuple[Task, bool]]] = {}
    for task, required in chunk:
        key = tuple(sorted((r, a) for r, a in job.requests(task).items() if a > 0))
        groups.setdefault(key, []).append((task, required))
    return tuple(
        ChunkType(
            requests=dict(key),
            tasks=tuple(str(t.name) for t, _ in [*[x for x in items if x[1]], *[x for x in items if not x[1]]]),
            required=sum(1 for _, required in items if required),
            spread=job.gpu_devices,
        )
        for key, items in groups.items()
    )


def _nodes(
    cluster: ClusterState,
    job: Job,
    chunk: list[tuple[Task, bool]],
    running: list[list[Task]],
    allowed: np.ndarray,
    only: set[str] | None = None,
    *,
    moves: bool = False,
) -> tuple[tuple[NodeRoom, ...], dict[str, int]]:
    """Nodes eligible for the job (``allowed``; or ``only`` those), nodes where a candidate victim (its ``running``
    tasks) runs, and, when ``moves``, every schedulable node (a moved task's destination), in document order."""
    node_of = cluster.node_of
    hosting = {node_of[str(t.name)] for tasks in running for t in tasks}
    asked = frozenset(r for t, _ in chunk for r in job.requests(t))
    every = cluster.node_map(
        NodeRooms(job.resolved_priority, asked, cluster.has_shares())
    )  # the same for every such job
    rooms = []
    nodes = cluster.snapshot.nodes
    if only is not None:  # visit only those nodes and the hosting ones, in document order
        index = cluster.node_index()
        nodes = [nodes[i] for i in sorted({index[name] for name in (*only, *hosting) if name in index})]
        cluster.load_nodes(node.name for node in nodes if node.name not in every)
    positions = cluster.node_index()
    ok = None if allowed is cluster.index.schedulable else allowed.tolist()  # None: the schedulable nodes
    for node in nodes:
        fine = node.schedulable if ok is None else ok[positions[node.name]]
        if node.name not in hosting and (
            not (fine or (moves and node.schedulable)) or (only is not None and node.name not in only)
        ):
            continue
        room = every.get(node.name)
        if room is None:
            room = every[node.name] = _node_room(cluster, node, job.resolved_priority, asked)
        if not fine and room.eligible:
            room = replace(room, eligible=False)
        rooms.append(room)
    return tuple(rooms), {room.name: i for i, room in enumerate(rooms)}


def _node_room(cluster: ClusterState, node: Node, priority: int, asked: frozenset[str]) -> NodeRoom:
    name, have = node.name, node.resources
    final, current = cluster.room_load(name, priority), cluster.current_load(name)
    promised = cluster.final_load(name)
    names = sorted({*have, *final, *promised, *asked})
    room = {r: have.get(r, 0) - final.get(r, 0) for r in names}
    free = None
    if promised is not final:  # a lower-priority promise sits there: room counts it out, free room does not
        free = {r: have.get(r, 0) - promised.get(r, 0) for r in names}
    now_room = {r: have.get(r, 0) - current.get(r, 0) for r in names}
    return NodeRoom(
        name=name,
        room=room,
        now_room=now_room,
        free=None if free == room else free,
        eligible=node.schedulable,
        devices=node_devices(cluster, node, priority, room, now_room) if cluster.has_shares() else None,
    )


def node_devices(
    cluster: ClusterState, node: Node, priority: int, room: Resources | None = None, now_room: Resources | None = None
) -> Devices | None:
    """``node``'s devices as a decision of ``priority`` sees them (docs/snapshot-format.md, "GPU sharing"), for a
    snapshot with shares of a GPU; ``None`` for a node without GPUs. ``room`` and ``now_room``: its GPU room in the
    final and current loads (found here if not given)."""
    count = node.resources.get("gpu", 0) // MILLI
    if not count:
        return None
    if room is None:
        room = {"gpu": node.resources.get("gpu", 0) - cluster.room_load(node.name, priority).get("gpu", 0)}
    if now_room is None:
        now_room = {"gpu": node.resources.get("gpu", 0) - cluster.current_load(node.name).get("gpu", 0)}
    loads = cluster.device_loads()
    seen, now = loads.shares(node.name, priority), loads.now.get(node.name, {})
    shares = tuple(seen.get(d, 0) for d in range(count))
    now_shares = tuple(now.get(d, 0) for d in range(count))
    have = node.resources.get("gpu", 0)
    return Devices(
        count=count,
        whole=(have - room.get("gpu", 0) - sum(shares)) // MILLI,
        shares=shares,
        now_whole=(have - now_room.get("gpu", 0) - sum(now_shares)) // MILLI,
        now_shares=now_shares,
    )


def _victim(
    cluster: ClusterState,
    job: Job,
    running: list[Task],
    candidate: Candidate,
    index: dict[str, int],
    nodes: tuple[NodeRoom, ...],
    fitting: dict[tuple[object, ...], tuple[int, ...]],
    on_device: Mapping[str, tuple[int, ...]],
    *,
    evictable: bool = True,
) -> Victim:
    """``job`` (its ``running`` tasks) as a victim; with ``nodes``, where each of its tasks could be moved (spec
    "Moves"). A job that is not ``evictable`` (only the reclaim line keeps it out of reach) may only be moved.
    ``fitting`` keeps, per task shape and placement, the nodes whose free room takes one such task (the same for
    every victim of one problem); a move lands only on a node eligible for the moved job (docs/rules.md,
    "Placement"). ``on_device``: the devices of every task holding a share of a GPU."""
    slots: dict[tuple[int, tuple[tuple[str, int], ...], tuple[int, ...], int | None], list[str]] = {}
    node_of, shared = cluster.node_of, all(task.resources is None for task in running)
    every = tuple(sorted(job.task_resources.items()))  # what a task without its own requests asks for
    for task in reversed(running):  # evict-first order: newest task first (KAI's reverse task order)
        name = str(task.name)
        requests = every if shared else tuple(sorted(job.requests(task).items()))
        devices = on_device.get(name, ())  # a share's devices; none: whole GPUs
        slots.setdefault((index[str(node_of[name])], requests, devices, task.order), []).append(name)
    since = job.progress_since  # the lost-work clock
    elapsed = 0 if since is None else max(0, round((cluster.now - since) * 1000))
    gang = len(running) <= job.gang_minimum
    allowed = eligibility(cluster, job).mask if nodes else cluster.index.schedulable
    positions = cluster.node_index()

    def destinations(home: int, shape: tuple[tuple[str, int], ...]) -> tuple[int, ...]:
        if not nodes or job.gpu_devices > 1:  # a share on several devices is not moved (docs/rules.md, "GPU sharing")
            return ()
        key = (shape, id(allowed))
        found = fitting.get(key)
        if found is None:
            found = fitting[key] = tuple(
                n
                for n, room in enumerate(nodes)
                if allowed[positions[room.name]]
                and all(a <= room.free_room().get(r, 0) for r, a in shape if a > 0)
                and (room.devices is None or room.free is None)  # devices are seen at the decision's priority
            )
        if share_size(dict(shape)):  # a share may go to another device of its own node
            devices = nodes[home].devices
            return tuple(n for n in found if n != home or (devices is not None and devices.count > 1))
        return tuple(n for n in found if n != home)

    return Victim(
        job=job.name,
        queue=job.queue,
        priority=job.resolved_priority,
        whole_job=candidate.whole_job and evictable,
        surplus=candidate.surplus if evictable else 0,
        slots=tuple(
            Slot(node, dict(req), tuple(tasks), destinations(node, req), devices, order)
            for (node, req, devices, order), tasks in sorted(slots.items(), key=_slot_key)
        ),
        elapsed_ms=elapsed,
        whole_chunk=whole_chunk(job, running, shared=shared),
        move="none" if not nodes else "whole" if gang else "tasks",
        disturb=candidate.surplus if candidate.restrictions else None,
    )


def _slot_key(item: tuple[tuple[int, Any, tuple[int, ...], int | None], list[str]]) -> tuple[Any, ...]:
    """Slots by node, requests, devices, then task order (none first)."""
    (node, requests, devices, order), _ = item
    return node, requests, devices, order is not None, order or 0


def _moves_possible(prepared: Prepared) -> bool:
    cluster = prepared.cluster
    if (
        prepared.candidates is None
        or not cluster.snapshot.config.moves
        or cluster.snapshot.config.policy == "kueue"  # Kueue evicts, it does not move
        or prepared.action not in ("reclaim", "preempt")
    ):
        return False
    candidates = [*prepared.candidates.candidates, *prepared.candidates.movable]
    if not candidates or len(candidates) > MOVE_CANDIDATES:
        return False
    Key = tuple[tuple[tuple[str, int], ...], int]
    tasks: dict[Key, list[int]] = {}  # (task shape, where it may go) -> the node of each such task
    masks: dict[int, np.ndarray] = {}
    index = cluster.node_index()
    for candidate in candidates:
        job = cluster.snapshot.job(candidate.job)
        if job.gpu_devices > 1:
            continue  # not moved
        allowed = eligibility(cluster, job).mask
        masks[id(allowed)] = allowed
        for task in cluster.tasks(job, "running"):
            shape = tuple(sorted((r, a) for r, a in job.requests(task).items() if a > 0))
            tasks.setdefault((shape, id(allowed)), []).append(index[str(cluster.node_of[str(task.name)])])
    fitting: dict[Key, set[int]] = {key: set() for key in tasks}
    for n, node in enumerate(cluster.snapshot.nodes):
        if not node.schedulable:
            continue
        capacity, load = node.resources, cluster.final_load(node.name)
        for (shape, mask), found in fitting.items():
            if masks[mask][n] and all(a <= capacity.get(r, 0) - load.get(r, 0) for r, a in shape):
                found.add(n)
    # a share may move to another device of its own node (docs/snapshot-format.md, "GPU sharing")
    stays = {key: 0 if share_size(dict(key[0])) else 1 for key in tasks}
    pairs = sum(
        len(fitting[key]) - stays[key] * (home in fitting[key]) for key, homes in tasks.items() for home in homes
    )
    return 0 < pairs <= MOVE_PAIRS


def whole_chunk(job: Job, running: list[Task], *, shared: bool | None = None) -> Resources:
    """Per resource, the largest chunk of ``job`` evicted whole (KAI's reclaimable chunks, docs/rules.md, "The reclaim
    line"):
    its core, the first ``min_available`` running tasks, or one of the surplus tasks after them. ``shared``: whether
    no running task has requests of its own (found here if not given)."""
    if shared is None:
        shared = all(task.resources is None for task in running)
    if shared:  # every task asks for the job's requests
        each, count = job.task_resources, min(job.gang_minimum, len(running))
        largest = {r: a * count for r, a in each.items()} if count else {}
        if len(running) > count:
            for r, a in each.items():
                largest[r] = max(largest.get(r, 0), a)
        return largest
    core = _total(job, running[: job.gang_minimum])
    largest = dict(core)
    for task in running[job.gang_minimum :]:
        for r, a in job.requests(task).items():
            largest[r] = max(largest.get(r, 0), a)
    return largest


def _under(cluster: ClusterState, queue: str, by_leaf: dict[str, list[int]]) -> tuple[int, ...]:
    """Indices of the victims (``by_leaf``: per leaf queue, from :func:`_by_leaf`) whose leaf queue is ``queue`` or lies
    below it."""
    found = [v for leaf in cluster.tree.leaves_under(queue) for v in by_leaf.get(leaf, ())]
    return tuple(sorted(found))


def _by_leaf(victims: tuple[Victim, ...]) -> dict[str, list[int]]:
    """Per leaf queue, the indices of its victims."""
    out: dict[str, list[int]] = {}
    for v, victim in enumerate(victims):
        out.setdefault(victim.queue, []).append(v)
    return out


def _limit_rows(
    cluster: ClusterState, job: Job, victims: tuple[Victim, ...], chunk: list[tuple[Task, bool]]
) -> tuple[LimitRow, ...]:
    most = _total(job, [t for t, _ in chunk])
    rows = []
    by_leaf = _by_leaf(victims)
    for name in cluster.tree.upward(job.queue):
        queue = cluster.tree.queue(name)
        usage = cluster.usage[name]
        for resource in sorted(r for r, a in most.items() if a > 0):
            limit = queue.limit_of(resource)
            if limit is not None:
                headroom = limit - usage.allocated.get(resource, 0)
                if headroom < most[resource]:
                    rows.append(LimitRow(name, resource, headroom, _under(cluster, name, by_leaf), "limit", limit))
            deserved = queue.quota_of(resource)
            if not job.is_preemptible and deserved is not None:
                headroom = deserved - usage.allocated_non_preemptible.get(resource, 0)
                if headroom < most[resource]:
                    rows.append(LimitRow(name, resource, headroom, (), "non-preemptible quota", deserved))
    return tuple(rows)


def _line_rows(
    cluster: ClusterState, job: Job, victims: tuple[Victim, ...], chunk: Resources
) -> tuple[GuaranteeRow, ...]:
    """The reclaim line of each leveled victim queue (docs/snapshot-format.md, "Reclaim"), as
    ``config.reclaim_guarantee`` reads it.

    ``strict``: a row per resource the chunk asks for, where the victims could take the queue below
    ``min(held, line)``. ``last_chunk``: a row per resource the queue holds above its line; none for a queue
    that stays above in some resource however much it loses (it may lose anything).
    """
    strict = cluster.snapshot.config.reclaim_guarantee == "strict"
    leveled: dict[str, str] = {}
    for victim in victims:
        rq, vq = cluster.tree.leveled_pair(job.queue, victim.queue)
        leveled[vq] = rq
    rows: list[GuaranteeRow] = []
    by_leaf = _by_leaf(victims)
    for vq, rq in sorted(leveled.items()):
        members = _under(cluster, vq, by_leaf)
        held = cluster.usage[vq].allocated
        line = reclaim_line(cluster, rq, vq, chunk)

        def most(resource: str, members: tuple[int, ...] = members) -> int:
            return sum(s.count * s.requests.get(resource, 0) for v in members for s in victims[v].slots)

        if strict:
            for resource in sorted(r for r, a in chunk.items() if a > 0):
                row = GuaranteeRow(
                    vq, resource, held.get(resource, 0), line.amount.get(resource), line.kind[resource], members
                )
                if most(resource) > row.max_take:
                    rows.append(row)
            continue
        group: list[GuaranteeRow] = []
        for resource in line.above(held):
            amount = line.amount[resource]
            assert amount is not None
            if held[resource] - most(resource) > amount:
                group = []
                break  # above in this resource whatever is taken: the queue's line never binds
            group.append(GuaranteeRow(vq, resource, held[resource], amount, line.kind[resource], members))
        rows.extend(group)
    return tuple(rows)


def _saturation_rows(
    cluster: ClusterState, job: Job, victims: tuple[Victim, ...], chunk: Resources
) -> tuple[SaturationRow, ...]:
    """KAI's saturation rule (docs/rules.md, "The saturation rule"): each queue ``a`` on the reclaimer's path against
    each sibling ``s`` holding candidates."""
    tree = cluster.tree
    multiplier = Fraction(cluster.snapshot.config.reclaimer_saturation_multiplier)
    rows = []
    by_leaf = _by_leaf(victims)
    for a in tree.upward(job.queue):
        under_a = _under(cluster, a, by_leaf)
        for s in tree.children(tree.parent(a)):
            under_s = _under(cluster, s, by_leaf)
            if s == a or not under_s:
                continue
            held = {r for v in under_s for slot in victims[v].slots for r, x in slot.requests.items() if x > 0}
            for resource in sorted(held | {r for r, x in chunk.items() if x > 0}):
                share_a = cluster.shares[a].get(resource, 0)
                share_s = cluster.shares[s].get(resource, 0)
                mine = cluster.usage[a].allocated.get(resource, 0) + chunk.get(resource, 0)
                if (
                    share_s == 0
                    or (not under_a and share_a > 0 and mine <= share_a)
                    or (share_a == 0 and mine == 0 and not under_a)
                ):
                    continue
                rows.append(
                    SaturationRow(
                        a=a,
                        s=s,
                        resource=resource,
                        mine_base=mine,
                        victims_a=under_a,
                        held_s=cluster.usage[s].allocated.get(resource, 0),
                        victims_s=under_s,
                        share_a=share_a,
                        share_s=share_s,
                        multiplier=multiplier,
                        requested=chunk.get(resource, 0) > 0,
                    )
                )
    return tuple(rows)
