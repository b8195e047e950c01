"""The job solver: one pending job, one action, one decision.

``allocate`` places the job's next chunk without evicting anything;
``preempt`` and ``reclaim`` may evict candidates (see :mod:`gpu_preempt.rules.candidates`).
The steps: decide the chunk and the candidates (:mod:`gpu_preempt.formulate.builder`),
take the greedy baseline's answer (:mod:`gpu_preempt.actions.greedy`), hand both to CP-SAT
(:mod:`gpu_preempt.cpsat`), and turn the counts it returns into named victims and
placements, with the objective recomputed from them and reasons in words. What the
named decision entails (nominations overridden, requeue states, queues taken below
their line) is read off it last (:mod:`gpu_preempt.rules.consequences`).
"""

from __future__ import annotations

import dataclasses
import time

from gpu_preempt import cpsat
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.cpsat.search import ModelError, too_large
from gpu_preempt.explain.reasons import device_note, protected_jobs, why_infeasible
from gpu_preempt.formulate.builder import prepare
from gpu_preempt.models import Job, Resources, SolverName
from gpu_preempt.models.decision import Decision, Move, Outcome, VictimTasks
from gpu_preempt.models.sharing import unknown_device_size
from gpu_preempt.problem.bounds import could_fit, could_fit_kueue
from gpu_preempt.problem.devices import DeviceFit, task_devices
from gpu_preempt.problem.records import Action, Devices, Problem
from gpu_preempt.problem.solution import Solution, objective_values
from gpu_preempt.rules.consequences import consequences
from gpu_preempt.rules.nominations import claim, held_against
from gpu_preempt.rules.placement import excluded_text, exclusions, placement_matters
from gpu_preempt.rules.preemption_delay import delay_reason
from gpu_preempt.rules.requeue import backoff_reason
from gpu_preempt.state.cluster import ClusterState

from . import greedy
from .allocation import solve_allocation
from .kai_order import in_kai_order, moves_in_kai_order
from .reduced_path import solve_reduced

__all__ = ["attempt", "named_moves", "named_victims"]


def attempt(cluster: ClusterState, job: Job, action: Action, *, solver: SolverName = "cpsat") -> Decision:
    """Decide ``action`` for ``job`` in the state ``cluster`` (``job`` as the state's snapshot holds it: a caller's
    copy from the snapshot given is read as :func:`~gpu_preempt.state.cluster.decidable` wrote it)."""
    job = cluster.snapshot.job(job.name)
    if action == "allocate" and cluster.count(job, "nominated"):
        return claim(cluster, job)  # docs/rules.md, "Nominations": the nominated job lands where it was promised
    decision, chunk = _decide(cluster, job, action, solver)
    return consequences(cluster, job, decision, chunk).apply(decision)


def _decide(cluster: ClusterState, job: Job, action: Action, solver: SolverName) -> tuple[Decision, Resources]:
    """The named decision, and what its chunk asks for."""
    start = time.perf_counter()
    waiting = backoff_reason(job, cluster.now)
    if waiting is None and action != "allocate":
        waiting = delay_reason(job, cluster.now)  # docs/rules.md, "Preemption delay"
    if waiting is not None:
        return Decision(job.name, action, "skipped", reason=waiting, solver=solver, solve_ms=_ms(start)), {}
    no_size = unknown_device_size(job, cluster.snapshot.nodes)
    if no_size is not None:  # docs/snapshot-format.md, "GPU sharing": no device to count the share on
        return Decision(job.name, action, "infeasible", reason=no_size, solver=solver, solve_ms=_ms(start)), {}
    prepared = prepare(cluster, job, action)
    if prepared.skip is not None:
        skipped = Decision(job.name, action, "skipped", reason=prepared.skip, solver=solver, solve_ms=_ms(start))
        return skipped, {}
    reason: str | None = None
    reduced = None
    params = SolveParams.of(cluster.snapshot.config.solver)
    if action == "allocate":  # one task type: exact and search-free, so the greedy baseline uses it too
        allocated = solve_allocation(prepared)
        if allocated is not None:
            problem, solution, reason = allocated
            if reason is not None and solution.status == "infeasible" and cluster.has_shares():
                full = prepared.problem
                note = None if full is None else device_note(full)
                reason = reason if note is None else f"{reason}; {note}"
            if solver == "greedy" and solution.status == "optimal":
                solution = dataclasses.replace(solution, status="feasible")  # the baseline never claims a proof
            reduced = problem, solution
    elif prepared.kueue is not None:
        pass  # Kueue's quota binds victims wherever they run: the full model decides
    elif solver == "cpsat":
        try:
            found = solve_reduced(prepared, params)
        except ModelError as error:
            unknown = Decision(job.name, action, "unknown", reason=too_large(error), solver=solver, solve_ms=_ms(start))
            return unknown, prepared.required
        reduced = None if found is None else found[:2]
    else:  # the greedy baseline builds victims only as far as its order needs them
        reduced = greedy.solve_prepared(prepared)
    if reduced is not None:
        problem, solution = reduced
    else:
        full = prepared.problem
        assert full is not None
        problem = full
        refused = problem.cohort is not None and solver == "cpsat" and not could_fit_kueue(problem)
        if refused or not could_fit(problem):  # proved without a search: the model would say so after building it
            solution = Solution("infeasible")
        else:
            baseline = greedy.solve(problem)
            try:
                solution = baseline if solver == "greedy" else cpsat.solve(problem, params, hint=baseline)
            except ModelError as error:
                solution = Solution("unknown", reason=too_large(error))
    if action != "allocate":
        problem, solution = in_kai_order(prepared, problem, solution)  # among equal answers, where KAI places
        solution = moves_in_kai_order(problem, solution)
    decision = _assemble(cluster, problem, solution, solver)
    moved = {m.job for m in decision.moves}
    decision.protected = [p for p in protected_jobs(prepared.candidates) if p.job not in moved]
    decision.candidates = 0 if prepared.candidates is None else len(prepared.candidates.candidates)
    if decision.outcome == "infeasible":
        if reason is None:
            full = prepared.problem
            assert full is not None
            reason = why_infeasible(full, prepared.candidates, params)
        excluded = exclusions(cluster, job) if placement_matters(cluster, job) else None
        if excluded:
            reason = f"{reason}; {excluded_text(excluded)}"
        held = held_against(cluster, job)
        decision.reason = reason if held is None else f"{reason}; {held}"
    elif decision.outcome == "unknown" and not decision.reason:
        decision.reason = "time limit reached before a feasible answer or a proof"
    decision.solve_ms = _ms(start)
    return decision, prepared.required


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def named_victims(cluster: ClusterState, problem: Problem, solution: Solution) -> list[VictimTasks]:
    """The victims of ``solution`` by name, each job's tasks in document order, jobs by name."""
    out = []
    for v in solution.victims():
        victim = problem.victims[v]
        lost = {task for s, slot in enumerate(victim.slots) for task in slot.tasks[: solution.evicted.get((v, s), 0)]}
        tasks = tuple(name for t in cluster.snapshot.job(victim.job).tasks if (name := str(t.name)) in lost)
        out.append(VictimTasks(victim.job, tasks, whole_job=len(tasks) == victim.running))
    return sorted(out, key=lambda v: v.job)


