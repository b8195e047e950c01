"""Solving: lexicographic stages, an honest time limit, and a canonical answer among equal optima.

1. **Stages** (:mod:`.objective`): each stage is solved to optimality, then its
   value is fixed as a constraint and the next stage starts from the previous
   solution as a hint. Consecutive stages whose weighted sum is sure to fit in
   63 bits are folded into one objective and solved together (each weight
   exceeds what the later stages can reach, so the optimum is the lexicographic
   one), when the model has at most ``FOLD_VICTIMS`` victims: on small models one
   solve instead of four pays; on large ones the weighted sum's huge
   coefficients weaken the LP bound, so that a large quota decision is proved
   sooner staged than folded. The greedy answer, when given, hints the first
   solve.
2. **Time**: one budget (``params.time_limit``, :class:`~.params.SolveParams`) covers the stages: on the wall
   clock, or on the ``work`` clock (``config.solver.clock``) in CP-SAT's
   deterministic time with one worker, where it ends is a function of the input
   alone, not of the machine or its load (a replay's trajectory must not depend
   on them). A stage that ends without proof makes the answer ``feasible`` (not
   optimal); no solution at all before the limit is ``unknown``. Only a proof
   gives ``infeasible`` or ``optimal``. The tie-break below has a budget of its
   own in deterministic time (``time_limit`` units), with one worker, whatever
   the clock.
3. **Canonical answer**: equal optima are common (identical jobs, identical
   nodes). Once every stage is proved, ties are broken by a fixed rule, one
   variable at a time (on small models the keep order in one weighted solve,
   :func:`_keep_in_order`), so the answer is a function of the input alone, whatever
   the number of workers: victims are kept in ``problem.keep_order``; a victim
   loses its surplus rather than everything when both are optimal; peels take
   the newest tasks first; the jobs moved are the least worth keeping, their
   tasks going to the earliest nodes (docs/snapshot-format.md, "Moves") and devices; a topology's domains are the
   earliest ones; placements fill types and nodes in order, as much as possible (lexicographically largest), shares
   on devices as :class:`~gpu_preempt.problem.devices.DeviceFit` packs them.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Collection
from multiprocessing.connection import Connection

from ortools.sat.python import cp_model

from gpu_preempt.models import MILLI, GpuPreemptError
from gpu_preempt.problem.devices import assign_devices, device_fits
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution

from . import constraints
from .objective import fold, folded, stages, unfold
from .params import SolveParams
from .variables import LinearExpr, Variables

__all__ = ["FOLD_VICTIMS", "GRACE", "GUARDED_SIZE", "HINTED_TIE_BREAK", "WORK_WALL", "ModelError", "solve", "too_large"]


class _Model(cp_model.CpModel):
    """CP-SAT's model without its pre-PEP 8 aliases: ``CpModel()`` gives each new instance a camelCase alias of
    every ``add_``, ``new_`` and ``clear_`` method, which costs more than building a small decision's rows; this
    module calls the snake_case names only."""

    def _add_pre_pep8_methods(self) -> None:
        pass


class _Runner:
    """One model, solved repeatedly under a shared deadline."""

    def __init__(self, problem: Problem, params: SolveParams, skip: Collection[str]) -> None:
        self.problem, self.params = problem, params
        self.model = _Model()
        self.variables = Variables.build(self.model, problem)
        constraints.add_all(self.variables, skip)
        self.deadline = time.perf_counter() + params.time_limit
        self.timed_out = False
        self.work_left = params.time_limit
        """Deterministic time left for the stages on the ``work`` clock."""
        self.tie_budget: float | None = None
        """Deterministic time left for the tie-break, once it started (``None``: the stages)."""

    def run(self, expr: LinearExpr | None = None, sense: str = "min") -> tuple[str, Solution | None, int]:
        """Solve once; returns (status, solution or None, objective value)."""
        model = self.model
        if expr is None:
            model.clear_objective()
        elif sense == "min":
            model.minimize(expr)
        else:
            model.maximize(expr)
        solver = cp_model.CpSolver()
        work = self.tie_budget
        if work is None and self.params.clock == "work":
            work = self.work_left
        if work is None:
            remaining = self.deadline - time.perf_counter()
            if remaining <= 0:
                self.timed_out = True
                return "unknown", None, 0
            solver.parameters.max_time_in_seconds = remaining
            solver.parameters.num_workers = self.params.workers
        else:
            if work <= 0:
                self.timed_out = True
                return "unknown", None, 0
            solver.parameters.max_deterministic_time = work
            solver.parameters.num_workers = 1  # one worker's deterministic time is the same on every machine
        solver.parameters.random_seed = self.params.seed
        solver.parameters.log_search_progress = False
        solver.parameters.catch_sigint_signal = False  # Ctrl-C is the program's: CP-SAT's handler left it killing
        if self.params.full_linearization:
            solver.parameters.linearization_level = 2
        if self.params.light_presolve:
            solver.parameters.max_presolve_iterations = 1
            solver.parameters.cp_model_probing_level = 0
            solver.parameters.symmetry_level = 0
            solver.parameters.use_sat_inprocessing = False
            solver.parameters.cut_level = 0
            solver.parameters.add_lp_constraints_lazily = False
        status = solver.solve(model)
        if self.tie_budget is not None:
            self.tie_budget -= solver.response_proto.deterministic_time
        elif self.params.clock == "work":
            self.work_left -= solver.response_proto.deterministic_time
        if status == cp_model.OPTIMAL:
            name = "optimal"
        elif status == cp_model.FEASIBLE:
            name = "feasible"
        elif status == cp_model.INFEASIBLE:
            return "infeasible", None, 0
        elif status == cp_model.MODEL_INVALID:
            raise ModelError(model.validate() or "CP-SAT rejected the model")
        else:
            self.timed_out = True
            return "unknown", None, 0
        # objective_value is a double: folded objectives reach 2**62, so read the value back exactly
        value = int(solver.value(expr)) if expr is not None else 0
        return name, self.variables.read(solver, name), value

    def fix(self, expr: LinearExpr, value: int) -> None:
        self.model.add(expr == value)


class ModelError(GpuPreemptError, RuntimeError):
    """CP-SAT rejected a model (e.g. coefficients beyond 64-bit integers)."""


def too_large(error: ModelError) -> str:
    """The reason of an ``unknown`` answer whose model CP-SAT refused, e.g. a sum past 64-bit integers.

    Every single quantity, time and product is bounded at load (schema), but the sums over a whole cluster are not:
    800,000 GPUs held for 400 years are more GPU-milliseconds of lost work than 63 bits count.
    """
    first = str(error).splitlines()[0].split(":")[0]
    return f"CP-SAT refused the model ({first}): the sums of these amounts and times exceed its 64-bit integers"


HINTED_TIE_BREAK = 64
"""A tie-break solve starts from the current solution only on models with more victims than this: on smaller ones,
adding the hints costs more than the search they save (the answer is the same: each step is solved to optimality)."""

FOLD_VICTIMS = 64
"""Stages are folded into one objective only on models with at most this many victims (see the module docstring)."""

GUARDED_SIZE = 2000
"""Models with at least this many victim slots and placement choices are solved in a child process."""

GRACE = 0.25
"""Seconds a guarded solve may run past the time limit before the child process is killed."""

WORK_WALL = 10
"""On the ``work`` clock, how many seconds of wall clock per unit of the budget a guarded solve may take before it is
killed (a stop for a runaway presolve, far beyond what the work takes on a loaded machine)."""


def solve(
    problem: Problem,
    params: SolveParams = SolveParams(),  # noqa: B008 (frozen: one shared default is safe)
    *,
    hint: Solution | None = None,
    skip: Collection[str] = (),
    feasibility_only: bool = False,
) -> Solution:
    """Best solution of ``problem`` searched with ``params`` (see the module docstring); ``skip`` leaves rule families
    out.

    CP-SAT checks its time limit between steps, but presolve on a large model can
    overrun it by seconds. Large models are therefore
    solved in a forked child process that is killed at ``time_limit + GRACE``;
    the answer is then ``unknown``, never a guess.
    """
    size = sum(len(v.slots) for v in problem.victims) + len(problem.nodes) * len(problem.chunk)
    if size >= GUARDED_SIZE and "fork" in multiprocessing.get_all_start_methods():
        return _guarded(problem, params, hint, skip, feasibility_only)
    return _solve(problem, params, hint, skip, feasibility_only)


def _guarded(
    problem: Problem, params: SolveParams, hint: Solution | None, skip: Collection[str], feasibility_only: bool
) -> Solution:
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    arguments = (send, problem, params, hint, tuple(skip), feasibility_only)
    child = context.Process(target=_child, args=arguments, daemon=True)
    child.start()
    send.close()
    try:
        wall = params.time_limit if params.clock == "wall" else WORK_WALL * params.time_limit
        if receive.poll(wall + GRACE):
            outcome = receive.recv()
        else:
            outcome = Solution("unknown", reason="time limit reached: the solver was stopped at the deadline")
    except EOFError:
        outcome = Solution("unknown", reason="the solver process ended without an answer")
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if isinstance(outcome, ModelError):
        raise outcome
    return outcome  # type: ignore[no-any-return]


def _child(
    send: Connection, problem: Problem, params: SolveParams, hint: Solution | None, skip: tuple[str, ...], only: bool
) -> None:
    try:
        send.send(_solve(problem, params, hint, skip, only))
    except ModelError as error:
        send.send(error)
    finally:
        send.close()


def _solve(
    problem: Problem, params: SolveParams, hint: Solution | None, skip: Collection[str], feasibility_only: bool
) -> Solution:
    runner = _Runner(problem, params, skip)
    if hint is not None and hint.feasible:
        runner.variables.hint(hint)
    plan = [] if feasibility_only else stages(runner.variables)
    if not plan:
        status, solution, _ = runner.run()
        if solution is None:
            return Solution(status, reason=_why(status))  # type: ignore[arg-type]
        solution.status = "optimal" if status == "optimal" else "feasible"
        return solution if feasibility_only else _canonical(runner, solution)
    current: Solution | None = None
    proved = True
    groups = fold(plan) if len(problem.victims) <= FOLD_VICTIMS else [[stage] for stage in plan]
    for group in groups:
        expr = folded(group)
        status, solution, value = runner.run(expr, group[0].sense)
        names = ", ".join(stage.name for stage in group)
        if solution is None:
            if current is None:
                return Solution(status, reason=_why(status), stages=[names])  # type: ignore[arg-type]
            proved = False
            break
        if current is not None:
            solution.stages = current.stages
        current = solution
        if status != "optimal":
            current.stages.append(f"{names} (not proved)")
            proved = False
            break
        for stage, reached in zip(group, unfold(group, value), strict=True):
            current.stages.append(f"{stage.name}={reached}")
            runner.fix(stage.expr, reached)
        if group is not groups[-1] or len(problem.victims) > HINTED_TIE_BREAK:
            runner.variables.hint(current)
        else:  # only tie-break solves follow, unhinted on small models (see HINTED_TIE_BREAK)
            runner.variables.unhint()
    assert current is not None
    if not proved:
        current.status = "feasible"
        return current
    current.status = "optimal"
    return _canonical(runner, current)


def _why(status: str) -> str:
    if status == "infeasible":
        return "proved: no allowed choice makes room"
    return "time limit reached before a feasible answer or a proof"


def _canonical(runner: _Runner, current: Solution) -> Solution:
    """Break ties among equal optima by the fixed rule of the module docstring."""
    problem, variables = runner.problem, runner.variables
    done = current.stages
    runner.tie_budget = runner.params.time_limit
    # 1. keep victims in keep_order
    current = _keep_in_order(runner, current)
    # 2. peel rather than evict whole, then peel the newest tasks first
    for v in problem.keep_order:
        victim = problem.victims[v]
        if current.evicted_of(v) == 0:
            continue
        if v in variables.whole and any((v, s) in variables.peel for s in range(len(victim.slots))):
            current = _fix_at_best(
                runner, current, variables.whole[v], "min", int(current.evicted_of(v) == victim.running), 0
            )
        # else it cannot peel: being a victim (fixed above) is losing everything
        for s in sorted(range(len(victim.slots)), key=lambda s: victim.slots[s].tasks[0], reverse=True):
            taken = current.evicted.get((v, s), 0)
            current = _fix_at_best(runner, current, variables.evicted(v, s), "max", taken, victim.slots[s].count)
    # 3. moves: spare the jobs most worth keeping, move the newest tasks, to the earliest nodes
    movers = {v for v, _, _ in variables.move}
    movable = [v for v in problem.keep_order if v in movers]
    for v in movable:
        slots = range(len(problem.victims[v].slots))
        expr = cp_model.LinearExpr.sum([variables.moved_out(v, s) for s in slots])
        current = _fix_at_best(runner, current, expr, "min", sum(current.moved_of(v, s) for s in slots), 0)
    for v in movable:
        victim = problem.victims[v]
        if not any(current.moved_of(v, s) for s in range(len(victim.slots))):
            continue  # its moves are fixed at none: every slot's and destination's are none
        for s in sorted(range(len(victim.slots)), key=lambda s: victim.slots[s].tasks[0], reverse=True):
            most = victim.slots[s].count - current.evicted.get((v, s), 0)
            current = _fix_at_best(runner, current, variables.moved_out(v, s), "max", current.moved_of(v, s), most)
            left = current.moved_of(v, s)
            for n in victim.slots[s].moves_to:
                if (v, s, n) in variables.move:
                    taken = current.moved.get((v, s, n), 0)
                    current = _fix_at_best(runner, current, variables.move[v, s, n], "max", taken, left)
                    left -= current.moved.get((v, s, n), 0)
    for landed in sorted(variables.move_dev):  # a moved share: to the earliest device
        most = current.moved.get(landed[:3], 0)
        current = _fix_at_best(
            runner, current, variables.move_dev[landed], "max", current.moved_devices.get(landed, 0), most
        )
    # 4. domains of a topology: the earliest ones
    allowed = _domains_in_order(runner, current) if variables.domain or variables.spread else None
    if allowed is not None:
        current = allowed[0]
    # 5. placements: per-type totals (when some tasks are optional), then fill nodes in order
    for t, chunk in enumerate(problem.chunk):
        if chunk.optional:
            on_type = [var for (u, _), var in variables.place.items() if u == t]
            total = sum(n for (u, _), n in current.placed.items() if u == t)
            current = _fix_at_best(runner, current, cp_model.LinearExpr.sum(on_type), "max", total, len(chunk.tasks))
    filled = _fill_in_order(problem, current, None if allowed is None else allowed[1])
    if filled is not None:
        current.placed, current.devices = filled
    else:
        for key in sorted(variables.place):
            var = variables.place[key]
            current = _fix_at_best(runner, current, var, "max", current.placed.get(key, 0), variables.place_bound[key])
        if variables.dev:
            current = _devices_in_order(runner, current)
    current.stages = done
    current.status = "optimal"
    return current


def _domains_in_order(runner: _Runner, current: Solution) -> tuple[Solution, set[int]]:
    """Fix the domains of the job's topology, earliest first (each taken when some optimum allows it); the nodes
    the fixed domains leave open. Without a required level, every node of a domain the job holds stays open."""
    problem, variables = runner.problem, runner.variables
    chosen: dict[int, set[int]] = {}
    for ids, domain in ((problem.domains, variables.domain), (problem.spread, variables.spread)):
        taken = chosen.setdefault(id(domain), set())
        for d, var in sorted(domain.items()):
            if d in {ids[n] for (_, n), count in current.placed.items() if count}:
                runner.fix(var, 1)
                taken.add(d)
                continue
            if runner.timed_out:
                runner.fix(var, 0)
                continue
            status, solution, best = runner.run(var, "max")
            if solution is None or status != "optimal":
                runner.timed_out = True
                best = 0
            else:
                solution.stages = current.stages
                current = solution
            runner.fix(var, best)
            if best:
                taken.add(d)
    open_nodes = set(range(len(problem.nodes)))
    if variables.domain:
        open_nodes = {n for n in open_nodes if problem.domains[n] in chosen[id(variables.domain)]}
    if variables.spread:
        held = problem.spread_held | chosen[id(variables.spread)]
        open_nodes = {n for n in open_nodes if problem.spread[n] in held}
    return current, open_nodes


def _keep_in_order(runner: _Runner, current: Solution) -> Solution:
    """Fix every ``victim[v]`` to the lexicographically least vector in ``problem.keep_order`` (given everything
    fixed so far), then return a solution that has it.

    The victims before the first one ``current`` evicts are 0 in that vector too (nothing is less), so they are fixed
    at once. From there on, one solve minimises ``sum 2**(m-1-j) * victim[j-th]`` over the ``m`` victims left: each
    weight exceeds the sum of all later ones, so its least value is the lexicographic least vector, found in one
    solve instead of one per victim evicted. On models of more than ``FOLD_VICTIMS`` victims (huge weights weaken
    the LP bound, see the module docstring), one solve per victim evicted, as for a single one.
    """
    variables, order = runner.variables, runner.problem.keep_order
    evicted = [k for k, v in enumerate(order) if current.evicted_of(v) > 0]
    start = evicted[0] if evicted else len(order)
    for v in order[:start]:
        runner.fix(variables.victim[v], 0)
    rest = order[start:]
    small = len(runner.problem.victims) <= FOLD_VICTIMS and len(rest) <= 62  # the weights' sum fits 63 bits
    if not small or len(evicted) < 2 or runner.timed_out:  # one evicted victim: one settle is the same solve
        for v in rest:
            current = _fix_at_best(runner, current, variables.victim[v], "min", int(current.evicted_of(v) > 0), 0)
        return current
    weights = [1 << (len(rest) - 1 - j) for j in range(len(rest))]
    expr = cp_model.LinearExpr.weighted_sum([variables.victim[v] for v in rest], weights)
    status, solution, _ = runner.run(expr, "min")  # unhinted: a small model (see HINTED_TIE_BREAK)
    if solution is None or status != "optimal":
        runner.timed_out = True  # keep the proved-optimal answer; only the tie-break is unfinished
        solution = current
    else:
        solution.stages = current.stages
    for v in rest:
        runner.fix(variables.victim[v], int(solution.evicted_of(v) > 0))
    return solution


def _fix_at_best(
    runner: _Runner, current: Solution, expr: LinearExpr, sense: str, value: int, extreme: int
) -> Solution:
    """Fix ``expr`` at its best value given everything fixed so far; no solve when ``value`` is already ``extreme``."""
    if value == extreme or runner.timed_out:
        runner.fix(expr, value)
        return current
    if len(runner.problem.victims) > HINTED_TIE_BREAK:
        runner.variables.hint(current)
    status, solution, best = runner.run(expr, sense)
    if solution is None or status != "optimal":
        runner.timed_out = True  # keep the proved-optimal answer; only the tie-break is unfinished
        runner.fix(expr, value)
        return current
    solution.stages = current.stages
    runner.fix(expr, best)
    return solution


def _devices_in_order(runner: _Runner, current: Solution) -> Solution:
    """The shares' devices once the placements are fixed: filled as :class:`DeviceFit` fills them when that holds
    them, else each ``dev[t, n, d]`` in turn as large as the model allows (a packing first-fit misses)."""
    found = assign_devices(runner.problem, current)
    if found is not None:
        current.devices = found
        return current
    variables = runner.variables
    for key in sorted(variables.dev):
        bound = runner.problem.chunk[key[0]].share
        current = _fix_at_best(runner, current, variables.dev[key], "max", current.devices.get(key, 0), MILLI // bound)
    return current


def _fill_in_order(
    problem: Problem, current: Solution, allowed: set[int] | None = None
) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int, int], int]] | None:
    """Place each type's tasks on nodes in order (only ``allowed`` ones, if given), as many per node as fit, shares
    of a GPU on devices as :class:`DeviceFit` fills them; ``None`` if that leaves some out.

    When it succeeds this is the lexicographically largest placement: at each
    (type, node) it takes all that capacity allows.
    """
    if not problem.chunk:
        return {}, {}  # nothing to place (quota enforcement): victims' slots need not refer to problem.nodes
    room: dict[int, dict[str, int]] = {}
    for n, node in enumerate(problem.nodes):
        room[n] = dict(node.room)
    for (v, s), count in current.evicted.items():
        slot = problem.victims[v].slots[s]
        for r, a in slot.requests.items():
            room[slot.node][r] = room[slot.node].get(r, 0) + a * count
    for (v, s, n), count in current.moved.items():
        slot = problem.victims[v].slots[s]
        for r, a in slot.requests.items():
            room[slot.node][r] = room[slot.node].get(r, 0) + a * count
            room[n][r] = room[n].get(r, 0) - a * count
    placed: dict[tuple[int, int], int] = {}
    devices: dict[tuple[int, int, int], int] = {}
    on_devices = device_fits(problem, current)
    for t in sorted(range(len(problem.chunk)), key=lambda t: not problem.chunk[t].share):
        chunk = problem.chunk[t]
        left = sum(n for (u, _), n in current.placed.items() if u == t)
        share, gpus = chunk.share, chunk.gpus
        for n, node in enumerate(problem.nodes):
            if left == 0:
                break
            if not node.eligible or (allowed is not None and n not in allowed):
                continue
            fits = [room[n].get(r, 0) // a for r, a in chunk.requests.items() if a > 0]
            take = min(left, *fits) if fits else left
            fit = on_devices.get(n)
            if fit is not None and take > 0:
                if share:
                    for k in range(take):
                        found = fit.take_share(share, chunk.spread)
                        if found is None:
                            take = k
                            break
                        for device in found:
                            devices[t, n, device] = devices.get((t, n, device), 0) + 1
                elif gpus:
                    take = min(take, fit.empty() // gpus)
                    fit.take_whole(gpus * take)
            if take > 0:
                placed[t, n] = take
                left -= take
                for r, a in chunk.requests.items():
                    room[n][r] = room[n].get(r, 0) - a * take
        if left:
            return None
    return placed, devices
