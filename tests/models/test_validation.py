"""Bad input: every validation rule gives exit code 2 and names the offending field.

Each case starts from the small valid snapshot of ``conftest.base_document``,
breaks one thing, runs ``gpu-preempt validate`` and checks the exit code and the
``path: message`` line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import base_document, build

from gpu_preempt.models import SnapshotError, parse_snapshot

Doc = dict[str, Any]


def job(doc: Doc, name: str = "run") -> Doc:
    return next(j for j in doc["jobs"] if j["name"] == name)


def queue(doc: Doc, name: str) -> Doc:
    return next(q for q in doc["queues"] if q["name"] == name)


CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    # references
    ("unknown queue", lambda d: job(d).update(queue="zz"), "jobs[0].queue", "unknown queue 'zz'"),
    ("unknown parent", lambda d: queue(d, "a").update(parent="nope"), "queues[1].parent", "unknown queue 'nope'"),
    (
        "unknown node",
        lambda d: job(d)["tasks"][1].update(node="n9"),
        "jobs[0].tasks[1].node",
        "unknown node 'n9'",
    ),
    (
        "unknown priority class",
        lambda d: job(d).update(priority_class="gold"),
        "jobs[0].priority_class",
        "unknown priority class 'gold'",
    ),
    # duplicates
    ("duplicate node", lambda d: d["nodes"][1].update(name="n0"), "nodes[1].name", "duplicate name 'n0'"),
    ("duplicate queue", lambda d: queue(d, "b").update(name="a"), "queues[2].name", "duplicate name 'a'"),
    ("duplicate job", lambda d: job(d, "wait").update(name="run"), "jobs[1].name", "duplicate name 'run'"),
    (
        "duplicate class",
        lambda d: d["priority_classes"].append({"name": "train", "value": 1}),
        "priority_classes[1].name",
        "duplicate name 'train'",
    ),
    (
        "duplicate task",
        lambda d: job(d, "wait")["tasks"][0].update(name="run-0"),
        "jobs[1].tasks[0].name",
        "duplicate task name 'run-0'",
    ),
    # tree shape
    (
        "queue cycle",
        lambda d: queue(d, "dept").update(parent="a"),
        "queues[0].parent",
        "cycle: dept -> a -> dept",
    ),
    ("job in a parent queue", lambda d: job(d).update(queue="dept"), "jobs[0].queue", "is not a leaf"),
    # tasks and gangs
    (
        "running task without node",
        lambda d: job(d)["tasks"][0].update(node=None, status="running"),
        "jobs[0].tasks[0].node",
        "a running task needs a node",
    ),
    (
        "releasing task without node",
        lambda d: job(d)["tasks"][0].update(node=None, status="releasing"),
        "jobs[0].tasks[0].node",
        "a releasing task needs a node",
    ),
    (
        "pending task with a node",
        lambda d: job(d, "wait")["tasks"][0].update(node="n0", status="pending"),
        "jobs[1].tasks[0].node",
        "a pending task has no node",
    ),
    (
        "min_available above task count",
        lambda d: job(d).update(min_available=3),
        "jobs[0].min_available",
        "min_available 3 exceeds the 2 tasks",
    ),
    (
        "min_available zero",
        lambda d: job(d).update(min_available=0),
        "jobs[0].min_available",
        "greater than or equal to 1",
    ),
    ("job without tasks", lambda d: job(d).update(tasks=[]), "jobs[0].tasks", "at least 1 item"),
    (
        "node over-committed",
        lambda d: (job(d).update(task_resources={"gpu": 5}), job(d)["tasks"][1].update(node="n0")),
        "nodes[0].resources.gpu",
        "node n0 is over-committed: running and releasing tasks use 10 gpu but the node has 8 (tasks: run-0, run-1)",
    ),
    (
        "node over-committed by releasing tasks",
        lambda d: (
            job(d).update(task_resources={"gpu": 6}),
            job(d)["tasks"][1].update(node="n0", status="releasing"),
        ),
        "nodes[0].resources.gpu",
        "use 12 gpu but the node has 8",
    ),
    (
        "resource the node lacks",
        lambda d: job(d).update(task_resources={"gpu": 1, "nvidia.com/mig-1g.5gb": 1}),
        'nodes[0].resources["nvidia.com/mig-1g.5gb"]',
        "but the node has 0",
    ),
    # amounts
    (
        "fractional GPU on a node",
        lambda d: d["nodes"][0]["resources"].update(gpu=0.5),
        "nodes[0].resources.gpu",
        "a node has whole GPU devices, not 0.5",
    ),
    (
        "more than one GPU not whole",
        lambda d: job(d).update(task_resources={"gpu": "1500m"}),
        "jobs[0].task_resources.gpu",
        "a share of a GPU is below one GPU; more must be whole GPUs (got 1.5)",
    ),
    (
        "a running share without its device",
        lambda d: job(d).update(task_resources={"gpu": "500m"}),
        "jobs[0].tasks[0].devices",
        "a running share of a GPU names its device(s)",
    ),
    (
        "a share by fraction and by memory",
        lambda d: job(d, "wait").update(task_resources={"gpu": "500m", "gpu_memory": "10Gi"}),
        "jobs[1].task_resources.gpu_memory",
        "a share is by fraction (gpu) or by memory, never both",
    ),
    (
        "gpu_devices without a share",
        lambda d: job(d, "wait").update(gpu_devices=2),
        "jobs[1].gpu_devices",
        "only a share of a GPU (below one, or gpu_memory) is taken on devices",
    ),
    (
        "gpu_devices with a task of whole GPUs",
        lambda d: job(d, "wait").update(
            task_resources={"gpu": "500m"}, gpu_devices=2, tasks=[{}, {"resources": {"gpu": 1}}]
        ),
        "jobs[1].tasks[1].resources",
        "a job on several devices (gpu_devices) asks for a share in every task",
    ),
    (
        "devices named by a whole-GPU task",
        lambda d: job(d)["tasks"][0].update(devices=[0]),
        "jobs[0].tasks[0].devices",
        "a whole-GPU task holds any free devices: it names none",
    ),
    (
        "fewer devices than gpu_devices",
        lambda d: job(d).update(task_resources={"gpu": "500m"}, gpu_devices=2, tasks=[{"node": "n0", "devices": [1]}]),
        "jobs[0].tasks[0].devices",
        "1 device(s) named; the job takes 2",
    ),
    (
        "a device the node does not have",
        lambda d: job(d).update(task_resources={"gpu": "500m"}, tasks=[{"node": "n0", "devices": [8]}]),
        "jobs[0].tasks[0].devices",
        "node n0 has devices 0-7",
    ),
    (
        "a memory share on a node without gpu_memory",
        lambda d: job(d).update(task_resources={"gpu_memory": "20Gi"}, tasks=[{"node": "n0", "devices": [0]}]),
        "jobs[0].tasks[0].node",
        "node n0 does not say its gpu_memory",
    ),
    (
        "shares over one device",
        lambda d: job(d).update(
            task_resources={"gpu": "600m"}, tasks=[{"node": "n0", "devices": [2]}, {"node": "n0", "devices": [2]}]
        ),
        "nodes[0]",
        "device 2 of node n0 holds 1.2 GPUs of shares (tasks run-0, run-1)",
    ),
    (
        "whole GPUs and shared devices over a node",
        lambda d: (
            d["jobs"].append(
                {
                    "name": "s",
                    "queue": "a",
                    "task_resources": {"gpu": "100m"},
                    "tasks": [{"node": "n0", "devices": [7]}],
                }
            )
            or job(d).update(tasks=[{"node": "n0"}, {"node": "n0"}])
        ),
        "nodes[0]",
        "node n0: 8 whole GPU(s) and 1 device(s) with shares exceed its 8 devices",
    ),
    (
        "negative amount",
        lambda d: d["nodes"][1]["resources"].update(cpu=-4),
        "nodes[1].resources.cpu",
        "negative amount",
    ),
    (
        "unlimited node capacity",
        lambda d: d["nodes"][1]["resources"].update(cpu="unlimited"),
        "nodes[1].resources.cpu",
        "'unlimited' is not allowed here",
    ),
    (
        "malformed quantity",
        lambda d: job(d).update(task_resources={"cpu": "2 cores"}),
        "jobs[0].task_resources.cpu",
        "not a quantity",
    ),
    (
        "deserved above limit",
        lambda d: queue(d, "a").update(limit={"gpu": 4}),
        "queues[1].deserved.gpu",
        "deserved 8 exceeds this queue's limit 4",
    ),
    (
        "negative weight",
        lambda d: queue(d, "a").update(over_quota_weight=-1),
        "queues[1].over_quota_weight",
        "a weight must be from 0 to 1,000,000",
    ),
    # unknown fields
    ("unknown top-level field", lambda d: d.update(nodez=[]), "nodez", "unknown field"),
    ("unknown node field", lambda d: d["nodes"][0].update(gpus=8), "nodes[0].gpus", "unknown field"),
    ("unknown job field", lambda d: job(d).update(prio=3), "jobs[0].prio", "unknown field"),
    ("unknown task field", lambda d: job(d)["tasks"][0].update(nod="n0"), "jobs[0].tasks[0].nod", "unknown field"),
    (
        "unknown config field",
        lambda d: d.update(config={"preempt_minruntime": 5}),
        "config.preempt_minruntime",
        "unknown field",
    ),
    (
        "unknown solver field",
        lambda d: d.update(config={"solver": {"timeout": 5}}),
        "config.solver.timeout",
        "unknown field",
    ),
    # priorities
    (
        "priority disagrees with class",
        lambda d: job(d).update(priority=60),
        "jobs[0].priority",
        "priority 60 disagrees with priority class 'train' (value 50)",
    ),
    ("priority not a number", lambda d: job(d).update(priority="high"), "jobs[0].priority", "valid integer"),
    (
        "unknown preemption policy",
        lambda d: d["priority_classes"][0].update(preemption_policy="Sometimes"),
        "priority_classes[0].preemption_policy",
        "'PreemptLowerPriority' or 'Never'",
    ),
    (
        "weight map with a negative weight",
        lambda d: queue(d, "a").update(over_quota_weight={"gpu": -2}),
        "queues[1].over_quota_weight.gpu",
        "a weight must be from 0 to 1,000,000",
    ),
    (
        "unknown reclaim line",
        lambda d: d.update(config={"reclaim_guarantee": "soft"}),
        "config.reclaim_guarantee",
        "'last_chunk' or 'strict'",
    ),
    ("quota_miss word", lambda d: d.update(config={"quota_miss": "always"}), "config.quota_miss", "best_effort"),
    (
        "bad toleration annotation",
        lambda d: d["priority_classes"][0].update(
            annotations={"preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority": "lots"}
        ),
        'priority_classes[0].annotations["preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority"]',
        "'lots' is not a whole number",
    ),
    (
        "toleration forms disagree",
        lambda d: d["priority_classes"][0].update(
            preemption_toleration={"toleration_seconds": 60},
            annotations={"preemption-toleration.scheduling.x-k8s.io/toleration-seconds": "30"},
        ),
        "priority_classes[0].annotations",
        "disagree",
    ),
    (
        "toleration negative other than -1",
        lambda d: d["priority_classes"][0].update(preemption_toleration={"toleration_seconds": -5}),
        "priority_classes[0].preemption_toleration.toleration_seconds",
        "use -1 for forever",
    ),
    # config
    ("unknown criterion", lambda d: d.update(config={"objective": ["gpus"]}), "config.objective[0]", "should be"),
    (
        "criterion twice",
        lambda d: d.update(config={"objective": ["jobs", "jobs"]}),
        "config.objective",
        "listed twice: jobs",
    ),
    (
        "bad resolve method",
        lambda d: d.update(config={"min_runtime_resolve": "leaf"}),
        "config.min_runtime_resolve",
        "'lca' or 'queue'",
    ),
    (
        "saturation multiplier below 1",
        lambda d: d.update(config={"reclaimer_saturation_multiplier": 0.5}),
        "config.reclaimer_saturation_multiplier",
        "greater than or equal to 1",
    ),
    (
        "zero time limit",
        lambda d: d.update(config={"solver": {"time_limit": 0}}),
        "config.solver.time_limit",
        "must be positive",
    ),
    (
        "bad duration",
        lambda d: d.update(config={"preempt_min_runtime": "ten minutes"}),
        "config.preempt_min_runtime",
        "not a duration",
    ),
    (
        "negative min-runtime",
        lambda d: queue(d, "a").update(reclaim_min_runtime="-1"),
        "queues[1].reclaim_min_runtime",
        "forever) is not allowed",
    ),
    # times and required fields
    ("time without zone", lambda d: d.update(now="2026-01-01T12:00:00"), "now", "no time zone"),
    ("bad started_at", lambda d: job(d).update(started_at="yesterday"), "jobs[0].started_at", "not an RFC 3339 time"),
    (
        "bad checkpointed_at",
        lambda d: job(d).update(checkpointed_at="2026-01-01T12:00:00"),
        "jobs[0].checkpointed_at",
        "no time zone",
    ),
    (
        "unknown criterion",
        lambda d: d.setdefault("config", {}).update(objective=["moves", "hops"]),
        "config.objective[1]",
        "'moves'",
    ),
    ("missing now", lambda d: d.pop("now"), "now", "required field is missing"),
    ("missing queues", lambda d: d.pop("queues"), "queues", "required field is missing"),
    ("name not a string", lambda d: d["nodes"][0].update(name=7), "nodes[0].name", "valid string"),
    # quota enforcement (docs/rules.md, "Quota enforcement")
    (
        "quota_preemption_enabled not a bool",
        lambda d: d.update(config={"quota_preemption_enabled": "yes"}),
        "config.quota_preemption_enabled",
        "valid boolean",
    ),
    ("quota_miss not a number", lambda d: d.update(config={"quota_miss": "10%"}), "config.quota_miss", "valid number"),
    (
        "quota_miss negative",
        lambda d: d.update(config={"quota_miss": -0.1}),
        "config.quota_miss",
        "greater than or equal to 0",
    ),
    ("quota_miss of 1", lambda d: d.update(config={"quota_miss": 1}), "config.quota_miss", "less than 1"),
    ("quota_miss above 1", lambda d: d.update(config={"quota_miss": 5}), "config.quota_miss", "less than 1"),
    (
        "limit_changed_at not a time",
        lambda d: queue(d, "a").update(limit_changed_at="last week"),
        "queues[1].limit_changed_at",
        "not an RFC 3339 time",
    ),
    (
        "limit_changed_at without zone",
        lambda d: queue(d, "a").update(limit_changed_at="2026-01-01T11:00:00"),
        "queues[1].limit_changed_at",
        "no time zone",
    ),
    (
        "limit_changed_at after now",
        lambda d: queue(d, "a").update(limit_changed_at="2026-01-01T13:00:00Z"),
        "queues[1].limit_changed_at",
        "is after now",
    ),
    (
        "negative quota_preemption_delay",
        lambda d: queue(d, "a").update(quota_preemption_delay=-60),
        "queues[1].quota_preemption_delay",
        "negative duration",
    ),
    (
        "quota_preemption_delay forever",
        lambda d: queue(d, "a").update(quota_preemption_delay="-1"),
        "queues[1].quota_preemption_delay",
        "forever) is not allowed",
    ),
    (
        "quota_preemption_delay not a duration",
        lambda d: queue(d, "a").update(quota_preemption_delay="two hours"),
        "queues[1].quota_preemption_delay",
        "not a duration",
    ),
    # requeue with backoff (docs/rules.md, "Requeue with backoff")
    (
        "requeue timestamp unknown",
        lambda d: d.update(config={"requeue": {"timestamp": "admission"}}),
        "config.requeue.timestamp",
        "'eviction' or 'creation'",
    ),
    (
        "requeue backoff_base negative",
        lambda d: d.update(config={"requeue": {"backoff_base": -60}}),
        "config.requeue.backoff_base",
        "negative",
    ),
    (
        "requeue backoff_max below base",
        lambda d: d.update(config={"requeue": {"backoff_base": "10m", "backoff_max": "5m"}}),
        "config.requeue.backoff_max",
        "below backoff_base",
    ),
    (
        "requeue backoff_limit_count negative",
        lambda d: d.update(config={"requeue": {"backoff_limit_count": -1}}),
        "config.requeue.backoff_limit_count",
        "greater than or equal to 0",
    ),
    (
        "requeue unknown key",
        lambda d: d.update(config={"requeue": {"backoff_limit": 3}}),
        "config.requeue.backoff_limit",
        "unknown field",
    ),
    (
        "job requeue count negative",
        lambda d: job(d).update(requeue={"count": -2}),
        "jobs[0].requeue.count",
        "greater than or equal to 0",
    ),
    (
        "job requeue_at not a time",
        lambda d: job(d).update(requeue={"count": 1, "requeue_at": "soon"}),
        "jobs[0].requeue.requeue_at",
        "not an RFC 3339 time",
    ),
    (
        "job requeue active not a bool",
        lambda d: job(d).update(requeue={"active": "no"}),
        "jobs[0].requeue.active",
        "valid boolean",
    ),
    # nominations (docs/rules.md, "Nominations")
    (
        "nominated task without a node",
        lambda d: job(d, "wait")["tasks"][0].update(status="nominated"),
        "jobs[1].tasks[0].node",
        "a nominated task needs a node",
    ),
    (
        "nominations over-promise a node",
        lambda d: job(d, "wait").update(task_resources={"gpu": 6}, tasks=[{"status": "nominated", "node": "n0"}]),
        "nodes[0].resources.gpu",
        "node n0 is over-promised: running and nominated tasks would use 10 gpu",
    ),
    # placement (docs/snapshot-format.md, "Placement")
    (
        "unknown affinity operator",
        lambda d: job(d, "wait").update(placement={"node_affinity": [[{"key": "a", "operator": "Near"}]]}),
        "jobs[1].placement.node_affinity[0][0].operator",
        "'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt' or 'Lt'",
    ),
    (
        "In without values",
        lambda d: job(d, "wait").update(placement={"node_affinity": [[{"key": "a", "operator": "In"}]]}),
        "jobs[1].placement.node_affinity[0][0].values",
        "In needs at least one value",
    ),
    (
        "Exists with values",
        lambda d: job(d, "wait").update(
            placement={"node_affinity": [[{"key": "a", "operator": "Exists", "values": ["x"]}]]}
        ),
        "jobs[1].placement.node_affinity[0][0].values",
        "Exists takes no values",
    ),
    (
        "Gt on a non-integer",
        lambda d: job(d, "wait").update(
            placement={"node_affinity": [[{"key": "a", "operator": "Gt", "values": ["4.5"]}]]}
        ),
        "jobs[1].placement.node_affinity[0][0].values[0]",
        "Gt needs an integer, not '4.5'",
    ),
    (
        "unknown taint effect",
        lambda d: d["nodes"][0].update(taints=[{"key": "a", "effect": "Sometimes"}]),
        "nodes[0].taints[0].effect",
        "'NoSchedule', 'NoExecute' or 'PreferNoSchedule'",
    ),
    (
        "unknown toleration effect",
        lambda d: job(d, "wait").update(placement={"tolerations": [{"key": "a", "effect": "Always"}]}),
        "jobs[1].placement.tolerations[0].effect",
        "'NoSchedule', 'NoExecute', 'PreferNoSchedule' or ''",
    ),
    (
        "Exists toleration with a value",
        lambda d: job(d, "wait").update(placement={"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]}),
        "jobs[1].placement.tolerations[0].value",
        "an Exists toleration has no value",
    ),
    (
        "topology level not declared",
        lambda d: job(d, "wait").update(placement={"topology": {"required": "rack"}}),
        "jobs[1].placement.topology.required",
        "unknown topology level 'rack' (config.topology: none)",
    ),
    (
        "preferred coarser than required",
        lambda d: (
            d.update(config={"topology": ["zone", "rack"]}),
            [n.update(labels={"zone": "z1", "rack": "r1"}) for n in d["nodes"]],
            job(d, "wait").update(placement={"topology": {"required": "rack", "preferred": "zone"}}),
        ),
        "jobs[1].placement.topology.preferred",
        "'zone' is coarser than the required level 'rack'",
    ),
    (
        "required level no node carries",
        lambda d: (
            d.update(config={"topology": ["rack"]}),
            job(d, "wait").update(placement={"topology": {"required": "rack"}}),
        ),
        "jobs[1].placement.topology.required",
        "no node carries the label 'rack'",
    ),
    (
        "topology level twice",
        lambda d: d.update(config={"topology": ["rack", "rack"]}),
        "config.topology",
        "level listed twice: rack",
    ),
    (
        "topology without a level",
        lambda d: job(d, "wait").update(placement={"topology": {}}),
        "jobs[1].placement.topology",
        "name a required level, a preferred level, or both",
    ),
    # peer semantics (docs/snapshot-format.md, "Peer semantics")
    ("unknown policy", lambda d: d.update(config={"policy": "volcano"}), "config.policy", "'kai' or 'kueue'"),
    (
        "a kueue field under policy kai",
        lambda d: queue(d, "a").update(nominal={"gpu": 8}),
        "queues[1].nominal",
        "a kueue field: set config.policy: kueue",
    ),
    (
        "fair sharing under policy kai",
        lambda d: d.update(config={"fair_sharing": True}),
        "config.fair_sharing",
        "a kueue field",
    ),
    ("a kai field under policy kueue", lambda d: kueue(d), "queues[0].deserved", "a kai field: under policy kueue"),
    (
        "a lending limit above nominal",
        lambda d: kueue(d, drop=True) or queue(d, "a").update(nominal={"gpu": 4}, lending_limit={"gpu": 6}),
        "queues[1].lending_limit.gpu",
        "lending_limit 6 exceeds the nominal quota 4",
    ),
    (
        "preemption on a cohort",
        lambda d: kueue(d, drop=True) or queue(d, "dept").update(preemption={"within_cluster_queue": "LowerPriority"}),
        "queues[0].preemption",
        "a Cohort (a queue with children) has no preemption policy",
    ),
    (
        "an unknown preemption policy",
        lambda d: kueue(d, drop=True) or queue(d, "a").update(preemption={"reclaim_within_cohort": "Sometimes"}),
        "queues[1].preemption.reclaim_within_cohort",
        "'Never', 'LowerPriority' or 'Any'",
    ),
    (
        "an unlimited nominal quota",
        lambda d: kueue(d, drop=True) or queue(d, "a").update(nominal={"gpu": "unlimited"}),
        "queues[1].nominal.gpu",
        "a nominal quota is a finite amount",
    ),
    (
        "strategies without fair sharing",
        lambda d: kueue(d, drop=True) or d["config"].update(fair_sharing_strategies=["LessThanInitialShare"]),
        "config.fair_sharing_strategies",
        "the strategies of fair sharing, which is off",
    ),
]


def kueue(doc: Doc, *, drop: bool = False) -> None:
    """``doc`` under ``policy: kueue`` (``drop``: its queues' ``deserved`` gone)."""
    doc["config"] = {"policy": "kueue"}
    for q in doc["queues"] if drop else ():
        q.pop("deserved", None)


@pytest.mark.parametrize(("mutate", "path", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_snapshot_exits_2_naming_the_field(cli, mutate, path, message):
    document = base_document()
    mutate(document)
    result = cli("validate", document=document)
    assert result.exit_code == 2, result.output
    assert f"{path}: " in result.stderr, result.stderr
    line = next(x for x in result.stderr.splitlines() if f"{path}: " in x)
    assert message in line
    assert "Traceback" not in result.output


LEDGER = [
    c
    for c in CASES
    if c[0]
    in (
        "a device the node does not have",
        "a memory share on a node without gpu_memory",
        "shares over one device",
        "whole GPUs and shared devices over a node",
    )
]


@pytest.mark.parametrize(("mutate", "path", "message"), [c[1:] for c in LEDGER], ids=[c[0] for c in LEDGER])
def test_the_device_ledger_read_on_task_columns_names_the_same_fields(cli, monkeypatch, mutate, path, message):
    """A large snapshot's device ledger is read on its task columns, its jobs not made: the same field, the same
    words."""
    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    test_bad_snapshot_exits_2_naming_the_field(cli, mutate, path, message)


@pytest.mark.parametrize("columns", [True, False])
def test_a_share_past_the_first_job_and_task_is_named_by_both_ledgers(cli, monkeypatch, columns):
    """On the columns as on the models, a task is named by its job's position and its index in that job."""
    if columns:
        monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    document = base_document()
    job(document, "wait").update(task_resources={"gpu": "500m"}, tasks=[{}, {"node": "n1", "devices": [9]}])
    result = cli("validate", document=document)
    assert result.exit_code == 2
    assert "jobs[1].tasks[1].devices: node n1 has devices 0-7" in result.stderr, result.stderr


def test_every_error_is_listed_at_once(cli):
    document = base_document()
    document["nodes"][0]["gpus"] = 8
    document["jobs"][0]["task_resources"] = {"gpu": 1.5}
    document["queues"][1]["deserved"] = {"gpu": "lots"}
    result = cli("validate", document=document)
    assert result.exit_code == 2
    assert "3 problem(s)" in result.stderr
    for path in ("nodes[0].gpus", "jobs[0].task_resources.gpu", "queues[1].deserved.gpu"):
        assert f"  {path}: " in result.stderr


def test_json_errors_for_programs(cli):
    document = base_document()
    document["jobs"][0]["queue"] = "zz"
    result = cli("validate", "--json", document=document)
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False
    assert report["errors"] == [{"path": "jobs[0].queue", "message": "unknown queue 'zz'"}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("now: [1,\n", "invalid YAML at line"),
        ("- just\n- a list\n", "a snapshot is a mapping"),
        ("", "the file is empty"),
        ("  \n# only a comment\n", "the file is empty"),
    ],
)
def test_unreadable_documents(cli, text, message):
    result = cli("validate", text=text)
    assert result.exit_code == 2
    assert message in result.stderr


def test_missing_file(cli, tmp_path):
    result = cli("validate", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_invalid_json_file(cli, tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"now": 0,', encoding="utf-8")
    result = cli("validate", str(path))
    assert result.exit_code == 2
    assert "invalid JSON at line 1" in result.stderr


def test_json_snapshots_load(tmp_path, cli):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(base_document()), encoding="utf-8")
    assert cli("validate", str(path)).exit_code == 0


def test_labels_and_annotations_are_free():
    document = base_document()
    document["nodes"][0]["labels"] = {"zone": "a", "anything": {"nested": [1, 2]}}
    document["jobs"][0]["annotations"] = {"owner": "me"}
    document["queues"][0]["labels"] = {"team": "x"}
    assert build(document).node("n0").labels["zone"] == "a"


def test_library_error_lists_every_problem():
    with pytest.raises(SnapshotError) as caught:
        parse_snapshot("now: 0\nnodes: [{name: n0, resources: {gpu: 1}, x: 1}]\nqueues: [{name: q, y: 2}]\n")
    assert [str(e) for e in caught.value.errors] == ["nodes[0].x: unknown field", "queues[0].y: unknown field"]


def test_quota_enforcement_fields_are_read():
    document = base_document()
    document["config"] = {"quota_preemption_enabled": True, "quota_miss": 0.1}
    queue(document, "a").update(limit_changed_at="2026-01-01T11:00:00Z", quota_preemption_delay="1h30m")
    snapshot = build(document)
    assert snapshot.config.quota_preemption_enabled is True
    assert snapshot.config.quota_miss == 0.1
    assert snapshot.queue("a").quota_preemption_delay == 5400.0
    assert snapshot.queue("a").limit_changed_at == snapshot.now - 3600
    assert snapshot.queue("b").quota_preemption_delay == 0.0
    assert snapshot.queue("b").limit_changed_at is None
    assert build().config.quota_preemption_enabled is False
