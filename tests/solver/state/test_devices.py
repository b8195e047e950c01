"""The device ledger (docs/snapshot-format.md, "GPU sharing"): a derived state moves its parent's ledger by the
changed tasks; it must equal the ledger counted anew from every task."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.models import snapshot_from_data
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.devices import DeviceLoads, device_loads

NOW = "2026-01-01T12:00:00Z"


def shared_cluster(seed: int) -> dict[str, Any]:
    """Three nodes of four devices with quarters, halves and whole GPUs running, one releasing, one nominated on its
    device, and pending shares and whole GPUs of a higher priority in the same queue (they preempt)."""
    rng = random.Random(seed)
    nodes = [{"name": f"n{i}", "resources": {"gpu": 4}} for i in range(3)]
    held = {n["name"]: [0] * 4 for n in nodes}
    jobs: list[dict[str, Any]] = []
    for j in range(10):
        size = rng.choice([250, 500, 1000])
        spots = [
            (n, d) for n, ds in held.items() for d, a in enumerate(ds) if (a + size <= 1000 if size < 1000 else a == 0)
        ]
        if not spots:
            break
        node, device = rng.choice(spots)
        held[node][device] += size
        task: dict[str, Any] = {"node": node, **({"devices": [device]} if size < 1000 else {})}
        if j == 0:
            task["status"] = "releasing"
        elif j == 1 and size < 1000:
            task["status"] = "nominated"
        jobs.append(
            {
                "name": f"r{j}",
                "queue": "q",
                "priority": 10,
                "started_at": NOW,
                "task_resources": {"gpu": f"{size}m"},
                "tasks": [task],
            }
        )
    for k, size in enumerate(["250m", "500m", "1", "750m"]):
        jobs.append({"name": f"p{k}", "queue": "q", "priority": 50, "task_resources": {"gpu": size}, "tasks": [{}, {}]})
    return {"now": NOW, "config": {"moves": seed % 2 == 0}, "nodes": nodes, "queues": [{"name": "q"}], "jobs": jobs}


def counted_anew(state: ClusterState) -> DeviceLoads:
    fresh = copy.copy(state)
    fresh.devices_from = None
    return device_loads(fresh)


def same(a: DeviceLoads, b: DeviceLoads) -> bool:
    promised = lambda x: {n: sorted(v) for n, v in x.promised.items() if v}  # noqa: E731
    clean = lambda x: {n: v for n, v in x.items() if v}  # noqa: E731
    return (clean(a.final), clean(a.now), promised(a), a.placed) == (
        clean(b.final),
        clean(b.now),
        promised(b),
        b.placed,
    )


@pytest.mark.parametrize("seed", range(12))
def test_every_state_of_a_cycle_moves_its_ledger_as_a_fresh_count_finds_it(seed: int) -> None:
    result = run_cycle(snapshot_from_data(shared_cluster(seed)))
    placed = [d for d in result.decisions if d.placed]
    assert placed  # the cycle changes tasks, so later states derive their ledgers
    for state in [*result.states, result.end]:
        assert same(state.device_loads(), counted_anew(state))
