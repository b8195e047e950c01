"""Fair share (KAI proportion plugin): the reference's worked examples and properties."""

from __future__ import annotations

from conftest import build
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.fair_share import Claim, divide

GPU = 1000  # one GPU in milli-units


def gpus(shares: dict[str, int]) -> dict[str, float]:
    return {name: amount / GPU for name, amount in shares.items()}


def test_kai_flat_example_10_gpus():
    """docs/rules.md, "KAI's worked examples": A(d=2,w=2,req=8), B(d=3,w=1,req=3), C(d=1,w=1,req=10) -> 5/3/2."""
    claims = [
        Claim("A", deserved=2 * GPU, limit=None, request=8 * GPU, weight=2),
        Claim("B", deserved=3 * GPU, limit=None, request=3 * GPU, weight=1),
        Claim("C", deserved=1 * GPU, limit=None, request=10 * GPU, weight=1),
    ]
    assert gpus(divide(10 * GPU, claims)) == {"A": 5, "B": 3, "C": 2}


def pending(name: str, queue: str, count: int) -> dict:
    return {"name": name, "queue": queue, "task_resources": {"gpu": 1}, "tasks": [{}] * count}


def test_kai_hierarchical_example_12_gpus():
    """docs/rules.md, "KAI's worked examples": D1(d=6) > {q1(d=4,req=10), q2(d=2,req=0)}, D2(d=4) > q3(d=4,req=6).

    Top level 7 and 5; then 7 and 0 inside D1, 5 inside D2.
    """
    snapshot = build(
        nodes=[{"name": "n0", "resources": {"gpu": 8}}, {"name": "n1", "resources": {"gpu": 4}}],
        queues=[
            {"name": "D1", "deserved": {"gpu": 6}},
            {"name": "q1", "parent": "D1", "deserved": {"gpu": 4}},
            {"name": "q2", "parent": "D1", "deserved": {"gpu": 2}},
            {"name": "D2", "deserved": {"gpu": 4}},
            {"name": "q3", "parent": "D2", "deserved": {"gpu": 4}},
        ],
        priority_classes=[],
        jobs=[pending("j1", "q1", 10), pending("j3", "q3", 6)],
    )
    shares = {q: s["gpu"] / GPU for q, s in ClusterState.of(snapshot).shares.items()}
    assert shares == {"D1": 7, "q1": 7, "q2": 0, "D2": 5, "q3": 5}


def test_kai_reclaim_example_fair_shares():
    """docs/rules.md, "KAI's worked examples": QA(d=4), QB(d=4), 8 GPUs; QB runs eight 1-GPU jobs, QA wants 2: QA=2,
    QB=6."""
    running = [
        {"name": f"b{i}", "queue": "QB", "task_resources": {"gpu": 1}, "tasks": [{"node": "n0"}]} for i in range(8)
    ]
    snapshot = build(
        nodes=[{"name": "n0", "resources": {"gpu": 8}}],
        queues=[{"name": "QA", "deserved": {"gpu": 4}}, {"name": "QB", "deserved": {"gpu": 4}}],
        priority_classes=[],
        jobs=[*running, {"name": "a", "queue": "QA", "task_resources": {"gpu": 2}, "tasks": [{}]}],
    )
    cluster = ClusterState.of(snapshot)
    assert {q: s["gpu"] / GPU for q, s in cluster.shares.items()} == {"QA": 2, "QB": 6}


def test_higher_priority_bucket_absorbs_everything_first():
    claims = [
        Claim("low", 0, None, 10 * GPU, weight=5, priority=50),
        Claim("high", 0, None, 6 * GPU, weight=1, priority=200),
    ]
    assert gpus(divide(10 * GPU, claims)) == {"low": 4, "high": 6}


def test_limits_cap_the_over_quota_share_and_the_rest_goes_on():
    claims = [Claim("capped", 1 * GPU, 3 * GPU, 10 * GPU), Claim("free", 1 * GPU, None, 10 * GPU)]
    assert gpus(divide(10 * GPU, claims)) == {"capped": 3, "free": 7}


