"""One decision, stated without any solver: what to place, what may be evicted, and the rows that bind them.

The job solver (:mod:`gpu_preempt.actions.job_solver`) builds a :class:`Problem` from the cluster state and the rules
(:mod:`.builder`); the CP-SAT model (:mod:`gpu_preempt.cpsat`), the greedy baseline (:mod:`gpu_preempt.actions.greedy`)
and the exhaustive search of the tests all read it, and all answer with a :class:`~.solution.Solution`. A problem is
closed: these records, the quota rows (:mod:`.quota_rows`) and KAI's victim queue (:mod:`.victim_queue`) import
nothing of the state, the rules or the actions, so that what a solver reads is all here.

Identical things are counted, never listed one by one: the pending chunk is a
few *task types* (tasks with the same requests), and a victim's running tasks are
*slots* (its tasks with the same requests on the same node). A solution says how
many tasks of each type go to each node and how many tasks of each slot are
evicted; names are chosen afterwards, deterministically.

All amounts are milli-units, as in :mod:`models`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from gpu_preempt.models import MILLI, Resources, is_gpu_resource
from gpu_preempt.models.config import RankedCriterion

from .quota_rows import CohortRows, FairRows
from .victim_queue import VictimOrder, peel_order

__all__ = [
    "Action",
    "ChunkType",
    "Devices",
    "GuaranteeRow",
    "LimitRow",
    "MoveMode",
    "NodeRoom",
    "Problem",
    "QuotaAction",
    "SaturationRow",
    "Slot",
    "Victim",
    "cpu_milli_without_gpus",
    "gpu_milli",
    "gpus_of",
    "share_size",
]

Action = Literal["allocate", "preempt", "reclaim"]
QuotaAction = Literal["enforce-quota"]
"""The action of a decision for a queue rather than a job (docs/rules.md, "Quota enforcement")."""


@dataclass(frozen=True)
class Devices:
    """The GPU devices of a node where shares of a GPU are, or may go (docs/snapshot-format.md, "GPU sharing").

    ``shares`` and ``whole`` are in the final load (victims' tasks included: evicting them frees their part), as the
    decision's priority sees it; ``now_shares`` and ``now_whole`` what the devices hold right now. On every device
    the shares sum to at most one GPU; a task of whole GPUs takes devices without shares.
    """

    count: int
    whole: int
    shares: tuple[int, ...]
    now_whole: int = 0
    now_shares: tuple[int, ...] = ()

    def free(self) -> int:
        """Devices with nothing on them in the final load."""
        return self.count - self.whole - sum(1 for a in self.shares if a)


def share_size(requests: Resources, spread: int = 1) -> int:
    """The milli-GPUs a task's requests take of each of its devices when they ask for a share of a GPU (below one
    GPU, or on ``spread`` devices: the requests then count the GPUs of all of them), else 0.

    >>> share_size({"gpu": 250}), share_size({"gpu": 2000}), share_size({"cpu": 1000}), share_size({"gpu": 1000}, 2)
    (250, 0, 0, 500)
    """
    amount = requests.get("gpu", 0)
    if spread > 1:
        return amount // spread
    return amount if 0 < amount < MILLI else 0


@dataclass(frozen=True)
class NodeRoom:
    """A node where the chunk may go, where a victim runs, or where a moved task may land.

    ``room`` is what new work may use: allocatable minus the final load
    (running, allocated, pipelined), so it includes capacity that releasing tasks
    will free. ``now_room`` is what is free right now (allocatable minus running,
    allocated and releasing).
    """

    name: str
    room: Resources
    now_room: Resources
    free: Resources | None = None
    """Room with every promise kept (allocatable minus the final load): what a moved task may use
    (docs/snapshot-format.md, "Moves");
    ``None``: the same as ``room``."""
    eligible: bool = True
    """Whether the chunk may be placed here: the node is schedulable and matches the job's placement
    (docs/rules.md, "Placement")."""
    devices: Devices | None = None
    """Its devices, when the decision must count them (a node with shares of a GPU, or one where the chunk's shares
    may go); ``None``: whole GPUs only, counted by the node's room."""
    capacity: Resources | None = None
    """Its allocatable resources, which KAI's node order weighs room against (``None``: its room)."""

    def free_room(self) -> Resources:
        return self.room if self.free is None else self.free


