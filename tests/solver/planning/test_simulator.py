"""The replay (docs/scenario-format.md, "Checks that must hold"): a hand-computable eviction, no contention,
conservation of
GPU-time, invariants and the verifier every cycle, determinism, and a dumped cycle that `gpu-preempt cycle`
reproduces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import contended_workload, write_scenario

from gpu_preempt import run_cycle
from gpu_preempt.models import SnapshotError, load_snapshot
from gpu_preempt.planning.run import SimulationResult, simulate
from gpu_preempt.planning.simulator import Simulator


def job(sim: Simulator, name: str) -> tuple[float | None, float | None, int, float]:
    j = sim.jobs[name]
    return j.first_start, j.finish, j.evictions, j.lost


def a_then_b(tmp_path: Path, b_arrives: int, **changes: object) -> Path:
    """One 8-GPU node; A (queue a, deserved 0, 8 GPUs) arrives at 0 for 1000 s, B (queue b, deserved 8, 8 GPUs) at
    ``b_arrives`` for 500 s."""
    rows = f"id,submit,duration,gpus,queue\nA,0,1000,8,a\nB,{b_arrives},500,8,b\n"
    (tmp_path / "trace.csv").write_text(rows)
    columns = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus", "queue": "queue"}
    return write_scenario(
        tmp_path,
        cluster={"nodes": [{"count": 1, "gpu": 8}]},
        workload={"trace": {"format": "csv", "path": "trace.csv", "columns": columns}},
        **changes,
    )


def test_one_reclaim_by_hand(tmp_path: Path):
    """One 8-GPU node. A (queue a, deserved 0) starts at 0 for 1000 s; B (queue b, deserved 8) arrives at 100.
    The cycle at 100 reclaims A (releasing for the 30 s grace, 100 s x 8 GPUs lost), B is nominated and runs from
    130 to 630; A, back after its backoff, runs again from 630 to 1630. Every GPU-second is held: utilisation 1."""
    path = a_then_b(tmp_path, 100)
    replay = simulate(path, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    assert job(sim, "A") == (0.0, 1630.0, 1, 800.0)
    assert job(sim, "B") == (130.0, 630.0, 0, 0.0)
    s = replay.summary
    assert s["overall"]["wait"] == {"p50": 15.0, "p90": 27.0, "p95": 28.5, "p99": 29.7}
    assert s["overall"]["jct"]["p50"] == (1630 + 530) / 2
    assert s["preemptions"]["total"] == 1 and s["preemptions"]["max_per_job"] == 1
    assert s["gpu_hours"]["lost"] == round(800 / 3600, 3)
    assert s["utilisation"] == 1.0 and s["gpu_hours"]["idle"] == 0.0
    assert s["gpu_hours"]["held"] == round((8 * (100 + 30 + 1000) + 8 * 500) / 3600, 3)
    assert s["unfinished"] == []


def test_one_reclaim_by_hand_under_kueue_rules(tmp_path: Path):
    """The same two jobs under Kueue's rules (docs/rules.md, "Kueue's preemption"): queues a (nominal 0) and b
    (nominal 8) are ClusterQueues of one cohort. A borrows b's 8 GPUs at 0; B, within b's nominal quota, reclaims
    them at 100 (reclaim_within_cohort Any). The replay is the KAI one's, to the second."""
    whole = {"cpu": 64, "memory": "512Gi"}
    queues = [
        {"name": "pool"},
        {"name": "a", "parent": "pool", "nominal": {"gpu": 0, **whole}},
        {
            "name": "b",
            "parent": "pool",
            "nominal": {"gpu": 8, **whole},
            "preemption": {"reclaim_within_cohort": "Any"},
        },
    ]
    path = a_then_b(tmp_path, 100, queues=queues, config={"policy": "kueue"})
    replay = simulate(path, tmp_path / "out", check=True)
    sim = replay.simulator
    assert sim.problems == []
    assert job(sim, "A") == (0.0, 1630.0, 1, 800.0)
    assert job(sim, "B") == (130.0, 630.0, 0, 0.0)
    when, decision = next((at, d) for at, d in sim.decisions if d.victims)
    assert when == 100.0 and decision.action == "preempt" and [v.job for v in decision.victims] == ["A"]
    assert replay.summary["utilisation"] == 1.0


def test_a_reclaim_after_a_checkpoint_loses_only_what_came_since(tmp_path: Path):
    """As above, with a checkpoint every 300 s of progress and B arriving at 700: A checkpointed at 600, so the
    snapshot of the cycle at 700 says so, the decision counts 100 s x 8 GPUs lost, and so does the replay."""
    checkpoint = {"model": "checkpoint", "interval": 300}
    path = a_then_b(tmp_path, 700, simulation={"period": 10, "grace_period": 30, "seed": 1, "restart": checkpoint})
    replay = simulate(path, tmp_path / "out", check=True, dump_at=700.0)
    sim = replay.simulator
    assert sim.problems == []
    dumped = json.loads((tmp_path / "out" / "dump.json").read_text())
    a = next(j for j in dumped["jobs"] if j["name"] == "A")
    assert a["checkpointed_at"] - a["started_at"] == 600.0
    when, decision = next((at, d) for at, d in sim.decisions if d.victims)
    assert when == 700.0 and [v.job for v in decision.victims] == ["A"]
    assert decision.objective["lost_work"] == 800.0
    assert sim.jobs["A"].lost == 800.0  # the replay's restart model agrees
    result = run_cycle(load_snapshot(tmp_path / "out" / "dump.json"))
    reproduced = json.loads((tmp_path / "out" / "dump-decisions.json").read_text())["decisions"]
    assert [d.to_dict(timing=False) for d in result.decisions] == reproduced


