"""Decisions: what one attempt for one pending job concluded, in the spec's output shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from gpu_preempt.models import RequeueState, format_time

__all__ = [
    "CYCLE_ACTIONS",
    "BelowLine",
    "Decision",
    "Move",
    "Outcome",
    "Override",
    "Protected",
    "VictimTasks",
    "requeue_dict",
]

CYCLE_ACTIONS: tuple[str, ...] = ("enforce-quota", "allocate", "reclaim", "preempt")
"""Every action a cycle may run, in their default order."""

Outcome = Literal["allocated", "pipelined", "infeasible", "unknown", "skipped", "enforced", "partial"]
"""``enforced`` and ``partial`` are outcomes of quota enforcement (:mod:`gpu_preempt.models.quota_decision`)."""


@dataclass(frozen=True)
class VictimTasks:
    """A victim job and the tasks it loses; ``whole_job`` when it loses every running task."""

    job: str
    tasks: tuple[str, ...]
    whole_job: bool


class Protected(NamedTuple):
    """A running job a rule shielded from this decision, and until when (``None``: no end).

    A named tuple: a decision on a large cluster lists thousands of them, and tuples are made several times faster
    than frozen dataclasses.
    """

    job: str
    rule: str
    until: float | None
    reason: str


@dataclass(frozen=True)
class Override:
    """A nomination (docs/rules.md, "Nominations") that a decision of higher priority takes the place of: the task goes
    back to pending."""

    job: str
    task: str
    node: str


@dataclass(frozen=True)
class Move:
    """A victim task moved instead of evicted (docs/snapshot-format.md, "Moves"): its pod leaves ``source`` and is
    placed at once on free
    room of ``node``, where it waits ``pipelined``. A move loses no job and does not count against any queue."""

    job: str
    task: str
    source: str
    node: str


@dataclass(frozen=True)
class BelowLine:
    """A victim queue the decision takes below its reclaim line in one resource, and the rule that allows it.

    Amounts in milli-units. ``rule`` is ``last_chunk`` (docs/snapshot-format.md, "Reclaim": the queue was above its
    line in ``above`` before its last chunk was taken).
    """

    queue: str
    resource: str
    line: int
    kind: str
    after: int
    rule: str
    above: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "resource": self.resource,
            "line": self.line,
            "kind": self.kind,
            "after": self.after,
            "rule": self.rule,
            "above_before_last_chunk": self.above,
        }


@dataclass
class Decision:
    """The result of one action for one pending job."""

    job: str
    action: str
    outcome: Outcome
    victims: list[VictimTasks] = field(default_factory=list)
    placements: dict[str, str] = field(default_factory=dict)
    optimal: bool = False
    objective: dict[str, Any] = field(default_factory=dict)
    protected: list[Protected] = field(default_factory=list)
    solve_ms: float = 0.0
    reason: str | None = None
    solver: str = "cpsat"
    priority_levels: list[int] = field(default_factory=list)
    candidates: int = 0
    overrides: list[Override] = field(default_factory=list)
    """Nominations of lower-priority jobs whose capacity this decision uses (docs/rules.md, "Nominations")."""
    requeue: dict[str, RequeueState] = field(default_factory=dict)
    """The next requeue state of each job evicted whole (docs/rules.md, "Requeue with backoff"; see
    :mod:`gpu_preempt.rules.requeue`)."""
    moves: list[Move] = field(default_factory=list)
    """Victim tasks moved to free room on another node instead of evicted (docs/snapshot-format.md, "Moves")."""
    below_line: list[BelowLine] = field(default_factory=list)
    """Victim queues taken below their reclaim line, with the rule that allowed it (docs/snapshot-format.md,
    "Reclaim")."""
    devices: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """The devices of each placed share of a GPU (docs/snapshot-format.md, "GPU sharing"), beside its node."""

    @property
    def placed(self) -> bool:
        return self.outcome in ("allocated", "pipelined")

    def objective_key(self, order: tuple[str, ...]) -> tuple[float, ...]:
        """The reported objective as a lexicographic key in ``order`` (``config.objective``): smaller is better."""
        key: list[float] = []
        for criterion in order:
            value = self.objective[criterion]
            key.extend(value if isinstance(value, list) else [value])
        return tuple(key)

    def changes(self) -> list[tuple[str, str, str | None]]:
        """``(task, new status, node)`` for the session: victims release, placed tasks are allocated or pipelined."""
        if not self.placed:
            return []
        out: list[tuple[str, str, str | None]] = []
        for victim in self.victims:
            out.extend((task, "releasing", None) for task in victim.tasks)
        out.extend((o.task, "pending", None) for o in self.overrides)
        out.extend((m.task, "pipelined", m.node) for m in self.moves)
        status = "allocated" if self.outcome == "allocated" else "pipelined"
        out.extend((task, status, node) for task, node in self.placements.items())
        return out

    def _victim_dict(self, victim: VictimTasks) -> dict[str, Any]:
        out: dict[str, Any] = {"job": victim.job, "tasks": list(victim.tasks), "whole_job": victim.whole_job}
        if victim.job in self.requeue:
            out["requeue"] = requeue_dict(self.requeue[victim.job])
        return out

    def to_dict(self, *, timing: bool = True) -> dict[str, Any]:
        """The spec's JSON shape (``solve_ms`` left out when ``timing`` is false, for reproducible output)."""
        out: dict[str, Any] = {
            "job": self.job,
            "action": self.action,
            "outcome": self.outcome,
            "victims": [self._victim_dict(v) for v in self.victims],
            "placements": dict(self.placements),
            **({"devices": {task: list(found) for task, found in self.devices.items()}} if self.devices else {}),
            "optimal": self.optimal,
            "objective": self.objective,
            "protected": [
                {
                    "job": p.job,
                    "rule": p.rule,
                    "until": None if p.until is None else format_time(p.until),
                    "reason": p.reason,
                }
                for p in self.protected
            ],
        }
        if self.overrides:
            out["overrides"] = [{"job": o.job, "task": o.task, "node": o.node} for o in self.overrides]
        if self.moves:
            out["moves"] = [{"job": m.job, "task": m.task, "from": m.source, "node": m.node} for m in self.moves]
        if self.below_line:
            out["below_line"] = [b.to_dict() for b in self.below_line]
        if self.reason is not None:
            out["reason"] = self.reason
        out["solver"] = self.solver
        out["priority_levels"] = self.priority_levels
        out["candidates"] = self.candidates
        if timing:
            out["solve_ms"] = round(self.solve_ms, 3)
        return out


def requeue_dict(state: RequeueState) -> dict[str, Any]:
    """The output shape of a requeue state (instants in RFC 3339, as in a snapshot)."""
    return {
        "count": state.count,
        "evicted_at": None if state.evicted_at is None else format_time(state.evicted_at),
        "requeue_at": None if state.requeue_at is None else format_time(state.requeue_at),
        "active": state.active,
    }
