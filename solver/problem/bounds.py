"""A bound before any search: whether the chunk could fit at all, were every task a victim may give up gone."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product

from .records import Problem, Slot, Victim

__all__ = ["could_fit", "could_fit_kueue", "could_fit_within_lines"]


def could_fit(
    problem: Problem, out: frozenset[int] = frozenset(), caps: Mapping[str, tuple[str, int]] | None = None
) -> bool:
    """Whether the chunk's required tasks could fit even if every task a victim may give up left its node: on
    each eligible node, its room plus the tasks of victims there that could be evicted (up to the victim's
    budget: all its tasks, or its surplus) or moved (a slot with somewhere to go), each kind of task counted
    alone. The victims ``out`` (proved out of reach of every answer) stay; ``caps`` bounds, per queue, what its
    victims free on one node in one resource. A relaxation of the model (limits, the reclaim line, saturation,
    moves' landing room and the topology left out), so ``False`` proves that no answer places the chunk.

    A move that can only land on nodes the chunk may use, of a task that asks for ``m`` times what a chunk task
    asks, frees nothing: it makes room for ``m`` chunk tasks where it leaves and takes room for ``m`` where it
    lands. Such tasks are counted only as far as they could be evicted.

    >>> from gpu_preempt.problem.records import ChunkType, NodeRoom, Problem
    >>> node = NodeRoom("n0", room={"gpu": 4}, now_room={"gpu": 4})
    >>> chunk = (ChunkType({"gpu": 8}, ("t0",), required=1),)
    >>> could_fit(Problem("j", "reclaim", nodes=(node,), chunk=chunk, victims=()))
    False
    """
    caps = caps or {}
    leaving: dict[int, list[tuple[Slot, int, bool, str]]] = {}
    for v, victim in enumerate(problem.victims):
        if v in out:
            continue
        budget = victim.running if victim.whole_job else victim.surplus
        for slot in victim.slots:
            movable = victim.move != "none" and bool(slot.moves_to)
            leaving.setdefault(slot.node, []).append((slot, min(slot.count, budget), movable, victim.queue))
    for chunk in problem.chunk:
        asked = [(r, a) for r, a in chunk.requests.items() if a > 0]
        if not chunk.required or not asked:
            continue
        fits = 0
        for n, node in enumerate(problem.nodes):
            if not node.eligible:
                continue
            room = dict(node.room)
            capped: dict[str, int] = {}
            for slot, evictable, movable, queue in leaving.get(n, ()):
                count = slot.count if movable and not _swaps_room(problem, slot, asked) else evictable
                cap = caps.get(queue)
                for r, a in slot.requests.items():
                    if cap is not None and cap[0] == r:
                        capped[queue] = capped.get(queue, 0) + a * count
                    else:
                        room[r] = room.get(r, 0) + a * count
            for queue, freed in capped.items():
                resource, most = caps[queue]
                room[resource] = room.get(resource, 0) + min(freed, most)
            fits += min(room.get(r, 0) // a for r, a in asked)
            if fits >= chunk.required:
                break
        if fits < chunk.required:
            return False
    return True


def could_fit_within_lines(problem: Problem, out: frozenset[int] = frozenset()) -> bool:
    """:func:`could_fit` with each queue's reclaim line read as ``last_chunk`` (docs/snapshot-format.md, "Reclaim"):
    a queue that loses anything stays above its line in some row's resource before its last chunk goes, so it frees
    in that resource at most ``held - line + largest chunk - 1``. One row per queue is chosen in every way; the
    chunk could fit only if it could under some choice. Under ``strict`` rows, :func:`could_fit` alone."""
    if problem.guarantee_rule != "last_chunk" or not problem.guarantees:
        return could_fit(problem, out)
    choices: list[list[tuple[str, tuple[str, int]]]] = []
    for queue, rows in problem.line_groups():
        options = []
        for row in rows:
            if row.threshold is None:
                break  # an infinite line: this row alone never binds the queue
            largest = max((_largest(problem, v, row.resource) for v in row.victims), default=0)
            options.append((queue, (row.resource, max(0, row.held - row.threshold + largest - 1))))
        else:
            choices.append(options)
    return any(could_fit(problem, out, dict(chosen)) for chosen in product(*choices))


def could_fit_kueue(problem: Problem) -> bool:
    """:func:`could_fit_within_lines` for a problem under ``config.policy: kueue``, leaving out, under fair sharing,
    the victims whose queue's share no answer could let go (:meth:`~.quota_rows.FairRows.out_of_reach`). ``False``
    proves that no answer places the chunk."""
    out: frozenset[int] = frozenset()
    if problem.fair is not None and problem.victims:
        freed = {v: _whole(victim) for v, victim in enumerate(problem.victims)}
        asked = {r: sum(t.requests.get(r, 0) * t.required for t in problem.chunk) for r in problem.resources}
        out = problem.fair.out_of_reach(freed, asked)
    return could_fit_within_lines(problem, out)


def _whole(victim: Victim) -> dict[str, int]:
    """What a victim frees evicted whole."""
    freed: dict[str, int] = {}
    for slot in victim.slots:
        for r, a in slot.requests.items():
            freed[r] = freed.get(r, 0) + a * slot.count
    return freed


def _largest(problem: Problem, v: int, resource: str) -> int:
    """The largest chunk of victim ``v`` in ``resource``: one task of a slot, or the job evicted whole."""
    victim = problem.victims[v]
    largest = max((slot.requests.get(resource, 0) for slot in victim.slots), default=0)
    return max(largest, victim.whole_chunk.get(resource, 0))


def _swaps_room(problem: Problem, slot: Slot, asked: list[tuple[str, int]]) -> bool:
    """Whether moving a task of ``slot`` frees no room for tasks asking ``asked``: it lands only on nodes the chunk
    may use, and asks for the same whole multiple of each resource ``asked`` names (see :func:`could_fit`)."""
    if not all(problem.nodes[m].eligible for m in slot.moves_to):
        return False
    first, amount = asked[0]
    times, rest = divmod(slot.requests.get(first, 0), amount)
    return times >= 1 and rest == 0 and all(slot.requests.get(r, 0) == times * a for r, a in asked)
