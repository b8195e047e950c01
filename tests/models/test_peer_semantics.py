"""Peer semantics in snapshots (docs/snapshot-format.md, "Peer semantics"): Kueue's ClusterQueues and Cohorts under
``config.policy: kueue`` are read, checked and decided by Kueue's rules, with or without its fair sharing."""

from __future__ import annotations

import json
from typing import Any

from conftest import base_document

from gpu_preempt import decide
from gpu_preempt.models import snapshot_from_data


def kueue_document() -> dict[str, Any]:
    """The base document as a Cohort ``dept`` of ClusterQueues ``a`` and ``b``."""
    document = base_document()
    document["config"] = {"policy": "kueue", "fair_sharing": True}
    for queue in document["queues"]:
        del queue["deserved"]
    document["queues"][1].update(
        nominal={"gpu": 8},
        borrowing_limit={"gpu": 4},
        lending_limit={"gpu": 2},
        preemption={"within_cluster_queue": "LowerPriority", "borrow_within_cohort": {"policy": "LowerPriority"}},
    )
    document["queues"][2].update(nominal={"gpu": 8}, fair_sharing_weight=2)
    return document


def test_kueue_queues_are_read_with_their_defaults() -> None:
    snapshot = snapshot_from_data(kueue_document())
    a, b = snapshot.queue("a"), snapshot.queue("b")
    assert a.nominal == {"gpu": 8000} and a.borrowing_limit == {"gpu": 4000} and a.lending_limit == {"gpu": 2000}
    assert a.preemption is not None and a.preemption.reclaim_within_cohort == "Never"
    assert a.preemption.borrow_within_cohort.policy == "LowerPriority"
    assert b.borrowing_limit is None and b.lending_limit is None and b.fair_sharing_weight == 2
    assert snapshot.config.fair_sharing and snapshot.config.fair_sharing_strategies is None


def test_a_kueue_snapshot_is_decided_by_kueue_rules_without_fair_sharing(cli: Any) -> None:
    document = kueue_document()
    document["config"]["fair_sharing"] = False
    assert decide(snapshot_from_data(document), "wait").outcome == "allocated"  # b has 8 GPUs of nominal quota
    reclaim = decide(snapshot_from_data(document), "wait", "reclaim")
    assert reclaim.outcome == "skipped" and "policy kueue" in (reclaim.reason or "")
    assert cli("cycle", document=document).exit_code == 0


def test_kueue_fair_sharing_is_decided(cli: Any) -> None:
    """With fair sharing the same job is admitted: b has 8 GPUs of nominal quota and uses none."""
    assert decide(snapshot_from_data(kueue_document()), "wait").outcome == "allocated"
    assert cli("cycle", document=kueue_document()).exit_code == 0


def test_validate_shows_kueue_quotas_usage_and_what_is_available(cli: Any) -> None:
    """Queue a keeps 6 of its 8 GPUs and lends 2; it uses 8 (run: 2 x 4), 2 of them from the cohort's pool of 10 (the
    2 a lends and b's 8): b, using none, has 8 available; a, with a borrowing limit of 4, has 4 more."""
    document = kueue_document()
    result = cli("validate", document=document)
    assert result.exit_code == 0 and "queues (Kueue: ClusterQueues and Cohorts)" in result.stdout
    as_json = cli("validate", "--json", document=document)
    rows = {row["name"]: row["kueue"] for row in json.loads(as_json.stdout)["queues"]}
    assert rows["a"]["usage"]["gpu"] == 8000 and rows["a"]["lending_limit"] == {"gpu": 2000}
    assert rows["dept"]["usage"]["gpu"] == 2000  # a uses 2 beyond the 6 it keeps
    assert rows["b"]["available"]["gpu"] == 8000
    assert rows["a"]["available"]["gpu"] == 4000  # its borrowing limit of 4: 2 borrowed, 4 more