def _assemble(cluster: ClusterState, problem: Problem, solution: Solution, solver: SolverName) -> Decision:
    levels = list(problem.priority_levels)
    if not solution.feasible or (solution.placed_count() == 0 and problem.required_tasks == 0):
        outcome: Outcome = "unknown" if solution.status == "unknown" else "infeasible"
        reason = solution.reason if outcome == "unknown" else None
        return Decision(problem.job, problem.action, outcome, reason=reason, solver=solver, priority_levels=levels)
    victims = named_victims(cluster, problem, solution)
    placements: dict[str, str] = {}
    devices: dict[str, tuple[int, ...]] = {}
    now_fits = not victims
    for t, chunk in enumerate(problem.chunk):
        names = iter(chunk.tasks)
        for n, node in enumerate(problem.nodes):
            count = solution.placed.get((t, n), 0)
            on = (
                task_devices([solution.devices.get((t, n, d), 0) for d in range(node.devices.count)], count)
                if node.devices and chunk.share
                else []
            )
            for k in range(count):
                name = next(names)
                placements[name] = node.name
                if on:
                    devices[name] = on[k]
    if now_fits:
        now_fits = _fits_now(problem, solution)
    order = {str(t.name): i for i, t in enumerate(cluster.snapshot.job(problem.job).tasks)}
    placements = dict(sorted(placements.items(), key=lambda kv: order[kv[0]]))
    moves = named_moves(problem, solution, devices)
    return Decision(
        job=problem.job,
        action=problem.action,
        outcome="allocated" if now_fits else "pipelined",
        victims=victims,
        placements=placements,
        optimal=solution.status == "optimal" and solver == "cpsat",
        objective=objective_values(problem, solution),
        solver=solver,
        priority_levels=levels,
        moves=moves,
        devices=devices,
    )


def named_moves(problem: Problem, solution: Solution, devices: dict[str, tuple[int, ...]] | None = None) -> list[Move]:
    """The moved tasks by name: in each slot, the newest after those evicted, to the destinations in node order (a
    share to its devices in order, added to ``devices``)."""
    out = []
    for v, victim in enumerate(problem.victims):
        for s, slot in enumerate(victim.slots):
            names = iter(slot.tasks[solution.evicted.get((v, s), 0) :])
            for n in slot.moves_to:
                spec = problem.nodes[n].devices
                on = (
                    []
                    if spec is None
                    else [d for d in range(spec.count) for _ in range(solution.moved_devices.get((v, s, n, d), 0))]
                )
                for k in range(solution.moved.get((v, s, n), 0)):
                    name = next(names)
                    out.append(Move(victim.job, name, problem.nodes[slot.node].name, problem.nodes[n].name))
                    if on and devices is not None:
                        devices[name] = (on[k],)
    return sorted(out, key=lambda m: (m.job, m.task))


def _fits_now(problem: Problem, solution: Solution) -> bool:
    """Whether the placement fits in capacity that is free right now (no releasing task needed), device by device
    where the node counts devices (a releasing share still holds its device)."""
    used: dict[int, dict[str, int]] = {}
    for (t, n), count in solution.placed.items():
        for r, a in problem.chunk[t].requests.items():
            used.setdefault(n, {})[r] = used.get(n, {}).get(r, 0) + a * count
    if not all(amount <= problem.nodes[n].now_room.get(r, 0) for n, need in used.items() for r, amount in need.items()):
        return False
    for n in used:
        spec = problem.nodes[n].devices
        if spec is None:
            continue
        now = DeviceFit(Devices(spec.count, spec.now_whole, spec.now_shares))
        for (t, m, d), count in solution.devices.items():
            if m == n:
                now.shares[d] += problem.chunk[t].share * count
        now.whole += sum(problem.chunk[t].gpus * count for (t, m), count in solution.placed.items() if m == n)
        if not now.holds():
            return False
    return True