def test_zero_weight_gets_only_deserved():
    claims = [Claim("a", 2 * GPU, None, 10 * GPU, weight=0), Claim("b", 0, None, 10 * GPU, weight=1)]
    assert gpus(divide(10 * GPU, claims)) == {"a": 2, "b": 8}


def test_unlimited_deserved_takes_all_it_requests():
    claims = [Claim("a", None, None, 7 * GPU), Claim("b", 1 * GPU, None, 10 * GPU)]
    assert gpus(divide(10 * GPU, claims)) == {"a": 7, "b": 3}


def test_cpu_divides_in_millicores():
    claims = [Claim("a", 0, None, 10_000), Claim("b", 0, None, 10_000), Claim("c", 0, None, 10_000)]
    assert divide(1000, claims, unit=1) == {"a": 334, "b": 333, "c": 333}


def test_oversubscribed_guarantees_are_handed_out_in_full():
    """docs/snapshot-format.md, "Fair share when guarantees are oversubscribed": deserved 5 and 4 on 6 GPUs, each
    requesting at least its deserved, get 5 and 4 (as KAI), not about 3.3 and 2.7."""
    claims = [Claim("a", 5 * GPU, None, 6 * GPU), Claim("b", 4 * GPU, None, 4 * GPU)]
    assert gpus(divide(6 * GPU, claims)) == {"a": 5, "b": 4}


def test_a_reclaimer_asking_for_exactly_its_oversubscribed_deserved_passes_the_gate():
    """The same two queues in a snapshot: b's 4-GPU job is within b's fair share of 4, so the gate lets it reclaim."""
    document = {
        "nodes": [{"name": "n0", "resources": {"gpu": 6}}],
        "queues": [{"name": "a", "deserved": {"gpu": 5}}, {"name": "b", "deserved": {"gpu": 4}}],
        "jobs": [
            {"name": "big", "queue": "a", "task_resources": {"gpu": 1}, "tasks": [{"node": "n0"}] * 6},
            {"name": "want", "queue": "b", "task_resources": {"gpu": 4}, "tasks": [{}]},
        ],
    }
    cluster = ClusterState.of(build(priority_classes=[], **document))
    assert cluster.shares["a"]["gpu"] == 5 * GPU and cluster.shares["b"]["gpu"] == 4 * GPU
    assert reclaim_gate(cluster, cluster.snapshot.job("want"), {"gpu": 4 * GPU}) is None


def test_over_quota_weight_per_resource():
    """docs/snapshot-format.md, "Over-quota weight per resource": a GPU weight of 0 keeps CPU shareable (unnamed
    resources weigh 1)."""
    document = {
        "nodes": [{"name": "n0", "resources": {"gpu": 8, "cpu": 10}}],
        "queues": [
            {"name": "a", "over_quota_weight": {"gpu": 0}},
            {"name": "b", "over_quota_weight": {"gpu": 1, "cpu": 3}},
        ],
        "jobs": [
            {"name": "ja", "queue": "a", "task_resources": {"gpu": 1, "cpu": 1}, "tasks": [{}] * 8},
            {"name": "jb", "queue": "b", "task_resources": {"gpu": 1, "cpu": 1}, "tasks": [{}] * 8},
        ],
    }
    cluster = ClusterState.of(build(priority_classes=[], **document))
    assert cluster.shares["a"]["gpu"] == 0 and cluster.shares["b"]["gpu"] == 8 * GPU
    assert cluster.shares["a"]["cpu"] == 2500 and cluster.shares["b"]["cpu"] == 7500
    one = ClusterState.of(build(priority_classes=[], **{**document, "queues": [{"name": "a"}, {"name": "b"}]}))
    assert one.shares["a"]["cpu"] == one.shares["b"]["cpu"] == 5000


# --- properties ----------------------------------------------------------------


