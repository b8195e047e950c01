"""KAI-Scheduler's own snapshot as input: the ZIP its ``snapshot`` plugin serves (``curl localhost:8081/get-snapshot
-o snapshot.zip``), one ``snapshot.json`` inside.

Its ``rawObjects`` are the objects of the scheduler's cache, listed by kind (``pods``, ``nodes``, ``queues``,
``podGroups``, ``priorityClasses``, ``topologies``, ...); listed from a cache, they carry no ``apiVersion`` or
``kind``, so each is given those of its list (KAI's ``pkg/scheduler/plugins/snapshot/snapshot.go``,
``RawKubernetesObjects``). The lists the decision does not read (bind requests, config maps, storage and DRA
objects) are counted in a note. Of the scheduler's configuration (``config``, ``schedulerParams``): a node pool
(``partitionParams``: ``NodePoolLabelKey`` and ``NodePoolLabelValue``, Go field names without JSON tags) keeps the
nodes of the pool (an empty value: the nodes without the label) and the pods on them or on no node; the actions and
the plugins' arguments become the snapshot's ``config`` (:mod:`.kai_config`), and what it does not model of them is
said in notes.
"""

from __future__ import annotations

import io
import json
import mmap
import zipfile
from typing import Any

from gpu_preempt.models import SnapshotError

from .kai_config import KaiSettings, from_scheduler_config

__all__ = ["RAW_KINDS", "SNAPSHOT_FILE", "is_zip", "kai_snapshot_list"]

RAW_KINDS = {
    "pods": ("v1", "Pod"),
    "nodes": ("v1", "Node"),
    "queues": ("scheduling.run.ai/v2", "Queue"),
    "podGroups": ("scheduling.run.ai/v2alpha2", "PodGroup"),
    "priorityClasses": ("scheduling.k8s.io/v1", "PriorityClass"),
    "topologies": ("kai.scheduler/v1alpha1", "Topology"),
}
"""The lists of ``rawObjects`` the import reads, and the apiVersion and kind of their items."""

SNAPSHOT_FILE = "snapshot.json"


def is_zip(data: bytes | mmap.mmap) -> bool:
    return data[:4] == b"PK\x03\x04"


def kai_snapshot_list(data: bytes, source: str) -> tuple[str, KaiSettings]:
    """The objects of a KAI snapshot ZIP as the JSON text of a List, and the snapshot config its scheduler
    configuration gives, with notes on what of it is read and how."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if SNAPSHOT_FILE not in archive.namelist():
                raise SnapshotError.single(source, f"a ZIP without {SNAPSHOT_FILE}: not a KAI scheduler snapshot")
            raw = archive.read(SNAPSHOT_FILE)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise SnapshotError.single(source, f"not a readable ZIP ({error})") from None
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise SnapshotError.single(f"{source}: {SNAPSHOT_FILE}", f"not JSON ({error})") from None
    at = f"{source}: {SNAPSHOT_FILE}"
    if not isinstance(document, dict) or not isinstance(document.get("rawObjects"), dict):
        raise SnapshotError.single(f"{at}: rawObjects", "missing: a KAI snapshot holds its objects there")
    objects: dict[str, Any] = document["rawObjects"]
    notes: list[str] = []
    items: list[Any] = []
    for key, (version, kind) in RAW_KINDS.items():
        listed = objects.get(key) or []
        if not isinstance(listed, list):
            raise SnapshotError.single(f"{at}: rawObjects.{key}", "not a list")
        for item in listed:
            if isinstance(item, dict):
                item = {"apiVersion": version, "kind": kind, **item}
            items.append(item)
    unread = {k: len(v) for k, v in objects.items() if k not in RAW_KINDS and isinstance(v, list) and v}
    if unread:
        notes.append("KAI snapshot: not read: " + ", ".join(f"{n} {k}" for k, n in sorted(unread.items())))
    items = _node_pool(document.get("schedulerParams"), items, notes)
    settings = from_scheduler_config(document.get("config"), f"{at}: config")
    settings.notes[:0] = notes
    params = document.get("schedulerParams")
    if isinstance(params, dict) and isinstance(params.get("queueLabelKey"), str) and params["queueLabelKey"]:
        settings.notes.append(f"KAI snapshot: queue label key {params['queueLabelKey']}")
    return json.dumps({"kind": "List", "items": items}), settings


def _node_pool(params: Any, items: list[Any], notes: list[str]) -> list[Any]:
    """Only the nodes of the scheduler's node pool and the pods on them or on no node, when it names one."""
    pool = params.get("partitionParams") if isinstance(params, dict) else None
    key = pool.get("NodePoolLabelKey") if isinstance(pool, dict) else None
    value = pool.get("NodePoolLabelValue") if isinstance(pool, dict) else None
    if not isinstance(key, str) or not key:
        return items
    value = value if isinstance(value, str) else ""

    def labels(item: Any) -> dict[str, Any]:
        found = (item.get("metadata") or {}).get("labels") if isinstance(item, dict) else None
        return found if isinstance(found, dict) else {}

    nodes = {
        (item.get("metadata") or {}).get("name")
        for item in items
        if isinstance(item, dict)
        and item.get("kind") == "Node"
        and (labels(item).get(key) == value if value else key not in labels(item))  # KAI: "" selects DoesNotExist
    }
    kept = []
    for item in items:
        kind = item.get("kind") if isinstance(item, dict) else None
        if kind == "Node" and (item.get("metadata") or {}).get("name") not in nodes:
            continue
        if kind == "Pod":
            node = (item.get("spec") or {}).get("nodeName")
            if node and node not in nodes:
                continue
        kept.append(item)
    pool = f"{key}={value}" if value else f"without label {key}"
    notes.append(f"KAI snapshot: node pool {pool}: {len(nodes)} node(s), and the pods on them or on none")
    return kept
