"""The event-driven replay (the scenario format's "How it runs", docs/planning.md).

Simulated time advances through a queue of events (:mod:`.events`), not fixed steps: arrivals, completions, evicted
tasks gone after the grace period, requeue backoffs ended, protections (min-runtime, toleration) expired, scheduled
changes, and samples. Each kind has its handler (:attr:`Simulator.handlers`). A change asks for a scheduling cycle;
cycles run at most once per ``simulation.period`` and only after a change, and only when some job waits.

A cycle is the engine of ``gpu-preempt cycle``: :func:`run_cycle` on a snapshot of the simulated cluster
(:mod:`.replay_cluster`; allocate, reclaim, preempt, enforce-quota when the config enables it, requeue backoff,
nominations).

What a decision does, as docs/rules.md ("Nominations") describes it:

* an ``allocated`` task runs at once; a ``pipelined`` one is ``nominated`` to
  its node and claimed by a later cycle once the victims are gone;
* an evicted task is ``releasing``: it holds its GPUs for ``grace_period``, then
  is pending again; a job evicted whole loses its progress by the restart model
  (:mod:`.progress`) and waits for its requeue backoff; an elastic job that loses
  surplus tasks keeps running, slower;
* a moved task restarts on its new node at once (its pod is re-created): a gang
  loses progress as if evicted, an elastic job does not.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.memo import OutcomeMemo
from gpu_preempt.check.verifier import verify_decisions
from gpu_preempt.models import MILLI, Snapshot
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.scenario import Scenario
from gpu_preempt.state.cluster import ClusterState

from .applied import apply_cycle, leave, schedule_completion
from .decision_log import DecisionLog
from .events import EventQueue, Kind
from .fill_up import FillUpLog
from .ledgers import Counters, Ledgers, invariants
from .progress import SimJob
from .replay_cluster import ReplayCluster
from .usage_history import UsageHistory
from .workload import EPOCH, ReplayInput, StartingJob

__all__ = ["Simulator"]


class Simulator:
    """One replay of a scenario's workload; :meth:`run` returns when every job has finished (or no event is left
    that could change anything: jobs that can never run are then unfinished)."""

    def __init__(
        self,
        scenario: Scenario,
        workload: ReplayInput,
        *,
        dump_at: float | None = None,
        on_cycle: Callable[[float, int, int], None] | None = None,
        event_lines: bool = True,
        memo: bool = True,
        incremental: bool = True,
    ) -> None:
        self.scenario = scenario
        self.settings = scenario.simulation
        self.workload = workload
        config = workload.snapshot.config
        solver = config.solver.model_copy(
            update={
                "time_limit": self.settings.time_limit,
                "seed": self.settings.seed,
                "workers": config.solver.workers if "workers" in config.solver.model_fields_set else 1,
                "clock": "work",  # a replay's trajectory must not depend on the machine or its load
            }
        )
        self.cluster = ReplayCluster(workload, config.model_copy(update={"solver": solver}))
        self.jobs: dict[str, SimJob] = {}
        self.active: dict[str, SimJob] = {}
        self.finished: list[SimJob] = []
        self.now = 0.0
        self.queue = EventQueue()
        self.handlers: dict[Kind, Callable[[Any], None]] = {
            Kind.DONE: self._done,
            Kind.GONE: self._gone,
            Kind.CHANGE: self._change,
            Kind.ARRIVE: self._arrive,
            Kind.WAKE: self._wake,
            Kind.CYCLE: self._cycle,
            Kind.SAMPLE: self._sample,
        }
        self.cycle_at: float | None = None
        self.last_cycle: float | None = None
        self.last_state: ClusterState | None = None
        """The last cycle's end state: the next cycle keeps its per-node results of unchanged nodes."""
        self.shares: dict[str, float] = {}
        self.ledgers = Ledgers(self.cluster.leaves(), workload.span)
        self.log = DecisionLog(lines=event_lines)
        """Every decision's counters and JSON line (``event_lines``); the decisions that changed something."""
        self.cycles = 0
        self.version = 0
        """Counts the events that may have changed the state (the fair shares sampled are kept per version)."""
        self._shares_of: tuple[int, dict[str, float]] | None = None
        self.problems: list[str] = []
        self.dump_at = dump_at
        self.dump: dict[str, Any] | None = None
        self.dump_decisions: list[dict[str, Any]] | None = None
        self.incremental = incremental
        """Whether a cycle starts from the last one's per-node results for the nodes that did not change
        (``False``: every node counted afresh; the replay's files are the same either way)."""
        self.memo = OutcomeMemo() if memo else None
        """The outcomes that stand from cycle to cycle (``memo=False``: every waiting job searched every cycle; the
        replay's files are the same either way)."""
        self.on_cycle = on_cycle
        self.protections = _protection_durations(workload.snapshot)
        self.arrivals = len(workload.jobs)
        """Arrivals still to come."""
        self.arrived = 0
        self.requested = 0
        """Milli-GPUs the arrivals so far ask for."""
        self.fill_log = FillUpLog(sum(self.cluster.capacity.values())) if workload.until is not None else None
        """A fill-up's record, cycle by cycle."""
        self.period = min(self.settings.period, workload.cycle_every or self.settings.period)
        """Seconds between two cycles at least (a fill-up decides each arrival before the next)."""
        self.task_of: dict[str, tuple[str, int]] = {}
        """Task name -> (job, index)."""
        for spec in workload.jobs:
            self.queue.push(spec.submit, Kind.ARRIVE, spec.name)
            self.jobs[spec.name] = SimJob(
                spec, ["pending"] * spec.tasks, [None] * spec.tasks, spec.duration, every=self._checkpoint_every()
            )
            for i in range(spec.tasks):
                self.task_of[f"{spec.name}-{i}"] = (spec.name, i)
        for start in workload.initial:
            self._start(start)
        self.events = [*scenario.events, *workload.events]
        for i, change in enumerate(self.events):
            self.queue.push(change.at, Kind.CHANGE, i)
        self.queue.push(0.0, Kind.SAMPLE)
        timed = self.cluster.config.fair_share_usage
        self.usage = None if timed is None else UsageHistory(timed, _leaves_under(self.cluster.queues))
        """KAI's time-based fair share: the replay's own usage history, given to the queues before each cycle."""
        self.usage_given: dict[str, dict[str, float]] = {}

    @property
    def queues(self) -> list[Any]:
        return self.cluster.queues

    @property
    def capacity(self) -> dict[str, int]:
        return self.cluster.capacity

    @property
    def counters(self) -> Counters:
        return self.ledgers.counters

    @property
    def samples(self) -> list[dict[str, Any]]:
        return self.ledgers.samples

    @property
    def decisions(self) -> list[tuple[float, Decision]]:
        """The decisions that placed, evicted or moved something, with their times."""
        return self.log.changing

    def leaves(self) -> list[str]:
        return self.cluster.leaves()

    def _checkpoint_every(self) -> float:
        """Seconds of progress between a job's checkpoints: what its snapshot's lost-work clock follows."""
        restart = self.settings.restart
        return (restart.interval or 0.0) if restart.model == "checkpoint" else 0.0

    def _start(self, start: StartingJob) -> None:
        """Put a job of the cluster snapshot in place at time 0, with its tasks where the snapshot has them."""
        spec = start.spec
        job = SimJob(
            spec,
            list(start.status),
            list(start.node),
            spec.duration,
            started_at=start.started_at,
            every=self._checkpoint_every(),
        )
        job.requeue, job.order = start.requeue, self.arrived
        self.arrived += 1
        self.jobs[spec.name] = self.active[spec.name] = job
        self.ledgers.changed(spec.name)
        for i in range(spec.tasks):
            self.task_of[f"{spec.name}-{i}"] = (spec.name, i)
            node = job.node[i]
            devices = start.devices[i] if start.devices else None
            if devices is not None:
                job.devices = job.devices or [None] * spec.tasks
                job.devices[i] = devices
            if job.status[i] in ("running", "releasing") and node is not None:
                self.cluster.hold(node, spec.task_resources(i), devices)
        releasing = tuple(i for i, status in enumerate(job.status) if status == "releasing")
        if releasing:
            self.queue.push(self.settings.grace_period, Kind.GONE, (spec.name, releasing))
        if job.running():
            job.first_start = 0.0 if start.started_at is None else start.started_at
            self._schedule_completion(job)
            for d in self.protections:
                if start.started_at is not None and start.started_at + d > 0:
                    self.queue.push(start.started_at + d, Kind.WAKE)
        if job.requeue is not None and job.requeue.requeue_at is not None:
            self.queue.push(max(0.0, job.requeue.requeue_at - EPOCH), Kind.WAKE)
        self.queue.push(0.0, Kind.WAKE)

    # -- the loop -------------------------------------------------------------

    def run(self) -> None:
        # the workload's objects live as long as the replay: keep the cyclic collector from scanning them again and
        # again (they hold no cycles; reference counting frees them)
        gc.collect()
        gc.freeze()
        try:
            self._run()
        finally:
            gc.unfreeze()

    def _run(self) -> None:
        queue, handlers = self.queue, self.handlers
        until = self.workload.until
        while queue.waiting and (self.active or self.arrivals):  # nothing left to run: stop
            at, kind, payload = queue.pop()
            if until is not None and at > until:  # a fill-up: settled after its last arrival
                self._advance(until)
                break
            self._advance(at)
            if kind not in (Kind.WAKE, Kind.SAMPLE):
                self.version += 1
            handlers[kind](payload)
        self._take_sample()
        for job in self.jobs.values():
            job.touch(self.now)

    def _advance(self, at: float) -> None:
        """Integrate the time-weighted figures from the current instant to ``at``."""
        dt = at - self.now
        if dt > 0:
            self.ledgers.advance(dt, self.cluster, self.shares, self.jobs)
            if self.usage is not None:
                self.usage.add(self.now, dt, self.ledgers.resources, self.cluster.totals())
        self.now = at

    def _want_cycle(self) -> None:
        if self.cycle_at is not None:
            return
        at = self.now if self.last_cycle is None else max(self.now, self.last_cycle + self.period)
        self.cycle_at = at
        self.queue.push(at, Kind.CYCLE)

    # -- events -----------------------------------------------------------------

    def _done(self, payload: tuple[str, int]) -> None:
        name, epoch = payload
        job = self.jobs[name]
        if job.epoch != epoch or job.done:
            return
        job.touch(self.now)
        for i, status in enumerate(job.status):
            if status in ("running", "releasing"):
                self._leave(job, i)
            job.status[i] = "done"
        job.finish = self.now
        job.epoch += 1
        self._changed(job)  # a finished job is never in a snapshot again
        del self.active[name]
        self.finished.append(job)
        self._want_cycle()

    def _gone(self, payload: tuple[str, tuple[int, ...]]) -> None:
        name, tasks = payload
        job = self.jobs[name]
        job.touch(self.now)
        for i in tasks:
            if job.status[i] == "releasing":
                self._leave(job, i)
                job.status[i] = "pending"
        self._changed(job)
        self._want_cycle()

    def _change(self, index: int) -> None:
        if self.memo is not None:
            self.memo.clear()  # queues or nodes changed: what the outcomes rest on is not compared across that
        for at in self.cluster.apply(self.events[index], self.now):
            self.queue.push(at, Kind.WAKE)
        self._want_cycle()

    def _arrive(self, name: str) -> None:
        self.arrivals -= 1
        job = self.active[name] = self.jobs[name]
        self.requested += job.spec.gpu_milli
        job.since, job.order = self.now, self.arrived
        self.arrived += 1
        self.ledgers.changed(name)
        self._want_cycle()

    def _wake(self, _: None) -> None:
        self._want_cycle()

    def _sample(self, _: None) -> None:
        self._take_sample()
        self.queue.push(self.now + self.settings.sample_every, Kind.SAMPLE)

    def _cycle(self, _: None) -> None:
        self.cycle_at = None
        waiting = any("pending" in j.status or "nominated" in j.status for j in self.active.values())
        if not waiting and not self.cluster.config.quota_preemption_enabled:
            return
        self.last_cycle = self.now
        self.cycles += 1
        dumping = self.dump_at is not None and self.dump is None and self.now >= self.dump_at
        memo = None if dumping else self.memo  # the dumped cycle lists every decision, as `gpu-preempt cycle` does
        previous = self.last_state if self.incremental else None
        if self.usage is not None:
            self._give_usage()
        result = run_cycle(self.snapshot(), solver=self.settings.solver, previous=previous, memo=memo)
        self.last_state = result.end
        if dumping:
            self.dump = self.document()
            self.dump_decisions = [d.to_dict(timing=False) for d in result.decisions]
        if self.settings.check:
            self.problems += [f"t={self.now:g}: {p}" for p in verify_decisions(result.decisions, result.states)]
        for decision in result.decisions:
            self.log.add(self.now, decision)
        self.log.repeat(result.repeats)
        self.shares = {q: result.start.shares[q].get("gpu", 0) / MILLI for q in self.leaves()}
        apply_cycle(self, result)
        if self.fill_log is not None:
            self.fill_log.cycles.append((self.now, self.arrived, self.requested, sum(self.cluster.used.values())))
        if self.settings.check:
            self.problems += [f"t={self.now:g}: {p}" for p in self.invariants()]
        if self.on_cycle is not None:
            self.on_cycle(self.now, len(self.finished), len(self.jobs))

    def _give_usage(self) -> None:
        """Each queue's usage from the replay's history, as KAI's usage database gives it to the scheduler."""
        assert self.usage is not None
        found = self.usage.usage(self.now)
        if found == self.usage_given:
            return
        self.usage_given = found
        self.cluster.set_usage(found)
        if self.memo is not None:
            self.memo.clear()  # fair shares moved: what the outcomes rest on is not compared across that

    # -- bookkeeping ----------------------------------------------------------------

    def _leave(self, job: SimJob, task: int) -> None:
        leave(self.cluster, job, task)

    def _schedule_completion(self, job: SimJob) -> None:
        schedule_completion(self.queue, self.now, job)

    def _changed(self, job: SimJob) -> None:
        job.changed()
        self.ledgers.changed(job.spec.name)

    # -- state and figures ----------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The simulated cluster now, as the engine sees it."""
        return self.cluster.snapshot(self.now, self.active.values())

    def document(self) -> dict[str, Any]:
        """The simulated cluster now, as a snapshot document (what ``--dump-at`` writes)."""
        return self.cluster.document(self.now, self.active.values())

    def queue_gpus(self) -> tuple[dict[str, int], dict[str, int]]:
        """GPUs per leaf queue: held by running tasks, and wanted (held + pending and nominated tasks)."""
        return self.ledgers.queue_gpus(self.jobs)

    def _take_sample(self) -> None:
        # fair shares as a scheduler would compute them now (cycles only run while jobs wait)
        if self._shares_of is None or self._shares_of[0] != self.version:
            shares = ClusterState.of(self.snapshot(), self.last_state).shares
            self._shares_of = (self.version, {q: shares[q].get("gpu", 0) / MILLI for q in self.leaves()})
        self.shares = self._shares_of[1]
        self.ledgers.sample(self.now, self.cluster, self.shares, self.jobs)

    def invariants(self) -> list[str]:
        """Broken invariants of the simulated state (checking mode): capacity, gangs."""
        return invariants(self.cluster, self.active)


def _leaves_under(queues: list[Any]) -> dict[str, list[str]]:
    """Each queue -> the leaf queues under it (itself for a leaf)."""
    children: dict[str, list[str]] = {}
    for queue in queues:
        if queue.parent is not None:
            children.setdefault(queue.parent, []).append(queue.name)

    def leaves(name: str) -> list[str]:
        below = children.get(name)
        return [name] if not below else [leaf for child in below for leaf in leaves(child)]

    return {queue.name: leaves(queue.name) for queue in queues}


def _protection_durations(snapshot: Snapshot) -> list[float]:
    """Every positive min-runtime and toleration duration: when one ends, a protected job may become a victim."""
    config = snapshot.config
    found = {config.preempt_min_runtime, config.reclaim_min_runtime}
    for queue in snapshot.queues:
        found |= {queue.preempt_min_runtime or 0.0, queue.reclaim_min_runtime or 0.0}
    for pclass in snapshot.priority_classes:
        toleration = pclass.toleration
        if toleration is not None and toleration.toleration_seconds > 0:
            found.add(toleration.toleration_seconds)
    return sorted(d for d in found if 0 < d < float("inf"))