@dataclass(frozen=True)
class ChunkType:
    """Pending tasks of the job with the same requests.

    The first ``required`` must all be placed (gang all-or-nothing); the rest may
    be placed (growth by ``allocate``).
    """

    requests: Resources
    tasks: tuple[str, ...]
    required: int
    spread: int = 1
    """Devices each task's share is taken on (``gpu_devices``; the requests count the GPUs of all of them)."""

    @property
    def optional(self) -> int:
        return len(self.tasks) - self.required

    @property
    def share(self) -> int:
        """Milli-GPUs a task takes on each of its ``spread`` devices (0: whole GPUs)."""
        return share_size(self.requests, self.spread)

    @property
    def gpus(self) -> int:
        """Whole GPUs a task takes (0: a share)."""
        return 0 if self.share else gpus_of(self.requests)


@dataclass(frozen=True)
class Slot:
    """Running tasks of one victim job with the same requests on one node (evict-first order).

    ``moves_to``: other nodes whose free room could take one of these tasks, were it moved (docs/snapshot-format.md,
    "Moves").
    """

    node: int
    requests: Resources
    tasks: tuple[str, ...]
    moves_to: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    """The devices each of these tasks' share of a GPU is on (empty: not a share)."""
    order: int | None = None
    """The task order these tasks give (KAI's, docs/rules.md, "Task order"): an elastic victim's surplus goes from the
    slots without an order first, then from the lowest order up; ``None``: none given."""

    @property
    def count(self) -> int:
        return len(self.tasks)

    @property
    def share(self) -> int:
        """Milli-GPUs a task holds on each of its devices (0: whole GPUs)."""
        return self.requests.get("gpu", 0) // len(self.devices) if self.devices else 0

    @property
    def gpus(self) -> int:
        """Whole GPUs a task holds (0: a share)."""
        return 0 if self.devices else gpus_of(self.requests)


MoveMode = Literal["none", "tasks", "whole"]
"""How a victim's tasks may move: not at all, one by one (an elastic job), or all together (a gang)."""


@dataclass(frozen=True)
class Victim:
    """A candidate victim job: it loses all its running tasks (``whole_job``) or up to ``surplus`` of them.

    Its tasks may also be moved (``move``): a gang all together, an elastic job's tasks one by one (it keeps
    ``min_available`` tasks, kept or moved, since at most ``surplus`` are evicted unless all are); no more than
    ``disturb`` tasks in all may be evicted or moved (a protected elastic job: its surplus). A job only the
    reclaim line keeps out of reach may be moved and not evicted (``whole_job`` false, ``surplus`` 0).
    """

    job: str
    queue: str
    priority: int
    whole_job: bool
    surplus: int
    slots: tuple[Slot, ...]
    elapsed_ms: int = 0
    """``now - started_at`` in milliseconds (0 if never started): the lost-work clock."""
    whole_chunk: Resources = field(default_factory=dict)
    """Per resource, the largest chunk of the job evicted whole: its core (``min_available`` tasks) or one surplus
    task (the reclaim line's ``last_chunk`` reading; docs/snapshot-format.md, "Reclaim")."""
    move: MoveMode = "none"
    disturb: int | None = None
    """Most tasks evicted or moved together (``None``: no bound beyond the rules above)."""

    @property
    def running(self) -> int:
        return sum(s.count for s in self.slots)

    def peel_slots(self) -> tuple[int, ...]:
        """The slot of each of its tasks, in the order the job gives up its surplus (docs/rules.md, "Task
        order"); found once per victim."""
        found: tuple[int, ...] | None = self.__dict__.get("_peel_slots")
        if found is None:
            tasks = [(task, s) for s, slot in enumerate(self.slots) for task in slot.tasks]
            order = peel_order([(task, self.slots[s].order) for task, s in tasks])
            found = self.__dict__["_peel_slots"] = tuple(tasks[i][1] for i in order)
        return found

    def may_lose(self, evicted: int) -> bool:
        """Whether it may lose ``evicted`` of its tasks: all of them when evicted whole, else its surplus."""
        return evicted <= self.surplus or (self.whole_job and evicted == self.running)

    @property
    def held(self) -> Resources:
        """What all its running tasks hold, per resource."""
        total: Resources = {}
        for slot in self.slots:
            for r, a in slot.requests.items():
                total[r] = total.get(r, 0) + a * slot.count
        return total


