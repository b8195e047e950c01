"""A first answer for quota enforcement's CP-SAT model (docs/rules.md, "Quota enforcement"): the greedy hint.

It proves nothing and is never reported; it only gives CP-SAT a good starting
point, so that the LP bound can prove it optimal at once.
"""

from __future__ import annotations

from gpu_preempt.models import is_gpu_resource
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution

__all__ = ["greedy_hint"]


def greedy_hint(problem: Problem) -> Solution:
    """A first answer for CP-SAT: victims by lowest priority, then largest, then least lost work, taken whole
    (or their elastic surplus when taking them whole would break a guarantee) while every guarantee row holds,
    until every limit row (and best-effort row) holds.

    With one or two search workers CP-SAT has no large-neighbourhood search and may not find a good first
    solution on a thousand candidates; this hint lets the lower bound prove it optimal at once. It proves
    nothing itself.
    """
    resources = sorted({row.resource for row in (*problem.limits, *problem.excess)}, key=_gpus_first)
    need = {row.resource: -row.headroom for row in (*problem.limits, *problem.excess)}
    guards = [(row, set(row.victims)) for row in problem.guarantees]
    taken_by_row = [0] * len(guards)
    freed_total = dict.fromkeys(resources, 0)

    def amount(v: int, counts: dict[int, int], resource: str) -> int:
        return sum(n * problem.victims[v].slots[s].requests.get(resource, 0) for s, n in counts.items())

    def size(v: int) -> tuple[int, ...]:
        return tuple(
            -amount(v, {s: slot.count for s, slot in enumerate(problem.victims[v].slots)}, r) for r in resources
        )

    order = sorted(
        range(len(problem.victims)),
        key=lambda v: (problem.victims[v].priority, size(v), problem.victims[v].elapsed_ms, v),
    )
    evicted: dict[tuple[int, int], int] = {}
    for v in order:
        if all(freed_total[r] >= need[r] for r in resources):
            break
        victim = problem.victims[v]
        options = [{s: slot.count for s, slot in enumerate(victim.slots)}] if victim.whole_job else []
        if victim.surplus:
            left, peel = victim.surplus, {}
            for s, slot in enumerate(victim.slots):
                peel[s] = min(slot.count, left)
                left -= peel[s]
            options.append({s: n for s, n in peel.items() if n})
        for counts in options:
            rows = [(k, amount(v, counts, row.resource)) for k, (row, members) in enumerate(guards) if v in members]
            if all(taken_by_row[k] + a <= guards[k][0].max_take for k, a in rows):
                for k, a in rows:
                    taken_by_row[k] += a
                for r in resources:
                    freed_total[r] += amount(v, counts, r)
                evicted.update(((v, s), n) for s, n in counts.items())
                break
    return Solution("feasible", evicted=evicted)


def _gpus_first(resource: str) -> tuple[bool, str]:
    return (not is_gpu_resource(resource), resource)
