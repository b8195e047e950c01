"""A bound before any search: whether the chunk could fit at all, were every task a victim may give up gone."""

from __future__ import annotations

from .records import Problem, Slot

__all__ = ["could_fit"]


def could_fit(problem: Problem) -> bool:
    """Whether the chunk's required tasks could fit even if every task a victim may give up left its node: on
    each eligible node, its room plus the tasks of victims there that could be evicted (up to the victim's
    budget: all its tasks, or its surplus) or moved (a slot with somewhere to go), each kind of task counted
    alone. A relaxation of the model (limits, the reclaim line, saturation, moves' landing room and the topology
    left out), so ``False`` proves that no answer places the chunk.

    A move that can only land on nodes the chunk may use, of a task that asks for ``m`` times what a chunk task
    asks, frees nothing: it makes room for ``m`` chunk tasks where it leaves and takes room for ``m`` where it
    lands. Such tasks are counted only as far as they could be evicted.

    >>> from gpu_preempt.problem.records import ChunkType, NodeRoom, Problem
    >>> node = NodeRoom("n0", room={"gpu": 4}, now_room={"gpu": 4})
    >>> chunk = (ChunkType({"gpu": 8}, ("t0",), required=1),)
    >>> could_fit(Problem("j", "reclaim", nodes=(node,), chunk=chunk, victims=()))
    False
    """
    leaving: dict[int, list[tuple[Slot, int, bool]]] = {}
    for victim in problem.victims:
        budget = victim.running if victim.whole_job else victim.surplus
        for slot in victim.slots:
            movable = victim.move != "none" and bool(slot.moves_to)
            leaving.setdefault(slot.node, []).append((slot, min(slot.count, budget), movable))
    for chunk in problem.chunk:
        asked = [(r, a) for r, a in chunk.requests.items() if a > 0]
        if not chunk.required or not asked:
            continue
        fits = 0
        for n, node in enumerate(problem.nodes):
            if not node.eligible:
                continue
            room = dict(node.room)
            for slot, evictable, movable in leaving.get(n, ()):
                count = slot.count if movable and not _swaps_room(problem, slot, asked) else evictable
                for r, a in slot.requests.items():
                    room[r] = room.get(r, 0) + a * count
            fits += min(room.get(r, 0) // a for r, a in asked)
            if fits >= chunk.required:
                break
        if fits < chunk.required:
            return False
    return True


def _swaps_room(problem: Problem, slot: Slot, asked: list[tuple[str, int]]) -> bool:
    """Whether moving a task of ``slot`` frees no room for tasks asking ``asked``: it lands only on nodes the chunk
    may use, and asks for the same whole multiple of each resource ``asked`` names (see :func:`could_fit`)."""
    if not all(problem.nodes[m].eligible for m in slot.moves_to):
        return False
    first, amount = asked[0]
    times, rest = divmod(slot.requests.get(first, 0), amount)
    return times >= 1 and rest == 0 and all(slot.requests.get(r, 0) == times * a for r, a in asked)
