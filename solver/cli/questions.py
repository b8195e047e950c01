"""The operator's questions (docs/operations.md): ``whatif`` (will a job fit if I submit it, and if not, what
would), ``risk`` (who is at risk of preemption next), ``forecast`` (when will a pending job start) and ``audit``
(did the scheduler evict more than it had to).

The engine is imported inside each command, so that ``--help`` starts fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gpu_preempt.models import Job, Snapshot, SnapshotError, read_document

from .app import FileArg, JsonOpt, TimeOpt, WorkersOpt, command, hold_until_exit, snapshot_to_solve
from .render import err, print_audit, print_forecast, print_risk, print_whatif

__all__ = ["audit", "forecast", "risk", "whatif"]


@command(example="gpu-preempt whatif fixtures/example-cluster.yaml --submit docs/examples/submit-vision.yaml")
def whatif(
    file: FileArg,
    submit: Annotated[
        Path,
        typer.Option(
            "--submit",
            metavar="JOB",
            help="a file holding one job: in the snapshot's job format, or as Kubernetes objects (a Pod, a PodGroup "
            "and its pods, a Workload) read as import reads them",
        ),
    ],
    as_json: JsonOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
) -> None:
    """The decision a new job would get now, without changing anything; if it would not run, the nearest variants
    that would (fewer GPUs or tasks, another queue or GPU model, no topology requirement, later)."""
    snapshot = snapshot_to_solve(file, as_json, workers, time_limit)
    job = _submitted(submit, snapshot)
    from gpu_preempt.questions import whatif as run_whatif

    try:
        answer = run_whatif(snapshot, job)
    except ValueError as error:  # the job does not fit the snapshot: a name taken, a queue unknown
        _bad(submit, str(error).splitlines()[0] if "validation error" not in str(error) else _first(error))
    hold_until_exit(answer)
    _answer(file, answer, as_json, print_whatif)


def _answer(file: Path, found: Any, as_json: bool, printer: Callable[[Path, Any], None]) -> None:
    """An answer as ``--json`` asks (one document for programs), or printed for people."""
    if as_json:
        print(json.dumps(found.to_dict(), indent=2))
    else:
        printer(file, found)


def _submitted(path: Path, snapshot: Snapshot) -> Job:
    """The job in ``path`` (the snapshot's job format, or Kubernetes objects read as ``import`` reads them),
    validated; exit 2 naming the field when it is not one."""
    from pydantic import ValidationError

    try:
        data: Any = read_document(path)
    except SnapshotError as error:
        _bad(path, error.errors[0].message)
    if isinstance(data, dict) and isinstance(data.get("kind"), str):
        data = _manifest_job(path, snapshot)
    if not isinstance(data, dict):
        _bad(path, "a job is a mapping with name, queue, task_resources and tasks")
    try:
        return Job.model_validate(data)
    except ValidationError as error:
        first = SnapshotError.from_validation_error(error).errors[0]
        _bad(path, f"{first.path}: {first.message}" if first.path else first.message)


def _manifest_job(path: Path, snapshot: Snapshot) -> dict[str, Any]:
    """The one job of the Kubernetes objects in ``path`` (a Pod, a PodGroup and its pods, a Workload), imported
    beside the snapshot's queues and priority classes written as the objects they come from: KAI Queues, or under
    ``config.policy: kueue`` ClusterQueues with a LocalQueue of the same name in each namespace of the input."""
    from gpu_preempt.kube.importer import import_objects
    from gpu_preempt.kube.read import parse_objects, read_objects

    try:
        objects = read_objects([str(path)], sys.stdin)
        kueue = snapshot.config.policy == "kueue"
        given = [*_queue_objects(snapshot, {o.namespace for o in objects if o.namespace}), *_class_objects(snapshot)]
        context = parse_objects(json.dumps({"kind": "List", "items": given}), "the snapshot's queues")
        document, _ = import_objects([*context, *objects], now=snapshot.now, queue_source="kueue" if kueue else "kai")
    except SnapshotError as error:
        first = error.errors[0]
        _bad(path, f"{first.path}: {first.message}" if first.path else first.message)
    jobs = [j for j in document["jobs"] if all(not t.get("node") for t in j.get("tasks", []))]
    if len(jobs) != 1:
        _bad(path, f"the objects give {len(jobs)} pending job(s); whatif takes one")
    return dict(jobs[0])


def _queue_objects(snapshot: Snapshot, namespaces: set[str]) -> list[dict[str, Any]]:
    """The snapshot's queues as the Kubernetes objects an import reads them from."""
    if snapshot.config.policy != "kueue":
        return [
            {
                "apiVersion": "scheduling.run.ai/v2",
                "kind": "Queue",
                "metadata": {"name": q.name},
                "spec": {"parentQueue": q.parent} if q.parent else {},
            }
            for q in snapshot.queues
        ]
    leaves = [q.name for q in snapshot.queues if snapshot.is_leaf(q.name)]
    cluster_queues = [
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {}}
        for name in leaves
    ]
    local = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": name},
        }
        for name in leaves
        for namespace in sorted(namespaces)
    ]
    return [*cluster_queues, *local]


