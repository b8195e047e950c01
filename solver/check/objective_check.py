"""The objective a decision reports, recomputed from its victims alone (docs/snapshot-format.md, "Victim choice").

Shared by the independent verifiers of job decisions (:mod:`gpu_preempt.check.verifier`) and of
quota-enforcement decisions (:mod:`gpu_preempt.check.quota_verifier`); it reads no model or solver code.
"""

from __future__ import annotations

from gpu_preempt.models import is_gpu_resource
from gpu_preempt.models.decision import Decision
from gpu_preempt.state.cluster import ClusterState

__all__ = ["check_objective"]


def check_objective(cluster: ClusterState, decision: Decision) -> list[str]:
    """The objective a decision reports, recomputed from its victims (docs/snapshot-format.md, "Victim choice")."""
    snapshot = cluster.snapshot
    levels = decision.priority_levels
    priorities = [snapshot.job(v.job).resolved_priority for v in decision.victims]
    # a task evicted or moved loses its progress since its job's last checkpoint, else its start (a moved task
    # restarts on its new node)
    gone = [(entry.job, task) for entry in decision.victims for task in entry.tasks]
    gone += [(move.job, move.task) for move in decision.moves]
    lost = lost_cpu = 0  # milli-GPU-milliseconds (a share loses its part); milli-CPU-ms of victims without GPUs
    for name, task in gone:
        victim = snapshot.job(name)
        since = victim.progress_since
        elapsed = 0 if since is None else max(0, round((cluster.now - since) * 1000))
        spec = next(t for t in victim.tasks if str(t.name) == task)
        requests = victim.requests(spec)
        gpus = sum(a for r, a in requests.items() if is_gpu_resource(r))
        lost += gpus * elapsed
        lost_cpu += 0 if gpus else requests.get("cpu", 0) * elapsed
    expected: dict[str, object] = {
        "priority": [priorities.count(p) for p in levels],
        "jobs": len(decision.victims),
        "tasks": sum(len(v.tasks) for v in decision.victims),
        "lost_work": lost / 1_000_000,
    }
    if lost_cpu and "lost_work" in snapshot.config.objective:  # counted right after it (docs/snapshot-format.md)
        expected["lost_cpu_work"] = lost_cpu / 1_000_000
    if decision.moves:
        expected["moves"] = len(decision.moves)
    job = snapshot.jobs_by_name().get(decision.job)  # none for a queue's decision
    topology = job.placement.topology if job is not None and job.placement is not None else None
    preferred = topology.preferred if topology is not None else None
    if preferred is not None:
        expected["domains"] = _domains(cluster, decision, preferred)
    if any(p not in levels for p in priorities):
        return ["objective: a victim's priority is missing from priority_levels"]
    if decision.objective != expected:
        return [f"objective: reported {decision.objective}, recomputed {expected}"]
    return []


def _domains(cluster: ClusterState, decision: Decision, level: str) -> int:
    """Domains of ``level`` the job's tasks lie in after the decision (docs/rules.md, "Placement"): its tasks that
    hold or are promised capacity, and those it places; a node without the label is a domain of its own."""
    job = cluster.snapshot.job(decision.job)
    holding = ("running", "allocated", "pipelined", "nominated")
    nodes = {cluster.node_of[str(t.name)] for t in job.tasks if cluster.status[str(t.name)] in holding}
    nodes |= set(decision.placements.values())
    found = set()
    for name in nodes:
        assert name is not None
        value = cluster.snapshot.node(name).labels.get(level)
        found.add(("node", name) if value is None else ("domain", str(value)))
    return len(found)
