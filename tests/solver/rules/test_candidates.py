"""Candidate rules for preempt and reclaim, each with the reason a job is or is not a candidate."""

from __future__ import annotations

import numpy as np
from conftest import build
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_preempt.models import parse_time
from gpu_preempt.rules.candidates import Unprotected, preempt_candidates, reclaim_candidates, with_lifted
from gpu_preempt.rules.protection import LIFTABLE, Lifted, protections
from gpu_preempt.rules.reclaim_gate import reclaim_gate
from gpu_preempt.rules.reclaim_line import reclaim_line
from gpu_preempt.state.cluster import ClusterState

GPU = 1000
CLASSES = [
    {"name": "train", "value": 50},
    {"name": "inference", "value": 125},
    {
        "name": "shy",
        "value": 40,
        "preemption_toleration": {"minimum_preemptable_priority": 120, "toleration_seconds": -1},
    },
    {
        "name": "brief",
        "value": 40,
        "preemption_toleration": {"minimum_preemptable_priority": 120, "toleration_seconds": 5400},
    },
]


def running(name, queue, gpus=1, tasks=1, node="n0", **extra):
    return {
        "name": name,
        "queue": queue,
        "task_resources": {"gpu": gpus},
        "tasks": [{"node": node}] * tasks,
        **extra,
    }


def waiting(name, queue, gpus=1, tasks=1, **extra):
    return {"name": name, "queue": queue, "task_resources": {"gpu": gpus}, "tasks": [{}] * tasks, **extra}


def cluster(jobs, queues=None, nodes=None, **config) -> ClusterState:
    return ClusterState.of(
        build(
            jobs=jobs,
            queues=queues or [{"name": "q", "deserved": {"gpu": 4}}, {"name": "r", "deserved": {"gpu": 4}}],
            nodes=nodes or [{"name": "n0", "resources": {"gpu": 8}}, {"name": "n1", "resources": {"gpu": 8}}],
            priority_classes=CLASSES,
            config=config,
        )
    )


# --- preempt -------------------------------------------------------------------


def test_preempt_takes_lower_priority_preemptible_jobs_of_the_same_queue_only():
    c = cluster(
        [
            running("low", "q", priority_class="train"),
            running("peer", "q", priority=60),
            running("equal", "q", priority=125, preemptible=True),
            running("vip", "q", priority=99, preemptible=False),
            running("elsewhere", "r", priority_class="train"),
            waiting("boss", "q", priority_class="inference"),
        ]
    )
    result = preempt_candidates(c, c.snapshot.job("boss"))
    assert [x.job for x in result.candidates] == ["low", "peer"]
    assert {e.job: e.rule for e in result.excluded} == {
        "equal": "priority",
        "vip": "non-preemptible",
        "elsewhere": "other-queue",
    }
    assert "priority 125 is not below the preemptor's 125" in result.exclusion("equal").reason
    assert result.exclusion("elsewhere").reason == "in queue r, not q"
    assert [result.excluded_count(rule) for rule in ("other-queue", "priority", "min-runtime")] == [1, 1, 0]


def test_a_job_that_says_preemptible_false_and_one_whose_priority_says_it_get_their_own_words():
    """Two jobs of one priority, both not preemptible: one says so, the other is above
    ``config.preemptible_below_priority``. Words written once per kind must not be given to the other kind."""
    jobs = [
        running("said", "q", priority=110, preemptible=False),
        running("high", "q", priority=110),
        running("said-too", "r", priority=110, preemptible=False),
        running("high-too", "r", priority=110),
        waiting("boss", "q", priority=300),
    ]
    for order in (jobs, [jobs[1], jobs[0], jobs[3], jobs[2], jobs[4]]):
        c = cluster(order)
        boss = c.snapshot.job("boss")
        for found, names in (
            (preempt_candidates(c, boss), ("said", "high")),
            (reclaim_candidates(c, boss, {"gpu": GPU}), ("said-too", "high-too")),
        ):
            said, high = (found.exclusion(name) for name in names)
            assert said.rule == high.rule == "non-preemptible"
            assert said.reason == "non-preemptible: marked preemptible: false"
            assert high.reason == ("non-preemptible: priority 110 is not below 100 (config.preemptible_below_priority)")


