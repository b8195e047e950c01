"""The reductions keep the optimum and the tie-break: on clusters too big for exhaustive search, the reduced path
and the full CP-SAT model (both proving optimality) must reach the same objective and the same answer: the same
victims, the same tasks, the same nodes for the chunk (docs/snapshot-format.md, "Victim choice": one canonical
tie-break in every path).

Generated clusters (benchmarks/generate.py) of 20-60 nodes, every pending job, reclaim and preempt; the full model
is run directly on the full problem, bypassing the reductions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import NamedTuple

import pytest
import yaml
from conftest import FIXTURES, generated_cases

from gpu_preempt import cpsat
from gpu_preempt.actions.job_solver import named_victims
from gpu_preempt.actions.reduced_path import demand_of, solve_reduced
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.formulate.builder import prepare
from gpu_preempt.models import Job, is_gpu_resource, parse_snapshot, snapshot_from_data
from gpu_preempt.problem.records import Problem
from gpu_preempt.problem.solution import Solution, objective_values
from gpu_preempt.reduce.hosts import free_hosts
from gpu_preempt.reduce.losses import TooComplex
from gpu_preempt.reduce.options import lower_bound, lower_bounds, unit_options
from gpu_preempt.reduce.pipeline import restrict
from gpu_preempt.reduce.select import level_bounds, spread_bounds
from gpu_preempt.reduce.units import CostModel, Unit, build_units, most_hosted
from gpu_preempt.rules.candidates import Candidate
from gpu_preempt.state.cluster import ClusterState


def hosts(problem: Problem, solution: Solution) -> dict[str, int]:
    """Tasks of the chunk per node name."""
    out: dict[str, int] = {}
    for (_, n), count in solution.placed.items():
        out[problem.nodes[n].name] = out.get(problem.nodes[n].name, 0) + count
    return out


class Reducible(NamedTuple):
    """A decision the reductions apply to, with the units they build."""

    job: Job
    candidates: list[Candidate]
    request: dict[str, int]
    resources: tuple[str, ...]
    costs: CostModel
    units: list[Unit]
    dropped: int


def reducible(cluster: ClusterState, cases: list[tuple[Job, str]]) -> Iterator[Reducible]:
    """The cases (pending job, action) with candidates and a chunk of one shape, and their units."""
    for job, action in cases:
        prepared = prepare(cluster, job, action)
        if prepared.skip is not None or prepared.candidates is None or not prepared.chunk:
            continue
        request = {r: a for r, a in job.requests(prepared.chunk[0][0]).items() if a > 0}
        resources = tuple(sorted(request))
        costs = CostModel(cluster.snapshot.config.objective, prepared.levels, cluster.now, cluster)
        candidates = prepared.candidates.candidates
        try:
            units, dropped = build_units(cluster, candidates, request, resources, job.resolved_priority)
        except TooComplex:
            continue
        yield Reducible(job, candidates, request, resources, costs, units, dropped)


def key(values: dict[str, object], order: tuple[str, ...]) -> tuple[object, ...]:
    out: list[object] = []
    for criterion in order:
        value = values[criterion]
        out.extend(value if isinstance(value, list) else [value])
    return tuple(out)


@pytest.mark.parametrize(
    ("seed", "shared"),
    [
        *((s, False) for s in range(12)),
        *((s, True) for s in range(8)),
        *((s, "spread") for s in range(6)),
        *((s, "ordered") for s in (1, 2, 4)),  # seeds whose reduced answers keep some victim's task order
    ],
)
def test_reduced_and_full_models_agree(seed, shared):
    """Also on clusters where two thirds of the one-GPU jobs are shares, two halves on one device or a half alone,
    and some on two devices (docs/snapshot-format.md, "GPU sharing"): the options count devices; and where every
    elastic job orders its tasks (docs/rules.md, "Task order"), which the reductions do not read: their answer
    stands only where it keeps the order."""
    ordered = shared == "ordered"
    snapshot, cases = generated_cases(
        20 + 5 * seed, 100 + seed, pending=7, shared=shared if not ordered else False, ordered=ordered
    )
    cluster = ClusterState.of(snapshot)
    order = snapshot.config.objective
    compared = with_order = 0
    for job, action in cases:
        prepared = prepare(cluster, job, action)
        if prepared.skip is not None:
            continue
        reduced = solve_reduced(prepared, SolveParams.of(snapshot.config.solver))
        if reduced is None:
            continue  # not applicable, or the rows bind: the full model decides anyway
        full_problem = prepared.problem
        assert full_problem is not None
        full = cpsat.solve(full_problem)
        problem, solution, _ = reduced
        if solution.status == "infeasible":
            assert full.status == "infeasible"
            continue
        assert solution.status == "optimal" and full.status == "optimal"
        assert key(objective_values(problem, solution), order) == key(objective_values(full_problem, full), order), (
            job.name,
            action,
        )
        assert named_victims(cluster, problem, solution) == named_victims(cluster, full_problem, full), job.name
        assert hosts(problem, solution) == hosts(full_problem, full), job.name
        compared += 1
        with_order += any(slot.order is not None for v in problem.victims for slot in v.slots)
    assert compared > 0
    assert with_order > 0 or not ordered


def test_where_the_task_order_binds_the_reduced_answer_stands_down():
    """fixtures/kai-task-order-surplus.yaml: without the order two tasks of one node would do, so the reductions'
    answer breaks the order; the full model decides (e loses three tasks, in order)."""
    document = yaml.safe_load((FIXTURES / "kai-task-order-surplus.yaml").read_text())
    document.pop("expect")
    snapshot = snapshot_from_data(document)
    prepared = prepare(ClusterState.of(snapshot), snapshot.job("big"), "preempt")
    restriction = restrict(demand_of(prepared))
    assert restriction is not None and restriction.ordered
    assert solve_reduced(prepared, SolveParams.of(snapshot.config.solver)) is None


@pytest.mark.parametrize("seed", range(6))
def test_the_bounds_of_all_units_at_once_are_the_bounds_unit_by_unit(seed):
    """``lower_bounds`` (numpy, every single-node unit at once) gives exactly ``lower_bound``'s vectors, for one task
    and for several."""
    snapshot, cases = generated_cases(30 + 10 * seed, 200 + seed, pending=7)
    compared = 0
    for case in reducible(ClusterState.of(snapshot), cases):
        singles = [u for u in case.units if len(u.nodes) == 1]
        request, resources, costs = case.request, case.resources, case.costs
        for tasks in (1, 2, 3):
            assert lower_bounds(singles, request, resources, costs, tasks) == [
                lower_bound(u, request, resources, costs, tasks) for u in singles
            ]
        compared += sum(1 for u in singles if u.local)
    assert compared > 0


def test_bounds_too_large_for_int64_are_computed_exactly():
    """A unit whose amounts could overflow a 64-bit running sum takes the exact path: the same vectors."""
    snapshot, cases = generated_cases(20, 7, pending=3)
    cluster = ClusterState.of(snapshot)
    prepared = next(p for p in (prepare(cluster, j, a) for j, a in cases) if p.candidates and p.candidates.candidates)
    job = prepared.job
    assert prepared.candidates is not None
    request = {"gpu": 1 << 64}  # beyond int64: numpy could not even hold the need
    costs = CostModel(snapshot.config.objective, prepared.levels, cluster.now, cluster)
    units, _ = build_units(cluster, prepared.candidates.candidates, {"gpu": 1000}, ("gpu",), job.resolved_priority)
    singles = [u for u in units if len(u.nodes) == 1]
    assert singles
    expected = [lower_bound(u, request, ("gpu",), costs) for u in singles]
    assert lower_bounds(singles, request, ("gpu",), costs) == expected
    candidates = prepared.candidates.candidates
    assert build_units(cluster, candidates, request, ("gpu",), job.resolved_priority) == ([], len(candidates))


@pytest.mark.parametrize("seed", range(8))
def test_units_gather_the_candidates_as_specified(seed):
    """Every candidate running on a schedulable node is in exactly one unit with every node it runs on, or counted
    dropped; a unit's nodes are exactly those its victims run on (or one free node), its victims carry the job's
    tasks per node, requests and GPUs, and ``hosted`` is :func:`most_hosted` of the unit."""
    snapshot, cases = generated_cases(30 + 5 * seed, 300 + seed, pending=7, cordoned=5)
    cluster = ClusterState.of(snapshot)
    index = cluster.node_index()
    schedulable = [node.schedulable for node in snapshot.nodes]
    checked = spanning = 0
    for job, candidates, request, resources, _, units, dropped in reducible(cluster, cases):
        free = {n for n, _ in free_hosts(cluster, job.resolved_priority, request, resources)}
        rooms = cluster.rooms(job.resolved_priority, resources)
        seen: set[int] = set()
        for unit in units:
            victims = unit.victims()
            assert unit.hosted == most_hosted(unit, request, resources) > 0
            assert list(unit.nodes) == sorted(unit.nodes)
            assert unit.room == {n: rooms[n] for n in unit.nodes if schedulable[n]}
            spread = {n for victim in victims for n in victim.nodes}
            assert spread == set(unit.nodes) or (not victims and len(unit.nodes) == 1 and unit.first in free)
            for victim in victims:
                assert victim.candidate not in seen
                seen.add(victim.candidate)
                candidate = candidates[victim.candidate]
                hosts = cluster.running_hosts()[candidate.job]
                assert victim.job is snapshot.job(candidate.job)
                assert victim.per_node == tuple(sorted((index[n], k) for n, k in hosts.items()))
                assert (victim.whole, victim.surplus) == (candidate.whole_job, candidate.surplus)
                shared = victim.job.task_resources
                assert victim.size == tuple(shared.get(r, 0) for r in resources)
                assert victim.gpus == sum(a for r, a in shared.items() if is_gpu_resource(r))  # milli-GPUs
                assert (victim in unit.spanning) == (len(victim.nodes) > 1)
        assert dropped == len(candidates) - len(seen)
        units_of = {n: unit for unit in units for n in unit.nodes}
        assert len(units_of) == sum(len(unit.nodes) for unit in units)  # disjoint
        spanning += sum(len(unit.spanning) for unit in units)
        for v, candidate in enumerate(candidates):
            nodes = [index[n] for n in cluster.running_hosts()[candidate.job]]
            if v not in seen and any(schedulable[n] for n in nodes):
                assert not any(n in units_of for n in nodes)  # its unit could host nothing: dropped whole
        checked += 1
    assert checked > 0 and spanning > 0


def test_a_node_shared_by_a_gang_and_single_node_jobs_is_one_unit_with_the_gang():
    """A gang spread over n1 and n2 binds them: the job running only on n1 joins that unit, n3 stays alone."""
    snapshot = parse_snapshot(
        """
