"""KAI's time-based fair share (docs/rules.md, "Time-based fair share"): past usage moves the over-quota split, as
KAI's ``resource_division.go`` computes it, and the reclaim gate follows."""

from __future__ import annotations

from fractions import Fraction

from conftest import build
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.fair_share import Claim, divide


def kai_rounds(total: int, claims: list[Claim], k: float, unit: int) -> dict[str, int]:
    """KAI's ``divideUpToFairShare`` and ``divideRemainingResource`` for one priority level, written from the Go
    code: every round, the unsatisfied queues' weights normalised, ``max(0, W' + k (W' - U))``, the round's amount
    split by them, a queue taking what it still requests or the floor of its part, the rest of the parts given one
    unit at a time, largest first."""
    fair = {c.name: min(total if c.deserved is None else c.deserved, c.requestable()) for c in claims}
    left = Fraction(total - sum(fair.values()))
    fractions: dict[str, Fraction] = {}
    while left > 0:
        unsatisfied = [c for c in claims if c.requestable() > fair[c.name]]
        total_weight = sum(Fraction(c.weight) for c in unsatisfied)
        if total_weight == 0:
            break
        weights = {}
        for c in unsatisfied:
            normal = Fraction(c.weight) / total_weight
            weights[c.name] = max(Fraction(0), normal + Fraction(k) * (normal - Fraction(c.usage)))
        weight_sum = sum(weights.values())
        if weight_sum == 0:
            break
        this_round, again = left, False
        for c in unsatisfied:
            if c.weight == 0:
                continue
            part = this_round * weights[c.name] / weight_sum
            wanted = c.requestable() - fair[c.name]
            if wanted <= part:
                give = Fraction(wanted)
                fractions.pop(c.name, None)
            else:
                give = Fraction(int(part // unit) * unit)
                if part - give > 0:
                    fractions[c.name] = part - give
            fair[c.name] += int(give)
            left -= give
            again = again or wanted < part
        if not again:
            break
    for name in sorted(fractions, key=lambda n: (-fractions[n], n)):
        if left <= 0:
            break
        claim = next(c for c in claims if c.name == name)
        give = min(unit, left, claim.requestable() - fair[name])
        fair[name] += int(give)
        left -= give
    return fair


@st.composite
def claims_with_usage(draw: st.DrawFn) -> tuple[int, list[Claim], float]:
    count = draw(st.integers(2, 4))
    claims = [
        Claim(
            name=f"q{i}",
            deserved=draw(st.sampled_from([0, 1000, 2000])),
            limit=draw(st.sampled_from([None, None, 6000])),
            request=draw(st.integers(0, 10)) * 1000,
            weight=draw(st.sampled_from([0, 1, 1, 2, 3])),
            usage=draw(st.sampled_from([0.0, 0.125, 0.25, 0.5, 0.75, 1.0])),
        )
        for i in range(count)
    ]
    return draw(st.integers(0, 16)) * 1000, claims, draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0]))


@settings(max_examples=400, deadline=None)
@given(claims_with_usage())
def test_the_split_is_kais_rounds_from_the_formula(case: tuple[int, list[Claim], float]):
    total, claims, k = case
    assert divide(total, claims, k=k) == kai_rounds(total, claims, k, 1000)


@settings(max_examples=200, deadline=None)
@given(claims_with_usage())
def test_without_usage_the_split_is_the_weights_whatever_k(case: tuple[int, list[Claim], float]):
    total, claims, k = case
    plain = [Claim(c.name, c.deserved, c.limit, c.request, c.weight) for c in claims]
    assert divide(total, plain, k=k) == divide(total, plain)


def week(k: float) -> dict[str, object]:
    """Two queues of equal weight, no quota, each asking for the whole 8-GPU node; ``a`` used 75% of the cluster
    in the window, ``b`` nothing. ``a`` runs 6 GPUs, ``b`` waits with 6 and 2."""
    return {
        "now": 0,
        "config": {"fair_share_usage": {"k_value": k, "window": "1w"}},
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}],
        "queues": [{"name": "a", "usage": {"gpu": 0.75}}, {"name": "b"}],
        "jobs": [
            {"name": "a1", "queue": "a", "task_resources": {"gpu": 6}, "started_at": -3600, "tasks": [{"node": "n0"}]},
            {"name": "a2", "queue": "a", "task_resources": {"gpu": 2}, "tasks": [{}]},
            {"name": "b1", "queue": "b", "task_resources": {"gpu": 6}, "tasks": [{}]},
            {"name": "b2", "queue": "b", "task_resources": {"gpu": 2}, "tasks": [{}]},
        ],
    }


def test_past_usage_lowers_a_queues_fair_share_and_so_opens_the_reclaim_gate():
    """At k = 0 the queues split the 8 GPUs 4 and 4, and b's 6-GPU job may not reclaim (6 above b's 4); at k = 1,
    a's weights are 0.5 + (0.5 - 0.75) = 0.25 against b's 1: b's share is 6 and the gate opens; at k = 5 a's
    weight is 0 and b's share all it asks for."""
    shares, gates = {}, {}
    for k in (0.0, 1.0, 5.0):
        cluster = ClusterState.of(build(week(k)))
        shares[k] = (cluster.shares["a"]["gpu"], cluster.shares["b"]["gpu"])
        gates[k] = reclaim_gate(cluster, cluster.snapshot.job("b1"), {"gpu": 6000}) is None
    assert shares == {0.0: (4000, 4000), 1.0: (2000, 6000), 5.0: (0, 8000)}
    assert gates == {0.0: False, 1.0: True, 5.0: True}


def test_usage_is_read_only_with_the_config():
    document = week(1.0)
    document["config"] = {}
    cluster = ClusterState.of(build(document))
    assert (cluster.shares["a"]["gpu"], cluster.shares["b"]["gpu"]) == (4000, 4000)
