"""What ``validate`` reports as protected: reclaim-min-runtime windows grouped by reclaimer leaf, per job."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_preempt.explain.summary import summarize
from gpu_preempt.models import format_duration, snapshot_from_data
from gpu_preempt.models.duration import format_end
from gpu_preempt.rules.min_runtime import preempt_min_runtime, protected_until, reclaim_min_runtime
from gpu_preempt.state.cluster import ClusterState

NOW = 1_800_000_000.0


def _rows(
    queues: list[dict[str, object]], started: list[float], queue: str = "a1"
) -> list[tuple[str, str, str | None, str]]:
    jobs = [
        {
            "name": f"j{i}",
            "queue": queue,
            "task_resources": {"gpu": 1},
            "started_at": at,
            "tasks": [{"node": "n"}],
        }
        for i, at in enumerate(started)
    ]
    data = {"now": NOW, "nodes": [{"name": "n", "resources": {"gpu": 8}}], "queues": queues, "jobs": jobs}
    protected = summarize(ClusterState.of(snapshot_from_data(data))).protected
    return [(p.job, p.rule, p.until, p.detail) for p in protected]


TREE = [
    {"name": "a"},
    {"name": "a1", "parent": "a"},
    {"name": "a2", "parent": "a"},
    {"name": "b"},
    {"name": "b1", "parent": "b"},
    {"name": "b2", "parent": "b"},
]


def _tree(**windows: object) -> list[dict[str, object]]:
    return [{**q, **({"reclaim_min_runtime": windows[q["name"]]} if q["name"] in windows else {})} for q in TREE]


def test_each_job_gets_a_row_per_window_still_open_longest_first():
    """A victim in a1: reclaimers in a2 meet it at a1 (1h), those under b at a (20m). Of three jobs of one queue,
    started 10, 30 and 90 minutes ago, the first is shielded from both, the second from a2 only, the third from
    neither."""
    rows = _rows(_tree(a="20m", a1="1h"), [NOW - 600, NOW - 1800, NOW - 5400])
    assert [(job, rule, detail) for job, rule, _, detail in rows] == [
        ("j0", "reclaim-min-runtime", "1h against reclaimers in a2"),
        ("j0", "reclaim-min-runtime", "20m against reclaimers in b1, b2"),
        ("j1", "reclaim-min-runtime", "1h against reclaimers in a2"),
    ]
    assert rows[0][2] != rows[1][2]


def test_one_window_for_every_other_leaf_is_against_any_other_queue():
    rows = _rows(_tree(a="20m", a1="20m"), [NOW - 600])
    assert [detail for *_, detail in rows] == ["20m against any other queue"]


def test_two_lengths_that_end_at_one_instant_are_one_row_with_the_leaves_in_tree_order():
    """0.3 s and 0.1 + 0.2 s differ as numbers, but added to an instant of 1.8e9 s they end at the same float: one
    end, one row. With the victim in a1x under a1: reclaimers in a1y meet it at a1x (no window), in a2 at a1 (0.3 s),
    under b at a (the longer 0.1 + 0.2 s, listed first before the merge): the row lists a2, b1, b2 in tree order."""
    assert 0.1 + 0.2 > 0.3 and NOW - 0.2 + (0.1 + 0.2) == NOW - 0.2 + 0.3
    rows = _rows(_tree(a=0.1 + 0.2, a1=0.3), [NOW - 0.2])
    assert [detail for *_, detail in rows] == ["0.3s against any other queue"]
    deeper = [
        {"name": "a", "reclaim_min_runtime": 0.1 + 0.2},
        {"name": "a1", "parent": "a", "reclaim_min_runtime": 0.3},
        {"name": "a1x", "parent": "a1", "reclaim_min_runtime": 0},
        {"name": "a1y", "parent": "a1"},
        *TREE[2:],
    ]
    rows = _rows(deeper, [NOW - 0.2], queue="a1x")
    assert [detail for *_, detail in rows] == ["0.3s against reclaimers in a2, b1, b2"]


def _reference(cluster: ClusterState) -> list[tuple[str, str, str, str | None, str]]:
    """The rows by their definition: every running job, every reclaimer leaf asked one by one."""
    snap, leaves = cluster.snapshot, cluster.tree.leaves()
    rows: list[tuple[str, str, str, str | None, str]] = []
    for job in snap.jobs:
        if cluster.running_count(job) == 0:
            continue
        elastic = f" (elastic: its {cluster.surplus(job)} task(s) above min_available stay evictable)"
        elastic = elastic if job.is_elastic and cluster.surplus(job) else ""
        if not job.is_preemptible:
            rows.append((job.name, job.queue, "non-preemptible", None, "never a victim"))
        runtime = preempt_min_runtime(cluster.tree, snap.config, job.queue)
        until = protected_until(job.started_at, runtime)
        if until is not None and snap.now < until:
            detail = f"{format_duration(runtime)} against preemption in its own queue{elastic}"
            rows.append((job.name, job.queue, "preempt-min-runtime", format_end(until), detail))
        by_until: dict[float, list[str]] = {}
        for leaf in leaves:
            if leaf != job.queue:
                end = protected_until(job.started_at, reclaim_min_runtime(cluster.tree, snap.config, leaf, job.queue))
                if end is not None and snap.now < end:
                    by_until.setdefault(end, []).append(leaf)
        others = len(leaves) - (job.queue in leaves)
        for end, reclaimers in sorted(by_until.items(), key=lambda kv: -kv[0]):
            scope = "any other queue" if len(reclaimers) == others else "reclaimers in " + ", ".join(reclaimers)
            detail = f"{format_duration(end - (job.started_at or 0))} against {scope}{elastic}"
            rows.append((job.name, job.queue, "reclaim-min-runtime", format_end(end), detail))
        policy = snap.toleration_of(job)
        if policy is not None and policy.toleration_seconds != 0:
            window = None if policy.forever or job.started_at is None else job.started_at + policy.toleration_seconds
            if window is None or snap.now < window:
                detail = f"tolerates preemptors below priority {policy.minimum_preemptable_priority}"
                rows.append((job.name, job.queue, "toleration", None if window is None else format_end(window), detail))
    return rows


WINDOWS = st.sampled_from([None, 0, 30, 600, 3600, 0.1 + 0.2, 0.3])


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, object]:
    """Two-level trees with windows set anywhere, classes with and without toleration, jobs started before, at,
    after now or never, elastic or not, running or pending."""
    queues: list[dict[str, object]] = []
    for top in ("a", "b", "c")[: draw(st.integers(1, 3))]:
        queues.append({"name": top, "reclaim_min_runtime": draw(WINDOWS), "preempt_min_runtime": draw(WINDOWS)})
        for child in range(draw(st.integers(0, 2))):
            name = f"{top}{child}"
            queues.append({"name": name, "parent": top, "reclaim_min_runtime": draw(WINDOWS)})
    queues = [{k: v for k, v in q.items() if v is not None} for q in queues]
    parents = {q.get("parent") for q in queues}
    leaves = [str(q["name"]) for q in queues if q["name"] not in parents]
    classes = [
        {"name": "plain", "value": 10},
        {"name": "forever", "value": 20, "preemption_toleration": {"toleration_seconds": -1}},
        {
            "name": "window",
            "value": 30,
            "preemption_toleration": {"toleration_seconds": draw(st.sampled_from([0, 60, 900]))},
        },
    ]
    jobs = []
    for j in range(draw(st.integers(0, 8))):
        count = draw(st.integers(1, 3))
        job: dict[str, object] = {
            "name": f"j{j}",
            "queue": draw(st.sampled_from(leaves)),
            "task_resources": {"gpu": 1},
            "tasks": [{"node": "n"} if draw(st.booleans()) else {} for _ in range(count)],
            "min_available": draw(st.integers(1, count)),
        }
        at = draw(st.sampled_from([None, -3600, -700, -0.2, -1e-6, 0, 5]))
        if at is not None:
            job["started_at"] = NOW + at
        if draw(st.booleans()):
            job["priority_class"] = draw(st.sampled_from(["plain", "forever", "window"]))
        if draw(st.integers(0, 3)) == 0:
            job["preemptible"] = False
        jobs.append(job)
    config = {
        "min_runtime_resolve": draw(st.sampled_from(["lca", "queue"])),
        "preempt_min_runtime": draw(st.sampled_from([0, 120])),
        "reclaim_min_runtime": draw(st.sampled_from([0, 120])),
    }
    nodes = [{"name": "n", "resources": {"gpu": 64}}]
    return {"now": NOW, "config": config, "nodes": nodes, "queues": queues, "priority_classes": classes, "jobs": jobs}


@settings(max_examples=200, deadline=None)
@given(clusters(), st.booleans())
def test_the_rows_are_those_of_every_job_asked_of_every_leaf(data: dict[str, object], columns: bool) -> None:
    snapshot = snapshot_from_data(data)
    if columns:
        snapshot.task_columns()  # the state counted from columns, as a large snapshot's is
    cluster = ClusterState.of(snapshot)
    rows = [(p.job, p.queue, p.rule, p.until, p.detail) for p in summarize(cluster).protected]
    assert rows == _reference(cluster)
