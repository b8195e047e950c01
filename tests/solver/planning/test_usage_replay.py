"""KAI's time-based fair share in a replay (docs/rules.md, "Time-based fair share"): each queue's usage is the
replay's own history, and it decides who reclaims."""

from __future__ import annotations

from pathlib import Path

from helpers import write_scenario

from gpu_preempt.planning.run import simulate


def history(tmp_path: Path, k: float) -> Path:
    """One 8-GPU node, queues a and b of equal weight and no quota. A (queue a, 8 GPUs) runs from 0 for 2 hours;
    B (queue b, 8 GPUs) arrives after one hour."""
    (tmp_path / "trace.csv").write_text("id,submit,duration,gpus,queue\nA,0,7200,8,a\nB,3600,600,8,b\n")
    columns = {"id": "id", "submit": "submit", "duration": "duration", "gpus": "gpus", "queue": "queue"}
    return write_scenario(
        tmp_path,
        cluster={"nodes": [{"count": 1, "gpu": 8}]},
        queues=[{"name": "a", "deserved": {"gpu": 0}}, {"name": "b", "deserved": {"gpu": 0}}],
        config={"fair_share_usage": {"k_value": k, "window": "1w"}},
        workload={"trace": {"format": "csv", "path": "trace.csv", "columns": columns}},
    )


def test_a_queue_that_used_the_whole_cluster_is_reclaimed_at_k_1_and_not_at_k_0(tmp_path: Path):
    """After an hour a has used the whole cluster: usage 1, b 0. At k = 1, a weighs 0.5 + (0.5 - 1) = 0 and b all
    of the over-quota split: b's fair share is 8 and B reclaims A at once. At k = 0 the split is 4 and 4, B's 8
    GPUs are above b's share, and B waits for A to end."""
    waits = {}
    for k in (0.0, 1.0):
        folder = tmp_path / f"k{k:g}"
        folder.mkdir()
        replay = simulate(history(folder, k), check=True, dump_at=3600)
        sim = replay.simulator
        assert sim.problems == []
        assert replay.simulator.dump is not None
        usage = {q["name"]: q["usage"] for q in replay.simulator.dump["queues"]}
        # A's tasks hold the node's GPUs and, by the scenario's CPU and memory per GPU, all its CPU and memory
        assert usage == {"a": {"gpu": 1.0, "cpu": 1.0, "memory": 1.0}, "b": {"gpu": 0.0, "cpu": 0.0, "memory": 0.0}}
        waits[k] = (sim.jobs["B"].first_start, sim.jobs["A"].evictions)
    assert waits[0.0] == (7200.0, 0)
    assert waits[1.0][1] == 1 and waits[1.0][0] < 3700


def test_usage_decays_with_the_half_life_and_leaves_a_sliding_window():
    """Hour buckets of a one-week window. a held the 8 GPUs the first hour, b the second. With a half-life of an
    hour, at the end of the second hour the first bucket weighs 2^-1.5 and the second 2^-0.5: a's usage is a third,
    b's two thirds. A week later both buckets have left the window."""
    from gpu_preempt.models.fair_share_usage import FairShareUsage
    from gpu_preempt.planning.usage_history import UsageHistory

    history = UsageHistory(FairShareUsage(window="1w", half_life="1h"), {"a": ["a"], "b": ["b"], "d": ["a", "b"]})
    history.add(0.0, 3600.0, {"a": {"gpu": 8000}}, {"gpu": 8000})
    history.add(3600.0, 3600.0, {"b": {"gpu": 8000}}, {"gpu": 8000})
    assert history.usage(7200.0) == {"a": {"gpu": 0.333333}, "b": {"gpu": 0.666667}, "d": {"gpu": 1.0}}
    assert history.usage(7200.0 + 7 * 86400) == {"a": {}, "b": {}, "d": {}}
