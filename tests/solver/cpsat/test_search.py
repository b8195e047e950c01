"""CP-SAT: never a false "optimal" under a time limit, a large model stopped at the deadline, one canonical answer."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from gpu_preempt import cpsat
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.cpsat.search import GUARDED_SIZE
from gpu_preempt.formulate.builder import prepare
from gpu_preempt.models import load_snapshot
from gpu_preempt.problem.records import ChunkType, NodeRoom, Problem, Slot, Victim
from gpu_preempt.state.cluster import ClusterState


def test_a_tiny_time_limit_never_claims_optimality():
    """With almost no time, the answer is unknown or not proved optimal; never a false 'optimal'."""
    snapshot = load_snapshot(FIXTURES / "scheduler-plugins-683-guaranteed-min.yaml")
    cluster = ClusterState.of(snapshot)
    problem = prepare(cluster, snapshot.job("a-gang"), "reclaim").problem
    assert problem is not None
    solution = cpsat.solve(problem, SolveParams(time_limit=1e-6))
    assert solution.status in ("unknown", "feasible")
    assert cpsat.solve(problem).status == "optimal"


def big_problem(nodes: int) -> Problem:
    """A full model too big to prove quickly: many nodes, each with a few victims, and a wide gang."""
    rooms = tuple(NodeRoom(f"n{i}", {"gpu": 0}, {"gpu": 0}) for i in range(nodes))
    victims = tuple(
        Victim(
            f"v{i}-{k}", "q", 10 + k, True, 0, (Slot(i, {"gpu": 2000 + 1000 * k}, (f"v{i}-{k}-0",)),), 1000 * (i % 97)
        )
        for i in range(nodes)
        for k in range(3)
    )
    chunk = (ChunkType({"gpu": 3000}, tuple(f"want-{t}" for t in range(64)), 64),)
    return Problem("want", "preempt", rooms, chunk, victims)


def test_a_large_model_is_stopped_at_the_deadline(monkeypatch: pytest.MonkeyPatch):
    """Presolve may overrun CP-SAT's own limit; the child process is killed at the deadline instead. The child here
    never answers (its solve blocks), so only the deadline can end the wait."""
    import threading

    from gpu_preempt.cpsat import search

    problem = big_problem(3000)
    assert len(problem.victims) >= GUARDED_SIZE
    monkeypatch.setattr(search, "_solve", lambda *args: threading.Event().wait())
    solution = cpsat.solve(problem, SolveParams(time_limit=0.2, workers=2))
    assert solution.status == "unknown"
    assert solution.reason == "time limit reached: the solver was stopped at the deadline"


def test_folded_objectives_are_read_back_exactly():
    """Stages folded into one objective can exceed 2**53, where a double cannot hold every integer: the victim
    with the least lost work is still chosen, and each stage's value is exact."""
    huge = 2**52
    rooms = (NodeRoom("n0", {"gpu": 0}, {"gpu": 0}),)
    victims = tuple(
        Victim(name, "q", 10, True, 0, (Slot(0, {"gpu": 1000}, (f"{name}-0",)),), elapsed)
        for name, elapsed in (("older", huge + 3), ("newer", huge + 1), ("oldest", huge + 5))
    )
    chunk = (ChunkType({"gpu": 1000}, ("want-0",), 1),)
    solution = cpsat.solve(Problem("want", "preempt", rooms, chunk, victims))
    assert solution.status == "optimal"
    assert solution.victims() == [1], solution.stages
    lost = [stage for stage in solution.stages if stage.startswith("lost_work=")]
    assert lost == [f"lost_work={huge + 1}"], solution.stages


@pytest.mark.parametrize("light", [False, True], ids=["default settings", "light presolve"])
@pytest.mark.parametrize("workers", [1, 2])
def test_equal_optima_keep_the_victims_first_in_keep_order(light, workers):
    """Six identical victims, one per node, and a gang of three whole-node tasks: any three victims are optimal, and
    the canonical answer keeps the three that come first in ``keep_order`` (here not the document order), whatever
    the solver settings and the number of workers."""
    rooms = tuple(NodeRoom(f"n{i}", {"gpu": 0}, {"gpu": 0}) for i in range(6))
    victims = tuple(Victim(f"v{i}", "q", 10, True, 0, (Slot(i, {"gpu": 8000}, (f"v{i}-0",)),), 5000) for i in range(6))
    chunk = (ChunkType({"gpu": 8000}, ("want-0", "want-1", "want-2"), 3),)
    problem = Problem("want", "reclaim", rooms, chunk, victims, keep_order=(4, 1, 5, 0, 3, 2))
    solution = cpsat.solve(problem, SolveParams(workers=workers, light_presolve=light))
    assert solution.status == "optimal"
    assert solution.victims() == [0, 2, 3], solution.stages
    assert sorted(n for (_, n), count in solution.placed.items() if count) == [0, 2, 3]
