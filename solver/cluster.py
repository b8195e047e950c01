"""A snapshot together with what every rule needs from it: the queue tree, usage and fair shares."""

from __future__ import annotations

from dataclasses import dataclass

from models import Resources, Snapshot

from .fair_share import fair_shares
from .queue_tree import QueueTree
from .queue_usage import QueueUsage, queue_usage


@dataclass(frozen=True)
class Cluster:
    """Read-only state of one snapshot, computed once."""

    snapshot: Snapshot
    tree: QueueTree
    usage: dict[str, QueueUsage]
    shares: dict[str, Resources]

    @classmethod
    def of(cls, snapshot: Snapshot) -> Cluster:
        tree = QueueTree(snapshot)
        usage = queue_usage(snapshot, tree)
        return cls(snapshot, tree, usage, fair_shares(snapshot, tree, usage))

    @property
    def now(self) -> float:
        return self.snapshot.now
