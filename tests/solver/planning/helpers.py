"""Scenarios written to a temporary folder, with their traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import FIXTURES

CLUSTER10 = FIXTURES / "traces" / "itp-cluster10" / "cluster10.csv"


def write_scenario(folder: Path, **changes: Any) -> Path:
    """A scenario file in ``folder``: two 8-GPU nodes, queues a (deserved 0) and b (deserved 8), the bundled
    cluster10 trace, ``changes`` replacing top-level entries."""
    trace = str(CLUSTER10)
    document: dict[str, Any] = {
        "cluster": {"nodes": [{"count": 2, "gpu": 8, "cpu": 64, "memory": "512Gi"}]},
        "queues": [
            {"name": "a", "deserved": {"gpu": 0, "cpu": "unlimited", "memory": "unlimited"}},
            {"name": "b", "deserved": {"gpu": 8, "cpu": "unlimited", "memory": "unlimited"}},
        ],
        "workload": {"trace": {"format": "itp", "path": trace}},
        "simulation": {"period": 10, "grace_period": 30, "seed": 1},
    }
    document.update(changes)
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def contended_workload(first: int) -> dict[str, Any]:
    """The first ``first`` jobs of the bundled cluster10 trace, arrivals compressed 50x, queues a and b drawn 2:1."""
    return {
        "trace": {"format": "itp", "path": str(CLUSTER10)},
        "time_scale": 50,
        "window": {"first": first},
        "assign": {"queue": {"weights": {"a": 2, "b": 1}}},
    }