@dataclass(frozen=True)
class LimitRow:
    """``placed[resource] - freed by victims[resource] <= headroom`` for one queue.

    Queue limits (``kind="limit"``), and the deserved quota of non-preemptible
    work (``kind="non-preemptible"``, no victims: victims are preemptible).
    """

    queue: str
    resource: str
    headroom: int
    victims: tuple[int, ...]
    kind: str = "limit"
    bound: int = 0
    """The limit (or deserved quota) itself, for explanations."""


@dataclass(frozen=True)
class GuaranteeRow:
    """The line of one queue in one resource (``threshold``; ``None``: infinite), over the victims under it.

    Read as the problem's ``guarantee_rule`` says (docs/snapshot-format.md, "Reclaim"): ``strict``, every row holds on
    its own,
    ``freed <= max_take``; ``last_chunk``, the rows of one queue hold together when some row's resource is still
    above the line before the last chunk: ``held - freed + last chunk > threshold``. Quota enforcement's rows
    (docs/rules.md, "Quota enforcement") are strict.
    """

    queue: str
    resource: str
    held: int
    threshold: int | None
    kind: str
    victims: tuple[int, ...]

    @property
    def max_take(self) -> int:
        """What ``strict`` lets go: ``held - min(held, threshold)``; nothing under an infinite line."""
        return 0 if self.threshold is None else self.held - min(self.held, self.threshold)


@dataclass(frozen=True)
class SaturationRow:
    """KAI's parent-level saturation rule for a queue ``a`` on the reclaimer's path and its sibling ``s``.

    With ``mine = mine_base - freed(victims_a)`` and ``rest = held_s - freed(victims_s)``,
    a reclaim that takes anything from ``s`` (in this resource, or any at all when the
    reclaimer requests it) is rejected when ``mine / share_a > 1`` and
    ``multiplier * mine / share_a >= rest / share_s`` (docs/rules.md, "The saturation rule").
    """

    a: str
    s: str
    resource: str
    mine_base: int
    victims_a: tuple[int, ...]
    held_s: int
    victims_s: tuple[int, ...]
    share_a: int
    share_s: int
    multiplier: Fraction
    requested: bool


