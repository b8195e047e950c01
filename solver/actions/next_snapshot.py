"""The snapshot a cycle leaves behind, ready to be fed to the next cycle (seeds 003 and 004).

A cycle's decisions are carried out asynchronously (docs/rules.md, "Nominations"): victims take time
to leave, and the jobs pipelined onto their capacity wait, *nominated* for their
nodes. The next snapshot says so, starting from the input document (so that
quantities, labels and comments of the user's notation are kept):

* ``allocated`` tasks are bound: ``running``, and a job that was not running
  before gets ``started_at: now``;
* ``pipelined`` tasks are ``nominated`` for their node;
* evicted tasks are ``releasing`` (still on their node until they are gone);
* tasks whose nomination a higher-priority decision overrode are ``pending``;
* every job evicted whole gets its new ``requeue`` state (docs/rules.md, "Requeue with backoff").

``now`` is kept: the caller advances the clock and, once victims are gone,
makes their tasks pending again (a requeued job) or removes them. Feeding the
result back must not evict more nor promise a node twice: nominations hold
their capacity (:mod:`gpu_preempt.rules.nominations`).
"""

from __future__ import annotations

import copy
from typing import Any

from gpu_preempt.models.decision import requeue_dict

from .cycle import CycleResult

__all__ = ["STATUS", "next_snapshot"]

STATUS = {"allocated": "running", "pipelined": "nominated"}


def next_snapshot(document: dict[str, Any], result: CycleResult) -> dict[str, Any]:
    """``document`` (the cycle's input, as parsed) with the cycle's decisions applied."""
    out = copy.deepcopy(document)
    out.pop("expect", None)  # a fixture's expectation is about the input, not about this state
    end, start = result.end, result.start
    states = result.requeue()
    for entry in out.get("jobs", []):
        job = end.snapshot.job(entry["name"])
        started = False
        entry["tasks"] = [dict(raw) for raw in entry["tasks"]]  # parsed data may share one mapping between tasks
        for raw, task in zip(entry["tasks"], job.tasks, strict=True):
            name = str(task.name)
            before, status = start.status[name], end.status[name]
            if status == before:
                continue
            started |= status == "allocated"
            raw["status"] = STATUS.get(status, status)
            if status == "pending":
                raw.pop("node", None)
                raw.pop("devices", None)
            else:
                raw["node"] = end.node_of[name]
                if name in end.task_devices:  # a share of a GPU placed on its device
                    raw["devices"] = list(end.task_devices[name])
        if started and start.running_count(job) == 0:
            entry["started_at"] = out["now"]
        if job.name in states:
            entry["requeue"] = requeue_dict(states[job.name])
    return out