@st.composite
def sibling_claims(draw: st.DrawFn) -> tuple[int, list[Claim], int]:
    unit = draw(st.sampled_from([1, GPU]))
    count = draw(st.integers(1, 6))
    claims = []
    for i in range(count):
        deserved = draw(st.one_of(st.none(), st.integers(0, 12))) if i % 3 else draw(st.integers(0, 12))
        limit = draw(st.one_of(st.none(), st.integers(deserved or 0, 20)))
        claims.append(
            Claim(
                name=f"q{i}",
                deserved=None if deserved is None else deserved * unit,
                limit=None if limit is None or deserved is None else limit * unit,
                request=draw(st.integers(0, 25)) * unit,
                weight=draw(st.sampled_from([0, 0.5, 1, 2, 3])),
                priority=draw(st.sampled_from([50, 100, 100, 200])),
            )
        )
    return draw(st.integers(0, 60)) * unit, claims, unit


@settings(max_examples=400, deadline=None)
@given(sibling_claims())
def test_fair_share_properties(case):
    total, claims, unit = case
    shares = divide(total, claims, unit=unit)
    guaranteed = {c.name: min(total if c.deserved is None else c.deserved, c.requestable()) for c in claims}
    if sum(guaranteed.values()) >= total:  # oversubscribed: the guarantees in full, nothing over quota
        assert shares == guaranteed
    else:
        assert sum(shares.values()) <= total
    for claim in claims:
        share = shares[claim.name]
        assert guaranteed[claim.name] <= share <= claim.request
        if claim.limit is not None:
            assert share <= claim.limit
        assert share % unit == 0 or share == guaranteed[claim.name]


@settings(max_examples=400, deadline=None)
@given(sibling_claims())
def test_fair_share_hands_out_everything_someone_can_use(case):
    """Capacity stays idle only when no queue that could take it (weight, request, limit) is left wanting."""
    total, claims, unit = case
    shares = divide(total, claims, unit=unit)
    left = total - sum(shares.values())
    if left >= unit:
        wanting = [c for c in claims if c.weight > 0 and shares[c.name] + unit <= c.requestable()]
        assert not wanting


@st.composite
def two_level_trees(draw: st.DrawFn) -> dict:
    departments = draw(st.integers(1, 3))
    queues, jobs = [], []
    for d in range(departments):
        queues.append({"name": f"d{d}", "deserved": {"gpu": draw(st.integers(0, 10))}})
        for leaf in range(draw(st.integers(1, 3))):
            name = f"d{d}l{leaf}"
            deserved = draw(st.integers(0, 8))
            entry = {"name": name, "parent": f"d{d}", "deserved": {"gpu": deserved}}
            if draw(st.booleans()):
                entry["limit"] = {"gpu": draw(st.integers(deserved, 12))}
            queues.append(entry)
            want = draw(st.integers(0, 12))
            if want:
                jobs.append({"name": f"j-{name}", "queue": name, "task_resources": {"gpu": 1}, "tasks": [{}] * want})
    nodes = [{"name": f"n{i}", "resources": {"gpu": 8}} for i in range(draw(st.integers(0, 4)))]
    return {"nodes": nodes, "queues": queues, "jobs": jobs}


@settings(max_examples=150, deadline=None)
@given(two_level_trees())
def test_fair_share_over_a_tree(parts):
    cluster = ClusterState.of(build(priority_classes=[], **parts))
    tree, shares, usage = cluster.tree, cluster.shares, cluster.usage
    capacity = 8 * GPU * len(parts["nodes"])

    def guaranteed(queue: str, total: int) -> int:
        deserved = tree.queue(queue).deserved_of("gpu")
        request = usage[queue].requested.get("gpu", 0)
        limit = tree.queue(queue).limit_of("gpu")
        return min(total if deserved is None else deserved, request if limit is None else min(limit, request))

    top = tree.children(None)
    assert sum(shares[q]["gpu"] for q in top) <= max(capacity, sum(guaranteed(q, capacity) for q in top))
    for name in tree.queues():
        share = shares[name]["gpu"]
        assert share <= usage[name].requested.get("gpu", 0)
        limit = tree.queue(name).limit_of("gpu")
        assert limit is None or share <= limit
        children = tree.children(name)
        if children:
            assert sum(shares[c]["gpu"] for c in children) <= max(share, sum(guaranteed(c, share) for c in children))