now: 100
nodes: [{name: n1, resources: {gpu: 8}}, {name: n2, resources: {gpu: 8}}, {name: n3, resources: {gpu: 8}}]
queues: [{name: q}]
jobs:
- {name: gang, queue: q, priority: 1, task_resources: {gpu: 4}, tasks: [{node: n1}, {node: n2}]}
- {name: a, queue: q, priority: 1, task_resources: {gpu: 4}, tasks: [{node: n1}]}
- {name: b, queue: q, priority: 1, task_resources: {gpu: 2}, tasks: [{node: n3}, {node: n3}]}
- {name: c, queue: q, priority: 1, task_resources: {gpu: 4}, tasks: [{node: n2}]}
- {name: new, queue: q, priority: 50, task_resources: {gpu: 8}, tasks: [{}]}
"""
    )
    (case,) = reducible(ClusterState.of(snapshot), [(snapshot.job("new"), "preempt")])
    assert case.dropped == 0 and case.request == {"gpu": 8000}
    named = case.candidates
    shown = [
        (
            unit.nodes,
            [named[v.candidate].job for v in unit.spanning],
            {n: [named[v.candidate].job for v in vs] for n, vs in unit.local.items()},
            unit.hosted,
        )
        for unit in case.units
    ]
    assert shown == [((0, 1), ["gang"], {0: ["a"], 1: ["c"]}, 2), ((2,), [], {2: ["b"]}, 1)]


@pytest.mark.parametrize("seed", range(6))
def test_the_bound_of_a_unit_spread_over_nodes_never_exceeds_its_best_option(seed):
    """``spread_bounds`` orders multi-node units before their options are enumerated: it must be at most the cost of
    the cheapest option hosting one task, and ``None`` only when the unit has no such option."""
    snapshot, cases = generated_cases(30 + 10 * seed, 300 + seed, pending=7)
    compared = informative = 0
    for case in reducible(ClusterState.of(snapshot), cases):
        request, resources, costs = case.request, case.resources, case.costs
        spread = [u for u in case.units if len(u.nodes) > 1]
        for unit, bound in zip(spread, spread_bounds(spread, request, resources, costs), strict=True):
            options = unit_options(unit, request, resources, costs, 1)
            if bound is None:
                assert options == []
            else:
                assert options and bound <= options[0].cost
                informative += bound != costs.zero()
            compared += 1
    assert compared > 0 and informative > 0


@pytest.mark.parametrize("seed", range(3))
def test_bounds_of_many_units_at_once_are_each_units_own(seed):
    """The scan bounds every unit, single or spread over nodes, each for its own number of tasks, in one call: each
    unit's bound is the one it has alone."""
    snapshot, cases = generated_cases(60 + 10 * seed, 500 + seed, pending=7)
    spread = 0
    for case in reducible(ClusterState.of(snapshot), cases):
        request, resources, costs, units = case.request, case.resources, case.costs, case.units
        levels = [1 + k % max(1, min(3, u.hosted)) for k, u in enumerate(units)]
        each = [level_bounds([u], t, request, resources, costs)[0] for u, t in zip(units, levels, strict=True)]
        assert level_bounds(units, levels, request, resources, costs) == each
        spread += any(len(u.nodes) > 1 for u in units) and any(len(u.nodes) == 1 for u in units)
    assert spread > 0


