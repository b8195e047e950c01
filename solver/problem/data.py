"""One decision, stated without any solver: what to place, what may be evicted, and the rows that bind them.

The job solver (:mod:`gpu_preempt.actions.job_solver`) builds a :class:`Problem` from the
cluster state and the rules; the CP-SAT model (:mod:`gpu_preempt.cpsat`), the greedy
baseline (:mod:`gpu_preempt.actions.greedy`) and the exhaustive search of the tests all read
it, and all answer with a :class:`Solution`.

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

from gpu_preempt.models import MILLI, Criterion, Resources, is_gpu_resource
from gpu_preempt.rules.kai_victim_queue import VictimOrder, peel_order
from gpu_preempt.state.cohorts import CohortQuotas

__all__ = [
    "S2A",
    "S2B",
    "Action",
    "ChunkType",
    "CohortRows",
    "DeviceFit",
    "Devices",
    "FairRows",
    "GuaranteeRow",
    "LimitRow",
    "MoveMode",
    "NodeRoom",
    "Problem",
    "QuotaAction",
    "SaturationRow",
    "Slot",
    "Solution",
    "Status",
    "Victim",
    "assign_devices",
    "at_most",
    "below",
    "broken_rows",
    "chunk_size",
    "could_fit",
    "device_fits",
    "devices_broken",
    "excess_of",
    "freed",
    "freed_on_devices",
    "gpu_milli",
    "gpus_of",
    "line_allows",
    "lost_work",
    "objective_values",
    "placed_amount",
    "placed_domains",
    "saturation_rejects",
    "share_size",
    "spread_of",
    "task_devices",
    "topology_broken",
    "victim_freed",
]

Action = Literal["allocate", "preempt", "reclaim"]
QuotaAction = Literal["enforce-quota"]
"""The action of a decision for a queue rather than a job (docs/rules.md, "Quota enforcement")."""
Status = Literal["optimal", "feasible", "infeasible", "unknown"]


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
class CohortRows:
    """Kueue's quota for one preemptor (docs/rules.md, "Kueue's preemption"): after the victims go, the chunk fits
    what its ClusterQueue ``queue`` has available (``quotas``, evaluated with each ClusterQueue's usage less what its
    victims free), in one of the attempts ``modes`` allows: with borrowing (``True``), or without, when the queue
    also ends within its nominal quota. A victim of ``while_nominal`` may go only in an attempt without borrowing.
    """

    quotas: CohortQuotas
    queue: str
    victims: dict[str, tuple[int, ...]]
    """Per ClusterQueue, the victims in it."""
    modes: tuple[bool, ...] = (True,)
    while_nominal: tuple[int, ...] = ()

    def fits(self, freed: dict[int, Resources], placed: Resources, *, borrowing: bool) -> bool:
        """Whether ``placed`` fits once the victims free ``freed`` (per victim), in the attempt ``borrowing``."""
        used = {queue: dict(amounts) for queue, amounts in self.quotas.used.items()}
        for queue, members in self.victims.items():
            for v in members:
                for r, a in freed.get(v, {}).items():
                    used.setdefault(queue, {})[r] = used.get(queue, {}).get(r, 0) - a
        return self.quotas.with_used(used).fits(self.queue, placed, borrowing=borrowing)

    def available_after(self, freed: dict[int, Resources], resource: str) -> int:
        """What the preemptor's ClusterQueue has available of ``resource`` once ``freed`` is freed."""
        used = {queue: dict(amounts) for queue, amounts in self.quotas.used.items()}
        for queue, members in self.victims.items():
            for v in members:
                amount = freed.get(v, {}).get(resource, 0)
                used.setdefault(queue, {})[resource] = used.get(queue, {}).get(resource, 0) - amount
        return max(0, self.quotas.with_used(used).available(self.queue, resource))

    def allows(self, freed: dict[int, Resources], placed: Resources) -> bool:
        """Whether some attempt ``modes`` allows admits ``placed`` once ``freed`` is freed."""
        taken = {v for v, amounts in freed.items() if any(a > 0 for a in amounts.values())}
        return any(
            self.fits(freed, placed, borrowing=borrowing)
            for borrowing in self.modes
            if not (borrowing and taken & set(self.while_nominal))
        )


S2A, S2B = "LessThanOrEqualToFinalShare", "LessThanInitialShare"


