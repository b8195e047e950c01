"""The event-driven replay (spec simulate-v1, "How it runs").

Simulated time advances through a heap of events, not fixed steps: arrivals,
completions, evicted tasks gone after the grace period, requeue backoffs
ended, protections (min-runtime, toleration) expired, scheduled changes, and
samples. A change asks for a scheduling cycle; cycles run at most once per
``simulation.period`` and only after a change, and only when some job waits.

A cycle is the engine of ``gpu-preempt cycle``: :func:`run_cycle` on a
snapshot of the simulated cluster (allocate, reclaim, preempt, enforce-quota
when the config enables it, requeue backoff, nominations). The snapshot is
assembled from the jobs' cached models, rebuilt only for jobs that changed;
:meth:`Simulator.document` gives the same state as a snapshot document
(``--dump-at``), which ``gpu-preempt cycle`` decides identically.

What a decision does, as seed 004 describes it:

* an ``allocated`` task runs at once; a ``pipelined`` one is ``nominated`` to
  its node and claimed by a later cycle once the victims are gone;
* an evicted task is ``releasing``: it holds its GPUs for ``grace_period``, then
  is pending again; a job evicted whole loses its progress by the restart model
  (all of it, or what came after its last checkpoint) and waits for its requeue
  backoff; an elastic job that loses surplus tasks keeps running, slower;
* a moved task restarts on its new node at once (its pod is re-created): a gang
  loses progress as if evicted, an elastic job does not.

Progress: a job's work is its trace duration at full width (plus the restart
overhead after each eviction); it advances at the share of the job's GPUs that
are running.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpu_preempt.actions.cycle import CycleResult, run_cycle
from gpu_preempt.check.verifier import verify_decisions
from gpu_preempt.models import MILLI, Job, Node, Queue, RequeueState, Snapshot, format_quantity
from gpu_preempt.models.decision import Decision, requeue_dict
from gpu_preempt.models.scenario import Scenario
from gpu_preempt.state.cluster import Cluster

from .decision_log import DecisionLog
from .workload import EPOCH, JobSpec, StartingJob, Workload, node_documents

# event kinds, in the order they are handled at equal times
DONE, GONE, CHANGE, ARRIVE, WAKE, CYCLE, SAMPLE = range(7)


@dataclass
class SimJob:
    """A job of the workload during the replay."""

    spec: JobSpec
    status: list[str]
    node: list[str | None]
    work: float
    progress: float = 0.0
    since: float = 0.0
    started_at: float | None = None
    first_start: float | None = None
    finish: float | None = None
    evictions: int = 0
    moves: int = 0
    lost: float = 0.0
    """GPU-seconds of progress lost to evictions and moves."""
    lost_to_moves: float = 0.0
    """The part of ``lost`` that moves lost (a moved gang restarts)."""
    held: float = 0.0
    """GPU-seconds its tasks held nodes (running or releasing)."""
    requeue: RequeueState | None = None
    epoch: int = 0
    order: int = 0
    """Arrival order: changed jobs are handled in it, as they would be in a walk over the active jobs."""
    model: Job | None = None
    sums: tuple[int, int, int] | None = None
    """GPUs of its running, releasing and waiting (pending or nominated) tasks; ``None`` until counted again."""

    def gpus(self, *statuses: str) -> int:
        return sum(g for g, s in zip(self.spec.task_gpus, self.status, strict=True) if s in statuses)

    def counts(self) -> tuple[int, int, int]:
        """GPUs of its running, releasing and waiting tasks (kept until :meth:`changed`)."""
        if self.sums is None:
            running = releasing = waiting = 0
            for gpus, status in zip(self.spec.task_gpus, self.status, strict=True):
                if status == "running":
                    running += gpus
                elif status == "releasing":
                    releasing += gpus
                elif status in ("pending", "nominated"):
                    waiting += gpus
            self.sums = (running, releasing, waiting)
        return self.sums

    def changed(self) -> None:
        """Its tasks changed: its model and counts are stale."""
        self.model = None
        self.sums = None

    def touch(self, now: float) -> None:
        """Bring progress and the held-GPU ledger up to ``now``."""
        dt = now - self.since
        if dt > 0:
            running, releasing, _ = self.counts()
            self.progress += dt * running / self.spec.gpus
            self.held += dt * (running + releasing)
        self.since = now

    @property
    def done(self) -> bool:
        return self.finish is not None


@dataclass
class Counters:
    """Figures integrated over simulated time."""

    idle: float = 0.0
    capacity: float = 0.0
    below_deserved: dict[str, float] = field(default_factory=dict)
    deviation: float = 0.0
    jain: float = 0.0
    jain_time: float = 0.0


class Simulator:
    """One replay of a scenario's workload; :meth:`run` returns when every job has finished (or no event is left
    that could change anything: jobs that can never run are then unfinished)."""

    def __init__(
        self,
        scenario: Scenario,
        workload: Workload,
        *,
        dump_at: float | None = None,
        on_cycle: Callable[[float], None] | None = None,
        event_lines: bool = True,
    ) -> None:
        self.scenario = scenario
        self.settings = scenario.simulation
        self.workload = workload
        base = workload.snapshot
        config = base.config
        solver = config.solver.model_copy(
            update={
                "time_limit": self.settings.time_limit,
                "seed": self.settings.seed,
                "workers": config.solver.workers if "workers" in config.solver.model_fields_set else 1,
            }
        )
        self.config = config.model_copy(update={"solver": solver})
        self.nodes: list[Node] = list(base.nodes)
        self.queues: list[Queue] = list(base.queues)
        self.node_docs: list[dict[str, Any]] = [dict(n) for n in workload.base["nodes"]]
        self.queue_docs: list[dict[str, Any]] = [dict(q) for q in workload.base.get("queues", [])]
        self.used: dict[str, int] = {n.name: 0 for n in self.nodes}
        self.capacity = {n.name: n.resources.get("gpu", 0) // MILLI for n in self.nodes}
        self.jobs: dict[str, SimJob] = {}
        self.active: dict[str, SimJob] = {}
        self.finished: list[SimJob] = []
        self.now = 0.0
        self.heap: list[tuple[float, int, int, Any]] = []
        self.waiting_events = 0
        """Events in the heap other than samples."""
        self.seq = itertools.count()
        self.cycle_at: float | None = None
        self.last_cycle: float | None = None
        self.last_state: Cluster | None = None
        """The last cycle's end state: the next cycle keeps its per-node results of unchanged nodes."""
        self.shares: dict[str, float] = {}
        self.counters = Counters()
        self.log = DecisionLog(lines=event_lines)
        """Every decision's counters and JSON line (``event_lines``); the decisions that changed something."""
        self.samples: list[dict[str, Any]] = []
        self.cycles = 0
        self.version = 0
        """Counts the events that may have changed the state (figures derived from it are cached per version)."""
        self._cached: dict[str, tuple[int, Any]] = {}
        self.problems: list[str] = []
        self.dump_at = dump_at
        self.dump: dict[str, Any] | None = None
        self.dump_decisions: list[dict[str, Any]] | None = None
        self.on_cycle = on_cycle
        self.protections = _protection_durations(base)
        self.arrivals = len(workload.jobs)
        """Arrivals still to come."""
        self.arrived = 0
        self.held: dict[str, int] = dict.fromkeys(self._leaves(), 0)
        self.wanted: dict[str, int] = dict(self.held)
        self.counted: dict[str, tuple[int, int]] = {}
        """GPUs each active job adds to ``held`` and ``wanted`` (running, waiting)."""
        self.recount: set[str] = set()
        """Jobs that arrived or changed since ``held`` and ``wanted`` were last brought up to date."""
        self.task_of: dict[str, tuple[str, int]] = {}
        """Task name -> (job, index)."""
        for spec in workload.jobs:
            self._push(spec.submit, ARRIVE, spec.name)
            self.jobs[spec.name] = SimJob(spec, ["pending"] * spec.tasks, [None] * spec.tasks, spec.duration)
            for i in range(spec.tasks):
                self.task_of[f"{spec.name}-{i}"] = (spec.name, i)
        for start in workload.initial:
            self._start(start)
        self.events = [*scenario.events, *workload.events]
        for i, change in enumerate(self.events):
            self._push(change.at, CHANGE, i)
        self._push(0.0, SAMPLE, None)

    def _start(self, start: StartingJob) -> None:
        """Put a job of the cluster snapshot in place at time 0, with its tasks where the snapshot has them."""
        spec = start.spec
        job = SimJob(spec, list(start.status), list(start.node), spec.duration, started_at=start.started_at)
        job.requeue, job.order = start.requeue, self.arrived
        self.arrived += 1
        self.jobs[spec.name] = self.active[spec.name] = job
        self.recount.add(spec.name)
        for i in range(spec.tasks):
            self.task_of[f"{spec.name}-{i}"] = (spec.name, i)
            node = job.node[i]
            if job.status[i] in ("running", "releasing") and node is not None:
                self.used[node] += spec.task_gpus[i]
        releasing = tuple(i for i, status in enumerate(job.status) if status == "releasing")
        if releasing:
            self._push(self.settings.grace_period, GONE, (spec.name, releasing))
        if job.counts()[0]:
            job.first_start = 0.0 if start.started_at is None else start.started_at
            self._schedule_completion(job)
            for d in self.protections:
                if start.started_at is not None and start.started_at + d > 0:
                    self._push(start.started_at + d, WAKE, None)
        if job.requeue is not None and job.requeue.requeue_at is not None:
            self._push(max(0.0, job.requeue.requeue_at - EPOCH), WAKE, None)
        self._push(0.0, WAKE, None)

    @property
    def decisions(self) -> list[tuple[float, Decision]]:
        """The decisions that placed, evicted or moved something, with their times."""
        return self.log.changing

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
        while self.waiting_events and (self.active or self.arrivals):  # nothing left to run: stop
            at, kind, _, payload = heapq.heappop(self.heap)
            if kind != SAMPLE:
                self.waiting_events -= 1
            self._advance(at)
            if kind not in (WAKE, SAMPLE):
                self.version += 1
            if kind == DONE:
                self._complete(*payload)
            elif kind == GONE:
                self._gone(*payload)
            elif kind == CHANGE:
                self._change(payload)
            elif kind == ARRIVE:
                self.arrivals -= 1
                job = self.active[payload] = self.jobs[payload]
                job.since, job.order = at, self.arrived
                self.arrived += 1
                self.recount.add(payload)
                self._want_cycle()
            elif kind == WAKE:
                self._want_cycle()
            elif kind == CYCLE:
                self.cycle_at = None
                self._cycle()
            elif kind == SAMPLE:
                self._sample()
                self._push(at + self.settings.sample_every, SAMPLE, None)
        self._sample()
        for job in self.jobs.values():
            job.touch(self.now)

    def _push(self, at: float, kind: int, payload: Any) -> None:
        heapq.heappush(self.heap, (at, kind, next(self.seq), payload))
        if kind != SAMPLE:
            self.waiting_events += 1

    def _want_cycle(self) -> None:
        if self.cycle_at is not None:
            return
        at = self.now if self.last_cycle is None else max(self.now, self.last_cycle + self.settings.period)
        self.cycle_at = at
        self._push(at, CYCLE, None)

    def _advance(self, at: float) -> None:
        """Integrate the time-weighted figures from the current instant to ``at``."""
        dt = at - self.now
        if dt > 0:
            total = sum(self.capacity.values())
            self.counters.capacity += total * dt
            self.counters.idle += (total - sum(self.used.values())) * dt
            self._fairness(dt)
        self.now = at

    # -- events -----------------------------------------------------------------

    def _complete(self, name: str, epoch: int) -> None:
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

    def _gone(self, name: str, tasks: tuple[int, ...]) -> None:
        job = self.jobs[name]
        job.touch(self.now)
        for i in tasks:
            if job.status[i] == "releasing":
                self._leave(job, i)
                job.status[i] = "pending"
        self._changed(job)
        self._want_cycle()

    def _leave(self, job: SimJob, task: int) -> None:
        node = job.node[task]
        assert node is not None
        self.used[node] -= job.spec.task_gpus[task]
        job.node[task] = None

    def _change(self, index: int) -> None:
        change = self.events[index]
        for path, value in change.set.items():
            self._set(path, value)
        drained = set(change.drain)
        for entry in self.node_docs:
            if entry["name"] in drained:
                entry["schedulable"] = False
        added = node_documents(change.add)
        taken = {e["name"] for e in self.node_docs}
        for entry in added:
            while entry["name"] in taken:
                entry["name"] += "x"
            taken.add(entry["name"])
        self.node_docs += added
        self.nodes = [Node.model_validate(e) for e in self.node_docs]
        for node in self.nodes:
            self.used.setdefault(node.name, 0)
            self.capacity[node.name] = node.resources.get("gpu", 0) // MILLI
        self._want_cycle()

    def _set(self, path: str, value: Any) -> None:
        parts = path.split(".")
        index = {q["name"]: q for q in self.queue_docs}
        if parts[0] != "queues" or len(parts) < 3 or parts[1] not in index:
            raise ValueError(f"{path}: expected queues.<name>.<field>[.<resource>] with a known queue")
        entry = index[parts[1]]
        if len(parts) == 3:
            entry[parts[2]] = value
        else:
            entry[parts[2]] = {**entry.get(parts[2], {}), parts[3]: value}
        self.queues = [Queue.model_validate(q) for q in self.queue_docs]
        if parts[2] in ("limit", "quota_preemption_delay"):  # seed 002: the delay timer restarts now
            entry["limit_changed_at"] = EPOCH + self.now
            self.queues = [Queue.model_validate(q) for q in self.queue_docs]
            delay = next(q for q in self.queues if q.name == parts[1]).quota_preemption_delay
            if delay > 0:
                self._push(self.now + delay, WAKE, None)

    # -- cycles -----------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The simulated cluster now, as the engine sees it."""
        return Snapshot.assemble(
            now=EPOCH + self.now,
            config=self.config,
            nodes=self.nodes,
            queues=self.queues,
            priority_classes=self.workload.snapshot.priority_classes,
            jobs=[self._model(job) for job in self.active.values()],
        )

    def document(self) -> dict[str, Any]:
        """The simulated cluster now, as a snapshot document (what ``--dump-at`` writes)."""
        out = {k: v for k, v in self.workload.base.items() if k not in ("nodes", "queues")}
        out["now"] = EPOCH + self.now
        out["config"] = {**out.get("config", {}), "solver": self.config.solver.model_dump()}
        out["nodes"] = [dict(e) for e in self.node_docs]
        if self.queue_docs:
            out["queues"] = [dict(q) for q in self.queue_docs]
        out["jobs"] = [self._document(job) for job in self.active.values()]
        return out

    def _document(self, job: SimJob) -> dict[str, Any]:
        spec = job.spec
        entry: dict[str, Any] = {"name": spec.name, "queue": spec.queue, "created_at": EPOCH + spec.submit}
        if spec.priority_class is not None:
            entry["priority_class"] = spec.priority_class
        if spec.preemptible is not None:
            entry["preemptible"] = spec.preemptible
        if spec.min_available is not None:
            entry["min_available"] = spec.min_available
        if spec.priority is not None:
            entry["priority"] = spec.priority
        if job.started_at is not None and "running" in job.status:
            entry["started_at"] = EPOCH + job.started_at
        requests = [spec.task_resources(i) for i in range(spec.tasks)]
        uniform = all(r == requests[0] for r in requests)
        entry["task_resources"] = _quantities(requests[0])
        tasks = []
        for i, (status, node) in enumerate(zip(job.status, job.node, strict=True)):
            task: dict[str, Any] = {"name": f"{spec.name}-{i}", "status": status}
            if node is not None:
                task["node"] = node
            if not uniform:
                task["resources"] = _quantities(requests[i])
            tasks.append(task)
        entry["tasks"] = tasks
        if job.requeue is not None:
            entry["requeue"] = requeue_dict(job.requeue)
        return entry

    def _model(self, job: SimJob) -> Job:
        if job.model is None:
            job.model = Job.model_validate(self._document(job))
        return job.model

    def _cycle(self) -> None:
        waiting = any("pending" in j.status or "nominated" in j.status for j in self.active.values())
        quota = self.config.quota_preemption_enabled
        if not waiting and not quota:
            return
        self.last_cycle = self.now
        self.cycles += 1
        snapshot = self.snapshot()
        result = run_cycle(snapshot, solver=self.settings.solver, previous=self.last_state)
        self.last_state = result.end
        if self.dump_at is not None and self.dump is None and self.now >= self.dump_at:
            self.dump = self.document()
            self.dump_decisions = [d.to_dict(timing=False) for d in result.decisions]
        if self.settings.check:
            self.problems += [f"t={self.now:g}: {p}" for p in verify_decisions(result.decisions, result.states)]
        for decision in result.decisions:
            self.log.add(self.now, decision)
        self.shares = {q: result.start.shares[q].get("gpu", 0) / MILLI for q in self._leaves()}
        self._apply(result)
        if self.settings.check:
            self.problems += [f"t={self.now:g}: {p}" for p in self.invariants()]
        if self.on_cycle is not None:
            self.on_cycle(self.now)

    def _apply(self, result: CycleResult) -> None:
        start, end = result.start, result.end
        states = result.requeue()
        touched = {self.task_of[task][0] for task, _ in end.status.items() - start.status.items()}
        for job in sorted((self.jobs[name] for name in touched), key=lambda j: j.order):
            changed = evicted = moved = False
            job.touch(self.now)
            running_before = job.counts()[0]
            gone: list[int] = []
            for i in range(job.spec.tasks):
                name = f"{job.spec.name}-{i}"
                before, after, node = start.status[name], end.status[name], end.node_of[name]
                if after == before:
                    continue
                changed = True
                if after == "allocated":
                    self._place(job, i, node, "running")
                elif after == "pipelined" and before == "running":
                    self._leave(job, i)
                    self._place(job, i, node, "running")
                    moved = True
                elif after == "pipelined":
                    job.status[i], job.node[i] = "nominated", node
                elif after == "releasing":
                    job.status[i] = "releasing"
                    gone.append(i)
                    evicted = True
                elif after == "pending":
                    job.status[i], job.node[i] = "pending", None
            if not changed:
                continue
            self._changed(job)
            running = job.counts()[0]
            if evicted and running == 0:
                job.evictions += 1
                self._lose(job)
                job.work += self.settings.restart.overhead
            elif moved and not job.spec.min_available:
                job.moves += 1
                job.lost_to_moves += self._lose(job)
            elif moved:
                job.moves += 1
            if gone:
                self._push(self.now + self.settings.grace_period, GONE, (job.spec.name, tuple(gone)))
            if job.spec.name in states:
                job.requeue = states[job.spec.name]
                if job.requeue.requeue_at is not None:
                    self._push(max(self.now, job.requeue.requeue_at - EPOCH), WAKE, None)
            if running and (not running_before or (moved and not job.spec.min_available)):
                job.started_at = self.now
                if job.first_start is None:
                    job.first_start = self.now
                for d in self.protections:
                    self._push(self.now + d, WAKE, None)
            if running != running_before or moved:
                self._schedule_completion(job)

    def _place(self, job: SimJob, task: int, node: str | None, status: str) -> None:
        assert node is not None
        job.status[task], job.node[task] = status, node
        self.used[node] += job.spec.task_gpus[task]

    def _lose(self, job: SimJob) -> float:
        """Progress lost to an eviction or a gang's move, by the restart model (GPU-seconds, returned)."""
        restart = self.settings.restart
        kept = 0.0
        if restart.model == "checkpoint" and restart.interval:
            kept = math.floor(job.progress / restart.interval) * restart.interval
        lost = (job.progress - kept) * job.spec.gpus
        job.lost += lost
        job.progress = kept
        return lost

    def _schedule_completion(self, job: SimJob) -> None:
        job.epoch += 1
        running = job.counts()[0]
        if running:
            left = max(0.0, job.work - job.progress) * job.spec.gpus / running
            self._push(self.now + left, DONE, (job.spec.name, job.epoch))

    # -- figures ------------------------------------------------------------------

    def _leaves(self) -> list[str]:
        return [q.name for q in self.queues if not any(c.parent == q.name for c in self.queues)]

    def _per_version(self, name: str, compute: Callable[[], Any]) -> Any:
        cached = self._cached.get(name)
        if cached is None or cached[0] != self.version:
            cached = self._cached[name] = (self.version, compute())
        return cached[1]

    def queue_gpus(self) -> tuple[dict[str, int], dict[str, int]]:
        """GPUs per leaf queue: held by running tasks, and wanted (held + pending and nominated tasks).

        Kept as running totals: only the jobs that arrived or changed since the last call are counted again.
        """
        held, wanted = self.held, self.wanted
        for name in self.recount:
            job = self.jobs[name]
            queue = job.spec.queue
            running, waiting = self.counted.pop(name, (0, 0))
            held[queue] -= running
            wanted[queue] -= running + waiting
            if not job.done:
                running, _, waiting = job.counts()
                held[queue] += running
                wanted[queue] += running + waiting
                self.counted[name] = (running, waiting)
        self.recount.clear()
        return held, wanted

    def _changed(self, job: SimJob) -> None:
        job.changed()
        self.recount.add(job.spec.name)

    def _fairness(self, dt: float) -> None:
        held, wanted = self.queue_gpus()
        deserved = {q.name: q.deserved.get("gpu", 0) // MILLI for q in self.queues}
        below = self.counters.below_deserved
        ratios = []
        for queue in held:
            if wanted[queue] > held[queue] and held[queue] < deserved.get(queue, 0):
                below[queue] = below.get(queue, 0.0) + dt
            fair = self.shares.get(queue)
            if fair is not None:
                self.counters.deviation += abs(held[queue] - fair) * dt
                if fair > 0:
                    ratios.append(held[queue] / fair)
        if ratios and any(ratios):
            self.counters.jain += sum(ratios) ** 2 / (len(ratios) * sum(r * r for r in ratios)) * dt
            self.counters.jain_time += dt

    def _sample(self) -> None:
        # fair shares as a scheduler would compute them now (cycles only run while jobs wait)
        self.shares = self._per_version("shares", self._fair_shares)
        held, wanted = self.queue_gpus()
        row: dict[str, Any] = {"time": self.now, "free_gpus": sum(self.capacity.values()) - sum(self.used.values())}
        for queue in held:
            row[f"{queue}.allocated"] = held[queue]
            row[f"{queue}.demanded"] = wanted[queue]
            row[f"{queue}.fair_share"] = self.shares.get(queue, 0.0)
        row["preemptions"] = sum(j.evictions for j in self.jobs.values())
        self.samples.append(row)

    def _fair_shares(self) -> dict[str, float]:
        shares = Cluster.of(self.snapshot(), self.last_state).shares
        return {q: shares[q].get("gpu", 0) / MILLI for q in self._leaves()}

    def invariants(self) -> list[str]:
        """Broken invariants of the simulated state (checking mode): capacity, gangs."""
        problems = []
        for name, used in self.used.items():
            if used > self.capacity[name]:
                problems.append(f"node {name} holds {used} GPUs of {self.capacity[name]}")
        recount: dict[str, int] = dict.fromkeys(self.used, 0)
        for job in self.active.values():
            for gpus, node, status in zip(job.spec.task_gpus, job.node, job.status, strict=True):
                if status in ("running", "releasing"):
                    assert node is not None
                    recount[node] += gpus
            running = job.status.count("running")
            minimum = job.spec.min_available or job.spec.tasks
            if 0 < running < minimum:
                problems.append(f"job {job.spec.name} runs {running} tasks, below its gang minimum {minimum}")
        if recount != self.used:
            problems.append("node GPU ledger disagrees with the tasks on the nodes")
        return problems


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
    return sorted(d for d in found if 0 < d < math.inf)


def _quantities(resources: dict[str, int]) -> dict[str, Any]:
    return {r: a // MILLI if r == "gpu" else format_quantity(r, a) for r, a in resources.items()}