def _class_objects(snapshot: Snapshot) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": c.name}, "value": c.value}
        for c in snapshot.priority_classes
    ]


def _first(error: ValueError) -> str:
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        first = SnapshotError.from_validation_error(error).errors[0]
        return f"{first.path.split('.', 2)[-1]}: {first.message}"
    return str(error)


def _bad(path: Path, message: str) -> NoReturn:
    err.print(f"error: --submit {path}: {message}")
    raise typer.Exit(2)


@command(example="gpu-preempt risk fixtures/example-cluster.yaml --top 5")
def risk(
    file: FileArg,
    queue: Annotated[str | None, typer.Option("--queue", metavar="NAME", help="only the jobs of this queue")] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="stop once this many jobs are ranked")] = 20,
    as_json: JsonOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
) -> None:
    """Rank the running jobs by the smallest pending request (GPUs, queue, priority) that makes each a victim, with
    what protects each now and until when. Exit 0 whatever it finds."""
    snapshot = snapshot_to_solve(file, as_json, workers, time_limit)
    names = [q.name for q in snapshot.queues]
    if queue is not None and queue not in names:
        err.print(f"error: --queue: unknown queue '{queue}' (queues: {', '.join(names[:10])})")
        raise typer.Exit(2)
    from gpu_preempt.questions import risk as run_risk

    found = run_risk(snapshot, top=top, queue=queue)
    hold_until_exit(found)
    _answer(file, found, as_json, print_risk)