@dataclass(frozen=True)
class FairRows:
    """Kueue's fair sharing for one preemptor (docs/rules.md, "Kueue's fair sharing"). Once the victims go and the
    chunk is added to ClusterQueue ``queue``: if the queue then borrows in no resource of ``needs``, any victim may go;
    otherwise each other ClusterQueue losing victims passes one of ``strategies``, comparing the shares of the pair
    ``pairs[t]`` (the children of their lowest common ancestor on the preemptor's and the target's side):
    ``LessThanOrEqualToFinalShare``, the preemptor's share at most the target's after; ``LessThanInitialShare``,
    below the target's before its last victim goes (one victim only when it is the sole strategy)."""

    quotas: CohortQuotas
    queue: str
    victims: dict[str, tuple[int, ...]]
    pairs: dict[str, tuple[str, str]]
    weights: dict[str, Fraction]
    strategies: tuple[str, ...]
    needs: tuple[str, ...]
    resources: tuple[str, ...]
    """The resources shares are counted in: every resource of a quota."""

    def state(self, freed: dict[int, Resources], placed: Resources, back: int | None = None) -> CohortQuotas:
        """The quota once ``freed`` is freed (but ``back``'s part) and ``placed`` is added to the queue."""
        used = {queue: dict(amounts) for queue, amounts in self.quotas.used.items()}
        for queue, members in self.victims.items():
            for v in members:
                if v == back:
                    continue
                for r, a in freed.get(v, {}).items():
                    used.setdefault(queue, {})[r] = used.get(queue, {}).get(r, 0) - a
        for r, a in placed.items():
            used.setdefault(self.queue, {})[r] = used.get(self.queue, {}).get(r, 0) + a
        return self.quotas.with_used(used)

    def share(self, quotas: CohortQuotas, queue: str) -> int | None:
        return quotas.share(queue, self.weights.get(queue, Fraction(1)), self.resources)

    def allows(self, freed: dict[int, Resources], placed: Resources) -> bool:
        after = self.state(freed, placed)
        nominal = self.quotas.nominal.get(self.queue, {})
        if all(after.usage(self.queue, r) <= nominal.get(r, 0) for r in self.needs):
            return True  # Kueue's FairSharingPreemptWithinNominal
        for target, members in self.victims.items():
            taken = [v for v in members if any(a > 0 for a in freed.get(v, {}).values())]
            if target == self.queue or not taken:
                continue
            mine, theirs = self.pairs[target]
            ours = self.share(after, mine)
            if S2A in self.strategies and at_most(ours, self.share(after, theirs)):
                continue
            lasts = taken if S2A in self.strategies or len(taken) == 1 else []
            if S2B in self.strategies and any(
                below(ours, self.share(self.state(freed, placed, back=w), theirs)) for w in lasts
            ):
                continue
            return False
        return True


def at_most(a: int | None, b: int | None) -> bool:
    """``a <= b`` between shares, ``None`` being infinite."""
    return b is None or (a is not None and a <= b)


def below(a: int | None, b: int | None) -> bool:
    """``a < b`` between shares, ``None`` being infinite."""
    return a is not None and (b is None or a < b)


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
    objective: tuple[Criterion, ...] = ("priority", "jobs", "tasks", "lost_work")
    keep_order: tuple[int, ...] = ()
    """Victims in the order ties are broken: earlier ones are kept when the objective cannot tell."""
    greedy_order: tuple[int, ...] = ()
    """Victims in the order Kueue's own search takes them (``config.policy: kueue``)."""
    victim_order: VictimOrder | None = None
    """KAI's victim queue over the victims: the order the greedy baseline pops them (docs/rules.md, "The greedy
    baseline")."""
    time_limit: float = 1.0
    workers: int = 0
    seed: int = 0
    clock: Literal["wall", "work"] = "wall"
    """``work``: ``time_limit`` counts CP-SAT's deterministic time, searched by one worker (``config.solver.clock``)."""
    levels: tuple[int, ...] | None = None
    """Priority levels of the ``priority`` vector; default: the victims' distinct priorities."""
    full_linearization: bool = False
    """Give CP-SAT's LP every constraint (``linearization_level`` 2). Victim choices without a chunk to place
    (quota enforcement) are covering problems whose optimum is proved by the LP bound; with the default level
    and one or two workers CP-SAT may not prove even a trivial one on a thousand candidates."""
    light_presolve: bool = False
    """One presolve pass, without probing or symmetry detection, and a search without inprocessing or cuts, its LP
    given every row at once. On models of a few dozen victims, solved several times each (stages, then the
    canonical tie-break), these cost more than the search they save (``benchmarks/small_models.py``)."""
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


