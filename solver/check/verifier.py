"""An independent check of any decision against the rules: plain Python, no solver, no model.

It re-derives everything from the cluster state and the rule modules, not from
the :class:`~gpu_preempt.problem.records.Problem` the solver saw, so a bug in building or
solving the model shows up here as a violation. Every check names the rule it
enforces:

* the job and its chunk: pending tasks of the job, all of the gang chunk placed
  (or exactly one more task for preempt/reclaim growth), schedulable nodes only;
* placement (docs/rules.md, "Placement"): every placement and move on a node
  whose labels and taints the job's selector, affinity and tolerations accept,
  and a job with a required topology inside one domain of its level;
* victims: running tasks of other jobs; whole job, or at most the surplus above
  ``min_available``;
* the action's rules: preempt (same leaf, strictly lower priority), reclaim
  (other leaves, the fair-share gate), preemptibility, min-runtime, toleration;
* capacity of every node, now for ``allocated`` and once releasing tasks leave
  for ``pipelined``; with shares of a GPU, of every device (docs/snapshot-format.md, "GPU sharing");
* queue limits and the non-preemptible quota at every level;
* the reclaim line, read ``strict`` (never below ``min(held, line)``) or
  ``last_chunk`` (above the line in some resource before the last chunk, the
  chunks re-derived from the victims' tasks), and the decision's notes of the
  queues it takes below their line; the parent-level saturation rule;
* the objective the decision reports, recomputed from its victims;
* nominations (docs/rules.md, "Nominations"): capacity held by every nomination the decision does
  not override; only lower-priority nominations overridden; a claim lands on
  the nominated nodes and evicts nothing;
* requeue states (docs/rules.md, "Requeue with backoff"), recomputed from the formula;
* KAI's task order (docs/rules.md, "Task order"): an elastic victim's tasks without an order go first, then the
  lowest order up;
* ``preemption_policy: Never``: such a job evicts and moves nothing;
* under ``config.policy: kueue``, Kueue's rules instead of KAI's reclaim and preempt (:mod:`.kueue_check`);
* the preemption delay (docs/rules.md, "Preemption delay"): a job within it does not reclaim or preempt;
* moves (docs/snapshot-format.md, "Moves"): only in preempt and reclaim with ``config.moves`` on,
  of running tasks of jobs the action may disturb (the reclaim line aside), to
  another schedulable node whose free room (every promise kept) takes them; a
  gang moves whole or not at all and is not also evicted; an elastic job keeps
  ``min_available`` tasks (kept or moved) unless evicted whole; a protected
  elastic job has at most its surplus evicted or moved.

Quota-enforcement decisions (docs/rules.md, "Quota enforcement") are checked by :mod:`gpu_preempt.check.quota_verifier`.
"""

from __future__ import annotations

from gpu_preempt.models import Job, Resources
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.duration import format_time
from gpu_preempt.models.quantity import add
from gpu_preempt.models.quota_decision import QuotaDecision
from gpu_preempt.rules.preemption_delay import delay_ends
from gpu_preempt.state.cluster import ClusterState

from .capacity_check import check_capacity, check_devices
from .kueue_check import check_kueue
from .node_order_check import check_move_order, check_node_order
from .objective_check import check_objective
from .placement_check import check_chunk, check_claim, check_overrides, check_placement
from .queue_check import check_queue_limits, check_reclaim
from .quota_verifier import verify_quota
from .requeue_check import check_requeue
from .victim_check import check_moves, taken_victims
from .violation import Violation, of_rule

__all__ = ["Violation", "verify", "verify_decisions"]


def verify(cluster: ClusterState, decision: Decision) -> list[Violation]:
    """Every rule the decision breaks (each a :class:`~.violation.Violation`: its words, the rule, the job); an empty
    list when it is sound."""
    if isinstance(decision, QuotaDecision):
        # docs/rules.md, "Quota enforcement": for a queue, not a job
        queue = decision.queue or ""
        return of_rule("quota enforcement", queue, verify_quota(cluster, decision)) + of_rule(
            "requeue", queue, check_requeue(cluster, decision)
        )
    if not decision.placed:
        wrong = [] if not decision.victims and not decision.placements else ["a decision that places nothing evicts"]
        return of_rule("victims", decision.job, wrong)
    snapshot = cluster.snapshot
    job = snapshot.job(decision.job)
    nominated = {str(t.name): cluster.node_of[str(t.name)] for t in cluster.tasks(job, "nominated")}
    if decision.placements and set(decision.placements) <= set(nominated):
        claimed = of_rule("nominations", job.name, check_claim(cluster, job, decision, nominated))
        return claimed + of_rule("requeue", job.name, check_requeue(cluster, decision))
    problems: list[Violation] = []

    def report(rule: str, messages: list[str]) -> None:
        problems.extend(of_rule(rule, job.name, messages))

    if not job.may_evict and (decision.victims or decision.moves):
        never = f"preemption policy: {job.name}'s priority class says Never, yet the decision evicts or moves"
        report("preemption policy", [never])
    ends = delay_ends(job)
    if decision.action != "allocate" and ends is not None and cluster.now < ends:
        report(
            "preemption delay", [f"preemption delay: {job.name} may {decision.action} only from {format_time(ends)}"]
        )
    report("chunk", check_chunk(cluster, job, decision))
    report("placement", check_placement(cluster, job, decision))
    report("nominations", check_overrides(cluster, job, decision))
    victims: list[str] = []
    taken = taken_victims(cluster, job, decision, victims)
    report("victims", victims)
    report("moves", check_moves(cluster, job, decision, taken))
    placed = _placed(job, decision)
    report("capacity", check_capacity(cluster, job, decision, taken))
    report("node order", check_node_order(cluster, job, decision, taken))
    report("node order", check_move_order(cluster, job, decision, taken))
    if snapshot.shared_jobs() or decision.devices:
        report("devices", check_devices(cluster, job, decision, taken))
    report("queue limits", check_queue_limits(cluster, job, taken, placed))
    if snapshot.config.policy == "kueue":
        report("kueue", check_kueue(cluster, job, decision, placed))
    elif decision.action == "reclaim":
        report("reclaim", check_reclaim(cluster, job, decision, taken, placed))
    report("objective", check_objective(cluster, decision))
    report("requeue", check_requeue(cluster, decision))
    return problems


def verify_decisions(decisions: list[Decision], states: list[ClusterState]) -> list[Violation]:
    """Every broken rule of a sequence of decisions, each checked in the state it was made in.

    Each line names its subject: ``job (action): rule``, or ``queue (enforce-quota): rule``.
    """
    out: list[Violation] = []
    for decision, state in zip(decisions, states, strict=True):
        subject = decision.queue if isinstance(decision, QuotaDecision) else decision.job
        out.extend(
            Violation(f"{subject} ({decision.action}): {problem}", problem.rule, problem.job)
            for problem in verify(state, decision)
        )
    return out


def _placed(job: Job, decision: Decision) -> Resources:
    total: Resources = {}
    tasks = {str(t.name): t for t in job.tasks}
    for name in decision.placements:
        total = add(total, job.requests(tasks[name]))
    return total