@command(example="gpu-preempt forecast fixtures/example-cluster.yaml --seeds 5")
def forecast(
    file: FileArg,
    seeds: Annotated[int, typer.Option("--seeds", min=1, max=1000, help="replays, each with its own draw")] = 5,
    remaining: Annotated[
        str,
        typer.Option("--remaining", metavar="DURATION", help="mean work left of a running job without expected_end"),
    ] = "2h",
    duration: Annotated[str, typer.Option("--duration", metavar="DURATION", help="mean work of a pending job")] = "2h",
    arrivals: Annotated[
        Path | None,
        typer.Option(
            "--arrivals",
            metavar="CSV",
            help="jobs that arrive meanwhile: a CSV trace with the canonical column names (id, submit, duration, gpus, "
            "queue, ...), submit in seconds from the snapshot's instant",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Start estimates of every pending job (P50, P90 over the seeds), by replaying the snapshot forward through the
    simulator, and the running jobs preempted on the way."""
    from gpu_preempt.models import parse_duration

    means = []
    for option, text in (("--remaining", remaining), ("--duration", duration)):
        try:
            means.append(parse_duration(text))
        except ValueError as error:
            err.print(f"error: {option}: {error}")
            raise typer.Exit(2) from None
        if means[-1] <= 0:
            err.print(f"error: {option}: a mean of work is more than 0 s")
            raise typer.Exit(2)
    snapshot_to_solve(file, as_json, None, None)  # checked as every command checks it: exit 2 naming the field
    from gpu_preempt.questions import forecast as run_forecast

    if arrivals is not None and not arrivals.is_file():
        err.print(f"error: --arrivals {arrivals}: no such file")
        raise typer.Exit(2)
    try:
        found = run_forecast(file, seeds=seeds, remaining=means[0], duration=means[1], arrivals=arrivals)
    except SnapshotError as error:  # the arrivals trace: its field or line named
        first = error.errors[0]
        err.print(f"error: --arrivals {arrivals}: {first.path + ': ' if first.path else ''}{first.message}")
        raise typer.Exit(2) from None
    _answer(file, found, as_json, print_forecast)


@command(
    example="gpu-preempt audit fixtures/kai-probe-keeps-first-victim.yaml\n"
    "gpu-preempt audit fixtures/kube/kueue-preempted.json   # what Kueue did, from its Workloads"
)
def audit(
    file: FileArg,
    as_json: JsonOpt = False,
    workers: WorkersOpt = None,
    time_limit: TimeOpt = None,
) -> None:
    """Hold KAI's own victim search against the least disruptive decision, for every reclaim and preempt of one
    cycle, on the same state: over-eviction, missed reclaims, victims freed for no one. FILE may also be a Kubernetes
    dump (kubectl get ... -o json or yaml): the preemptions its Kueue Workloads record are held against the minimum
    on the state before each. Exit 0 whatever it finds."""
    if _is_dump(file):
        found = _observed_audit(file, as_json, workers, time_limit)
    else:
        snapshot = snapshot_to_solve(file, as_json, workers, time_limit)
        from gpu_preempt.questions import audit as run_audit

        found = run_audit(snapshot)
    hold_until_exit(found)
    _answer(file, found, as_json, print_audit)


def _is_dump(path: Path) -> bool:
    """Whether ``path`` holds Kubernetes objects (a List, one object, or KAI's snapshot ZIP), not a snapshot."""
    try:
        with path.open("rb") as handle:
            if handle.read(4) == b"PK\x03\x04":
                return True
        document = read_document(path)
    except (OSError, SnapshotError):
        return False
    return isinstance(document, dict) and ("apiVersion" in document or "items" in document) and "jobs" not in document


def _observed_audit(file: Path, as_json: bool, workers: int | None, time_limit: float | None) -> Any:
    """The preemptions a dump's Kueue Workloads record, each audited on the state before it; with none, the cycle
    audit of the imported snapshot."""
    from gpu_preempt.kube.importer import import_objects
    from gpu_preempt.kube.kueue_preempted import kueue_preemptions, state_before
    from gpu_preempt.kube.read import read_objects
    from gpu_preempt.models import snapshot_from_data
    from gpu_preempt.questions import Audit, audit_preemption
    from gpu_preempt.questions import audit as run_audit

    from .app import check_limits, collector_off_if_ours, import_cpsat_without_pandas, with_solver_options
    from .render import print_problems

    collector_off_if_ours()
    import_cpsat_without_pandas()
    check_limits(workers, time_limit)
    try:
        objects = read_objects([str(file)], sys.stdin)
        observed = kueue_preemptions(objects)
        known = [p for p in observed if p.preemptor is not None]
        if not known:
            document, _ = import_objects(objects)
            snapshot = with_solver_options(snapshot_from_data(document), workers, time_limit)
        # imported at each preemption's time: a pod deleted since is releasing then, not stuck
        rebuilt = [state_before(import_objects(objects, now=p.at, times=False)[0], objects, p, observed) for p in known]
        befores = [with_solver_options(snapshot_from_data(r.document), workers, time_limit) for r in rebuilt]
    except SnapshotError as error:
        print_problems(f"{file} cannot be audited", error.errors)
        raise typer.Exit(2) from None
    found = Audit(by="Kueue") if known else run_audit(snapshot)
    found.not_audited = [
        f"{', '.join(p.victims)}: preempted for the workload of UID {p.uid}, which is not in the dump: not audited"
        for p in observed
        if p.preemptor is None
    ]
    for r, before in zip(rebuilt, befores, strict=True):
        p = r.preemption
        assert p.preemptor is not None
        found.findings.append(audit_preemption(before, p.preemptor, p.victims, unplaced=r.unplaced, notes=r.notes))
    return found
