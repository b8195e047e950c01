"""What a named decision entails (gpu_preempt.rules.consequences): read off the decision once it is named, the same
facts the job solver writes into it."""

from __future__ import annotations

import dataclasses

from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.models import parse_snapshot
from gpu_preempt.models.decision import Decision
from gpu_preempt.rules.consequences import below_line, consequences
from gpu_preempt.state.cluster import ClusterState

GANG = """
now: "2026-01-01T12:00:00Z"
config: {reclaim_guarantee: %s}
nodes: [{name: n0, resources: {gpu: 8}}]
queues: [{name: QA, deserved: {gpu: 4}}, {name: QB, deserved: {gpu: 4}}]
jobs:
  - {name: big, queue: QB, task_resources: {gpu: 8}, tasks: [{node: n0}]}
  - {name: a, queue: QA, task_resources: {gpu: 2}, tasks: [{}]}
"""
"""QB's only chunk is an 8-GPU gang above its line of 4: under ``last_chunk`` it may go, taking QB to 0."""


def test_a_reclaim_that_takes_a_queue_below_its_line_says_which_rule_allowed_it():
    cluster = ClusterState.of(parse_snapshot(GANG % "last_chunk"))
    decision = attempt(cluster, cluster.snapshot.job("a"), "reclaim")
    (note,) = decision.below_line
    assert (note.queue, note.resource, note.line, note.after, note.rule) == ("QB", "gpu", 4000, 0, "last_chunk")
    assert note.above == "gpu"


def test_the_consequences_are_those_the_decision_carries_and_apply_writes_them():
    cluster = ClusterState.of(parse_snapshot(GANG % "last_chunk"))
    job = cluster.snapshot.job("a")
    decision = attempt(cluster, job, "reclaim")
    bare = dataclasses.replace(decision, overrides=[], requeue={}, below_line=[])
    found = consequences(cluster, job, bare, {"gpu": 2000})
    assert found.below_line == decision.below_line and found.requeue == decision.requeue
    assert set(found.requeue) == {"big"} and found.requeue["big"].count == 1
    assert found.apply(bare) is bare and bare == decision


def test_a_decision_that_places_nothing_entails_nothing():
    cluster = ClusterState.of(parse_snapshot(GANG % "last_chunk"))
    job = cluster.snapshot.job("a")
    nothing = Decision("a", "reclaim", "infeasible")
    found = consequences(cluster, job, nothing, {"gpu": 2000})
    assert (found.overrides, found.requeue, found.below_line) == ([], {}, [])


def test_under_the_strict_line_no_queue_is_noted_below_it():
    cluster = ClusterState.of(parse_snapshot(GANG % "strict"))
    job = cluster.snapshot.job("a")
    taken = attempt(ClusterState.of(parse_snapshot(GANG % "last_chunk")), job, "reclaim")
    assert below_line(cluster, job, taken, {"gpu": 2000}) == []
