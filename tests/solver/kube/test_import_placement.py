"""`gpu-preempt import` reads where pods may run: node labels and taints, pod selectors, required node affinity and
tolerations, KAI's and Kueue's topology; and what third-party dumps look like (YAML, unnamed objects of ignored
kinds, pods of missing queues, KAI's priority label, duplicates, `plan --cycle` on a job that gets nothing)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES
from typer.testing import CliRunner

from gpu_preempt import run_cycle
from gpu_preempt.cli import app
from gpu_preempt.kube.importer import import_objects
from gpu_preempt.kube.read import parse_objects, read_objects
from gpu_preempt.models import SnapshotError, snapshot_from_data

NOW = 1795435200.0  # 2026-11-23T12:00:00Z
RUN = CliRunner()
KWOK = FIXTURES / "kube" / "kwok-dgx.yaml"


def obj(kind: str, name: str, namespace: str | None = "ml", version: str = "v1", **body: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": version, "kind": kind, "metadata": metadata, **body}


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    found = obj("Node", name, None, status={"allocatable": {"nvidia.com/gpu": "8"}}, spec={"taints": taints or []})
    found["metadata"]["labels"] = labels or {}
    return found


def gpu_pod(name: str, gpus: str = "8", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    found = obj("Pod", name, spec={"containers": [container], **spec}, status={"phase": "Pending"})
    if labels:
        found["metadata"]["labels"] = labels
    return found


def imported(items: list[dict[str, Any]]) -> tuple[dict[str, Any], Any]:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    return import_objects(parse_objects(text, "dump.json"), now=NOW)


def test_the_kwok_dgx_cluster_preempts_on_a_tainted_node_the_pod_tolerates():
    """KWOK's nodes carry kwok.x-k8s.io/node=fake:NoSchedule, which every GPU pod tolerates, and the pods ask for
    type=kwok: the nodes stay schedulable, the pending 8-GPU pod preempts the 4-GPU notebook on kwok-dgx-1 (4 GPUs
    free there, so evicting it loses less work than the 8-GPU sweep), and the control-plane node is excluded by its
    taint."""
    document, _ = import_objects(read_objects([str(KWOK)], io.StringIO()), now=NOW)
    snapshot = snapshot_from_data(document)
    dgx = snapshot.node("kwok-dgx-0")
    assert dgx.schedulable and [str(t) for t in dgx.taints] == ["kwok.x-k8s.io/node=fake:NoSchedule"]
    assert dgx.labels["type"] == "kwok"
    train = snapshot.job("research/train-0")
    assert train.placement is not None and train.placement.tolerations[0].operator == "Exists"
    assert str(train.placement.node_affinity[0][0]) == "type In kwok"
    assert train.priority_class == "training-high"
    result = run_cycle(snapshot)
    last = [d for d in result.decisions if d.job == "research/train-0"][-1]
    assert last.outcome == "pipelined" and [v.job for v in last.victims] == ["research/notebook-0"]
    assert last.placements == {"research/train-0": "kwok-dgx-1"}
    first = result.decisions[0]
    assert first.outcome == "infeasible" and "1 by taint node-role.kubernetes.io/control-plane:NoSchedule" in str(
        first.reason
    )


def test_yaml_single_and_multi_document_dumps_read_like_json():
    text = KWOK.read_text()
    objects = parse_objects(text, "kwok.yaml")
    assert [o.kind for o in objects] == ["Node"] * 3 + ["PriorityClass"] * 2 + ["Pod"] * 3
    assert objects[3].origin == "kwok.yaml: document 2: items[0]"
    one = yaml.safe_dump(node("n0"))
    assert [o.name for o in parse_objects(one, "node.yaml")] == ["n0"]
    with pytest.raises(SnapshotError) as caught:
        parse_objects("kind: Node\nkind: Pod\n", "bad.yaml")
    assert "duplicate key 'kind'" in caught.value.errors[0].message


def test_selector_affinity_match_fields_and_tolerations_become_the_jobs_placement():
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["H100"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                ]
            }
        }
    }
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    items = [
        node("n0", {"gpu-type": "H100"}, [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        node("n1", {"gpu-type": "A100"}),
        gpu_pod("p", nodeSelector={"pool": "train"}, affinity=affinity, tolerations=tolerations),
    ]
    document, _ = imported(items)
    placement = document["jobs"][0]["placement"]
    assert placement["node_selector"] == {"pool": "train"}
    assert placement["node_affinity"] == [
        [{"key": "gpu-type", "operator": "In", "values": ["H100"]}],
        [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
    ]
    assert placement["tolerations"] == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    snapshot = snapshot_from_data(document)
    assert snapshot.node("n0").schedulable  # a taint keeps out whom it keeps out, not every job


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}}},
         "not modelled, ignored: preferred node affinity"),
        ({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}},
         "not modelled, ignored: pod anti-affinity"),
        ({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{}]}}},
         "not modelled, ignored: pod affinity"),
        ({"topologySpreadConstraints": [{"maxSkew": 1}]}, "not modelled, ignored: topology spread constraints"),
    ],
)  # fmt: skip
def test_what_is_not_modelled_is_reported_and_strict_refuses_it(tmp_path: Path, spec: dict[str, Any], words: str):
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("n0"), gpu_pod("p", **spec)]}))
    now = "2026-11-23T12:00:00Z"
    result = RUN.invoke(app, ["import", str(dump), "--now", now, "--queue-source", "labels"])
    assert result.exit_code == 0 and words in result.stderr, result.stderr
    strict = RUN.invoke(app, ["import", str(dump), "--now", now, "--strict", "-o", str(tmp_path / "s.yaml")])
    assert strict.exit_code == 2 and "--strict" in strict.stderr and not (tmp_path / "s.yaml").exists()


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        ({"tolerations": [{"key": "a", "operator": "Maybe"}]}, "Pod ml/p: spec.tolerations[0].operator",
         "expected Equal or Exists"),
        ({"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]}, "Pod ml/p: spec.tolerations[0].value",
         "an Exists toleration has no value"),
        ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Near"}]}]}}}},
         "Pod ml/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
         ".matchExpressions[0].operator", "expected one of In, NotIn"),
        ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}]}}}},
         "Pod ml/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
         ".matchFields[0].key", "metadata.name only"),
    ],
)  # fmt: skip
def test_bad_placement_fields_exit_2_naming_the_pod_field(tmp_path: Path, spec: dict[str, Any], path: str, words: str):
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("n0"), gpu_pod("p", **spec)]}))
    result = RUN.invoke(app, ["import", str(dump), "--now", "2026-11-23T12:00:00Z"])
    assert result.exit_code == 2 and f"{path}: " in result.stderr and words in result.stderr, result.stderr
    assert "Traceback" not in result.output


def test_a_bad_taint_effect_names_the_node_field():
    with pytest.raises(SnapshotError) as caught:
        imported([node("n0", taints=[{"key": "a", "effect": "Sometimes"}])])
    assert caught.value.errors[0].path == "Node n0: spec.taints[0].effect"


KAI_TOPOLOGY = obj(
    "Topology",
    "cluster-topology",
    None,
    version="kai.scheduler/v1alpha1",
    spec={"levels": [{"nodeLabel": "example.com/block"}, {"nodeLabel": "example.com/rack"}]},
)


def kai_group(constraint: dict[str, str]) -> list[dict[str, Any]]:
    spec = {"minMember": 2, "queue": "q", "topologyConstraint": {"topology": "cluster-topology", **constraint}}
    group = obj("PodGroup", "g", version="scheduling.run.ai/v2alpha2", spec=spec)
    pods = []
    for i in range(2):
        pod = gpu_pod(f"g-{i}", gpus="4")
        pod["metadata"]["annotations"] = {"pod-group-name": "g"}
        pods.append(pod)
    queue = obj("Queue", "q", None, version="scheduling.run.ai/v2", spec={"resources": {"gpu": {"quota": 16}}})
    return [queue, group, *pods]


def racks() -> list[dict[str, Any]]:
    return [node(f"n{i}", {"example.com/block": "b1", "example.com/rack": f"r{i // 2}"}, []) for i in range(4)]


def test_kai_topology_levels_and_a_pod_groups_constraint_are_read():
    items = [KAI_TOPOLOGY, *racks(), *kai_group({"requiredTopologyLevel": "example.com/rack"})]
    document, _ = imported(items)
    assert document["config"]["topology"] == ["example.com/block", "example.com/rack"]
    job = document["jobs"][0]
    assert job["placement"]["topology"] == {"required": "example.com/rack"}
    snapshot = snapshot_from_data(document)
    decision = run_cycle(snapshot).decisions[0]
    assert decision.outcome == "allocated"
    racks_used = {snapshot.node(n).labels["example.com/rack"] for n in decision.placements.values()}
    assert len(racks_used) == 1


def test_a_required_level_no_node_carries_names_where_it_is_asked_for():
    with pytest.raises(SnapshotError) as caught:
        imported([KAI_TOPOLOGY, node("n0"), *kai_group({"requiredTopologyLevel": "example.com/rack"})])
    error = caught.value.errors[0]
    assert error.path == "PodGroup ml/g: spec.topologyConstraint" and "no node carries" in error.message


def test_kueue_topology_annotations_and_levels_are_read():
    topology = obj(
        "Topology",
        "default",
        None,
        version="kueue.x-k8s.io/v1alpha1",
        spec={"levels": [{"nodeLabel": "example.com/block"}, {"nodeLabel": "example.com/rack"}]},
    )
    pod = gpu_pod("p", gpus="4")
    pod["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-preferred-topology": "example.com/rack"}
    document, _ = imported([topology, *racks(), pod])
    assert document["config"]["topology"] == ["example.com/block", "example.com/rack"]
    assert document["jobs"][0]["placement"]["topology"] == {"preferred": "example.com/rack"}


def test_a_job_naming_a_missing_queue_is_left_out_and_reported(tmp_path: Path):
    items = [node("n0"), gpu_pod("p", labels={"kai.scheduler/queue": "ghost"}), gpu_pod("q")]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    queue = obj("Queue", "default", None, version="scheduling.run.ai/v2", spec={})
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*items, queue]}))
    result = RUN.invoke(app, ["import", str(dump), "--now", "2026-11-23T12:00:00Z", "-o", str(tmp_path / "s.yaml")])
    assert result.exit_code == 0, result.stderr
    assert "queue 'ghost' is not in the input: job left out" in result.stderr
    jobs = [j["name"] for j in yaml.safe_load((tmp_path / "s.yaml").read_text())["jobs"]]
    assert jobs == ["ml/q"]
    strict = RUN.invoke(app, ["import", str(dump), "--now", "2026-11-23T12:00:00Z", "--strict"])
    assert strict.exit_code == 2


def test_an_unnamed_object_of_an_ignored_kind_is_counted_not_refused():
    document, report = imported([node("n0"), {"apiVersion": "v1", "kind": "Event", "metadata": {}}])
    assert report.ignored["Event"] == ["(unnamed, dump.json: items[1])"]
    assert [n["name"] for n in document["nodes"]] == ["n0"]


def test_kais_priority_class_label_names_the_class():
    classes = [obj("PriorityClass", "train", None, version="scheduling.k8s.io/v1", value=50)]
    document, _ = imported([node("n0"), *classes, gpu_pod("p", labels={"priorityClassName": "train"})])
    assert document["jobs"][0]["priority_class"] == "train"


def test_plan_cycle_says_why_a_job_that_gets_nothing_is_infeasible(tmp_path: Path):
    items = [node("n0", {"gpu-type": "A100"}), gpu_pod("p", nodeSelector={"gpu-type": "H100"})]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    snapshot = tmp_path / "s.yaml"
    assert RUN.invoke(app, ["import", str(dump), "--now", "2026-11-23T12:00:00Z", "-o", str(snapshot)]).exit_code == 0
    result = RUN.invoke(app, ["plan", str(snapshot), "--cycle"])
    assert result.exit_code == 0, result.output
    assert "ml/p: nothing placed" in result.stdout and "1 by node_selector gpu-type=H100" in result.stdout