@pytest.mark.parametrize("seed", range(4))
def test_the_bound_for_t_tasks_never_exceeds_the_best_option_hosting_t_tasks(seed):
    """``level_bounds`` orders the units at level ``t``: for every unit, single or spread over nodes, and every
    ``t`` it might host, the bound is at most the cost of its best option hosting ``t`` tasks, ``None`` only when
    it has none, and above the bound for one task where it says more than it."""
    snapshot, cases = generated_cases(60 + 10 * seed, 400 + seed, pending=7)
    compared, spread, tighter = 0, 0, 0
    for case in reducible(ClusterState.of(snapshot), cases):
        request, resources, costs = case.request, case.resources, case.costs
        for unit in case.units:
            options = unit_options(unit, request, resources, costs, min(4, unit.hosted))
            for t in range(1, min(4, unit.hosted) + 1):
                (bound,) = level_bounds([unit], t, request, resources, costs)
                if bound is None:
                    assert len(options) < t
                    continue
                if len(options) >= t:
                    assert bound <= options[t - 1].cost, (unit.nodes, t)
                    compared += 1
                    spread += len(unit.nodes) > 1 and t > 1
                    (one,) = level_bounds([unit], 1, request, resources, costs)
                    tighter += one is not None and bound > one
    assert compared > 0 and spread > 0 and tighter > 0


