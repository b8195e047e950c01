"""The greedy baseline: victims taken the way the peer scheduler takes them, until the job fits.

docs/rules.md, "The greedy baseline": under KAI's rules it is KAI's job solver
(:mod:`~gpu_preempt.actions.kai_search`: its victim queue, probes, accumulated scenarios and their generators, and its
simulation that moves victims it can place again); under ``config.policy: kueue`` Kueue's own search
(:mod:`~gpu_preempt.actions.kueue_search`). Unlike the peers, it returns only decisions this project's rules allow:
a scenario that breaks one fails, where KAI's validators might let it through.

The baseline proves nothing: when it runs out of victims its answer is ``unknown``, and its answers are never marked
optimal. It serves as the CP-SAT model's first hint and as the yardstick of the benchmarks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from gpu_preempt.actions import kai_search, kueue_search
from gpu_preempt.formulate.builder import Prepared
from gpu_preempt.formulate.queue_facts import cluster_facts
from gpu_preempt.models import Job
from gpu_preempt.models.columns import grouped
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution
from gpu_preempt.problem.victim_queue import Pop, VictimEntry, VictimQueue, leaf_stream, peel_order
from gpu_preempt.reduce.hosts import free_hosts
from gpu_preempt.rules.candidates import Candidate

__all__ = ["FIRST_PREFIX", "solve", "solve_prepared"]

FIRST_PREFIX = 64
"""How many candidates :func:`solve_prepared` builds at least, beyond those its count of freed room reaches."""


def solve(problem: Problem) -> Solution:
    """The baseline's answer for ``problem``."""
    if problem.cohort is not None and problem.victims:
        return kueue_search.solve_cohort(problem)
    return kai_search.solve(problem)


def solve_prepared(prepared: Prepared) -> tuple[Problem, Solution]:
    """The baseline's answer for ``prepared``, building victims only as far as KAI's victim queue reaches.

    The queue is walked over every candidate, but a victim is built only once popped: the problem over the
    candidates of the first pops, given those pops in that order, is searched as the whole problem would be. The
    first prefix reaches a little past the pops whose tasks could free room for the whole chunk
    (:func:`_read_until_room`); when the search needs more pops than it holds
    (:class:`~gpu_preempt.actions.kai_search.Truncated`), the next holds twice as many candidates, up to every
    one. On 100,000 nodes this builds 65 victims for a 1-GPU job and some 23,000 for a gang of eight whole nodes,
    instead of 324,000 (``tests/solver/actions/test_greedy.py`` checks that the answers are the same). Decisions that
    may move jobs, and Kueue's, are solved whole.
    """
    candidates = [] if prepared.candidates is None else prepared.candidates.candidates
    if prepared.kueue is not None or prepared.moves_possible or len(candidates) <= FIRST_PREFIX:
        problem = prepared.problem
        assert problem is not None
        return problem, solve(problem)
    pops = _candidate_queue(prepared, candidates).pops()
    taken: list[Pop] = []
    seen: dict[int, None] = {}
    hosts = _free_hosts(prepared)
    done = _read_until_room(prepared, candidates, pops, taken, seen)
    size = FIRST_PREFIX + len(seen) + len(seen) // 16  # a little more than the count: recorded victims may add
    while True:
        while len(seen) < size and not done:
            pop = next(pops, None)
            if pop is None:
                done = True
            else:
                taken.append(pop)
                seen.setdefault(pop[0])
        chosen = sorted(seen)
        if done and hosts is None and len(chosen) == len(candidates):
            problem = prepared.problem
            assert problem is not None
        else:
            problem = prepared.build(chosen=[candidates[i] for i in chosen], only_nodes=hosts)
            position = {c: k for k, c in enumerate(chosen)}
            assert problem.victim_order is not None
            fixed = tuple((position[c], peel) for c, peel in taken)
            problem = replace(problem, victim_order=replace(problem.victim_order, fixed=fixed, complete=done))
        try:
            return problem, solve(problem)
        except kai_search.Truncated:
            size *= 2


