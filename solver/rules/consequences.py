"""What a named decision entails under the rules, in one step after it is named.

Three facts follow from which tasks a decision places and which it evicts, not
from any row of the problem, so they are read off the named decision rather than
searched:

* the **nominations it overrides** (docs/rules.md, "Nominations"; :func:`~.nominations.overrides`);
* the **requeue state** of every job it evicts whole (docs/rules.md, "Requeue with backoff";
  :func:`~.requeue.evicted_states`);
* for a reclaim, the **victim queues taken below their line**, and why they may be (docs/snapshot-format.md,
  "Reclaim"; :func:`below_line`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_preempt.models import Job, RequeueState, Resources
from gpu_preempt.models.decision import BelowLine, Decision, Override, VictimTasks
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState

from .nominations import overrides
from .reclaim_line import above_before_last, chunks_of, reclaim_line
from .requeue import evicted_states

__all__ = ["Consequences", "below_line", "consequences"]


@dataclass(frozen=True)
class Consequences:
    """What a decision entails: see the module docstring."""

    overrides: list[Override]
    requeue: dict[str, RequeueState]
    below_line: list[BelowLine]

    def apply(self, decision: Decision) -> Decision:
        """``decision`` with these facts written in (the same object, returned)."""
        decision.overrides = self.overrides
        decision.requeue = self.requeue
        decision.below_line = self.below_line
        return decision


def consequences(cluster: ClusterState, job: Job, decision: Decision, chunk: Resources) -> Consequences:
    """What ``decision`` for ``job`` entails in the state ``cluster``; ``chunk``: what the decision placed asks for
    (the reclaim line is judged with it)."""
    below = below_line(cluster, job, decision, chunk) if decision.action == "reclaim" and decision.placed else []
    return Consequences(overrides(cluster, job, decision), evicted_states(cluster.snapshot, decision), below)


def below_line(cluster: ClusterState, job: Job, decision: Decision, chunk: Resources) -> list[BelowLine]:
    """The victim queues a reclaim takes below their line, and why it may (``last_chunk``; docs/snapshot-format.md,
    "Reclaim")."""
    if cluster.snapshot.config.reclaim_guarantee == "strict":
        return []
    snapshot, tree = cluster.snapshot, cluster.tree
    by_queue: dict[str, list[VictimTasks]] = {}
    for victim in decision.victims:
        by_queue.setdefault(tree.leveled_pair(job.queue, snapshot.job(victim.job).queue)[1], []).append(victim)
    notes = []
    for vq, victims in sorted(by_queue.items()):
        rq = tree.leveled_pair(job.queue, snapshot.job(victims[0].job).queue)[0]
        line = reclaim_line(cluster, rq, vq, chunk)
        held = cluster.usage[vq].allocated
        freed: Resources = {}
        chunks: list[Resources] = []
        for victim in victims:
            owner = snapshot.job(victim.job)
            lost = set(victim.tasks)
            chunks += chunks_of(owner, cluster.tasks(owner, "running"), lost)
            for task in owner.tasks:
                if str(task.name) in lost:
                    freed = add(freed, owner.requests(task))
        above = above_before_last(line, held, freed, chunks) or ""
        for resource, amount in sorted(line.amount.items()):
            after = held.get(resource, 0) - freed.get(resource, 0)
            if amount is not None and freed.get(resource, 0) > 0 and after < amount:
                notes.append(BelowLine(vq, resource, amount, line.kind[resource], after, "last_chunk", above))
    return notes
