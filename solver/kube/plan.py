"""Decisions as eviction plans (``gpu-preempt plan``): policy/v1 Eviction objects, a kubectl script, or rows.

Nothing is sent to a cluster: the plan is a file to review and apply by hand. Each evicted (or moved) task of an
imported snapshot is a pod named ``namespace/name``; its Eviction carries the pod's uid as a precondition (when
the import kept it) and the reason in the annotation ``gpu-preempt/reason``. A moved task is evicted too: its
controller re-creates the pod, and the scheduler, not this plan, places it (the decision names the node it found).

The kubectl script evicts one job at a time with ``kubectl create --raw .../eviction``; it stops at the first
failure (for instance 429, a PodDisruptionBudget forbids it now), so that a gang is never left half evicted
without the operator seeing it (docs/kubernetes.md).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from gpu_preempt.models import Snapshot
from gpu_preempt.models.decision import Decision

__all__ = ["REASON", "PodEviction", "eviction_list", "eviction_object", "evictions", "kubectl_script"]

REASON = "gpu-preempt/reason"


@dataclass(frozen=True)
class PodEviction:
    """One pod to evict, for whom, and why."""

    namespace: str
    name: str
    uid: str | None
    job: str
    node: str | None
    reason: str


def evictions(snapshot: Snapshot, decisions: list[Decision]) -> list[PodEviction]:
    """Every pod the decisions evict or move, in decision order."""
    out: list[PodEviction] = []
    seen: set[str] = set()
    for decision in decisions:
        why = f"{decision.action} for {decision.job}"
        for victim in decision.victims:
            whole = "the whole job" if victim.whole_job else f"{len(victim.tasks)} task(s) of the job"
            for task in victim.tasks:
                out += _pod(snapshot, victim.job, task, f"{why}: evicts {whole}", seen)
        for move in decision.moves:
            device = decision.devices.get(move.task)  # a share of a GPU: the device it is to land on
            to = move.node if not device else f"{move.node} (device {', '.join(map(str, device))})"
            out += _pod(snapshot, move.job, move.task, f"{why}: moves it from {move.source} to {to}", seen)
    return out


def _pod(snapshot: Snapshot, job_name: str, task: str, reason: str, seen: set[str]) -> list[PodEviction]:
    if task in seen:
        return []
    seen.add(task)
    job = snapshot.job(job_name)
    namespace, _, name = task.rpartition("/")
    uids = job.annotations.get("pod-uids")
    uid = uids.get(task) if isinstance(uids, dict) else None
    node = next((t.node for t in job.tasks if t.name == task), None)
    return [PodEviction(namespace or "default", name, uid if isinstance(uid, str) else None, job_name, node, reason)]


def eviction_object(pod: PodEviction) -> dict[str, Any]:
    """The policy/v1 Eviction of one pod, as the API server takes it."""
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "annotations": {REASON: pod.reason}},
    }
    if pod.uid is not None:
        body["deleteOptions"] = {"preconditions": {"uid": pod.uid}}
    return body


def eviction_list(pods: list[PodEviction]) -> dict[str, Any]:
    """A ``List`` of Evictions (``--format eviction-json``)."""
    return {"apiVersion": "v1", "kind": "List", "items": [eviction_object(p) for p in pods]}


def kubectl_script(pods: list[PodEviction]) -> str:
    """A bash script that evicts the pods job by job and stops at the first refusal (``--format kubectl``)."""
    lines = [
        "#!/usr/bin/env bash",
        "# Written by gpu-preempt plan. Review it first: nothing has been sent to the cluster.",
        "# It stops at the first eviction refused (e.g. HTTP 429: a PodDisruptionBudget forbids it now).",
        "set -euo pipefail",
    ]
    if not pods:
        lines.append("# nothing to evict")
    job = None
    for pod in pods:
        if pod.job != job:
            job = pod.job
            lines += ["", f"# job {job}"]
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/eviction"
        lines += [
            f"# {pod.reason}",
            f"kubectl create --raw {shlex.quote(path)} -f - <<'EVICTION'",
            json.dumps(eviction_object(pod), sort_keys=True),
            "EVICTION",
        ]
    return "\n".join(lines) + "\n"
