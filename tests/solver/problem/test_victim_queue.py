"""KAI's victim queue (docs/rules.md, "The greedy baseline"): queue by queue, re-ranked after every pop, jobs in
KAI's reversed job order, elastic jobs one surplus task at a time."""

from __future__ import annotations

from gpu_preempt.formulate.queue_facts import cluster_facts, entry_of
from gpu_preempt.models import snapshot_from_data
from gpu_preempt.problem.victim_queue import VictimEntry, VictimOrder, VictimQueue
from gpu_preempt.state.cluster import ClusterState


def names(queue: VictimQueue, entries: list[VictimEntry]) -> list[str]:
    return [entries[i].name + ("/peel" if peel else "") for i, peel in queue.pops()]


def one_gpu(queue: str, name: str, priority: int = 0, newest: float = 0.0) -> VictimEntry:
    return VictimEntry(queue, priority, newest, name, {"gpu": 1})


def test_the_queues_take_turns_as_their_shares_come_down():
    """KAI's "Reclaim jobs according to queue fair share": two queues of three jobs each, one of priority 49. The
    queue order re-balances after every pop, so the victims alternate between the queues."""
    entries = [one_gpu(q, f"{q}-{p}-{i}", p) for q in ("q0", "q1") for i, p in enumerate((50, 50, 49))]
    queue = VictimQueue.of({"q0": {"gpu": 1}, "q1": {"gpu": 1}}, {"q0": {"gpu": 3}, "q1": {"gpu": 3}}, entries)
    assert names(queue, entries)[:4] == ["q0-49-2", "q1-49-2", "q0-50-1", "q1-50-1"]


def test_the_queue_holding_the_largest_share_of_its_fair_share_goes_first():
    entries = [one_gpu("small", "s1"), one_gpu("big", "b1"), one_gpu("big", "b2", newest=1.0)]
    queue = VictimQueue.of({"small": {"gpu": 1}, "big": {"gpu": 4}}, {"small": {"gpu": 2}, "big": {"gpu": 6}}, entries)
    # after its next job small holds (2 - 1) / 1 = 1 of its fair share, big (6 - 1) / 4 = 1.25: b2 goes; then big
    # holds (6 - 2) / 4 = 1 after b1, a tie broken by the shares before any pop, small's 2 against big's 1.5
    assert names(queue, entries) == ["b2", "s1", "b1"]


def test_over_fair_share_in_every_resource_goes_before_a_larger_share():
    """KAI's first criterion reads GPU, CPU and memory together: a queue over its fair share in all three goes
    first, whatever the other's dominant share."""
    fair = {"all": {"gpu": 2, "cpu": 2, "memory": 2}, "gpu-only": {"gpu": 1, "cpu": 8, "memory": 8}}
    allocated = {"all": {"gpu": 3, "cpu": 3, "memory": 3}, "gpu-only": {"gpu": 8, "cpu": 1, "memory": 1}}
    entries = [one_gpu("gpu-only", "g"), one_gpu("all", "a")]
    assert names(VictimQueue.of(fair, allocated, entries), entries) == ["a", "g"]


def test_a_queue_within_its_deserved_quota_and_one_of_higher_priority_go_last():
    fair = {q: {"gpu": 1} for q in ("starved", "high", "low")}
    allocated = {q: {"gpu": 2} for q in fair}
    entries = [one_gpu("starved", "s"), one_gpu("high", "h"), one_gpu("low", "l")]
    queue = VictimQueue.of(
        fair,
        allocated,
        entries,
        priorities={"high": 200, "low": 100, "starved": 100},
        deserved={"starved": {"gpu": 2}, "high": {"gpu": 1}, "low": {"gpu": 1}},
    )
    assert names(queue, entries) == ["l", "h", "s"]


def test_within_a_queue_lowest_priority_then_elastic_then_newest_then_last_name():
    elastic = VictimEntry("q", 5, 0.0, "elastic", {"gpu": 3}, ({"gpu": 1}, {"gpu": 1}))
    entries = [
        one_gpu("q", "old", 5, 1.0),
        one_gpu("q", "new", 5, 2.0),
        elastic,
        one_gpu("q", "high", 9, 3.0),
        one_gpu("q", "a", 5, 2.0),
        one_gpu("q", "z", 5, 2.0),
    ]
    queue = VictimQueue.of({"q": {"gpu": 1}}, {"q": {"gpu": 10}}, entries)
    # the elastic job gives up its two surplus tasks, then, at its minimum, comes after the newer jobs
    assert names(queue, entries) == [
        "elastic/peel",
        "elastic/peel",
        "z",
        "new",
        "a",
        "old",
        "elastic",
        "high",
    ]


def test_a_protected_elastic_job_gives_up_its_surplus_only():
    protected = VictimEntry("q", 0, 0.0, "protected", {"gpu": 3}, ({"gpu": 1},), whole=False)
    entries = [protected, one_gpu("q", "plain", 1)]
    assert names(VictimQueue.of({"q": {"gpu": 1}}, {"q": {"gpu": 4}}, entries), entries) == ["protected/peel", "plain"]


def test_a_parent_is_compared_on_its_own_amounts():
    """Two departments: d1's leaf holds the larger share of its own fair share, but d2 as a whole is further over
    its fair share than d1 is: d2's leaf goes first."""
    fair = {"d1": {"gpu": 4}, "d2": {"gpu": 2}, "d1-a": {"gpu": 1}, "d2-a": {"gpu": 2}}
    allocated = {"d1": {"gpu": 4}, "d2": {"gpu": 4}, "d1-a": {"gpu": 4}, "d2-a": {"gpu": 4}}
    parents = {"d1-a": "d1", "d2-a": "d2"}
    entries = [one_gpu("d1-a", "x"), one_gpu("d2-a", "y")]
    assert names(VictimQueue.of(fair, allocated, entries, parents=parents), entries) == ["y", "x"]


def test_an_order_of_fixed_pops_gives_them_as_they_are():
    order = VictimOrder({}, (), fixed=((1, False), (0, True)), complete=False)
    assert list(order.pops()) == [(1, False), (0, True)]
    assert list(order.pops()) == [(1, False), (0, True)]  # every walk starts afresh


def test_entries_and_facts_from_a_cluster():
    snapshot = snapshot_from_data(
        {
            "now": "2026-01-01T12:00:00Z",
            "nodes": [{"name": "n0", "resources": {"gpu": 8}}],
            "queues": [{"name": "dept"}, {"name": "team", "parent": "dept", "deserved": {"gpu": 2}}],
            "jobs": [
                {
                    "name": "e",
                    "queue": "team",
                    "priority": 3,
                    "min_available": 1,
                    "task_resources": {"gpu": 2},
                    "created_at": "2026-01-01T10:00:00Z",
                    "tasks": [{"node": "n0", "order": 2}, {"node": "n0"}, {"node": "n0", "order": 1}],
                }
            ],
        }
    )
    cluster = ClusterState.of(snapshot)
    job = snapshot.job("e")
    entry = entry_of(cluster, job, cluster.tasks(job, "running"), 2, True)
    assert entry.held == {"gpu": 6000} and len(entry.peels) == 2 and entry.priority == 3
    facts = cluster_facts(cluster, ["team"])
    assert sorted(facts) == ["dept", "team"]
    assert facts["team"].parent == "dept" and facts["team"].allocated == {"gpu": 6000}
    assert not facts["team"].starved  # 6 GPUs held, 2 deserved
