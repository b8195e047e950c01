"""Kueue's quota arithmetic (docs/snapshot-format.md, "Peer semantics: Kueue's queues"): subtree quotas, what each
queue lends and uses up, and what it has available, computed by hand for flat and nested cohorts."""

from __future__ import annotations

from typing import Any

from gpu_preempt.models.cohort_quotas import CohortQuotas


def pool(**used: int) -> dict[str, Any]:
    """A cohort ``pool`` of ClusterQueues a and b, 8 GPUs of nominal quota each, using ``used``."""
    return {
        "parents": {"pool": None, "a": "pool", "b": "pool"},
        "nominal": {"pool": {}, "a": {"gpu": 8}, "b": {"gpu": 8}},
        "used": {q: {"gpu": n} for q, n in used.items()},
    }


def test_unused_nominal_quota_is_borrowable_by_the_cohort() -> None:
    quotas = CohortQuotas(**pool(a=2, b=10))  # b borrows 2 of a's 6 unused
    assert quotas.subtree_quota("pool", "gpu") == 16 and quotas.usage("pool", "gpu") == 12
    assert (quotas.available("a", "gpu"), quotas.available("b", "gpu")) == (4, 4)
    assert quotas.borrowing_now("b", "gpu") and not quotas.borrowing_now("a", "gpu")
    full = CohortQuotas(**pool(a=6, b=10))
    assert (full.available("a", "gpu"), full.available("b", "gpu")) == (0, 0)  # a must reclaim what b borrows


def test_a_borrowing_limit_caps_what_the_parent_gives() -> None:
    """b may borrow at most 1 beyond its 8: with 8 in use, 1 more; the cohort would give 6."""
    quotas = CohortQuotas(**pool(a=2, b=8), borrowing={"b": {"gpu": 1}})
    assert quotas.available("pool", "gpu") == 6
    assert quotas.available("b", "gpu") == 1 and quotas.available("a", "gpu") == 6


def test_a_lending_limit_keeps_the_rest_local() -> None:
    """a lends at most 2 of its 8: b borrows up to those 2, and a always has its other 6."""
    quotas = CohortQuotas(**pool(a=0, b=10), lending={"a": {"gpu": 2}})
    assert quotas.local_quota("a", "gpu") == 6 and quotas.subtree_quota("pool", "gpu") == 10
    assert (quotas.available("a", "gpu"), quotas.available("b", "gpu")) == (6, 0)


def test_nested_cohorts_pass_quota_up_and_down() -> None:
    """R (4 GPUs of its own) holds cohort C (x and y, 2 each) and z (2): 10 in all; x uses 5, z 1."""
    quotas = CohortQuotas(
        parents={"R": None, "C": "R", "x": "C", "y": "C", "z": "R"},
        nominal={"R": {"gpu": 4}, "C": {}, "x": {"gpu": 2}, "y": {"gpu": 2}, "z": {"gpu": 2}},
        used={"x": {"gpu": 5}, "z": {"gpu": 1}},
    )
    assert quotas.subtree_quota("C", "gpu") == 4 and quotas.subtree_quota("R", "gpu") == 10
    assert quotas.usage("C", "gpu") == 5 and quotas.usage("R", "gpu") == 6
    assert [quotas.available(q, "gpu") for q in ("x", "y", "z")] == [4, 4, 4]
    assert not quotas.within_nominal("C", ["gpu"]) and quotas.within_nominal("R", ["gpu"])


def test_a_queue_without_a_cohort_has_its_nominal_quota_and_may_be_over_it() -> None:
    quotas = CohortQuotas(parents={"solo": None}, nominal={"solo": {"gpu": 4}}, used={"solo": {"gpu": 6}})
    assert quotas.available("solo", "gpu") == -2  # its quota was lowered below what it holds
