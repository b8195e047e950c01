"""Snapshots: ``validate`` (check and summarize one) and ``schema`` (the format's JSON Schema)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from gpu_preempt.models import Snapshot
from gpu_preempt.models.scenario import Scenario

from .app import FileArg, JsonOpt, collector_off_if_ours, command, load
from .render import print_summary

__all__ = ["schema", "validate"]


@command(example="gpu-preempt validate fixtures/example-cluster.yaml")
def validate(file: FileArg, as_json: JsonOpt = False) -> None:
    """Check a snapshot; print nodes, the queue tree with fair shares, jobs, and protected jobs."""
    collector_off_if_ours()
    from gpu_preempt.explain.summary import summarize
    from gpu_preempt.state.cluster import ClusterState

    snapshot = load(file, as_json)
    summary = summarize(ClusterState.of(snapshot))
    if as_json:
        print(json.dumps({"valid": True, "file": str(file), **summary.to_dict()}, indent=2))
    else:
        print_summary(file, summary)


@command(example="gpu-preempt schema --scenario > scenario.schema.json")
def schema(
    scenario: Annotated[bool, typer.Option("--scenario", help="the scenario format instead")] = False,
) -> None:
    """Print the JSON Schema of the snapshot format (v1), or of the scenario format."""
    document = (Scenario if scenario else Snapshot).model_json_schema()
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["title"] = "gpu-preempt scenario v1" if scenario else "gpu-preempt snapshot v1"
    print(json.dumps(document, indent=2))