def test_preempt_respects_min_runtime_and_peels_protected_elastic_jobs():
    c = cluster(
        [
            running("gang", "q", tasks=2, priority_class="train", started_at="2026-01-01T11:59:00Z"),
            running(
                "elastic", "q", tasks=3, min_available=1, priority_class="train", started_at="2026-01-01T11:59:00Z"
            ),
            running("old", "q", tasks=2, priority_class="train", started_at="2026-01-01T10:00:00Z"),
            waiting("boss", "q", priority_class="inference"),
        ],
        preempt_min_runtime="5m",
    )
    result = preempt_candidates(c, c.snapshot.job("boss"))
    excluded = result.exclusion("gang")
    assert excluded.rule == "min-runtime"
    assert excluded.until == parse_time("2026-01-01T12:04:00Z")
    elastic = result.candidate("elastic")
    assert (elastic.surplus, elastic.whole_job, elastic.may_lose) == (2, False, 2)
    old = result.candidate("old")
    assert (old.whole_job, old.may_lose) == (True, 2)


def test_toleration_shields_from_preemptors_below_the_minimum():
    jobs = [
        running("shy-job", "q", priority_class="shy"),
        waiting("mid", "q", priority=110),
        waiting("top", "q", priority=120),
    ]
    c = cluster(jobs, preemptible_below_priority=200)
    assert preempt_candidates(c, c.snapshot.job("mid")).exclusion("shy-job").rule == "toleration"
    assert preempt_candidates(c, c.snapshot.job("top")).candidate("shy-job") is not None


# --- reclaim -------------------------------------------------------------------


def kai_reclaim_example(victims, **config):
    """docs/rules.md, "KAI's worked examples": QA(d=4), QB(d=4), 8 GPUs; QA wants 2 GPUs."""
    return cluster(
        [*victims, waiting("a", "QA", gpus=2)],
        queues=[{"name": "QA", "deserved": {"gpu": 4}}, {"name": "QB", "deserved": {"gpu": 4}}],
        nodes=[{"name": "n0", "resources": {"gpu": 8}}],
        **config,
    )


def test_kai_reclaim_example_gate_and_candidates():
    c = kai_reclaim_example([running(f"b{i}", "QB") for i in range(8)])
    reclaimer = c.snapshot.job("a")
    assert reclaim_gate(c, reclaimer, {"gpu": 2 * GPU}) is None  # 0 + 2 <= fair share 2
    result = reclaim_candidates(c, reclaimer, {"gpu": 2 * GPU})
    assert len(result.candidates) == 8
    # QA stays within deserved, so QB's line is its deserved 4 GPUs: it holds 8, above it.
    line = reclaim_line(c, "QA", "QB", {"gpu": 2 * GPU})
    assert (line.amount, line.kind) == ({"gpu": 4 * GPU}, {"gpu": "deserved"})
    assert line.above(c.usage["QB"].allocated) == ["gpu"]
    assert line.floor("gpu", 8 * GPU) == 4 * GPU


def test_a_gang_crossing_the_line_is_a_candidate_under_last_chunk_only():
    """docs/rules.md, "KAI's worked examples": KAI lets this 8-GPU gang go (QB is above its line before its only chunk,
    and ends
    at 0); the strict line keeps QB's 4."""
    c = kai_reclaim_example([running("big", "QB", gpus=8)])
    assert reclaim_candidates(c, c.snapshot.job("a"), {"gpu": 2 * GPU}).candidate("big") is not None
    c = kai_reclaim_example([running("big", "QB", gpus=8)], reclaim_guarantee="strict")
    result = reclaim_candidates(c, c.snapshot.job("a"), {"gpu": 2 * GPU})
    excluded = result.exclusion("big")
    assert excluded.rule == "guarantee"
    assert excluded.reason == (
        "queue QB holds 8 gpu and keeps its guaranteed 4 (deserved); evicting this job would take 8"
    )


