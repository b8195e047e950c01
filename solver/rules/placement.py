"""Where a job's tasks may run (docs/rules.md, "Placement"; docs/snapshot-format.md, "Placement").

A node is *eligible* for a job when it is schedulable, carries every label of the job's node selector, matches one
term of its required node affinity, and has no ``NoSchedule``/``NoExecute`` taint the job does not tolerate. A
``required`` topology narrows that to one domain of the level: the domain of the job's tasks already running (or
promised), or, when none is, a domain the decision chooses (:class:`Domains`). Running tasks stay wherever they are
(Kubernetes' IgnoredDuringExecution): eligibility speaks only of where new work goes.

Masks are numpy arrays over the snapshot's nodes in document order, kept for the snapshot per distinct placement;
a job that names no placement on nodes without such taints gets the snapshot's schedulable mask itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gpu_preempt.models import Job, Node
from gpu_preempt.models.placement import KEEPS_OUT, NO_PLACEMENT, NODE_NAME, Placement, Taint
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.queue_usage import HOLDING

__all__ = [
    "NO_DOMAIN",
    "Eligibility",
    "EligibleNodes",
    "domains",
    "eligibility",
    "eligible",
    "excluded_text",
    "exclusions",
    "held_nodes",
    "placement_key",
    "placement_mask",
    "placement_matters",
]

NO_DOMAIN = -1
"""The domain of a node without the level's label."""


@dataclass
class EligibleNodes:
    """Per snapshot: the mask of each distinct placement (topology aside), the columns they are computed from, and
    each level's domains."""

    masks: dict[str, np.ndarray] = field(default_factory=dict)
    tainted: bool | None = None
    """Whether some node has a taint that keeps out a job tolerating nothing."""
    levels: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)
    labels: dict[str, tuple[np.ndarray, list[str | None]]] = field(default_factory=dict)
    """Label key -> each node's value (an index into the distinct values, in order of first appearance)."""
    taint_sets: tuple[np.ndarray, list[tuple[Taint, ...]]] | None = None
    """Each node's taints (an index into the distinct sets of taints)."""


def placement_key(placement: Placement) -> str:
    """What decides a placement's eligible nodes, as a key (its topology aside)."""
    return placement.model_dump_json(exclude={"topology"})


def eligible(node: Node, placement: Placement) -> bool:
    """Whether a task of a job with ``placement`` may be placed on ``node`` (topology aside)."""
    return (
        node.schedulable
        and placement.selects(node.labels)
        and placement.affinity_matches(node.labels, node.name)
        and not any(placement.keeps_out(taint) for taint in node.taints)
    )


def _column(kept: EligibleNodes, nodes: list[Node], key: str) -> tuple[np.ndarray, list[str | None]]:
    """Each node's value of the label ``key`` (``metadata.name``: its name), as indices into the distinct values."""
    found = kept.labels.get(key)
    if found is None:
        values: dict[str | None, int] = {}
        if key == NODE_NAME:
            codes = [values.setdefault(node.name, len(values)) for node in nodes]
        else:
            codes = [values.setdefault(_text(node.labels.get(key)), len(values)) for node in nodes]
        found = kept.labels[key] = (np.array(codes, dtype=np.int64), list(values))
    return found


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _matching(kept: EligibleNodes, nodes: list[Node], key: str, test: Callable[[str | None], bool]) -> np.ndarray:
    """The nodes whose value of ``key`` passes ``test``, judged once per distinct value."""
    codes, values = _column(kept, nodes, key)
    judged: np.ndarray = np.array([test(value) for value in values], dtype=bool)[codes]
    return judged


def _equal_to(wanted: str) -> Callable[[str | None], bool]:
    def equal(value: str | None) -> bool:
        return value == wanted

    return equal


def _compute(kept: EligibleNodes, cluster: ClusterState, placement: Placement) -> np.ndarray:
    """:func:`eligible` of every node, on columns: each label and each set of taints judged once."""
    nodes = cluster.snapshot.nodes
    mask = cluster.index.schedulable.copy()
    for key, wanted in placement.node_selector.items():
        mask &= _matching(kept, nodes, key, _equal_to(wanted))
    if placement.node_affinity:
        anywhere = np.zeros(len(nodes), dtype=bool)
        for term in placement.node_affinity:
            inside = np.ones(len(nodes), dtype=bool) if term else np.zeros(len(nodes), dtype=bool)
            for expression in term:
                inside &= _matching(kept, nodes, expression.key, expression.matches_value)
            anywhere |= inside
        mask &= anywhere
    if kept.taint_sets is None:
        sets: dict[tuple[Taint, ...], int] = {}
        codes = [sets.setdefault(tuple(node.taints), len(sets)) for node in nodes]
        kept.taint_sets = (np.array(codes, dtype=np.int64), list(sets))
    codes_array, taint_sets = kept.taint_sets
    allowed = [not any(placement.keeps_out(taint) for taint in taints) for taints in taint_sets]
    eligible_now: np.ndarray = mask & np.array(allowed, dtype=bool)[codes_array]
    return eligible_now


