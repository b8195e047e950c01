"""Reasons in words: why no victim set works, and what protected the jobs that were not taken.

An ``infeasible`` decision says which rule stands in the way. The problem is
solved again with one rule family left out at a time (limits, the reclaim
guarantee, the saturation rule); a family whose absence makes room is named with
its numbers. When no single family is to blame, the capacity is: even evicting
every candidate leaves no room, and the protections that kept other jobs out of
reach are summed up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from itertools import compress
from operator import attrgetter

from gpu_preempt import cpsat
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.models import MILLI, Job, Resources, format_quantity, format_resources, format_time
from gpu_preempt.models.decision import Decision, Protected
from gpu_preempt.models.quantity import add
from gpu_preempt.problem.bounds import could_fit
from gpu_preempt.problem.records import ChunkType, GuaranteeRow, Problem
from gpu_preempt.rules.candidates import CandidateSet, Exclusion
from gpu_preempt.rules.kueue_preemption import quotas_of
from gpu_preempt.rules.placement import placement_matters
from gpu_preempt.rules.reclaim_line import reclaim_line
from gpu_preempt.state.cluster import ClusterState

__all__ = ["PROTECTIONS", "device_note", "protected_jobs", "why_infeasible", "why_victim"]

PROTECTIONS = ("non-preemptible", "min-runtime", "toleration", "guarantee")
_RESTRICTIONS, _JOB = attrgetter("restrictions"), attrgetter("job")


def protected_jobs(candidates: CandidateSet | None) -> list[Protected]:
    """Running jobs a protection kept out of the candidate set, or limited to their elastic surplus."""
    if candidates is None:
        return []
    new = tuple.__new__  # Protected(...) without its keyword handling: thousands of rows on a large cluster
    out = [new(Protected, (e.job, e.rule, e.until, e.reason)) for e in candidates.judged if e.rule in PROTECTIONS]
    found = candidates.candidates
    for c in compress(found, map(_RESTRICTIONS, found)):  # the few with restrictions, found in C among many
        out.extend(Protected(c.job, p.rule, p.until, p.describe()) for p in c.restrictions)
    return sorted(out, key=_JOB)


def why_victim(cluster: ClusterState, decision: Decision, victim: Job) -> str:
    """Why ``victim`` may lose tasks to ``decision``: lower priority in the same queue (preempt), or its queue above
    its reclaim line (reclaim), in words."""
    me = cluster.snapshot.job(decision.job)
    where = _frees(cluster, decision, victim, me)
    if cluster.snapshot.config.policy == "kueue":
        return _kueue_why(cluster, me, victim) + where
    if decision.action == "preempt":
        return f"same queue, priority {victim.resolved_priority} < {me.resolved_priority}{where}"
    rq, vq = cluster.tree.leveled_pair(me.queue, victim.queue)
    requested: Resources = {}
    for task in me.tasks:
        if str(task.name) in decision.placements:
            requested = add(requested, me.requests(task))
    line = reclaim_line(cluster, rq, vq, requested)
    held = cluster.usage[vq].allocated
    parts = []
    for resource in line.above(held):
        amount = line.amount[resource]
        assert amount is not None
        parts.append(
            f"queue {vq} holds {format_quantity(resource, held[resource])} {resource}, "
            f"{format_quantity(resource, held[resource] - amount)} above its {line.kind[resource]} "
            f"{format_quantity(resource, amount)}"
        )
    return ("; ".join(parts) or f"queue {vq} is not above its line") + where


def _kueue_why(cluster: ClusterState, me: Job, victim: Job) -> str:
    """docs/rules.md, "Kueue's preemption": the preemptor's policy, and for a victim of the cohort its queue above
    its nominal quota."""
    ours, theirs = me.resolved_priority, victim.resolved_priority
    rank = f"priority {theirs} < {ours}" if theirs < ours else f"priority {theirs}, queued after it"
    policy = cluster.tree.queue(me.queue).preemption
    if victim.queue == me.queue:
        within = "Never" if policy is None else policy.within_cluster_queue
        return f"same ClusterQueue, {rank} (within_cluster_queue {within})"
    quotas = quotas_of(cluster)
    parts = [
        f"{format_quantity(r, quotas.usage(victim.queue, r))} {r} of nominal "
        f"{format_quantity(r, quotas.nominal.get(victim.queue, {}).get(r, 0))}"
        for r in sorted(quotas.used.get(victim.queue, {}))
        if quotas.borrowing_now(victim.queue, r)
    ]
    reclaim = "Never" if policy is None else policy.reclaim_within_cohort
    rank = "any priority" if reclaim == "Any" else rank
    return f"ClusterQueue {victim.queue} borrows ({', '.join(parts)}); {rank} (reclaim_within_cohort {reclaim})"


def _frees(cluster: ClusterState, decision: Decision, victim: Job, me: Job) -> str:
    """For a job whose placement narrows where it runs (docs/rules.md, "Placement"), the nodes the victim frees
    where the decision places its tasks: ``"; frees n3, eligible for train-a"``; for a victim's shares of a GPU
    (docs/snapshot-format.md, "GPU sharing"), the devices it frees there: ``"; frees device 0 of n3"``."""
    lost = next((set(v.tasks) for v in decision.victims if v.job == victim.name), set())
    used = set(decision.placements.values()) | {m.node for m in decision.moves}
    out = ""
    if placement_matters(cluster, me):
        nodes = sorted({str(cluster.node_of[task]) for task in lost} & used, key=cluster.node_index().__getitem__)
        out = f"; frees {', '.join(nodes)}, eligible for {me.name}" if nodes else ""
    if cluster.has_shares():
        placed = cluster.device_loads().placed
        index = cluster.node_index()
        devices = sorted(
            {(str(cluster.node_of[task]), d) for task in lost if task in placed for d in placed[task]},
            key=lambda found: (index[found[0]], found[1]),
        )
        freed = [f"device {d} of {node}" for node, d in devices if node in used]
        out += f"; frees {', '.join(freed)}" if freed else ""
    return out


def why_infeasible(problem: Problem, candidates: CandidateSet | None, params: SolveParams) -> str:
    """A sentence (or a few) on why no allowed victim set makes room for the chunk (each rule family left out in turn,
    in a feasibility search with a quarter of ``params``' budget)."""
    need = _need(problem)
    families = ("limits", "guarantee", "saturation", "cohort", "fair") if could_fit(problem) else ()  # else capacity
    blame = [family for family in families if _feasible_without(problem, family, params)]
    if blame:
        return "; ".join(_family_reason(problem, family) for family in blame)
    devices = device_note(problem)
    if problem.action == "allocate":
        return f"no room without evicting anything: the job needs {need}" + (f"; {devices}" if devices else "")
    excluded = _exclusions(candidates)
    if not problem.victims:
        return f"no candidate victims ({excluded})" if excluded else "no candidate victims"
    everything = _with_all_evicted(problem)
    inside = " inside one domain of its required topology level" if problem.domains else ""
    return (
        f"even evicting all {len(problem.victims)} candidate job(s) leaves no room: the job needs {need}, "
        f"and at most {everything} of its required tasks would fit{inside}"
        + (f"; {devices}" if devices else "")
        + (f"; out of reach: {excluded}" if excluded else "")
    )


def device_note(problem: Problem) -> str | None:
    """Where counting devices, not node rooms, leaves the chunk out (docs/snapshot-format.md, "GPU sharing"), as
    things stand before any eviction: a share that no device has room for though its node does, or whole GPUs that
    find no empty device though their node has room in shares. ``None`` when devices are not the reason."""
    for chunk in problem.chunk:
        if not chunk.required:
            continue
        share, gpus = chunk.share, chunk.gpus
        if share and chunk.spread > 1:
            note = _spread_note(problem, chunk)
            if note is not None:
                return note
            continue
        best: tuple[int, str, int] | None = None  # free on one device, node, device
        for node in problem.nodes:
            spec = node.devices
            if spec is None or not node.eligible or node.room.get("gpu", 0) < (share or gpus * MILLI):
                continue
            if share:
                if spec.free() > 0:
                    return None  # an empty device takes it
                for d, held in enumerate(spec.shares):
                    if held and (best is None or MILLI - held > best[0]):
                        best = (MILLI - held, node.name, d)
            elif gpus and spec.free() < gpus:
                shared = sum(1 for a in spec.shares if a)
                return (
                    f"{node.name} has {node.room.get('gpu', 0) / MILLI:g} GPU free, but in shares of {shared} "
                    f"device(s) and {spec.free()} empty; the job needs {gpus} whole"
                )
        if best is not None and best[0] < share:
            free, name, device = best
            return (
                f"device {device} of {name} has {free / MILLI:g} free, the most of any device; the job needs "
                f"{share / MILLI:g} on one device"
            )
    return None


def _spread_note(problem: Problem, chunk: ChunkType) -> str | None:
    """:func:`device_note` for a share taken on several devices: the node with the most devices that have room for
    it, when none has enough."""
    best: tuple[int, str] | None = None  # devices with room, node
    for node in problem.nodes:
        spec = node.devices
        if spec is None or not node.eligible or node.room.get("gpu", 0) < chunk.share * chunk.spread:
            continue
        roomy = sum(1 for held in spec.shares if held and held + chunk.share <= MILLI) + max(0, spec.free())
        if roomy >= chunk.spread:
            return None
        if best is None or roomy > best[0]:
            best = (roomy, node.name)
    if best is None:
        return None
    return (
        f"{best[1]} has {best[0]} device(s) with room for {chunk.share / MILLI:g}, the most of any node; the job "
        f"needs {chunk.share / MILLI:g} on each of {chunk.spread} devices"
    )


def _need(problem: Problem) -> str:
    parts = [f"{t.required} x {{{format_resources(t.requests)}}}" for t in problem.chunk if t.required]
    if not parts:
        parts = [f"1 x {{{format_resources(t.requests)}}}" for t in problem.chunk[:1]]
    return " + ".join(parts)


def _feasible_without(problem: Problem, family: str, params: SolveParams) -> bool:
    rows = {
        "limits": problem.limits,
        "guarantee": problem.guarantees,
        "saturation": problem.saturation,
        "cohort": () if problem.cohort is None or not problem.victims else (problem.cohort,),
        "fair": () if problem.fair is None or not problem.victims else (problem.fair,),
    }[family]
    if not rows:
        return False
    relaxed = replace(params, time_limit=max(0.2, params.time_limit / 4))
    return cpsat.solve(problem, relaxed, skip=(family,), feasibility_only=True).feasible


def _family_reason(problem: Problem, family: str) -> str:
    if family == "cohort":
        return _cohort_reason(problem)
    if family == "fair":
        return _fair_reason(problem)
    if family == "guarantee":
        if problem.guarantee_rule == "last_chunk":
            return "; ".join(_last_chunk_reason(queue, rows) for queue, rows in problem.line_groups())
        parts = []
        for g in problem.guarantees:
            held = format_quantity(g.resource, g.held)
            kept = "all it holds" if g.threshold is None else f"its guaranteed {held}"
            if g.max_take == 0:
                parts.append(f"queue {g.queue} keeps {kept} {g.resource} ({g.kind}, strict line)")
            else:
                keep = format_quantity(g.resource, g.held - g.max_take)
                parts.append(
                    f"queue {g.queue} holds {held} {g.resource} and must keep {keep} (its {g.kind}, strict line), "
                    f"so at most {format_quantity(g.resource, g.max_take)} can be reclaimed from it"
                )
        return "; ".join(parts)
    if family == "limits":
        return "; ".join(
            f"queue {row.queue} would exceed its {row.kind} of {format_quantity(row.resource, row.bound)} "
            f"{row.resource} (room left: {format_quantity(row.resource, max(0, row.headroom))})"
            for row in problem.limits
        )
    return "; ".join(
        f"parent-level saturation: queue {row.a} would hold more than its fair share of "
        f"{format_quantity(row.resource, row.share_a)} {row.resource} while queue {row.s} is less saturated"
        for row in problem.saturation
    )


def _cohort_reason(problem: Problem) -> str:
    """docs/rules.md, "Kueue's preemption": what the preemptor's ClusterQueue would have available with every
    candidate gone, against what the job needs."""
    cohort = problem.cohort
    assert cohort is not None
    everything = {v: victim.held for v, victim in enumerate(problem.victims)}
    borrowing = {v: amounts for v, amounts in everything.items() if v not in cohort.while_nominal}
    queue, parts = cohort.queue, []
    need = {r: sum(t.requests.get(r, 0) * t.required for t in problem.chunk) for r in problem.resources}
    for r, amount in sorted(need.items()):
        nominal = cohort.quotas.nominal.get(queue, {}).get(r, 0)
        now, most = cohort.available_after({}, r), cohort.available_after(borrowing, r)
        if now >= amount:
            continue
        text = (
            f"ClusterQueue {queue} has {format_quantity(r, now)} {r} available (nominal {format_quantity(r, nominal)}) "
            f"and the job needs {format_quantity(r, amount)}"
        )
        if most < amount:
            text += f"; {format_quantity(r, most)} even with every candidate it may take while borrowing gone"
        parts.append(text)
    if cohort.while_nominal:
        parts.append(
            f"{len(cohort.while_nominal)} candidate(s) may go only if {queue} then ends within its nominal quota "
            "(borrow_within_cohort)"
        )
    return "Kueue's quota: " + "; ".join(parts)


def _fair_reason(problem: Problem) -> str:
    """docs/rules.md, "Kueue's fair sharing": the preemptor's queue would borrow, and no set of victims that makes
    room leaves each queue it takes from a share its strategies accept."""
    fair = problem.fair
    assert fair is not None
    asked = {r: sum(t.requests.get(r, 0) * t.required for t in problem.chunk) for r in problem.resources}
    state = fair.state({}, asked)
    mine = fair.pairs[next(iter(fair.pairs))][0] if fair.pairs else fair.queue
    share = fair.share(state, mine)
    shown = "infinite" if share is None else str(share)
    targets = ", ".join(sorted(fair.pairs)) or "none"
    return (
        f"Kueue's fair sharing: with the job, {fair.queue} borrows (the share of {mine} would be {shown}), and no set "
        f"of victims that makes room leaves the queues it may take from ({targets}) a share that "
        f"{' or '.join(fair.strategies)} accepts"
    )


def _last_chunk_reason(queue: str, rows: tuple[GuaranteeRow, ...]) -> str:
    above = ", ".join(
        f"{format_quantity(g.resource, g.held)} {g.resource} of {g.kind} "
        f"{format_quantity(g.resource, g.threshold or 0)}"
        for g in rows
    )
    return (
        f"queue {queue} holds {above}: any set of its jobs that makes room would leave it at or below its line "
        "before its last chunk (last_chunk)"
    )


def _exclusions(candidates: CandidateSet | None) -> str:
    if candidates is None:
        return ""
    counts = Counter(e.rule for e in candidates.judged)
    counts["other-queue"] += candidates.excluded_count("other-queue")
    words = {
        "min-runtime": "protected by {action}-min-runtime",
        "toleration": "tolerating this preemptor's priority",
        "non-preemptible": "non-preemptible",
        "guarantee": "in queues that hold only their guaranteed quota",
        "priority": "of equal or higher priority",
        "other-queue": "in other queues",
        "own-queue": "in the reclaimer's own queue",
        "policy": "out of reach of the ClusterQueue's preemption policy",
    }
    parts = []
    rules: tuple[Exclusion, ...] = (
        "min-runtime",
        "toleration",
        "non-preemptible",
        "guarantee",
        "priority",
        "own-queue",
        "other-queue",
        "policy",
    )
    for rule in rules:
        if counts[rule]:
            text = f"{counts[rule]} job(s) {words[rule].format(action=candidates.action)}"
            ends = sorted(e.until for e in candidates.judged if e.rule == rule and e.until is not None)
            if ends:
                text += f" (the first protection ends at {format_time(ends[0])})"
            if rule in ("guarantee", "policy"):
                first = next(e for e in candidates.judged if e.rule == rule)
                text += f": {first.reason}"
            parts.append(text)
    return ", ".join(parts)


def _with_all_evicted(problem: Problem) -> int:
    """How many required tasks first-fit would place if every candidate lost every task it may lose (inside the
    best domain, when a required topology is to be chosen)."""
    if problem.domains:
        return max((_all_evicted_on(problem, d) for d in set(problem.domains) - {-1}), default=0)
    return _all_evicted_on(problem, None)


def _all_evicted_on(problem: Problem, domain: int | None) -> int:
    taken: dict[tuple[int, int], int] = {}
    for v, victim in enumerate(problem.victims):
        budget = victim.running if victim.whole_job else victim.surplus
        for s, slot in enumerate(victim.slots):
            take = min(slot.count, budget)
            budget -= take
            if take:
                taken[v, s] = take
    room = {n: dict(node.room) for n, node in enumerate(problem.nodes)}
    for (v, s), count in taken.items():
        slot = problem.victims[v].slots[s]
        for r, a in slot.requests.items():
            room[slot.node][r] = room[slot.node].get(r, 0) + a * count
    fitted = 0
    for chunk in problem.chunk:
        for _ in range(chunk.required):
            node = next(
                (
                    n
                    for n, spec in enumerate(problem.nodes)
                    if spec.eligible
                    and (domain is None or problem.domains[n] == domain)
                    and all(room[n].get(r, 0) >= a for r, a in chunk.requests.items() if a > 0)
                ),
                None,
            )
            if node is None:
                break
            fitted += 1
            for r, a in chunk.requests.items():
                room[node][r] -= a
    return fitted