def test_reclaim_never_takes_from_the_own_queue_and_ignores_priority():
    c = cluster(
        [
            running("mine", "q", priority_class="train"),
            running("theirs", "r", priority=90),
            *[running(f"r{i}", "r") for i in range(5)],
            waiting("want", "q", priority_class="train"),
        ]
    )
    result = reclaim_candidates(c, c.snapshot.job("want"), {"gpu": GPU})
    assert result.exclusion("mine").rule == "own-queue"
    assert result.candidate("theirs") is not None  # higher priority, still reclaimable


def test_reclaim_min_runtime_uses_the_lca_resolution():
    queues = [
        {"name": "dept", "reclaim_min_runtime": "1h"},
        {"name": "a", "parent": "dept", "deserved": {"gpu": 4}},
        {"name": "b", "parent": "dept", "deserved": {"gpu": 2}, "reclaim_min_runtime": "1m"},
        {"name": "other", "deserved": {"gpu": 4}},
    ]
    jobs = [
        running("victim", "b", started_at="2026-01-01T11:58:00Z"),
        *[running(f"b{i}", "b") for i in range(5)],
        waiting("sibling", "a", gpus=1),
        waiting("stranger", "other", gpus=1),
    ]
    c = cluster(jobs, queues=queues)
    # From sibling a: LCA dept, step down to b -> 1m, expired at 11:59.
    assert reclaim_candidates(c, c.snapshot.job("sibling"), {"gpu": GPU}).candidate("victim") is not None
    # From another top-level tree: the victim's top-level queue dept -> 1h, protected until 12:58.
    excluded = reclaim_candidates(c, c.snapshot.job("stranger"), {"gpu": GPU}).exclusion("victim")
    assert excluded.rule == "min-runtime" and excluded.until == parse_time("2026-01-01T12:58:00Z")


def test_reclaim_gate_keeps_the_reclaimer_within_its_fair_share():
    c = cluster(
        [running("held", "q", tasks=4), running("other", "r", tasks=8, node="n1"), waiting("more", "q")],
        queues=[{"name": "q", "deserved": {"gpu": 4}}, {"name": "r", "deserved": {"gpu": 4}}],
    )
    assert c.shares["q"]["gpu"] == 5 * GPU  # 4 deserved + the 1 more it requests
    more = c.snapshot.job("more")
    assert reclaim_gate(c, more, {"gpu": GPU}) is None
    assert (
        reclaim_gate(c, more, {"gpu": 2 * GPU}) == "queue q would hold 6 gpu with this job, above its fair share of 5"
    )


def test_reclaim_gate_checks_every_resource_not_only_gpus():
    """Like KAI: a queue over its CPU fair share cannot reclaim GPUs."""
    c = cluster(
        [
            {"name": "cpu-hog", "queue": "q", "task_resources": {"cpu": 60}, "tasks": [{"node": "n0"}]},
            {"name": "r-cpu", "queue": "r", "task_resources": {"cpu": 10}, "tasks": [{"node": "n1"}]},
            {"name": "r-wait", "queue": "r", "task_resources": {"cpu": 100}, "tasks": [{}]},
            waiting("gpu-job", "q"),
        ],
        queues=[{"name": "q", "deserved": {"gpu": 4}}, {"name": "r", "deserved": {"gpu": 4, "cpu": 100}}],
        nodes=[{"name": "n0", "resources": {"gpu": 8, "cpu": 64}}, {"name": "n1", "resources": {"gpu": 8, "cpu": 64}}],
    )
    assert c.shares["q"]["cpu"] < 60_000
    verdict = reclaim_gate(c, c.snapshot.job("gpu-job"), {"gpu": GPU})
    assert verdict is not None and verdict.startswith("queue q would hold 60 cpu with this job, above its fair share")


def test_non_preemptible_reclaimers_stay_within_deserved_at_every_level():
    queues = [
        {"name": "dept", "deserved": {"gpu": 2}},
        {"name": "a", "parent": "dept", "deserved": {"gpu": 4}},
        {"name": "b", "deserved": {"gpu": 4}},
    ]
    c = cluster([running("fill", "b", tasks=8), waiting("vip", "a", gpus=3, priority=500)], queues=queues)
    verdict = reclaim_gate(c, c.snapshot.job("vip"), {"gpu": 3 * GPU})
    assert verdict is not None
    assert "queue dept would hold 3 gpu of non-preemptible work, above its deserved 2" in verdict