def placement_mask(cluster: ClusterState, job: Job) -> np.ndarray:
    """The nodes eligible for ``job`` by its selector, affinity and tolerations (topology aside), as a mask."""
    kept = cluster.for_snapshot(EligibleNodes)
    nodes = cluster.snapshot.nodes
    if kept.tainted is None:
        kept.tainted = any(taint.effect in KEEPS_OUT for node in nodes for taint in node.taints)
    placement = job.placement
    if placement is None or placement == NO_PLACEMENT:
        if not kept.tainted:
            return cluster.index.schedulable
        placement = NO_PLACEMENT
    key = placement_key(placement)
    mask = kept.masks.get(key)
    if mask is None:
        mask = kept.masks[key] = _compute(kept, cluster, placement)
    return mask


def placement_matters(cluster: ClusterState, job: Job) -> bool:
    """Whether ``job`` may run on fewer nodes than the schedulable ones: it names a placement, or a taint keeps it
    out of some node."""
    return job.placement is not None or placement_mask(cluster, job) is not cluster.index.schedulable


def domains(cluster: ClusterState, level: str) -> tuple[np.ndarray, list[str]]:
    """Each node's domain of ``level`` (an index into the names, in order of first appearance; :data:`NO_DOMAIN`
    for a node without the label), and the domains' names."""
    kept = cluster.for_snapshot(EligibleNodes).levels
    found = kept.get(level)
    if found is None:
        names: dict[str, int] = {}
        ids = np.full(len(cluster.snapshot.nodes), NO_DOMAIN, dtype=np.int64)
        for n, node in enumerate(cluster.snapshot.nodes):
            value = node.labels.get(level)
            if value is not None:
                ids[n] = names.setdefault(str(value), len(names))
        found = kept[level] = (ids, list(names))
    return found


def held_nodes(cluster: ClusterState, job: Job) -> list[int]:
    """The nodes (by index) of the job's tasks that hold or are promised capacity: what a topology counts with the
    decision's placements."""
    index = cluster.node_index()
    held = {cluster.node_of[str(t.name)] for t in cluster.tasks(job, *HOLDING)}
    return sorted(index[str(name)] for name in held if name is not None)


@dataclass(frozen=True)
class Eligibility:
    """Where one job's new tasks may go: the eligible nodes, and, when a ``required`` topology is still to be
    chosen, each node's domain of that level (the tasks then lie in one of them)."""

    mask: np.ndarray
    required: np.ndarray | None = None
    """Per node, its domain of the required level, when the decision chooses it (else ``None``)."""
    preferred: np.ndarray | None = None
    """Per node, its domain of the preferred level (a node without the label a domain of its own)."""
    held: frozenset[int] = frozenset()
    """The preferred level's domains the job's tasks hold already."""

    @property
    def constrained(self) -> bool:
        """Whether the decision must choose or count domains (the reductions do neither)."""
        return self.required is not None or self.preferred is not None


def eligibility(cluster: ClusterState, job: Job) -> Eligibility:
    """Where ``job``'s new tasks may go (see the module docstring)."""
    mask = placement_mask(cluster, job)
    topology = job.placement.topology if job.placement is not None else None
    if topology is None:
        return Eligibility(mask)
    held = held_nodes(cluster, job)
    required = None
    if topology.required is not None:
        ids, _ = domains(cluster, topology.required)
        mask = mask & (ids != NO_DOMAIN)
        inside = {int(ids[n]) for n in held}
        if inside:  # the job's tasks hold a domain already: its new tasks go there, or nowhere if they hold two
            only = inside.pop() if len(inside) == 1 else NO_DOMAIN
            mask = mask & (ids == only)
        elif len({int(d) for d in ids[mask].tolist()}) > 1:
            required = ids
    preferred, kept = None, frozenset[int]()
    if topology.preferred is not None:
        ids, names = domains(cluster, topology.preferred)
        alone = np.flatnonzero(ids == NO_DOMAIN)
        preferred = ids.copy()
        preferred[alone] = len(names) + np.arange(len(alone))  # a node without the label: a domain of its own
        kept = frozenset(int(preferred[n]) for n in held)
    return Eligibility(mask, required, preferred, kept)


def exclusions(cluster: ClusterState, job: Job) -> Counter[str]:
    """Why nodes are not eligible for ``job``: per constraint, the nodes it excludes (each node counted once, by the
    first constraint it fails: not schedulable, a taint, the node selector, the node affinity, the topology)."""
    placement = job.placement or NO_PLACEMENT
    found: Counter[str] = Counter()
    topology = placement.topology
    level = topology.required if topology is not None else None
    allowed = eligibility(cluster, job).mask
    for n, node in enumerate(cluster.snapshot.nodes):
        if allowed[n]:
            continue
        if not node.schedulable:
            found["not schedulable"] += 1
            continue
        taint = next((t for t in node.taints if placement.keeps_out(t)), None)
        if taint is not None:
            found[f"taint {taint}"] += 1
            continue
        pair = next(((k, v) for k, v in placement.node_selector.items() if node.labels.get(k) != v), None)
        if pair is not None:
            found[f"node_selector {pair[0]}={pair[1]}"] += 1
            continue
        if not placement.affinity_matches(node.labels, node.name):
            found["node_affinity"] += 1
            continue
        if level is not None:
            found[f"topology {level}" if level in node.labels else f"topology {level} (no such label)"] += 1
    return found


def excluded_text(counts: Counter[str]) -> str:
    """``counts`` in words: "32 nodes excluded: 24 by taint dedicated=gpu:NoSchedule, 8 by node_selector gpu=H100"."""
    total = sum(counts.values())
    parts = ", ".join(f"{n} by {why}" for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} node{'s' if total != 1 else ''} excluded: {parts}"