@dataclass
class Solution:
    """An answer to a :class:`Problem`: counts per (victim, slot) evicted and per (type, node) placed."""

    status: Status
    evicted: dict[tuple[int, int], int] = field(default_factory=dict)
    placed: dict[tuple[int, int], int] = field(default_factory=dict)
    reason: str = ""
    stages: list[str] = field(default_factory=list)
    moved: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """Tasks of (victim, slot) moved to node ``n``: ``(v, s, n) -> count`` (docs/snapshot-format.md, "Moves")."""
    devices: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """Shares of type ``t`` placed on device ``d`` of node ``n``: ``(t, n, d) -> count`` (docs/snapshot-format.md,
    "GPU sharing"); their sum over ``d`` is ``placed[t, n]`` times the type's ``spread``, none above ``placed[t, n]``
    (each task on distinct devices: :func:`task_devices`)."""
    moved_devices: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    """Shares of (victim, slot) moved to device ``d`` of node ``n``: ``(v, s, n, d) -> count``; their sum over ``d``
    is ``moved[v, s, n]``."""

    @property
    def feasible(self) -> bool:
        return self.status in ("optimal", "feasible")

    def evicted_of(self, victim: int) -> int:
        return sum(n for (v, _), n in self.evicted.items() if v == victim)

    def victims(self) -> list[int]:
        return sorted({v for (v, _), n in self.evicted.items() if n > 0})

    def placed_count(self) -> int:
        return sum(self.placed.values())

    def moved_of(self, victim: int, slot: int) -> int:
        return sum(n for (v, s, _), n in self.moved.items() if (v, s) == (victim, slot))

    def moves(self) -> int:
        return sum(self.moved.values())


def placed_domains(problem: Problem, solution: Solution, domains: tuple[int, ...]) -> set[int]:
    """The domains (of ``domains``, per node) where ``solution`` places tasks."""
    return {domains[n] for (_, n), count in solution.placed.items() if count > 0}


def topology_broken(problem: Problem, solution: Solution) -> str | None:
    """Why ``solution`` breaks the problem's placement (a task on a node it may not use, or a required topology
    split across domains), or ``None``."""
    for (_, n), count in solution.placed.items():
        if count > 0 and not problem.nodes[n].eligible:
            return f"tasks placed on {problem.nodes[n].name}, which the job may not use"
    if problem.domains:
        used = placed_domains(problem, solution, problem.domains)
        if len(used) > 1 or -1 in used:
            return "the tasks placed lie in more than one domain of the required topology level"
    return None


def spread_of(problem: Problem, solution: Solution) -> int:
    """How many domains of the preferred level the job uses after ``solution`` (0 without a preferred level)."""
    if not problem.spread:
        return 0
    return len(problem.spread_held | placed_domains(problem, solution, problem.spread))