def test_guarantee_uses_fair_share_when_the_reclaimer_is_above_deserved():
    queues = [{"name": "q", "deserved": {"gpu": 1}}, {"name": "r", "deserved": {"gpu": 2}}]
    c = cluster([running("r-jobs", "r", tasks=6), waiting("big", "q", gpus=4)], queues=queues)
    # q (deserved 1) asking for 4 is above deserved: r's line is max(deserved 2, its fair share).
    line = reclaim_line(c, "q", "r", {"gpu": 4 * GPU})
    assert line.amount == {"gpu": max(2 * GPU, c.shares["r"]["gpu"])}
    assert line.kind == {"gpu": "fair share" if c.shares["r"]["gpu"] > 2 * GPU else "deserved"}


def test_a_queue_at_or_below_its_line_everywhere_gives_no_candidate():
    """last_chunk: r holds exactly its deserved 4 GPUs, so not even one of its chunks may go."""
    c = cluster([running("r-jobs", "r", tasks=4), waiting("want", "q", gpus=1)])
    result = reclaim_candidates(c, c.snapshot.job("want"), {"gpu": GPU})
    assert result.candidates == []
    assert result.exclusion("r-jobs").reason == (
        "queue r is at or below its line in every resource it holds (4 gpu of deserved 4)"
    )


def test_lines_of_zero_and_unlimited_lines():
    """docs/snapshot-format.md, "Quotas that count": CPU-only jobs of a queue with unlimited CPU/memory deserved and
    GPU deserved 0 are
    never above their line; a queue that declares no CPU quota (0) is above it as soon as it holds CPU."""
    nodes = [{"name": "n0", "resources": {"gpu": 8, "cpu": 16, "memory": "64Gi"}}]
    fill = {"name": "fill", "queue": "r", "task_resources": {"cpu": 4, "memory": "16Gi"}, "tasks": [{"node": "n0"}] * 4}
    want = {"name": "want", "queue": "q", "task_resources": {"cpu": 2, "memory": "8Gi"}, "tasks": [{}]}
    unlimited = {"name": "r", "deserved": {"gpu": 0, "cpu": "unlimited", "memory": "unlimited"}}
    queues = [{"name": "q", "deserved": {"cpu": 8, "memory": "32Gi"}}, unlimited]
    c = cluster([fill, want], queues=queues, nodes=nodes)
    line = reclaim_line(c, "q", "r", {"cpu": 2000, "memory": 8 * 2**30 * 1000})
    assert line.amount == {"cpu": None, "memory": None}
    assert reclaim_candidates(c, c.snapshot.job("want"), {"cpu": 2000}).exclusion("fill").rule == "guarantee"
    undeclared = {"name": "r", "deserved": {"gpu": 0}}
    c = cluster([fill, want], queues=[queues[0], undeclared], nodes=nodes)
    line = reclaim_line(c, "q", "r", {"cpu": 2000})
    assert line.amount["cpu"] == 0 and line.above(c.usage["r"].allocated) == ["cpu", "memory"]


# --- every running job at once ------------------------------------------------------


