"""`gpu-preempt import`: Kubernetes objects as kubectl prints them become a valid snapshot, and decide as expected.

The clusters of fixtures/kube/ (a KAI cluster with a queue tree and pod groups, a Kueue cluster with a
cohort, a plain cluster with priority classes and toleration annotations) are imported, validated, and decided;
their expected victims are worked out in each test's docstring.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES
from typer.testing import CliRunner

from gpu_preempt import decide, run_cycle, verify
from gpu_preempt.cli import app
from gpu_preempt.kube.importer import import_objects
from gpu_preempt.kube.plan import evictions
from gpu_preempt.kube.read import parse_objects, read_objects
from gpu_preempt.models import SnapshotError, load_snapshot, snapshot_from_data

KUBE = FIXTURES / "kube"
NOW = 1795435200.0  # 2026-11-23T12:00:00Z
RUN = CliRunner()


def imported(name: str, **options: Any) -> tuple[dict[str, Any], Any]:
    objects = read_objects([str(KUBE / name)], io.StringIO())
    return import_objects(objects, now=NOW, **options)


def victims(document: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    result = run_cycle(snapshot_from_data(document))
    return [(d.job, d.action, [v.job for v in d.victims]) for d in result.decisions if d.victims]


def test_a_kai_cluster_reclaims_the_job_that_loses_the_fewest_tasks():
    """Queue research (16 GPUs) has children nlp (quota 4) and vision (quota 12). nlp runs bert-a (1 pod x 8 GPUs)
    and bert-b (2 pods x 4 GPUs), 16 GPUs, all of the cluster. vision's resnet (minMember 2, 2 pods x 4 GPUs) waits:
    reclaim takes one job from nlp, and bert-a is one task where bert-b is two."""
    document, report = imported("kai-cluster.json")
    snapshot = snapshot_from_data(document)
    assert {q.name: q.parent for q in snapshot.queues} == {"research": None, "nlp": "research", "vision": "research"}
    assert snapshot.queue("vision").deserved["gpu"] == 12_000
    assert snapshot.queue("vision").over_quota_weight["gpu"] == 2
    bert_b = snapshot.job("nlp/bert-b")
    assert [t.name for t in bert_b.tasks] == ["nlp/bert-b-0", "nlp/bert-b-1"] and bert_b.min_available is None
    assert bert_b.started_at == 1795433400.0  # kai.scheduler/last-start-timestamp
    assert snapshot.job("vision/resnet").min_available is None  # minMember 2 of 2 tasks: a whole gang
    assert victims(document) == [("vision/resnet", "reclaim", ["nlp/bert-a"])]
    # the exporter's load and the finished pod
    node = snapshot.node("gpu-node-0")
    assert node.resources["cpu"] == 95_500 - 500 and node.gpu_model == "NVIDIA-H100-80GB-HBM3"
    assert report.ignored["Pod"] == ["nlp/bert-eval-0 (Succeeded)"] and report.ignored["Namespace"] == ["nlp"]


def test_a_kueue_cluster_reclaims_for_the_cohort_member_below_its_quota():
    """ClusterQueues team-a and team-b (8 GPUs nominal each, borrowing up to 8, cohort ml), decided by Kueue's rules.
    team-a runs a1 and a2 (2 pods x 4 GPUs each, borrowing team-b's 8); team-b's b1 (2 x 4 GPUs, not admitted, so
    no pods yet) waits, and its quota has none left. team-b reclaims any of team-a's workloads (Any); one frees
    enough, the one started last (a2): it loses the least work."""
    document, report = imported("kueue-cluster.json")
    snapshot = snapshot_from_data(document)
    assert snapshot.config.policy == "kueue"
    assert {q.name: q.parent for q in snapshot.queues} == {"ml": None, "team-a": "ml", "team-b": "ml"}
    team_a = snapshot.queue("team-a")
    assert team_a.nominal["gpu"] == 8000 and team_a.borrowing_limit == {"gpu": 8000} and team_a.lending_limit is None
    assert team_a.preemption is not None and team_a.preemption.reclaim_within_cohort == "Any"
    b1 = snapshot.job("team-b/job-b1-5b2c1")
    assert len(b1.tasks) == 2 and all(t.status == "pending" for t in b1.tasks)
    assert b1.requeue is not None and b1.requeue.count == 2
    assert [t.node for t in snapshot.job("team-a/job-a1-5b2c1").tasks] == ["gpu-node-0", "gpu-node-0"]
    assert victims(document) == [("team-b/job-b1-5b2c1", "preempt", ["team-a/job-a2-5b2c1"])]
    assert any("Kueue's classical preemption" in n for n in report.notes)


def test_a_workload_of_zero_pods_is_left_out_and_said_so(tmp_path: Path):
    """A pod set's count may be 0 (the API's minimum): a workload of no members and no pods has nothing to place."""
    dump = json.loads((KUBE / "kueue-cluster.json").read_text())
    (workload,) = [o for o in dump["items"] if o["kind"] == "Workload" and o["metadata"]["name"] == "job-b1-5b2c1"]
    workload["spec"]["podSets"][0]["count"] = 0
    (tmp_path / "dump.json").write_text(json.dumps(dump))
    document, report = import_objects(read_objects([str(tmp_path / "dump.json")], io.StringIO()), now=NOW)
    assert "team-b/job-b1-5b2c1" not in {j["name"] for j in document["jobs"]}
    assert report.ignored["Workload"] == ["team-b/job-b1-5b2c1 (no pods and 0 members)"]
    snapshot_from_data(document)


def test_a_kueue_cluster_with_lending_and_borrowing_limits():
    """Cohort ml: team-a (8 GPUs nominal, lends 4) runs a1 (4 GPUs); team-b (4 nominal, borrows up to 8) runs b1 and
    b2 (4 GPUs each, class spot, 50); team-c (4, fair-sharing weight 2) runs c1 (4). The cohort pools 12 GPUs
    (team-a keeps 4 to itself) and all are used. team-a's a2 (4 GPUs, 100) waits: it fits team-a's own quota, so
    team-b's borrowing workloads may be reclaimed (hierarchically, whatever the borrowing rule); team-c is within its
    quota. One of team-b's goes, the one started last (b2); Kueue's own search (greedy) takes the most recently
    admitted, the same."""
    document, _ = imported("kueue-borrowing.json")
    snapshot = snapshot_from_data(document)
    a, b = snapshot.queue("team-a"), snapshot.queue("team-b")
    assert a.lending_limit == {"gpu": 4000} and a.borrowing_limit is None
    assert b.borrowing_limit == {"gpu": 8000} and b.preemption is not None
    assert b.preemption.borrow_within_cohort.max_priority_threshold == 50
    assert snapshot.queue("team-c").fair_sharing_weight == 2 and b.fair_sharing_weight == 1
    assert victims(document) == [("team-a/job-a2-7c3d1", "preempt", ["team-b/job-b2-7c3d1"])]
    greedy = decide(snapshot, "team-a/job-a2-7c3d1", "preempt", solver="greedy")
    assert [v.job for v in greedy.victims] == ["team-b/job-b2-7c3d1"]


def test_a_plain_cluster_preempts_around_a_tolerating_job():
    """One schedulable node: train-0 (class batch-tolerant, 4000, tolerates preemptors below 10000 for an hour,
    scheduled 10 minutes ago) and train-1 (batch, 5000). infer-0 (urgent, 9000) preempts train-1, not the
    lower-priority train-0, whose toleration holds. The cordoned node keeps its releasing pod."""
    document, _ = imported("plain-cluster.json")
    snapshot = snapshot_from_data(document)
    assert snapshot.node("gpu-node-1").schedulable is False
    assert snapshot.job("ml/old-eval").tasks[0].status == "releasing"
    assert snapshot.job("ml/train-1").task_resources["cpu"] == 16_000  # its init container asks for 16 CPUs
    assert snapshot.priority_class("forever").toleration is not None
    assert victims(document) == [("ml/infer-0", "preempt", ["ml/train-1"])]


def test_import_then_plan_round_trip_as_evictions(tmp_path: Path):
    """`import -o` writes the snapshot; `plan --format eviction-json` turns the decision into Eviction objects
    that name the pod, its namespace and uid, and the reason."""
    snapshot = tmp_path / "kai.yaml"
    result = RUN.invoke(
        app, ["import", str(KUBE / "kai-cluster.json"), "--now", "2026-11-23T12:00:00Z", "-o", str(snapshot)]
    )
    assert result.exit_code == 0, result.output
    assert "guessed:" in result.stderr and "ignored 1 Namespace: nlp" in result.stderr
    planned = RUN.invoke(app, ["plan", str(snapshot), "--job", "vision/resnet", "--format", "eviction-json"])
    assert planned.exit_code == 0, planned.output
    evictions = json.loads(planned.stdout)
    assert evictions["kind"] == "List"
    [eviction] = evictions["items"]
    assert eviction["apiVersion"] == "policy/v1" and eviction["kind"] == "Eviction"
    assert eviction["metadata"]["name"] == "bert-a-0" and eviction["metadata"]["namespace"] == "nlp"
    pods = {o["metadata"]["name"]: o for o in json.loads((KUBE / "kai-cluster.json").read_text())["items"]}
    assert eviction["deleteOptions"]["preconditions"]["uid"] == pods["bert-a-0"]["metadata"]["uid"]
    assert "reclaim for vision/resnet" in eviction["metadata"]["annotations"]["gpu-preempt/reason"]
    script = RUN.invoke(app, ["plan", str(snapshot), "--cycle", "--format", "kubectl"])
    assert "kubectl create --raw /api/v1/namespaces/nlp/pods/bert-a-0/eviction -f -" in script.stdout
    assert script.stdout.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in script.stdout


def test_stdin_and_several_files_are_read_in_order(tmp_path: Path):
    items = json.loads((KUBE / "plain-cluster.json").read_text())["items"]
    nodes = {"kind": "NodeList", "apiVersion": "v1", "items": [i for i in items if i["kind"] == "Node"]}
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    rest = {"kind": "List", "apiVersion": "v1", "items": [i for i in items if i["kind"] != "Node"]}
    result = RUN.invoke(
        app, ["import", str(tmp_path / "nodes.json"), "-", "--now", "2026-11-23T12:00:00Z"], input=json.dumps(rest)
    )
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(result.stdout)
    assert [n["name"] for n in document["nodes"]] == ["gpu-node-0", "gpu-node-1"]
    assert len(document["jobs"]) == 4


def test_strict_turns_guesses_into_errors(tmp_path: Path):
    out = tmp_path / "s.yaml"
    result = RUN.invoke(app, ["import", str(KUBE / "plain-cluster.json"), "--strict", "-o", str(out)])
    assert result.exit_code == 2
    assert "--strict" in result.stderr and "guessed: now" in result.stderr
    assert not out.exists()


def obj(kind: str, name: str, namespace: str | None = "ml", version: str = "v1", **body: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": version, "kind": kind, "metadata": metadata, **body}


NODE = obj("Node", "n0", None, status={"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi"}})


def gpu_pod(name: str, gpus: str = "4", **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return obj("Pod", name, spec={"containers": [container], **spec}, status={"phase": "Pending"})


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ("{not json", "", "dump.json: invalid JSON at line 1 column 2"),
        ('{"items": []}', "dump.json", "not a Kubernetes object or List"),
        ("", "dump.json", "empty"),
        ('{"kind": "List", "items": [{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a", "name": "b"}}]}',
         "", "dump.json: duplicate key 'name' (line 1 column 90)"),
        ("[" * 5000 + "]" * 5000, "", "dump.json: nested too deeply"),
    ],
)  # fmt: skip
def test_unreadable_input_names_the_file_and_place(text: str, path: str, words: str):
    with pytest.raises(SnapshotError) as caught:
        parse_objects(text, "dump.json")
    assert caught.value.errors[0].path == path and words in caught.value.errors[0].message


@pytest.mark.parametrize(
    ("items", "path", "words"),
    [
        ([obj("Widget", "w", version="example.com/v1")], "Widget ml/w", "unknown kind Widget"),
        ([NODE, gpu_pod("p", nodeName="n9")], "Pod ml/p: spec.nodeName", "names node 'n9'"),
        ([NODE, gpu_pod("p", gpus="1.5")], "Pod ml/p: spec.containers[0].resources.limits.nvidia.com/gpu",
         "fraction of a GPU"),
        ([NODE, gpu_pod("p", gpus="lots")], "Pod ml/p: spec.containers[0].resources.limits.nvidia.com/gpu",
         "not a quantity"),
        ([{"kind": "Pod", "apiVersion": "v1", "metadata": {}}], "dump.json: items[0].metadata.name",
         "every Pod has a name"),
        ([NODE, obj("PriorityClass", "train", None, version="scheduling.k8s.io/v1", value=10),
          obj("PriorityClass", "train", None, version="scheduling.k8s.io/v1", value=20)],
         "dump.json: items[2].metadata.name", "PriorityClass train is given twice"),
        ([{**NODE, "metadata": {"name": "n0", "labels": {"nvidia.com/gpu.replicas": "3"}}}],
         "Node n0: status.allocatable", "8 nvidia.com/gpu is not a whole number of devices of 3 replicas"),
    ],
)  # fmt: skip
def test_bad_objects_exit_2_naming_kind_namespace_name_and_field(
    tmp_path: Path, items: list[dict[str, Any]], path: str, words: str
):
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out = tmp_path / "snapshot.yaml"
    result = RUN.invoke(app, ["import", str(dump), "--now", "2026-11-23T12:00:00Z", "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert f"{path}: " in result.stderr and words in result.stderr, result.stderr
    assert "Traceback" not in result.output and not out.exists()


def test_effective_requests_follow_the_init_container_rule():
    """max(sum of containers + sidecars, largest init container + the sidecars before it) + overhead; requests
    default to limits."""
    containers = [
        {"name": "a", "resources": {"requests": {"cpu": "2"}, "limits": {"nvidia.com/gpu": "2"}}},
        {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
    ]
    init = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "big", "resources": {"requests": {"cpu": "5", "memory": "512Mi"}}},
    ]
    pod = obj("Pod", "p", spec={"containers": containers, "initContainers": init, "overhead": {"cpu": "250m"}})
    pod["status"] = {"phase": "Pending"}
    document, _ = import_objects(parse_objects(json.dumps({"kind": "List", "items": [NODE, pod]}), "x"), now=NOW)
    resources = document["jobs"][0]["task_resources"]
    # containers 3 CPU + sidecar 1 = 4; init "big" 5 + sidecar 1 = 6; + 250m overhead
    assert resources == {"cpu": "6250m", "gpu": 2, "memory": "1Gi"}


@pytest.mark.parametrize(
    ("status", "spec", "expected"),
    [
        ({"phase": "Running"}, {"nodeName": "n0"}, ("running", "n0")),
        ({"phase": "Pending"}, {"nodeName": "n0"}, ("running", "n0")),
        ({"phase": "Pending", "nominatedNodeName": "n0"}, {}, ("nominated", "n0")),
        ({"phase": "Pending"}, {}, ("pending", None)),
        ({"phase": "Succeeded"}, {"nodeName": "n0"}, None),
        ({"phase": "Failed"}, {"nodeName": "n0"}, None),
    ],
)
def test_task_status_is_kais(status: dict[str, Any], spec: dict[str, Any], expected: tuple[str, str | None] | None):
    pod = gpu_pod("p", **spec)
    pod["status"] = status
    document, _ = import_objects(parse_objects(json.dumps({"kind": "List", "items": [NODE, pod]}), "x"), now=NOW)
    if expected is None:
        assert document["jobs"] == []
    else:
        [task] = document["jobs"][0]["tasks"]
        assert (task["status"], task.get("node")) == expected


def test_a_deleted_running_pod_is_releasing():
    pod = gpu_pod("p", nodeName="n0")
    pod["metadata"]["deletionTimestamp"] = "2026-11-23T11:59:00Z"
    pod["status"] = {"phase": "Running"}
    document, _ = import_objects(parse_objects(json.dumps({"kind": "List", "items": [NODE, pod]}), "x"), now=NOW)
    assert document["jobs"][0]["tasks"][0]["status"] == "releasing"


def test_a_volcano_cluster_imports_its_queues_and_pod_groups():
    """Volcano: queues under the implicit root (deserved, capability as limit, weight), a PodGroup of minMember 2
    whose pods name it in the group-name annotation; every job is preemptible outside KAI."""
    queue = obj(
        "Queue",
        "team",
        None,
        "scheduling.volcano.sh/v1beta1",
        spec={
            "parent": "root",
            "deserved": {"nvidia.com/gpu": "8"},
            "capability": {"nvidia.com/gpu": "16"},
            "weight": 2,
        },
    )
    group = obj("PodGroup", "pg", version="scheduling.volcano.sh/v1beta1", spec={"minMember": 2, "queue": "team"})
    pods = []
    for i in range(3):
        p = gpu_pod(f"w-{i}", gpus="2", nodeName="n0", priority=10)
        p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "pg"}
        p["status"] = {"phase": "Running"}
        pods.append(p)
    document, _ = import_objects(
        parse_objects(json.dumps({"kind": "List", "items": [NODE, queue, group, *pods]}), "x"), now=NOW
    )
    snapshot = snapshot_from_data(document)
    team = snapshot.queue("team")
    assert team.parent is None and team.deserved["gpu"] == 8000 and team.limit["gpu"] == 16_000
    job = snapshot.job("ml/pg")
    assert len(job.tasks) == 3 and job.min_available == 2 and job.queue == "team"
    assert job.is_preemptible


def test_a_plain_pod_names_its_kueue_local_queue_by_label():
    cq = obj("ClusterQueue", "cq", None, "kueue.x-k8s.io/v1beta2", spec={"resourceGroups": []})
    lq = obj("LocalQueue", "lq", version="kueue.x-k8s.io/v1beta2", spec={"clusterQueue": "cq"})
    p = gpu_pod("p")
    p["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "lq"}
    document, _ = import_objects(parse_objects(json.dumps({"kind": "List", "items": [NODE, cq, lq, p]}), "x"), now=NOW)
    assert document["jobs"][0]["queue"] == "cq"


def test_gpu_feature_discovery_labels_are_kept_on_the_node():
    document, _ = imported("kai-cluster.json")
    node = snapshot_from_data(document).node("gpu-node-0")
    assert node.labels["nvidia.com/gpu.memory"] == "81559" and node.labels["nvidia.com/gpu.count"] == "8"


def test_kai_gpu_sharing_imports_shares_on_the_devices_their_groups_name():
    """fixtures/kube/kai-sharing.json: on a 4-GPU node, infer-a (0.5) and infer-b (0.25) share the device of one GPU
    group, infer-c (40Gi of the node's 80Gi) the device of another; train-0 holds 2 whole GPUs; infer-d (0.5) waits.
    The two reservation pods that hold the shared devices are not jobs (their shares stand for them)."""
    document, report = imported("kai-sharing.json")
    jobs = {j["name"]: j for j in document["jobs"]}
    assert set(jobs) == {"serving/infer-a", "serving/infer-b", "serving/infer-c", "serving/infer-d", "serving/train-0"}
    assert jobs["serving/infer-a"]["task_resources"]["gpu"] == "500m"
    assert jobs["serving/infer-c"]["task_resources"]["gpu_memory"] == "40Gi"
    devices = {name: [t.get("devices") for t in job["tasks"]] for name, job in jobs.items()}
    assert devices == {
        "serving/infer-a": [[0]],
        "serving/infer-b": [[0]],
        "serving/infer-c": [[1]],
        "serving/infer-d": [None],
        "serving/train-0": [None],
    }
    assert document["nodes"][0]["gpu_memory"] == "81920Mi"
    assert any("2 KAI reservation pod(s)" in note for note in report.notes)
    snapshot = snapshot_from_data(document)  # the device ledger holds: 2 whole GPUs and 2 shared devices of 4
    assert len(snapshot.shared_jobs()) == 4


def test_imported_kai_shares_are_decided_device_by_device():
    """On a 4-GPU node, train-0 holds two whole GPUs, infer-a and infer-b 0.75 of device 0, infer-c 40Gi of device
    1's 80Gi (a half). Asking 0.5, infer-d joins infer-c on device 1; asking 0.6, it fits nowhere; without infer-c it
    has device 1 to itself."""
    document, _ = imported("kai-sharing.json")
    snapshot = snapshot_from_data(document)
    decision = decide(snapshot, "serving/infer-d")
    assert decision.outcome == "allocated" and decision.devices == {"serving/infer-d": (1,)}  # named as its pod
    assert verify(snapshot, decision) == []
    (infer_d,) = [j for j in document["jobs"] if j["name"] == "serving/infer-d"]
    infer_d["task_resources"]["gpu"] = "600m"
    decision = decide(snapshot_from_data(document), "serving/infer-d", "allocate")
    assert decision.outcome == "infeasible" and "device 1 of gpu-node-0 has 0.5 free" in decision.reason
    document["jobs"] = [j for j in document["jobs"] if j["name"] != "serving/infer-c"]
    decision = decide(snapshot_from_data(document), "serving/infer-d")
    assert decision.outcome == "allocated" and decision.devices == {"serving/infer-d": (1,)}


def _sharing_objects() -> list[dict[str, Any]]:
    return json.loads((KUBE / "kai-sharing.json").read_text())["items"]


def _pod_named(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(o for o in items if o["kind"] == "Pod" and o["metadata"]["name"] == name)


def test_a_share_of_several_devices_takes_one_group_per_device():
    items = _sharing_objects()
    pod = _pod_named(items, "infer-a")
    pod["metadata"]["annotations"]["gpu-fraction-num-devices"] = "2"
    labels = pod["metadata"]["labels"]
    group = labels.pop("runai-gpu-group")
    labels.update({"runai-gpu-group/0": group, "runai-gpu-group/1": "4d6c1f5e-0d1b-4a4e-9d5a-2c6a1b7e0003"})
    train = _pod_named(items, "train-0")["spec"]["containers"][0]["resources"]
    train["requests"]["nvidia.com/gpu"] = train["limits"]["nvidia.com/gpu"] = "1"  # room for a third shared device
    objects = parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json")
    document, _ = import_objects(objects, now=NOW)
    job = next(j for j in document["jobs"] if j["name"] == "serving/infer-a")
    assert job["gpu_devices"] == 2 and job["tasks"][0]["devices"] == [0, 2]
    snapshot = snapshot_from_data(document)  # devices 0 and 2 hold half of infer-a each; 0 infer-b, 1 infer-c
    decision = decide(snapshot, "serving/infer-d")
    assert decision.outcome == "allocated" and decision.devices == {"serving/infer-d": (1,)}  # 2 is as full, later
    assert verify(snapshot, decision) == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda p: p["metadata"]["labels"].pop("runai-gpu-group"), "a bound share of a GPU with 0 runai-gpu-group"),
        (lambda p: p["metadata"]["annotations"].update({"gpu-memory": "100"}), "gpu-fraction and gpu-memory"),
        (lambda p: p["metadata"]["annotations"].update({"gpu-fraction": "1.5"}), "not below one GPU: 1.5"),
    ],
    ids=["no group", "fraction and memory", "not a share"],
)
def test_a_share_that_cannot_be_placed_on_devices_is_refused_naming_the_pod(change: Any, words: str):
    items = _sharing_objects()
    change(_pod_named(items, "infer-a"))
    objects = parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json")
    with pytest.raises(SnapshotError) as caught:
        import_objects(objects, now=NOW)
    message = str(caught.value)
    assert "Pod serving/infer-a" in message and words in message


def test_mig_slices_are_resources_of_their_own_and_are_decided():
    """A node with seven 1g.10gb slices, six taken by a running pod: a pending pod asking one slice is placed; one
    asking two waits (a slice is a count, never a fraction of a whole GPU)."""
    mig = "nvidia.com/mig-1g.10gb"
    node = obj("Node", "n0", None, status={"allocatable": {"nvidia.com/gpu": "0", "cpu": "64", mig: "7"}})

    def slices(name: str, count: str, node_name: str | None = None) -> dict[str, Any]:
        pod = gpu_pod(name)
        pod["spec"]["containers"][0]["resources"] = {"limits": {mig: count}}
        if node_name is not None:
            pod["spec"]["nodeName"], pod["status"]["phase"] = node_name, "Running"
        return pod

    items = [node, slices("held", "6", "n0"), slices("one", "1"), slices("two", "2")]
    objects = parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json")
    document, _ = import_objects(objects, now=NOW)
    assert document["nodes"][0]["resources"][mig] == "7"
    assert {j["name"]: j["task_resources"][mig] for j in document["jobs"]} == {
        "ml/held": "6",
        "ml/one": "1",
        "ml/two": "2",
    }
    result = run_cycle(snapshot_from_data(document))
    placed = {d.job for d in result.decisions if d.placed}
    assert placed == {"ml/one"}


def test_time_sliced_gpus_are_shares_of_devices_packed_in_pod_order():
    """A node of 2 devices time-sliced 4 ways advertises 8 nvidia.com/gpu: pods holding 1, 1 and 2 replicas are
    shares of 0.25, 0.25 and 0.5, packed onto device 0 (time slicing records no device: a reported guess); a
    pending pod asking 4 replicas asks one whole device."""
    node = {**NODE, "metadata": {"name": "n0", "labels": {"nvidia.com/gpu.replicas": "4"}}}
    pods = [gpu_pod(name, gpus, nodeName="n0") for name, gpus in (("a", "1"), ("b", "1"), ("c", "2"))]
    for p in pods:
        p["status"]["phase"] = "Running"
    items = [node, *pods, gpu_pod("d", "4")]
    objects = parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json")
    document, report = import_objects(objects, now=NOW)
    assert document["nodes"][0]["resources"]["gpu"] == 2
    jobs = {j["name"]: j for j in document["jobs"]}
    shares = {n: (j["task_resources"]["gpu"], j["tasks"][0].get("devices")) for n, j in jobs.items()}
    assert shares == {"ml/a": ("250m", [0]), "ml/b": ("250m", [0]), "ml/c": ("500m", [0]), "ml/d": (1, None)}
    assert any("time slicing records no device" in guess for guess in report.guesses)
    snapshot = snapshot_from_data(document)
    decision = decide(snapshot, "ml/d")  # device 0 is full of slices: the whole device d asks for is device 1
    assert decision.outcome == "allocated" and decision.placements == {"ml/d": "n0"} and not decision.devices
    assert verify(snapshot, decision) == []


def test_a_planned_move_of_a_share_names_the_device_it_lands_on():
    """fixtures/kai-reclaim-fraction-consolidation.yaml: the half that moves is written as an eviction whose reason
    names the device it is to land on (docs/snapshot-format.md, "GPU sharing")."""
    snapshot = load_snapshot(FIXTURES / "kai-reclaim-fraction-consolidation.yaml")
    decision = decide(snapshot, "pending-job", "reclaim")
    (pod,) = evictions(snapshot, [decision])
    assert pod.reason == "reclaim for pending-job: moves it from node0 to node1 (device 0)"


def _kai_items() -> list[dict[str, Any]]:
    return json.loads((KUBE / "kai-cluster.json").read_text())["items"]


def _import_items(items: list[dict[str, Any]]) -> dict[str, Any]:
    objects = parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json")
    return import_objects(objects, now=NOW)[0]


def test_kai_s_preemption_delay_is_read_from_the_pod_group_or_its_annotation():
    """resnet waits (created 08:00): with a 5h delay it reclaims nothing until 13:00, an hour from now."""
    items = _kai_items()
    group = next(o for o in items if o["kind"] == "PodGroup" and o["metadata"]["name"] == "resnet")
    group["spec"]["preemptionDelay"] = "5h"
    document = _import_items(items)
    (resnet,) = [j for j in document["jobs"] if j["name"] == "vision/resnet"]
    assert resnet["preemption_delay"] == "5h"
    assert victims(document) == []
    del group["spec"]["preemptionDelay"]
    group["metadata"].setdefault("annotations", {})["kai.scheduler/preemption-delay"] = "1h"
    document = _import_items(items)
    assert next(j for j in document["jobs"] if j["name"] == "vision/resnet")["preemption_delay"] == "1h"
    assert victims(document) == [("vision/resnet", "reclaim", ["nlp/bert-a"])]
    group["metadata"]["annotations"]["kai.scheduler/preemption-delay"] = "soon"
    with pytest.raises(SnapshotError, match=r"kai.scheduler/preemption-delay.*not a duration"):
        _import_items(items)


def test_kai_s_task_order_label_orders_an_elastic_job_s_tasks():
    """bert-b (2 pods) made elastic (minMember 1): its pods' kai.scheduler/task-priority labels are their tasks'
    order; on a job that is not elastic they are left out, with a note."""
    items = _kai_items()
    group = next(o for o in items if o["kind"] == "PodGroup" and o["metadata"]["name"] == "bert-b")
    pods = [o for o in items if o["kind"] == "Pod" and o["metadata"]["name"].startswith("bert-b")]
    for value, pod in zip(("2", "7"), pods, strict=True):
        pod["metadata"].setdefault("labels", {})["kai.scheduler/task-priority"] = value
    group["spec"]["minMember"] = 1
    document = _import_items(items)
    (bert_b,) = [j for j in document["jobs"] if j["name"] == "nlp/bert-b"]
    assert [t.get("order") for t in bert_b["tasks"]] == [2, 7]
    snapshot_from_data(document)
    group["spec"]["minMember"] = 2
    objects = parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json")
    document, report = import_objects(objects, now=NOW)
    (bert_b,) = [j for j in document["jobs"] if j["name"] == "nlp/bert-b"]
    assert all("order" not in t for t in bert_b["tasks"])
    assert any("kai.scheduler/task-priority left out: the job is not elastic" in note for note in report.notes)


@pytest.mark.parametrize(("deleted", "stuck"), [("2026-11-23T11:59:00Z", False), ("2026-11-23T11:55:00Z", True)])
def test_a_pod_stuck_in_releasing_holds_its_room(deleted: str, stuck: bool):
    """bert-a-0 (8 GPUs on gpu-node-0) being deleted: a minute ago it is releasing, its room promised to whoever is
    pipelined onto it; five minutes ago, past KAI's 2-minute threshold, it is stuck: its room is held, taken off
    the node, and it is no task."""
    items = _kai_items()
    pod = next(o for o in items if o["kind"] == "Pod" and o["metadata"]["name"] == "bert-a-0")
    pod["metadata"]["deletionTimestamp"] = deleted
    objects = parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json")
    document, report = import_objects(objects, now=NOW)
    gpus = snapshot_from_data(document).node("gpu-node-0").resources["gpu"]
    tasks = {t["name"]: t for j in document["jobs"] for t in j["tasks"]}
    if stuck:
        assert "nlp/bert-a-0" not in tasks and gpus == 0
        assert any("nlp/bert-a-0: its deletion began 5m ago, past KAI's stuck-in-releasing" in n for n in report.notes)
    else:
        assert tasks["nlp/bert-a-0"]["status"] == "releasing" and gpus == 8000


def cpu_pod(name: str, cpu: str, node: str | None = None, queue: str | None = "nlp") -> dict[str, Any]:
    """A pod asking for ``cpu`` cores and no GPU; ``queue``: the KAI queue its labels name (none: a daemon's pod)."""
    container = {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    pod = obj(
        "Pod",
        name,
        spec={"containers": [container], **({"nodeName": node} if node else {})},
        status={"phase": "Running" if node else "Pending"},
    )
    if queue is not None:
        pod["metadata"]["labels"] = {"kai.scheduler/queue": queue}
    if node:
        pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        pod["status"]["startTime"] = "2026-11-23T10:00:00Z"
    return pod


def test_pods_without_gpus_of_the_batch_scheduler_are_jobs_and_daemons_are_node_load():
    """docs/kubernetes.md, "Jobs without GPUs": a running and a pending pod that name a KAI queue become jobs (the
    running one a possible victim); the DCGM exporter, which names no queue, stays load on its node. With
    ``--gpu-jobs-only`` the earlier reading: running ones are node load, pending ones are left out."""
    items = [
        *_kai_items(),
        cpu_pod("etl-run", "8", node="gpu-node-0"),
        cpu_pod("etl-wait", "4"),
        cpu_pod("agent", "2", node="gpu-node-1", queue=None),
    ]
    document = _import_items(items)
    jobs = {j["name"]: j for j in document["jobs"]}
    assert jobs["ml/etl-run"]["task_resources"] == {"cpu": "8", "memory": "1Gi"}
    assert [t.get("status") for t in jobs["ml/etl-run"]["tasks"]] == ["running"]
    assert [t.get("status") for t in jobs["ml/etl-wait"]["tasks"]] == ["pending"]
    assert "ml/agent" not in jobs
    snapshot = snapshot_from_data(document)
    assert snapshot.job("ml/etl-run").queue == snapshot.job("ml/etl-wait").queue == "nlp"
    only = import_objects(
        parse_objects(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "dump.json"),
        now=NOW,
        cpu_jobs=False,
    )[0]
    assert not {"ml/etl-run", "ml/etl-wait", "ml/agent"} & {j["name"] for j in only["jobs"]}
    nodes = {n["name"]: n for n in only["nodes"]}
    with_jobs = {n["name"]: n for n in document["nodes"]}
    assert nodes["gpu-node-0"]["resources"]["cpu"] != with_jobs["gpu-node-0"]["resources"]["cpu"]  # 8 cores off
    assert nodes["gpu-node-1"]["resources"]["cpu"] == with_jobs["gpu-node-1"]["resources"]["cpu"]  # the agent's


def test_a_pending_job_without_gpus_is_decided_by_cpu_on_an_imported_cluster():
    """The imported pending CPU job is placed where CPU is free."""
    items = [*_kai_items(), cpu_pod("etl-wait", "4")]
    snapshot = snapshot_from_data(_import_items(items))
    decision = decide(snapshot, "ml/etl-wait", "allocate")
    assert decision.outcome == "allocated" and list(decision.placements) == ["ml/etl-wait"]
    assert verify(snapshot, decision) == []


def test_the_import_command_leaves_jobs_without_gpus_out_on_request(tmp_path: Path):
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*_kai_items(), cpu_pod("etl", "4")]}))
    kept = RUN.invoke(app, ["import", str(dump), "--now", "2026-11-23T12:00:00Z"])
    left = RUN.invoke(app, ["import", str(dump), "--now", "2026-11-23T12:00:00Z", "--gpu-jobs-only"])
    assert kept.exit_code == left.exit_code == 0, (kept.output, left.output)
    assert "name: ml/etl" in kept.stdout and "name: ml/etl" not in left.stdout
    assert "ml/etl (asks for no GPU and is not on a node)" in " ".join(left.stderr.split())