@dataclass(frozen=True)
class Problem:
    """Everything one decision needs; indices refer to ``nodes``, ``chunk`` and ``victims``."""

    job: str
    action: Action | QuotaAction
    nodes: tuple[NodeRoom, ...]
    chunk: tuple[ChunkType, ...]
    victims: tuple[Victim, ...] = ()
    limits: tuple[LimitRow, ...] = ()
    guarantees: tuple[GuaranteeRow, ...] = ()
    saturation: tuple[SaturationRow, ...] = ()
    objective: tuple[RankedCriterion, ...] = ("priority", "jobs", "tasks", "lost_work", "lost_cpu_work")
    keep_order: tuple[int, ...] = ()
    """Victims in the order ties are broken: earlier ones are kept when the objective cannot tell."""
    greedy_order: tuple[int, ...] = ()
    """Victims in the order Kueue's own search takes them (``config.policy: kueue``)."""
    victim_order: VictimOrder | None = None
    """KAI's victim queue over the victims: the order the greedy baseline pops them (docs/rules.md, "The greedy
    baseline")."""
    levels: tuple[int, ...] | None = None
    """Priority levels of the ``priority`` vector; default: the victims' distinct priorities."""
    excess: tuple[LimitRow, ...] = ()
    """Rows to approach rather than satisfy: before the objective, one stage per row, in order, minimises
    the amount by which the row is broken (best-effort quota enforcement, docs/rules.md, "Quota enforcement")."""
    least_freed: tuple[LimitRow, ...] = ()
    """After the objective, one stage per row minimises what the victims free of its resource (quota
    enforcement, docs/rules.md, "Quota enforcement": among equal sets, the one freeing the least beyond the excess)."""
    guarantee_rule: Literal["strict", "last_chunk"] = "strict"
    """How the guarantee rows read (see :class:`GuaranteeRow`)."""
    domains: tuple[int, ...] = ()
    """A ``required`` topology still to choose (docs/rules.md, "Placement"): per node, its domain of the level (-1:
    none); every task placed lies in one domain. Empty: no choice to make (the eligible nodes say where)."""
    spread: tuple[int, ...] = ()
    """A ``preferred`` topology: per node, its domain of the level; after the objective, the decision uses as few
    domains as possible, counting ``spread_held``, those the job's tasks hold already. Empty: none."""
    spread_held: frozenset[int] = frozenset()
    cohort: CohortRows | None = None
    """Under ``config.policy: kueue``: the quota the chunk must fit after the victims go (family ``cohort``)."""
    fair: FairRows | None = None
    """Under Kueue's fair sharing: the shares each victim's queue must keep (family ``cohort``)."""
    placement: tuple[str, str] = ("binpack", "binpack")
    """KAI's node order for tasks with GPUs and without (``config.placement_strategy``): ``binpack`` or ``spread``."""

    def members(self, victims: tuple[int, ...]) -> frozenset[int]:
        """``victims`` as a set, made once per tuple (rows of one queue share theirs)."""
        cache: dict[int, frozenset[int]] = self.__dict__.setdefault("_members", {})
        found = cache.get(id(victims))
        if found is None:
            found = cache[id(victims)] = frozenset(victims)
        return found

    def line_groups(self) -> list[tuple[str, tuple[GuaranteeRow, ...]]]:
        """The guarantee rows by queue, in order: under ``last_chunk`` each group is one disjunction."""
        groups: dict[str, list[GuaranteeRow]] = {}
        for row in self.guarantees:
            groups.setdefault(row.queue, []).append(row)
        return [(queue, tuple(rows)) for queue, rows in groups.items()]

    @property
    def resources(self) -> tuple[str, ...]:
        """Resources the chunk requests: the only ones whose capacity binds."""
        return tuple(sorted({r for t in self.chunk for r, a in t.requests.items() if a > 0}))

    @property
    def priority_levels(self) -> tuple[int, ...]:
        """Distinct candidate priorities, highest first: the positions of the ``priority`` vector."""
        if self.levels is not None:
            return self.levels
        return tuple(sorted({v.priority for v in self.victims}, reverse=True))

    @property
    def required_tasks(self) -> int:
        return sum(t.required for t in self.chunk)


def gpus_of(requests: Resources) -> int:
    """Whole GPUs in a request (all GPU resources together)."""
    return sum(a for r, a in requests.items() if is_gpu_resource(r)) // MILLI


def gpu_milli(requests: Resources) -> int:
    """Milli-GPUs in a request (all GPU resources together; a share counts its part)."""
    return sum(a for r, a in requests.items() if is_gpu_resource(r))


def cpu_milli_without_gpus(requests: Resources) -> int:
    """Milli-CPUs in a request that asks for no GPU (0 for one that does): what ``lost_cpu_work`` weighs."""
    return 0 if gpu_milli(requests) else requests.get("cpu", 0)