@st.composite
def reclaim_scenes(draw: st.DrawFn) -> tuple[ClusterState, str]:
    """Running jobs of three queues with every kind of protection mixed (classes, flags, start times, gangs)."""
    count = draw(st.integers(1, 14))
    jobs = []
    for i in range(count):
        tasks = draw(st.integers(1, 3))
        extra: dict[str, object] = {}
        if draw(st.booleans()):
            extra["priority_class"] = draw(st.sampled_from(["train", "inference", "shy", "brief"]))
        if draw(st.booleans()):
            extra["preemptible"] = draw(st.booleans())
        if draw(st.booleans()):
            extra["started_at"] = f"2026-01-01T{draw(st.integers(10, 11)):02d}:{draw(st.integers(0, 59)):02d}:00Z"
        if tasks > 1 and draw(st.booleans()):
            extra["min_available"] = draw(st.integers(1, tasks))
        queue = draw(st.sampled_from(["q", "r", "s"]))
        jobs.append(running(f"j{i}", queue, tasks=tasks, node=f"n{i % 2}", **extra))
    jobs.append(waiting("reclaimer", "q", priority=draw(st.sampled_from([10, 60, 130]))))
    queues = [
        {"name": "q", "deserved": {"gpu": 2}},
        {
            "name": "r",
            "deserved": {"gpu": draw(st.integers(0, 6))},
            "reclaim_min_runtime": draw(st.sampled_from(["0s", "30m", "2h"])),
        },
        {"name": "s", "deserved": {"gpu": draw(st.integers(0, 6))}},
    ]
    nodes = [{"name": "n0", "resources": {"gpu": 32}}, {"name": "n1", "resources": {"gpu": 32}}]
    guarantee = draw(st.sampled_from(["last_chunk", "strict"]))
    return cluster(jobs, queues=queues, nodes=nodes, reclaim_guarantee=guarantee, reclaim_min_runtime="1h"), guarantee


@settings(max_examples=200, deadline=None)
@given(reclaim_scenes())
def test_reclaim_judges_every_running_job_as_its_protections_say(scene: tuple[ClusterState, str]) -> None:
    """Judged column by column, each running job ends where :func:`protections` (job by job) puts it: its own queue
    excluded; with no protection, a candidate for all it runs (or movable, with the line's reason); with some, a
    candidate for its surplus only or excluded by the first protection that blocks it whole (in its words). Every list
    is in job order, and the priorities gathered are those of the candidates."""
    c, _ = scene
    reclaimer = c.snapshot.job("reclaimer")
    found = reclaim_candidates(c, reclaimer, {"gpu": GPU})
    order = {job.name: i for i, job in enumerate(c.snapshot.jobs)}
    for listed in (found.candidates, found.movable, found.judged):
        assert [order[x.job] for x in listed] == sorted(order[x.job] for x in listed)
    guarded = {e.job: e.reason for e in found.judged if e.rule == "guarantee"}
    assert guarded.keys() == {m.job for m in found.movable}
    for job in c.running_jobs():
        candidate = found.candidate(job.name) or next((m for m in found.movable if m.job == job.name), None)
        if job.queue == "q":
            assert found.exclusion(job.name).rule == "own-queue"
            continue
        shields = protections(c, job, reclaimer, "reclaim")
        running_now = c.running_count(job)
        if not shields:
            assert candidate == (job.name, running_now, max(0, running_now - job.gang_minimum), True, ())
        elif blocking := [p for p in shields if not p.surplus_only]:
            excluded = found.exclusion(job.name)
            assert candidate is None and (excluded.rule, excluded.reason, excluded.until) == (
                blocking[0].rule,
                blocking[0].describe(),
                blocking[0].until,
            )
        elif candidate is not None:
            assert not candidate.whole_job and candidate.surplus == running_now - job.gang_minimum > 0
    # the levels of the objective, found on the way: the priorities of the candidates, no more; and their jobs' rows
    assert found.priorities == {c.snapshot.job(x.job).resolved_priority for x in found.candidates}
    assert [c.snapshot.jobs[i].name for i in found.rows.tolist()] == [x.job for x in found.candidates]


@settings(max_examples=200, deadline=None)
@given(reclaim_scenes(), st.sampled_from(["preempt", "reclaim"]))
def test_unprotected_on_columns_says_what_it_says_job_by_job(scene: tuple[ClusterState, str], action: str) -> None:
    """Toleration windows, min-runtimes and preemptibility read from the job columns clear exactly the jobs that
    :class:`Unprotected` clears one at a time."""
    c, _ = scene
    unprotected = Unprotected(c, c.snapshot.job("reclaimer"), action)  # type: ignore[arg-type]
    jobs = c.snapshot.jobs
    assert unprotected.on_columns(np.arange(len(jobs))).tolist() == [unprotected(job) for job in jobs]