def test_a_gang_that_may_only_go_whole_is_bounded_by_all_its_tasks():
    """Four nodes full with one 4-task gang that may only be evicted whole: hosting 3 tasks of 8 GPUs there costs
    the whole gang, 4 tasks. The bound for 3 tasks pools the nodes (24 GPUs needed, 32 the gang frees) and counts 4
    tasks, since the gang loses all or nothing; it is the exact cost."""
    snapshot = parse_snapshot(
        """
now: 100
nodes: [{name: n1, resources: {gpu: 8}}, {name: n2, resources: {gpu: 8}}, {name: n3, resources: {gpu: 8}},
        {name: n4, resources: {gpu: 8}}]
queues: [{name: q}]
jobs:
- {name: gang, queue: q, priority: 1, started_at: 40, task_resources: {gpu: 8},
   tasks: [{node: n1}, {node: n2}, {node: n3}, {node: n4}]}
- {name: new, queue: q, priority: 50, task_resources: {gpu: 8}, tasks: [{}, {}, {}]}
"""
    )
    (case,) = reducible(ClusterState.of(snapshot), [(snapshot.job("new"), "preempt")])
    (unit,), costs = case.units, case.costs
    assert unit.nodes == (0, 1, 2, 3) and unit.hosted == 4
    options = unit_options(unit, case.request, case.resources, costs, 3)
    bounds = [level_bounds([unit], t, case.request, case.resources, costs)[0] for t in (1, 2, 3)]
    tasks = costs.position("tasks")
    assert [option.cost[tasks] for option in options] == [4, 4, 4]
    assert [bound[tasks] for bound in bounds] == [4, 4, 4]  # type: ignore[index]
    assert bounds[2][:-1] == options[2].cost[:-1]  # type: ignore[index]


