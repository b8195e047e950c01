"""A replay's cycle counts its state from the last cycle's (the job models that left or came since): the same state
a fresh count of the snapshot gives, amounts of zero aside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import contended_workload, write_scenario

from gpu_preempt.models import Resources, Snapshot
from gpu_preempt.planning.run import simulate
from gpu_preempt.state.cluster import ClusterState


def _nonzero(amounts: Resources) -> Resources:
    return {r: a for r, a in amounts.items() if a}


def _counted(cluster: ClusterState) -> dict[str, Any]:
    """What a count of the snapshot gives, zero amounts aside; orders where the state promises them."""
    return {
        "status": dict(cluster.status),
        "node_of": dict(cluster.node_of),
        "running": list(cluster.running_counts().items()),
        "running_on": {job: _nonzero(hosts) for job, hosts in cluster.running_hosts().items()},
        "final": {node.name: _nonzero(cluster.final_load(node.name)) for node in cluster.snapshot.nodes},
        "current": {node.name: _nonzero(cluster.current_load(node.name)) for node in cluster.snapshot.nodes},
        "promised": list(cluster.promised.items()),
        "waiting": [job.name for job in cluster.waiting_jobs()],
        "usage": {
            q: (_nonzero(u.allocated), _nonzero(u.allocated_non_preemptible), _nonzero(u.requested))
            for q, u in cluster.usage.items()
        },
        "shares": cluster.shares,
        "rooms": [cluster.rooms(p, ("gpu", "cpu")) for p in (0, 100)],
    }


def test_each_cycle_of_a_replay_counts_what_a_fresh_count_of_its_snapshot_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    of = ClusterState.of.__func__  # type: ignore[attr-defined]
    seen = {"from the last": 0, "statuses": set()}

    def checked(cls: type[ClusterState], snapshot: Snapshot, previous: ClusterState | None = None) -> ClusterState:
        state = of(cls, snapshot, previous)
        if previous is not None and previous.counted is not None:
            seen["from the last"] += 1
            assert _counted(state) == _counted(of(cls, snapshot)), snapshot.now
        seen["statuses"] |= {t.status for j in snapshot.jobs for t in j.tasks}
        return state

    monkeypatch.setattr(ClusterState, "of", classmethod(checked))
    path = write_scenario(
        tmp_path,
        workload={**contended_workload(120), "time_scale": 200},
        config={"reclaim_min_runtime": "5m", "requeue": {"backoff_base": "5m"}},
    )
    simulate(path, tmp_path / "out")
    assert seen["from the last"] > 100
    assert {"running", "pending", "releasing", "nominated"} <= seen["statuses"]
