"""Min-runtime: how long a started job is protected from eviction (docs/rules.md, "Min-runtime", KAI ``minruntime``).

Two settings, each with a node-pool default (``config``) and optional queue
overrides: ``preempt_min_runtime`` guards in-queue preemption and
``reclaim_min_runtime`` guards cross-queue reclaim. A job is protected while
``now < started_at + resolved min-runtime``; a job that never started is not.

Resolution (docs/rules.md, "Min-runtime"):

* **preempt** - from the victim's leaf queue upward, the first queue that sets
  ``preempt_min_runtime``; else the node-pool default.
* **reclaim, ``lca``** (default) - find the lowest common ancestor of the two
  leaf queues, step one level down towards the victim (the LCA's child on the
  victim's side, or the victim's leaf itself), then walk up from there to the
  root taking the first ``reclaim_min_runtime`` set; else the default. When the
  leaves are in different top-level trees this is the victim's top-level queue.
* **reclaim, ``queue``** - like preempt, from the victim's leaf upward.

The min-runtime design's example tree, B = 600s over C (leaf1 = 0s, leaf2 = 180s) and
D = 60s (leaf3):

>>> from gpu_preempt.models import parse_snapshot
>>> snap = parse_snapshot('''
... now: 0
... nodes: []
... queues:
...   - {name: A}
...   - {name: B, parent: A, reclaim_min_runtime: 600}
...   - {name: C, parent: B}
...   - {name: D, parent: B, reclaim_min_runtime: 60}
...   - {name: leaf1, parent: C, reclaim_min_runtime: 0}
...   - {name: leaf2, parent: C, reclaim_min_runtime: 180}
...   - {name: leaf3, parent: D}
... ''')
>>> from gpu_preempt.state.queue_tree import QueueTree
>>> tree = QueueTree(snap)
>>> pairs = [("leaf1", "leaf3"), ("leaf1", "leaf2"), ("leaf3", "leaf1")]
>>> [reclaim_min_runtime(tree, snap.config, reclaimer, victim) for reclaimer, victim in pairs]
[60.0, 180.0, 600.0]
"""

from __future__ import annotations

from gpu_preempt.models import Config
from gpu_preempt.state.queue_tree import QueueTree

__all__ = ["preempt_min_runtime", "protected_until", "reclaim_min_runtime"]


def preempt_min_runtime(tree: QueueTree, config: Config, victim_leaf: str) -> float:
    """Resolved preempt-min-runtime (seconds) for a victim in ``victim_leaf``."""
    return _first_set(tree, victim_leaf, "preempt_min_runtime", config.preempt_min_runtime)


def reclaim_min_runtime(tree: QueueTree, config: Config, reclaimer_leaf: str, victim_leaf: str) -> float:
    """Resolved reclaim-min-runtime (seconds) for a reclaimer in ``reclaimer_leaf`` and a victim in ``victim_leaf``."""
    if config.min_runtime_resolve == "queue" or reclaimer_leaf == victim_leaf:
        start = victim_leaf
    else:
        _, start = tree.leveled_pair(reclaimer_leaf, victim_leaf)
    return _first_set(tree, start, "reclaim_min_runtime", config.reclaim_min_runtime)


def protected_until(started_at: float | None, min_runtime: float) -> float | None:
    """End of the protection window, or ``None`` when there is none (never started, or 0).

    The job is protected at instant ``now`` iff ``now < protected_until(...)``.
    """
    if started_at is None or min_runtime <= 0:
        return None
    return started_at + min_runtime


def _first_set(tree: QueueTree, start: str, field: str, default: float) -> float:
    for name in tree.upward(start):
        value: float | None = getattr(tree.queue(name), field)
        if value is not None:
            return value
    return default