def could_fit(problem: Problem) -> bool:
    """Whether the chunk's required tasks could fit even if every task a victim may give up left its node: on
    each eligible node, its room plus the tasks of victims there that could be evicted (up to the victim's
    budget: all its tasks, or its surplus) or moved (a slot with somewhere to go), each kind of task counted
    alone. A relaxation of the model (limits, the reclaim line, saturation, moves' landing room and the topology
    left out), so ``False`` proves that no answer places the chunk.

    A move that can only land on nodes the chunk may use, of a task that asks for ``m`` times what a chunk task
    asks, frees nothing: it makes room for ``m`` chunk tasks where it leaves and takes room for ``m`` where it
    lands. Such tasks are counted only as far as they could be evicted.

    >>> from gpu_preempt.problem.data import ChunkType, NodeRoom, Problem
    >>> node = NodeRoom("n0", room={"gpu": 4}, now_room={"gpu": 4})
    >>> chunk = (ChunkType({"gpu": 8}, ("t0",), required=1),)
    >>> could_fit(Problem("j", "reclaim", nodes=(node,), chunk=chunk, victims=()))
    False
    """
    leaving: dict[int, list[tuple[Slot, int, bool]]] = {}
    for victim in problem.victims:
        budget = victim.running if victim.whole_job else victim.surplus
        for slot in victim.slots:
            movable = victim.move != "none" and bool(slot.moves_to)
            leaving.setdefault(slot.node, []).append((slot, min(slot.count, budget), movable))
    for chunk in problem.chunk:
        asked = [(r, a) for r, a in chunk.requests.items() if a > 0]
        if not chunk.required or not asked:
            continue
        fits = 0
        for n, node in enumerate(problem.nodes):
            if not node.eligible:
                continue
            room = dict(node.room)
            for slot, evictable, movable in leaving.get(n, ()):
                count = slot.count if movable and not _swaps_room(problem, slot, asked) else evictable
                for r, a in slot.requests.items():
                    room[r] = room.get(r, 0) + a * count
            fits += min(room.get(r, 0) // a for r, a in asked)
            if fits >= chunk.required:
                break
        if fits < chunk.required:
            return False
    return True


def _swaps_room(problem: Problem, slot: Slot, asked: list[tuple[str, int]]) -> bool:
    """Whether moving a task of ``slot`` frees no room for tasks asking ``asked``: it lands only on nodes the chunk
    may use, and asks for the same whole multiple of each resource ``asked`` names (see :func:`could_fit`)."""
    if not all(problem.nodes[m].eligible for m in slot.moves_to):
        return False
    first, amount = asked[0]
    times, rest = divmod(slot.requests.get(first, 0), amount)
    return times >= 1 and rest == 0 and all(slot.requests.get(r, 0) == times * a for r, a in asked)


def gpus_of(requests: Resources) -> int:
    """Whole GPUs in a request (all GPU resources together)."""
    return sum(a for r, a in requests.items() if is_gpu_resource(r)) // MILLI


def gpu_milli(requests: Resources) -> int:
    """Milli-GPUs in a request (all GPU resources together; a share counts its part)."""
    return sum(a for r, a in requests.items() if is_gpu_resource(r))


def lost_work(problem: Problem, solution: Solution) -> int:
    """Progress the evicted and moved tasks lose, in milli-GPU-milliseconds: their GPUs (a share its part) times
    the time since their job's last checkpoint or start (``elapsed_ms``)."""
    lost = 0
    for (v, s), n in solution.evicted.items():
        lost += n * gpu_milli(problem.victims[v].slots[s].requests) * problem.victims[v].elapsed_ms
    for (v, s, _), n in solution.moved.items():
        lost += n * gpu_milli(problem.victims[v].slots[s].requests) * problem.victims[v].elapsed_ms
    return lost


def objective_values(problem: Problem, solution: Solution) -> dict[str, object]:
    """The spec's objective of a solution, computed from the counts alone (no solver).

    ``priority`` is the vector of victim-job counts per priority level (highest
    first), ``jobs`` the victim jobs, ``tasks`` the evicted tasks, ``lost_work``
    the GPU-seconds of progress lost.
    """
    victims = solution.victims()
    per_level = [sum(1 for v in victims if problem.victims[v].priority == p) for p in problem.priority_levels]
    out: dict[str, object] = {
        "priority": per_level,
        "jobs": len(victims),
        "tasks": sum(solution.evicted.values()),
        "lost_work": lost_work(problem, solution) / 1_000_000,
    }
    if solution.moved:
        out["moves"] = solution.moves()
    if problem.spread:
        out["domains"] = spread_of(problem, solution)
    return out


def freed(problem: Problem, solution: Solution, victims: tuple[int, ...], resource: str) -> int:
    """Amount of ``resource`` the solution takes from ``victims``."""
    wanted = problem.members(victims)
    return sum(
        n * problem.victims[v].slots[s].requests.get(resource, 0)
        for (v, s), n in solution.evicted.items()
        if v in wanted
    )


def placed_amount(problem: Problem, solution: Solution, resource: str) -> int:
    return sum(n * problem.chunk[t].requests.get(resource, 0) for (t, _), n in solution.placed.items())


def excess_of(problem: Problem, solution: Solution, row: LimitRow) -> int:
    """By how much ``solution`` breaks ``row`` (0 when it holds)."""
    over = placed_amount(problem, solution, row.resource) - freed(problem, solution, row.victims, row.resource)
    return max(0, over - row.headroom)


def broken_rows(problem: Problem, solution: Solution) -> list[str]:
    """Rows of ``problem`` that ``solution`` breaks (exact integer arithmetic, no solver)."""
    broken: list[str] = []
    for row in problem.limits:
        if (
            placed_amount(problem, solution, row.resource) - freed(problem, solution, row.victims, row.resource)
            > row.headroom
        ):
            broken.append(f"{row.kind} of queue {row.queue} ({row.resource})")
    if problem.guarantee_rule == "strict":
        for g in problem.guarantees:
            if freed(problem, solution, g.victims, g.resource) > g.max_take:
                broken.append(f"guarantee of queue {g.queue} ({g.resource})")
    else:
        for queue, rows in problem.line_groups():
            if line_allows(problem, solution, rows) is None:
                broken.append(f"guarantee of queue {queue} (at or below its line before the last chunk)")
    taken = set(solution.victims())
    for sat in problem.saturation:
        freed_s = freed(problem, solution, sat.victims_s, sat.resource)
        involved = bool(taken & set(sat.victims_s)) if sat.requested else freed_s > 0
        if not involved:
            continue
        mine = sat.mine_base - freed(problem, solution, sat.victims_a, sat.resource)
        rest = sat.held_s - freed_s
        if saturation_rejects(mine, sat.share_a, rest, sat.share_s, sat.multiplier):
            broken.append(f"saturation of queue {sat.a} against {sat.s} ({sat.resource})")
    cohort = problem.cohort
    if cohort is not None:
        freed_by = {v: victim_freed(problem, solution, v) for v in taken}
        placed = {r: placed_amount(problem, solution, r) for r in problem.resources}
        if not cohort.allows(freed_by, placed):
            broken.append(f"cohort quota of ClusterQueue {cohort.queue}")
        if problem.fair is not None and not problem.fair.allows(freed_by, placed):
            broken.append(f"cohort fair sharing of ClusterQueue {cohort.queue}")
    return broken


def victim_freed(problem: Problem, solution: Solution, victim: int) -> Resources:
    """What ``victim`` frees in ``solution``, per resource."""
    out: Resources = {}
    for (v, s), n in solution.evicted.items():
        if v == victim and n > 0:
            for r, a in problem.victims[v].slots[s].requests.items():
                out[r] = out.get(r, 0) + a * n
    return out


def chunk_size(problem: Problem, solution: Solution, victim: int, resource: str) -> int:
    """The largest chunk ``victim`` loses in ``solution``, in ``resource``: its whole-job chunk when it loses every
    running task, else one peeled task (0 when it loses nothing)."""
    counts = {s: n for (v, s), n in solution.evicted.items() if v == victim and n > 0}
    return _largest_chunk(problem.victims[victim], counts, resource)


def _largest_chunk(spec: Victim, counts: dict[int, int], resource: str) -> int:
    if not counts:
        return 0
    if sum(counts.values()) == spec.running and spec.whole_job:
        return spec.whole_chunk.get(resource, 0)
    return max(spec.slots[s].requests.get(resource, 0) for s in counts)


def line_allows(problem: Problem, solution: Solution, rows: tuple[GuaranteeRow, ...]) -> str | None:
    """``last_chunk`` for one queue's rows: the resource still above the line before the last chunk (``None``:
    none is, so the set may not be taken). A queue that loses nothing needs no resource: ``""``.

    Walks the solution's evictions, not the queue's candidates (a large queue has hundreds of thousands).
    """
    members = problem.members(rows[0].victims)
    taken: dict[int, dict[int, int]] = {}
    for (v, s), n in solution.evicted.items():
        if n > 0 and v in members:
            taken.setdefault(v, {})[s] = n
    if not taken:
        return ""
    for row in rows:
        last = max(_largest_chunk(problem.victims[v], counts, row.resource) for v, counts in taken.items())
        gone = sum(
            n * problem.victims[v].slots[s].requests.get(row.resource, 0)
            for v, counts in taken.items()
            for s, n in counts.items()
        )
        if row.threshold is not None and row.held - gone + last > row.threshold:
            return row.resource
    return None


def saturation_rejects(mine: int, share_a: int, rest: int, share_s: int, multiplier: Fraction) -> bool:
    """KAI's saturation rule: reject iff ``mine/share_a > 1``, ``share_s > 0`` and
    ``multiplier * mine/share_a >= rest/share_s``.

    A zero ``share_a`` makes the ratio infinite when ``mine > 0`` (and 0 otherwise).
    """
    if share_s <= 0:
        return False
    if share_a == 0:
        return mine > 0
    ratio_a = Fraction(mine, share_a)
    return ratio_a > 1 and multiplier * ratio_a >= Fraction(rest, share_s)


def task_devices(counts: list[int], tasks: int) -> list[tuple[int, ...]]:
    """The devices of each of ``tasks`` tasks whose shares take device ``d`` ``counts[d]`` times: the devices listed
    in order, each as often as it is taken, dealt to the tasks in turn. A device taken at most ``tasks`` times goes to
    distinct tasks, so each task's devices are distinct.

    >>> task_devices([2, 1, 1], 2)
    [(0, 1), (0, 2)]
    """
    listed = [d for d, count in enumerate(counts) for _ in range(count)]
    return [tuple(sorted(listed[i::tasks])) for i in range(tasks)] if tasks else []


class DeviceFit:
    """The devices of one node after a solution's evictions, filled task by task (docs/snapshot-format.md, "GPU
    sharing"): a share goes to the first devices that carry shares and have room for it, then to the first empty
    devices (shares packed together, whole devices kept free), as many as it is spread over; a task of ``w`` whole
    GPUs takes ``w`` empty devices.

    >>> fit = DeviceFit(Devices(count=3, whole=0, shares=(600, 0, 0)))
    >>> fit.take_share(300), fit.take_share(300, 2), fit.take_whole(1)
    ((0,), (1, 2), False)
    """

    def __init__(self, devices: Devices, freed_shares: dict[int, int] | None = None, freed_whole: int = 0) -> None:
        self.count = devices.count
        self.shares = list(devices.shares) + [0] * (devices.count - len(devices.shares))
        for d, amount in (freed_shares or {}).items():
            self.shares[d] -= amount
        self.whole = devices.whole - freed_whole

    def empty(self) -> int:
        return self.count - self.whole - sum(1 for a in self.shares if a)

    def capacity(self, share: int, gpus: int, spread: int = 1) -> int:
        """How many tasks of ``share`` milli-GPUs on each of ``spread`` devices (0: none), else of ``gpus`` whole GPUs,
        the devices take (for one size of share, the most there is room for: ``m`` tasks fit when the devices, each
        taken at most ``m`` times, give ``m * spread`` places).

        >>> DeviceFit(Devices(count=3, whole=1, shares=(600, 0, 0))).capacity(300, 0)
        4
        >>> DeviceFit(Devices(count=3, whole=0, shares=(400, 0, 0))).capacity(500, 0, 2)
        2
        """
        if share:
            places = [(MILLI - a) // share for a in self.shares if a] + [MILLI // share] * max(0, self.empty())
            if spread == 1:
                return sum(places)
            m = 0
            while sum(min(m + 1, p) for p in places) >= (m + 1) * spread:
                m += 1
            return m
        return self.empty() // gpus if gpus else 1 << 62

    def can_take(self, share: int, gpus: int, spread: int = 1) -> bool:
        """Whether a task of ``share`` milli-GPUs on each of ``spread`` devices (0: none), else of ``gpus`` whole GPUs,
        fits."""
        if share:
            return sum(1 for a in self.shares if a and a + share <= MILLI) + max(0, self.empty()) >= spread
        return self.empty() >= gpus

    def take_share(self, amount: int, spread: int = 1) -> tuple[int, ...] | None:
        """The devices the share goes to (``None``: too few have room)."""
        fitting = [d for d, a in enumerate(self.shares) if a and a + amount <= MILLI]
        if len(fitting) < spread:
            empty = [d for d, a in enumerate(self.shares) if not a]
            fitting += empty[: min(spread - len(fitting), max(0, self.empty()))]
        if len(fitting) < spread:
            return None
        devices = tuple(sorted(fitting[:spread]))
        for d in devices:
            self.shares[d] += amount
        return devices

    def take_whole(self, gpus: int) -> bool:
        if self.empty() < gpus:
            return False
        self.whole += gpus
        return True

    def holds(self) -> bool:
        """Whether the devices hold what they carry (every device at most one GPU, whole and shared devices within
        the count)."""
        return all(a <= MILLI for a in self.shares) and self.empty() >= 0


def freed_on_devices(problem: Problem, solution: Solution) -> dict[int, tuple[dict[int, int], int]]:
    """Per node, the shares (per device) and the whole devices that the tasks ``solution`` evicts or moves free
    there, less what the moved tasks take where they land (negative amounts)."""
    found: dict[int, tuple[dict[int, int], int]] = {}

    def shift(n: int, devices: tuple[int, ...], share: int, gpus: int, count: int) -> None:
        if not count or problem.nodes[n].devices is None:
            return
        shares, whole = found.get(n, ({}, 0))
        for device in devices:
            shares[device] = shares.get(device, 0) + share * count
        whole += gpus * count
        found[n] = (shares, whole)

    for (v, s), count in solution.evicted.items():
        slot = problem.victims[v].slots[s]
        shift(slot.node, slot.devices, slot.share, slot.gpus, count)
    for (v, s, n), count in solution.moved.items():
        slot = problem.victims[v].slots[s]
        shift(slot.node, slot.devices, slot.share, slot.gpus, count)
        if not slot.devices:
            shift(n, (), 0, slot.gpus, -count)
    for (v, s, n, d), count in solution.moved_devices.items():
        shift(n, (d,), problem.victims[v].slots[s].share, 0, -count)
    return found


def device_fits(problem: Problem, solution: Solution) -> dict[int, DeviceFit]:
    """A :class:`DeviceFit` per node with devices, after ``solution``'s evictions and moves."""
    freed = freed_on_devices(problem, solution)
    counted: tuple[tuple[int, Devices], ...] | None = problem.__dict__.get("_devices")
    if counted is None:  # found once per problem: most nodes of a large one count no devices
        counted = problem.__dict__["_devices"] = tuple(
            (n, node.devices) for n, node in enumerate(problem.nodes) if node.devices is not None
        )
    return {n: DeviceFit(devices, *freed.get(n, ({}, 0))) for n, devices in counted}


def assign_devices(problem: Problem, solution: Solution) -> dict[tuple[int, int, int], int] | None:
    """The devices of the shares ``solution`` places, filled by :class:`DeviceFit` (types in order), or ``None`` when
    that fill does not hold them all (the devices may still hold them packed otherwise)."""
    fits = device_fits(problem, solution)
    out: dict[tuple[int, int, int], int] = {}
    shares_first = sorted(solution.placed.items(), key=lambda item: (not problem.chunk[item[0][0]].share, item[0]))
    for (t, n), count in shares_first:
        fit = fits.get(n)
        if fit is None or not count:
            continue
        chunk = problem.chunk[t]
        if chunk.share:
            for _ in range(count):
                devices = fit.take_share(chunk.share, chunk.spread)
                if devices is None:
                    return None
                for device in devices:
                    out[t, n, device] = out.get((t, n, device), 0) + 1
        elif not fit.take_whole(chunk.gpus * count):
            return None
    return out


def devices_broken(problem: Problem, solution: Solution) -> str | None:
    """Why ``solution``'s devices do not hold what it places (docs/snapshot-format.md, "GPU sharing"), or ``None``:
    every share placed on a node with devices names its devices (distinct for each task), and after the evictions
    every device holds at most one GPU and the whole GPUs fit the devices left empty."""
    fits = device_fits(problem, solution)
    named: dict[tuple[int, int], int] = {}
    for (t, n, d), count in solution.devices.items():
        named[t, n] = named.get((t, n), 0) + count
        fits[n].shares[d] += problem.chunk[t].share * count
        if count > solution.placed.get((t, n), 0):
            tasks = solution.placed.get((t, n), 0)
            return f"device {d} of {problem.nodes[n].name} takes {count} share(s) of {tasks} task(s)"
    for (t, n), count in solution.placed.items():
        fit = fits.get(n)
        if fit is None or not count:
            continue
        chunk = problem.chunk[t]
        if chunk.share:
            if named.get((t, n), 0) != count * chunk.spread:
                return f"{count} share(s) placed on {problem.nodes[n].name} name {named.get((t, n), 0)} device(s)"
        else:
            fit.whole += chunk.gpus * count
    for n, fit in fits.items():
        if not fit.holds():
            return f"the devices of {problem.nodes[n].name} do not hold what the decision leaves on them"
    return None
