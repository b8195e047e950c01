"""A generator of Kubernetes dumps of a KAI cluster, as ``kubectl get nodes,pods,podgroups,queues,priorityclasses
-o json`` prints them (deterministic for a given seed).

Shape: ``nodes`` 8-GPU nodes (a tenth tainted for a dedicated team, every node labelled with its rack and GPU
product); a KAI queue tree of departments and teams; priority classes train, build and inference; ``pods`` pods, half
running (in pod groups of one to four pods), a tenth pending (some with a node selector and a toleration), the rest
finished (``Succeeded`` or ``Failed``, as a busy cluster accumulates them); ``--finished-only``: every pod finished.

``python benchmarks/dump.py NODES PODS [--seed S] [--finished-only] [--yaml] > dump.json``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any

import yaml

NOW = "2026-01-01T12:00:00Z"
GPUS = 8


def _meta(name: str, namespace: str | None = None, **more: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1000"}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["creationTimestamp"] = "2025-12-01T08:00:00Z"
    meta.update(more)
    return meta


def _node(i: int) -> dict[str, Any]:
    name = f"node-{i:06d}"
    spec: dict[str, Any] = {"podCIDR": f"10.{i // 65536 % 256}.{i // 256 % 256}.0/24"}
    if i % 10 == 9:
        spec["taints"] = [{"key": "dedicated", "value": "dept-0", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(
            name,
            labels={
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/rack": f"rack-{i // 32:04d}",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": str(GPUS),
            },
        ),
        "spec": spec,
        "status": {
            "capacity": {"cpu": "96", "memory": "1081987076Ki", "nvidia.com/gpu": str(GPUS), "pods": "110"},
            "allocatable": {"cpu": "95500m", "memory": "1056Gi", "nvidia.com/gpu": str(GPUS), "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": "2026-01-01T11:59:30Z",
                    "lastTransitionTime": "2025-12-01T08:02:00Z",
                }
            ],
            "nodeInfo": {"kubeletVersion": "v1.31.2", "architecture": "amd64", "operatingSystem": "linux"},
        },
    }


def _queue(name: str, parent: str | None, quota: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": quota, "limit": -1, "overQuotaWeight": 1},
            "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
            "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        }
    }
    if parent is not None:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": _meta(name), "spec": spec, "status": {}}


def _pod(
    name: str, namespace: str, queue: str, group: str, gpus: int, cls: str, value: int, phase: str, node: str | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "nvcr.io/nvidia/pytorch:24.10-py3",
                "resources": {
                    "requests": {"cpu": str(8 * gpus), "memory": f"{64 * gpus}Gi", "nvidia.com/gpu": str(gpus)},
                    "limits": {"memory": f"{64 * gpus}Gi", "nvidia.com/gpu": str(gpus)},
                },
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Never",
        "schedulerName": "kai-scheduler",
        "terminationGracePeriodSeconds": 30,
        "priorityClassName": cls,
        "priority": value,
    }
    status: dict[str, Any] = {"phase": phase, "qosClass": "Burstable"}
    if node is not None:
        spec["nodeName"] = node
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": "2026-01-01T10:00:00Z",
            }
        ]
        status["startTime"] = "2026-01-01T10:00:00Z"
    else:
        spec["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "dept-0", "effect": "NoSchedule"}]
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": NOW}
        ]
    if phase in ("Succeeded", "Failed"):
        status["containerStatuses"] = [
            {
                "name": "main",
                "state": {"terminated": {"exitCode": 0 if phase == "Succeeded" else 1, "reason": "Completed"}},
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            name, namespace, labels={"kai.scheduler/queue": queue}, annotations={"pod-group-name": group}
        ),
        "spec": spec,
        "status": status,
    }


def generate_dump(nodes: int, pods: int, *, seed: int = 0, finished_only: bool = False) -> dict[str, Any]:
    """The dump, as a ``List``."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [_node(i) for i in range(nodes)]
    departments = max(2, min(8, nodes // 250 or 2))
    leaves = []
    for d in range(departments):
        items.append(_queue(f"dept-{d}", None, nodes * GPUS // departments))
        for t in range(4):
            items.append(_queue(f"dept-{d}-team-{t}", f"dept-{d}", nodes * GPUS // departments // 4))
            leaves.append(f"dept-{d}-team-{t}")
    classes = {"train": 50, "build": 100, "inference": 125}
    for name, value in classes.items():
        items.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": _meta(name),
                "value": value,
                "preemptionPolicy": "PreemptLowerPriority",
            }
        )
    running = 0 if finished_only else pods // 2
    pending = 0 if finished_only else pods // 10
    free = [GPUS] * nodes
    cursor = made = serial = 0
    while made < pods:
        serial += 1
        queue = rng.choice(leaves)
        namespace = queue
        cls = rng.choices(list(classes), weights=[80, 10, 10])[0]
        group = f"job-{serial:07d}"
        width = min(rng.choice([1, 1, 1, 2, 4]), pods - made)
        gpus = rng.choice([1, 1, 2, 4, 8])
        if made < running:
            phase = "Running"
        elif made < running + pending:
            phase = "Pending"
        else:
            phase = rng.choice(["Succeeded", "Succeeded", "Failed"])
        hosts: list[str | None] = []
        for _ in range(width):
            node = None
            if phase == "Running":
                for _ in range(nodes):
                    if free[cursor] >= gpus and cursor % 10 != 9:
                        free[cursor] -= gpus
                        node = f"node-{cursor:06d}"
                        break
                    cursor = (cursor + 1) % nodes
                else:
                    phase = "Pending"
            elif phase in ("Succeeded", "Failed"):
                node = f"node-{rng.randrange(nodes):06d}"
            hosts.append(node)
        if phase == "Running" and None in hosts:
            phase = "Pending"
            hosts = [None] * width
        items.append(
            {
                "apiVersion": "scheduling.run.ai/v2alpha2",
                "kind": "PodGroup",
                "metadata": _meta(group, namespace),
                "spec": {"minMember": width, "queue": queue, "priorityClassName": cls},
                "status": {"schedulingConditions": []},
            }
        )
        for k, node in enumerate(hosts):
            items.append(_pod(f"{group}-{k}", namespace, queue, group, gpus, cls, classes[cls], phase, node))
        made += width
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("nodes", type=int)
    parser.add_argument("pods", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--finished-only", action="store_true")
    parser.add_argument("--yaml", action="store_true", help="write YAML (as kubectl -o yaml)")
    args = parser.parse_args()
    dump = generate_dump(args.nodes, args.pods, seed=args.seed, finished_only=args.finished_only)
    if args.yaml:
        yaml.dump(dump, sys.stdout, Dumper=yaml.CSafeDumper, sort_keys=False)
    else:
        json.dump(dump, sys.stdout)


if __name__ == "__main__":
    main()