def test_a_running_job_gets_its_expected_end_from_the_annotation_or_the_deadline():
    """docs/kubernetes.md, "Expected end": the pod's annotation, else spec.activeDeadlineSeconds from its start."""
    dump = json.loads((FIXTURES / "kube" / "kai-cluster.json").read_text())
    running = [o for o in dump["items"] if o["kind"] == "Pod" and o.get("spec", {}).get("nodeName")]
    running = [o for o in running if o.get("status", {}).get("phase") == "Running"]
    gpus = [o for o in running if any("nvidia.com/gpu" in str(c.get("resources")) for c in o["spec"]["containers"])]
    first, second = gpus[0], gpus[-1]
    first["metadata"].setdefault("annotations", {})["gpu-preempt/expected-end"] = "2026-11-23T15:00:00Z"
    second["spec"]["activeDeadlineSeconds"] = 7200
    objects = parse_objects(json.dumps(dump), "dump.json")
    document, _ = import_objects(objects, now=load_time("2026-11-23T12:00:00Z"))
    snapshot = snapshot_from_data(document)
    ends = {t.name: j.expected_end for j in snapshot.jobs for t in j.tasks}
    key = f"{first['metadata']['namespace']}/{first['metadata']['name']}"
    assert ends[key] == load_time("2026-11-23T15:00:00Z")
    other = next(j for j in snapshot.jobs if any(t.name.endswith(second["metadata"]["name"]) for t in j.tasks))
    assert other.expected_end is not None and other.started_at is not None
    assert other.expected_end == other.started_at + 7200


def load_time(text: str) -> float:
    from gpu_preempt.models import parse_time

    return parse_time(text)