def test_a_unit_spread_over_nodes_is_bounded_by_its_cheapest_node():
    """The gang spans n1 and n2; on n2 a low-priority job frees room alone, on n1 only the gang can: the bound is
    n2's, below the best option (evict the low-priority job), not n1's, which is above it."""
    snapshot = parse_snapshot(
        """
now: 100
nodes: [{name: n1, resources: {gpu: 8}}, {name: n2, resources: {gpu: 8}}]
queues: [{name: q}]
jobs:
- {name: gang, queue: q, priority: 30, task_resources: {gpu: 4}, tasks: [{node: n1}, {node: n2}]}
- {name: kept, queue: q, priority: 45, preemptible: false, task_resources: {gpu: 4}, tasks: [{node: n1}]}
- {name: low, queue: q, priority: 1, task_resources: {gpu: 4}, tasks: [{node: n2}]}
- {name: new, queue: q, priority: 50, task_resources: {gpu: 4}, tasks: [{}]}
"""
    )
    (case,) = reducible(ClusterState.of(snapshot), [(snapshot.job("new"), "preempt")])
    (unit,), costs = case.units, case.costs
    assert case.request == {"gpu": 4000}
    (bound,) = spread_bounds([unit], case.request, case.resources, costs)
    (best,) = unit_options(unit, case.request, case.resources, costs, 1)
    assert costs.levels == (30, 1) and best.cost[:2] == (0, 1)  # evict low, not the gang
    assert bound is not None and bound[:2] == (0, 0) and bound <= best.cost


@pytest.mark.parametrize("seed", range(3))
def test_a_restriction_names_candidates_and_nodes_of_the_decision_only(seed):
    """The reductions answer with data, never a problem: a subset of the decision's candidates and of the nodes its
    tasks may use, the same for the same demand."""
    snapshot, cases = generated_cases(30, 200 + seed, pending=6)
    cluster = ClusterState.of(snapshot)
    restricted = 0
    for job, action in cases:
        prepared = prepare(cluster, job, action)
        if prepared.skip is not None:
            continue
        restriction = restrict(demand_of(prepared))
        if restriction is None:
            continue
        assert prepared.candidates is not None
        assert {c.job for c in restriction.candidates} <= {c.job for c in prepared.candidates.candidates}
        eligible = {node.name for n, node in enumerate(snapshot.nodes) if prepared.where.mask[n]}
        assert restriction.nodes <= eligible
        assert restriction.report.victims == len(restriction.candidates)
        again = restrict(demand_of(prepared))
        assert again is not None and (again.candidates, again.nodes) == (restriction.candidates, restriction.nodes)
        restricted += 1
    assert restricted > 0


def test_the_reductions_decline_a_chunk_with_optional_tasks():
    """Nor a decision with moves or a topology to choose: units must not bind each other."""
    cluster = ClusterState.of(
        parse_snapshot("""
now: 0
nodes: [{name: n0, resources: {gpu: 4}}]
queues: [{name: q}]
jobs:
- {name: low, queue: q, priority: 1, task_resources: {gpu: 4}, tasks: [{node: n0}]}
- {name: want, queue: q, priority: 9, min_available: 1, task_resources: {gpu: 1}, tasks: [{}, {}]}
""")
    )
    demand = demand_of(prepare(cluster, cluster.snapshot.job("want"), "preempt"))
    assert restrict(demand) is not None
    (task,) = demand.requests
    assert restrict(dataclasses.replace(demand, requests=(task, (task[0], False)))) is None
    assert restrict(dataclasses.replace(demand, moves_possible=True)) is None
    assert restrict(dataclasses.replace(demand, constrained=True)) is None