def contended(tmp_path: Path, **changes: object) -> Path:
    """The bundled cluster10 trace, first 120 jobs, on 2 x 8 GPUs, arrivals compressed 50x."""
    return write_scenario(tmp_path, workload=contended_workload(120), **changes)


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[SimulationResult, Path]:
    folder = tmp_path_factory.mktemp("contended")
    return simulate(contended(folder), folder / "out", check=True, dump_at=20000.0), folder


def test_invariants_and_the_verifier_hold_every_cycle(replay: tuple[SimulationResult, Path]):
    sim = replay[0].simulator
    assert sim.cycles > 50 and replay[0].summary["preemptions"]["total"] > 0
    assert sim.problems == []


def test_gpu_time_is_conserved(replay: tuple[SimulationResult, Path]):
    """Capacity = held + idle (two ledgers: jobs' tasks, nodes' free GPUs); held = goodput + lost + restart overhead
    + the grace period of every evicted task; every job completes or is reported unfinished."""
    sim = replay[0].simulator
    held = sum(j.held for j in sim.jobs.values())
    assert held + sim.counters.idle == pytest.approx(sim.counters.capacity, rel=1e-9)
    goodput = sum(j.spec.duration * j.spec.gpus for j in sim.jobs.values() if j.finish is not None)
    lost = sum(j.lost for j in sim.jobs.values())
    overhead = sum((j.work - j.spec.duration) * j.spec.gpus for j in sim.jobs.values())
    gpus = {f"{j.spec.name}-{i}": g / 1000 for j in sim.jobs.values() for i, g in enumerate(j.spec.task_gpu_milli)}
    released = sum(gpus[t] for _, d in sim.decisions for v in d.victims for t in v.tasks)
    assert released > 0
    assert held == pytest.approx(goodput + lost + overhead + 30 * released, rel=1e-9)
    unfinished = set(replay[0].summary["unfinished"])
    assert {j.spec.name for j in sim.jobs.values() if j.finish is None} == unfinished


def test_the_dumped_cycle_is_reproduced_by_gpu_preempt_cycle(replay: tuple[SimulationResult, Path]):
    out = replay[1] / "out"
    dumped = json.loads((out / "dump-decisions.json").read_text())
    result = run_cycle(load_snapshot(out / "dump.json"))
    assert [d.to_dict(timing=False) for d in result.decisions] == dumped["decisions"]
    assert dumped["decisions"]


def test_no_contention_means_no_wait(tmp_path: Path):
    """On a cluster far larger than the load, every job starts within one period and runs for its duration."""
    path = contended(tmp_path, cluster={"nodes": [{"count": 400, "gpu": 8}]})
    sim = simulate(path, None).simulator
    for j in sim.jobs.values():
        assert j.first_start is not None and j.finish is not None
        assert 0 <= j.first_start - j.spec.submit <= 10.0
        assert j.finish - j.first_start == pytest.approx(j.spec.duration)
        assert j.evictions == 0


def test_same_seed_same_files(tmp_path: Path, replay: tuple[SimulationResult, Path]):
    """A second run gives the same bytes in every file, timings aside (summary.json's solver.time_ms)."""
    first = replay[1] / "out"
    again = tmp_path / "again"
    simulate(contended(tmp_path), again, check=True, dump_at=20000.0)
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        if name == "summary.json":
            a, b = (json.loads((f / name).read_text()) for f in (first, again))
            for s in (a, b):
                s["solver"].pop("time_ms")
            assert a == b
        else:
            assert (first / name).read_bytes() == (again / name).read_bytes(), name


def test_a_different_seed_draws_other_queues(tmp_path: Path, replay: tuple[SimulationResult, Path]):
    path = contended(tmp_path, simulation={"period": 10, "grace_period": 30, "seed": 2})
    other = simulate(path, None).simulator
    queues = {n: j.spec.queue for n, j in replay[0].simulator.jobs.items()}
    assert queues != {n: j.spec.queue for n, j in other.jobs.items()}


def test_a_limit_lowered_mid_run_is_enforced(tmp_path: Path):
    """Queue a runs two 4-GPU jobs (A2 placed by the second cycle, at 10 s); at 200 s its GPU limit drops to 4, with
    a 1 s delay (docs/rules.md, "Quota enforcement"). The cycle at 210 (one period after the change's) evicts A2, which
    has run the least
    (200 s x 4 GPUs lost); it runs again once A1 ends at 1000."""
    (tmp_path / "trace.csv").write_text("id,submit,duration,gpus,queue\nA1,0,1000,4,a\nA2,1,1000,4,a\n")
    columns = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus", "queue": "queue"}
    path = write_scenario(
        tmp_path,
        cluster={"nodes": [{"count": 1, "gpu": 8}]},
        queues=[{"name": "a", "deserved": {"gpu": 0}, "quota_preemption_delay": 1}],
        config={"quota_preemption_enabled": True},
        workload={"trace": {"format": "csv", "path": "trace.csv", "columns": columns}},
        events=[{"at": 200, "set": {"queues.a.limit.gpu": 4}}],
    )
    sim = simulate(path, None, check=True).simulator
    assert sim.problems == []
    assert job(sim, "A1") == (0.0, 1000.0, 0, 0.0)
    assert job(sim, "A2") == (10.0, 2000.0, 1, 200.0 * 4)
    assert [d.action for _, d in sim.decisions if d.victims] == ["enforce-quota"]


def test_a_change_naming_an_unknown_queue_is_an_input_error(tmp_path: Path):
    path = contended(tmp_path, events=[{"at": 10, "set": {"queues.nope.limit.gpu": 4}}])
    with pytest.raises(SnapshotError, match=r"queues.nope.limit.gpu"):
        simulate(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()
