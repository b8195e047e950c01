"""The toleration design (docs/rules.md, "Preemption toleration"): preemption toleration by priority class, with the
design's tables."""

from __future__ import annotations

import math

import pytest
from conftest import build

from gpu_preempt.models import FOREVER, Toleration
from gpu_preempt.rules.protection import protections
from gpu_preempt.rules.toleration import tolerated_until
from gpu_preempt.state.cluster import ClusterState

ANNOTATION = "preemption-toleration.scheduling.x-k8s.io/"

# The toleration design (docs/rules.md, "Preemption toleration"), first table: system-critical 10000, high 9000,
# low-non-preempted 8000 (min 10000, forever), low 8000.
CLASSES = [
    {"name": "system-critical", "value": 10000},
    {"name": "high", "value": 9000},
    {
        "name": "low-non-preempted",
        "value": 8000,
        "annotations": {f"{ANNOTATION}minimum-preemptable-priority": "10000", f"{ANNOTATION}toleration-seconds": "-1"},
    },
    {"name": "low", "value": 8000},
    {
        "name": "low-non-preempted-10min",
        "value": 8000,
        "preemption_toleration": {"minimum_preemptable_priority": 10000, "toleration_seconds": 600},
    },
    {
        "name": "low-non-preempted-30min",
        "value": 8000,
        "annotations": {
            f"{ANNOTATION}minimum-preemptable-priority": "10000",
            f"{ANNOTATION}toleration-seconds": "1800",
        },
    },
]


def cluster_with(victim_class: str, started: str, preemptor_class: str) -> tuple[ClusterState, str]:
    snapshot = build(
        priority_classes=CLASSES,
        nodes=[{"name": "n0", "resources": {"gpu": 8}}],
        queues=[{"name": "q"}],
        config={"preemptible_below_priority": 100000},
        jobs=[
            {
                "name": "victim",
                "queue": "q",
                "priority_class": victim_class,
                "task_resources": {"gpu": 8},
                "started_at": started,
                "tasks": [{"node": "n0"}],
            },
            {
                "name": "preemptor",
                "queue": "q",
                "priority_class": preemptor_class,
                "task_resources": {"gpu": 8},
                "tasks": [{}],
            },
        ],
    )
    return ClusterState.of(snapshot), "victim"


def tolerates(victim_class: str, preemptor_class: str, started: str = "2026-01-01T11:00:00Z") -> bool:
    cluster, victim = cluster_with(victim_class, started, preemptor_class)
    snap = cluster.snapshot
    found = protections(cluster, snap.job(victim), snap.job("preemptor"), "preempt")
    return any(p.rule == "toleration" for p in found)


@pytest.mark.parametrize(
    ("victim", "preemptor", "expected"),
    [
        ("low-non-preempted", "system-critical", False),  # 10000 >= minimum: preempts at once
        ("low-non-preempted", "high", True),  # 9000 < 10000 and toleration -1: never
        ("low", "high", False),  # no policy: ordinary priority preemption
        ("low", "system-critical", False),
    ],
)
def test_seed_001_low_non_preempted_table(victim, preemptor, expected):
    assert tolerates(victim, preemptor) is expected


@pytest.mark.parametrize(
    ("started", "expected"),
    [
        ("2026-01-01T11:55:00Z", True),  # 5 min ago: inside the 10-minute window
        ("2026-01-01T11:50:00.001Z", True),
        ("2026-01-01T11:50:00Z", False),  # exactly 10 min ago: window over (strict, like the implementation)
        ("2026-01-01T11:40:00Z", False),  # 20 min ago
    ],
)
def test_seed_001_ten_minute_variant_against_high(started, expected):
    assert tolerates("low-non-preempted-10min", "high", started) is expected


def test_seed_001_ten_minute_variant_never_stops_system_critical():
    assert not tolerates("low-non-preempted-10min", "system-critical", "2026-01-01T11:59:59Z")


def test_seed_001_thirty_minute_variant_from_annotations():
    assert tolerates("low-non-preempted-30min", "high", "2026-01-01T11:40:00Z")
    assert not tolerates("low-non-preempted-30min", "high", "2026-01-01T11:30:00Z")


def test_annotation_and_structured_forms_resolve_alike():
    snapshot = build(priority_classes=CLASSES, jobs=[])
    assert snapshot.priority_class("low-non-preempted").toleration == Toleration(10000, FOREVER)
    assert snapshot.priority_class("low-non-preempted-10min").toleration == Toleration(10000, 600)
    assert snapshot.priority_class("low").toleration is None


def test_minimum_defaults_to_value_plus_one():
    classes = [{"name": "c", "value": 8000, "preemption_toleration": {"toleration_seconds": 60}}]
    snapshot = build(priority_classes=classes, jobs=[])
    assert snapshot.priority_class("c").toleration == Toleration(8001, 60)


def test_until_values():
    policy = Toleration(10000, 600)
    assert tolerated_until(policy, started_at=0, preemptor_priority=9000, now=599) == 600
    assert tolerated_until(policy, started_at=0, preemptor_priority=9999, now=0) == 600
    assert tolerated_until(Toleration(10000, FOREVER), started_at=0, preemptor_priority=1, now=10**9) == math.inf
    assert tolerated_until(Toleration(10000, 0), started_at=0, preemptor_priority=1, now=0) is None  # 0 = none
    assert tolerated_until(policy, started_at=None, preemptor_priority=1, now=0) == math.inf  # not started yet
    assert tolerated_until(None, started_at=0, preemptor_priority=1, now=0) is None