def _read_until_room(
    prepared: Prepared,
    candidates: list[Candidate],
    pops: Iterator[Pop],
    taken: list[Pop],
    seen: dict[int, None],
) -> bool:
    """Read ``pops`` (into ``taken`` and ``seen``) until the tasks popped so far would free room for every required
    task of a chunk of one task type (no search succeeds on fewer pops: every scenario is some of them); whether the
    pops ran out. A count, not a search: it only spares :func:`solve_prepared` prefixes too short to hold the
    answer."""
    job, cluster = prepared.job, prepared.cluster
    request = _one_shape(prepared)
    if request is None:
        return False
    resources = tuple(sorted(request))
    needed = sum(1 for _, required in prepared.chunk if required)
    rooms, allowed, index = cluster.rooms(job.resolved_priority, resources), prepared.where.mask, cluster.node_index()
    extra: dict[int, list[int]] = {}  # per node, the room its popped tasks free
    asks = [request[r] for r in resources]

    counted = {n: k for n, k in free_hosts(cluster, job.resolved_priority, request, resources, job.gpu_devices)}
    total = sum(k for n, k in counted.items() if allowed[n])
    jobs, node_of = cluster.snapshot, cluster.node_of
    steps: dict[int, list[tuple[int, list[int]]]] = {}  # per candidate, its tasks' nodes and requests, peels first
    gone: dict[int, int] = {}  # per candidate, its tasks popped so far
    while total < needed:
        pop = next(pops, None)
        if pop is None:
            return True
        taken.append(pop)
        c, peel = pop
        seen.setdefault(c)
        order = steps.get(c)
        if order is None:
            owner = jobs.job(candidates[c].job)
            tasks = prepared.running(owner)
            order = steps[c] = [
                (index[str(node_of[str(task.name)])], [owner.requests(task).get(r, 0) for r in resources])
                for task in (tasks[i] for i in peel_order([(str(t.name), t.order) for t in tasks]))
            ]
        first = gone.get(c, 0)
        gone[c] = first + 1 if peel else len(order)
        for n, asked in order[first : gone[c]]:
            if not allowed[n]:
                continue
            room = extra.get(n)
            if room is None:
                room = extra[n] = [0] * len(resources)
            for k, a in enumerate(asked):
                room[k] += a
            now = min((a + b) // q for a, b, q in zip(rooms[n], room, asks, strict=True))
            total += now - counted.get(n, 0)
            counted[n] = now
    return False


def _candidate_queue(prepared: Prepared, candidates: list[Candidate]) -> VictimQueue:
    """KAI's victim queue over every candidate, each leaf ordered only when first read and each entry made only
    when reached: a large cluster has hundreds of thousands of candidates, of which a search pops a few hundred."""
    cluster = prepared.cluster
    jobs = cluster.snapshot.jobs
    found = prepared.candidates
    assert found is not None
    rows = found.rows
    if rows is None:
        rows = np.array(cluster.job_positions(c.job for c in candidates), dtype=np.int64).reshape(len(candidates))
    columns = cluster.job_columns()
    made: dict[int, VictimEntry] = {}

    def entry(i: int) -> VictimEntry:
        known = made.get(i)
        if known is None:
            candidate = candidates[i]
            job: Job = jobs[int(rows[i])]
            known = made[i] = prepared.victim_entry(job, candidate)
        return known

    surplus = np.fromiter((c.surplus for c in candidates), dtype=np.int64, count=len(candidates))
    created, started = columns.created[rows], columns.started[rows]
    newest = np.where(np.isnan(created), np.where(np.isnan(started), -1e300, started), created)
    leaves = {}
    for _, members in grouped(columns.queue[rows]):
        queue = jobs[int(rows[members[0]])].queue
        leaves[queue] = leaf_stream(
            members, columns.priority[rows][members], surplus[members] > 0, newest[members], lambda i: candidates[i].job
        )
    return VictimQueue(cluster_facts(cluster, leaves), leaves, entry)


def _free_hosts(prepared: Prepared) -> set[str] | None:
    """For a chunk of one task type, the nodes with room for one task now (``None``: every schedulable node).

    A prefix problem needs no other node: one that has no room now and runs none of the prefix's victims can host
    no task of any answer over that prefix, so first-fit never picks it, and building it for a 100,000-node
    cluster costs more than the search.
    """
    job, request = prepared.job, _one_shape(prepared)
    if request is None:
        return None
    nodes, allowed = prepared.cluster.snapshot.nodes, prepared.where.mask
    found = free_hosts(prepared.cluster, job.resolved_priority, request, tuple(sorted(request)), job.gpu_devices)
    return {nodes[n].name for n, _ in found if allowed[n]}


def _one_shape(prepared: Prepared) -> dict[str, int] | None:
    """What each task of the chunk asks for, when they all ask for the same (``None``: several shapes, or nothing)."""
    job = prepared.job
    shapes = {tuple(sorted((r, a) for r, a in job.requests(task).items() if a > 0)) for task, _ in prepared.chunk}
    if len(shapes) != 1 or not next(iter(shapes)):
        return None
    return dict(next(iter(shapes)))