@settings(max_examples=200, deadline=None)
@given(reclaim_scenes(), st.data())
def test_preempt_judges_every_running_job_as_its_queue_priority_and_protections_say(
    scene: tuple[ClusterState, str], data: st.DataObject
) -> None:
    """Judged column by column, each running job but the preemptor (waiting, or running and growing) ends where the
    rules put it job by job: another queue's jobs excluded by queue; in the preemptor's queue, excluded when their
    priority is not below it, else as :func:`protections` says. Every list is in job order."""
    c, _ = scene
    choices = ["reclaimer", *(j.name for j in c.running_jobs() if j.queue == "q")]
    preemptor = c.snapshot.job(data.draw(st.sampled_from(choices)))
    found = preempt_candidates(c, preemptor)
    order = {job.name: i for i, job in enumerate(c.snapshot.jobs)}
    for listed in (found.candidates, found.judged):
        assert [order[x.job] for x in listed] == sorted(order[x.job] for x in listed)
    others = [job for job in c.running_jobs() if job is not preemptor]
    assert {e.job for e in found.excluded} | {x.job for x in found.candidates} == {job.name for job in others}
    for job in others:
        candidate, excluded = found.candidate(job.name), found.exclusion(job.name)
        if job.queue != "q":
            assert candidate is None and excluded.rule == "other-queue"
            assert excluded.reason == f"in queue {job.queue}, not q"
            continue
        if job.resolved_priority >= preemptor.resolved_priority:
            assert candidate is None and excluded.rule == "priority"
            continue
        shields = protections(c, job, preemptor, "preempt")
        running_now = c.running_count(job)
        if not shields:
            assert candidate == (job.name, running_now, max(0, running_now - job.gang_minimum), True, ())
        elif blocking := [p for p in shields if not p.surplus_only]:
            assert candidate is None and (excluded.rule, excluded.reason, excluded.until) == (
                blocking[0].rule,
                blocking[0].describe(),
                blocking[0].until,
            )
        elif candidate is not None:
            assert not candidate.whole_job and candidate.surplus == running_now - job.gang_minimum > 0
    assert found.excluded_count("other-queue") == sum(job.queue != "q" for job in others)
    assert found.priorities == {c.snapshot.job(x.job).resolved_priority for x in found.candidates}
    assert [c.snapshot.jobs[i].name for i in found.rows.tolist()] == [x.job for x in found.candidates]


@settings(max_examples=200, deadline=None)
@given(reclaim_scenes(), st.sampled_from(["preempt", "reclaim"]), st.data())
def test_lifting_some_jobs_protections_judges_those_jobs_again_as_the_rule_would(
    scene: tuple[ClusterState, str], action: str, data: st.DataObject
) -> None:
    """The candidates found from a first set with some jobs' own protections lifted (:class:`Lifted`) are those the
    rule finds with them lifted from the start: the same candidates, movable jobs, rows and priorities, in job
    order; the first set's other judgments stand."""
    c, _ = scene
    preemptor = c.snapshot.job("reclaimer")
    chunk = {"gpu": GPU}
    rule = reclaim_candidates if action == "reclaim" else preempt_candidates
    first = rule(c, preemptor, chunk) if action == "reclaim" else rule(c, preemptor)  # type: ignore[call-arg]
    shielded = sorted(
        {e.job for e in first.judged if e.rule in LIFTABLE} | {x.job for x in (*first.candidates, *first.movable)}
    )
    lifted = c.for_state(Lifted)
    lifted.jobs = frozenset(data.draw(st.lists(st.sampled_from(shielded), unique=True)) if shielded else [])
    try:
        fresh = rule(c, preemptor, chunk) if action == "reclaim" else rule(c, preemptor)  # type: ignore[call-arg]
        found = with_lifted(c, first, preemptor, chunk)
    finally:
        lifted.jobs = frozenset()
    assert (found.candidates, found.movable) == (fresh.candidates, fresh.movable)
    assert found.rows.tolist() == fresh.rows.tolist() and found.priorities == fresh.priorities
