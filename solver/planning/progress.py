"""A job of the replay: its tasks, its progress, and what evictions and moves cost it (the restart model).

A job's work is its trace duration at full width (plus the restart overhead after each eviction); it advances at the
share of the job's GPUs that are running (a job without GPUs: the share of its tasks). A job evicted whole loses its
progress by the restart model: all of it
(``restart.model: restart``), or what came after its last checkpoint (``checkpoint``, every ``restart.interval``
seconds of progress). A moved gang restarts, so it loses progress as if evicted; a moved elastic job does not.

>>> job = SimJob(JobSpec("j", 0.0, 100.0, 8000, (4000, 4000), "q"), ["running", "running"], ["n0", "n1"], work=100.0)
>>> job.touch(30.0)
>>> job.progress, job.held
(30.0, 240.0)
>>> lost = lose(job, Restart(model="checkpoint", interval=20.0))
>>> job.progress, lost
(20.0, 80.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpu_preempt.models import MILLI, Job, RequeueState
from gpu_preempt.models.scenario import Restart

from .workload import JobSpec

__all__ = ["SimJob", "after_change", "lose"]


@dataclass
class SimJob:
    """A job of the workload during the replay."""

    spec: JobSpec
    status: list[str]
    """Per task: pending, running, releasing, nominated, or done."""
    node: list[str | None]
    work: float
    devices: list[tuple[int, ...] | None] = field(default_factory=list)
    """Per task, the devices its share of a GPU is on (running, releasing or nominated); empty: none is a share."""
    """Seconds of progress at full width it needs to finish."""
    progress: float = 0.0
    since: float = 0.0
    """The instant ``progress`` and ``held`` were brought up to."""
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
    """Counts the completions scheduled for it: a completion event of an earlier epoch is stale."""
    order: int = 0
    """Arrival order: changed jobs are handled in it, as they would be in a walk over the active jobs."""
    model: Job | None = None
    """Its snapshot model, kept until its tasks change."""
    sums: tuple[int, int, int] | None = None
    """Milli-GPUs of its running, releasing and waiting (pending or nominated) tasks; ``None`` until counted
    again."""
    every: float = 0.0
    """Seconds of progress between its checkpoints (``restart.model: checkpoint``); 0: none."""
    checkpointed: float | None = None
    """The instant its progress last reached a multiple of ``every`` (brought up to ``since``)."""
    model_until: float = float("inf")
    """Until when its snapshot model's ``checkpointed_at`` holds: the next checkpoint at its present width."""
    running_sum: int | None = None
    """The :attr:`~.workload.JobSpec.task_weight` of its running tasks; ``None`` until counted again."""

    def running(self) -> int:
        """Its running width (:attr:`~.workload.JobSpec.weight` units: milli-GPUs, or a thousand a task for a job
        without GPUs), kept until :meth:`changed`; 0 while nothing of it runs."""
        if self.running_sum is None:
            if self.spec.gpu_milli:
                self.running_sum = self.counts()[0]
            else:
                self.running_sum = MILLI * self.status.count("running")
        return self.running_sum

    def counts(self) -> tuple[int, int, int]:
        """Milli-GPUs of its running, releasing and waiting tasks (kept until :meth:`changed`)."""
        if self.sums is None:
            running = releasing = waiting = 0
            for gpus, status in zip(self.spec.task_gpu_milli, self.status, strict=True):
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
        self.running_sum = None

    def last_checkpoint(self, now: float) -> float | None:
        """The instant, up to ``now``, its progress last reached a multiple of ``every`` (``None``: never), which
        its snapshot model carries as ``checkpointed_at`` (an eviction or a move loses the progress since)."""
        found = self.checkpointed
        rate = self.running() / self.spec.weight
        if self.every and rate > 0 and now > self.since:
            mark = math.floor((self.progress + (now - self.since) * rate) / self.every) * self.every
            if mark > self.progress:
                found = self.since + (mark - self.progress) / rate
        return found

    def next_checkpoint(self, now: float) -> float:
        """The instant after ``now`` its progress reaches the next multiple of ``every`` at its present width
        (infinite without checkpoints or while nothing runs)."""
        rate = self.running() / self.spec.weight
        if not self.every or rate <= 0:
            return float("inf")
        progress = self.progress + max(0.0, now - self.since) * rate
        mark = (math.floor(progress / self.every) + 1) * self.every
        return self.since + (mark - self.progress) / rate

    def touch(self, now: float) -> None:
        """Bring progress and the held-GPU ledger up to ``now``."""
        dt = now - self.since
        if self.every:
            self.checkpointed = self.last_checkpoint(now)
        if dt > 0:
            running, releasing, _ = self.counts()
            self.progress += dt * self.running() / self.spec.weight
            self.held += dt * (running + releasing) / MILLI
        self.since = now

    def time_left(self) -> float | None:
        """Seconds until its work is done at its present width; ``None`` while nothing of it runs."""
        running = self.running()
        if not running:
            return None
        return max(0.0, self.work - self.progress) * self.spec.weight / running

    @property
    def done(self) -> bool:
        return self.finish is not None


def lose(job: SimJob, restart: Restart) -> float:
    """Take from ``job`` the progress an eviction or a gang's move loses by the restart model; the GPU-seconds lost."""
    kept = 0.0
    if restart.model == "checkpoint" and restart.interval:
        kept = math.floor(job.progress / restart.interval) * restart.interval
    lost = (job.progress - kept) * job.spec.gpu_milli / MILLI
    job.lost += lost
    job.progress = kept
    return lost


def after_change(job: SimJob, restart: Restart, *, evicted: bool, moved: bool) -> None:
    """Count what a cycle's change of ``job``'s tasks costs it: evicted whole, it loses progress and pays the
    restart overhead; moved, a gang loses progress (an elastic job keeps it)."""
    running = job.running()
    if evicted and running == 0:
        job.evictions += 1
        lose(job, restart)
        job.work += restart.overhead
    elif moved and not job.spec.min_available:
        job.moves += 1
        job.lost_to_moves += lose(job, restart)
    elif moved:
        job.moves += 1
