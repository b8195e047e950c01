"""The snapshot pydantic would validate, built from a document's structs without pydantic's per-object validation.

A 100,000-node snapshot holds about a million node, job and task objects, and pydantic validates each with Python
validators (quantities, instants, the task status rule), which cost more than reading the file. Here the structs
(:mod:`.structs`) are checked as lists of values read from them, once per distinct value where it can be
(resource maps, instants, priority classes), and the models are built directly. The small parts (``now``,
``config``, queues, priority classes) are validated by pydantic as usual, and the whole-document checks
(:meth:`Snapshot._resolve`) run unchanged.

A job is made from the lists and its shape: which of its optional fields it gives, a small integer
(:class:`.jobs.Extras`). Once the lists are read the structs are let go, so a loaded snapshot does not keep a
second copy of every job. In a large snapshot a job is made when first read (:class:`.job_list.JobList`: a
decision reads about one job in six); in a small one, at once. A job that a task's own resources, ``gpu_devices``
or a preemption delay sets apart is built at once from its struct.

It never decides what is wrong with a document: at the first thing it does not accept it gives up
(:class:`Refused`), and the caller validates the whole document with pydantic, which gives the error messages.
``tests/models/test_structs.py`` checks that both paths accept the same documents and build equal snapshots.

Examples
--------
>>> data = {"now": 0, "nodes": [{"name": "n", "resources": {"gpu": 8}}], "queues": [{"name": "q"}],
...     "jobs": [{"name": "j", "queue": "q", "task_resources": {"gpu": 4}, "tasks": [{"node": "n"}, {}]}]}
>>> snap = from_data(data)
>>> [(t.name, t.status) for t in snap.job("j").tasks]
[('j-0', 'running'), ('j-1', 'pending')]
>>> from_data({**data, "nodes": [{"name": "n", "resources": {"gpu": 0.5}}]}) is None  # pydantic says why
True
"""

from __future__ import annotations

from typing import Any

from .. import snapshot as _snapshot
from ..job import Job
from ..node import Node
from ..snapshot import Snapshot
from . import structs
from .checked import REFUSED, Gathered, Refused
from .document import colons
from .job_list import JobList
from .jobs import JobMaker, job_columns, uncommon_jobs
from .nodes import built_nodes
from .structs import HEAD, UNSET, DataDocument, RawDocument

__all__ = ["assembled", "from_data", "from_json"]


def from_json(data: bytes) -> Snapshot | None:
    """The snapshot pydantic would validate from the JSON document in ``data``, or ``None`` where this path does
    not decide (a document it does not accept, or an escaped ``:`` in a string, which the check for duplicate keys
    cannot count)."""
    given = colons(data)
    if given is None:
        return None
    try:
        document = structs.decode(data)
        # Duplicate keys are found as decode_json_fast finds them: every member of the document holds one ':'
        # outside strings, and re-encoding the structs writes back every member they kept.
        if colons(structs.encode(document)) != given:
            return None
        return _build(document, parsed=True)
    except REFUSED:
        return None


def from_data(data: Any, *, parsed: bool = False) -> Snapshot | None:
    """The snapshot pydantic would validate from ``data`` (a parsed document, not changed), or ``None`` where this
    path does not decide. ``parsed``: ``data`` is what a JSON parser made, and nothing else (resource maps are then
    looked up by their encoding, :func:`~..fields.parsed_resource_map`)."""
    try:
        return _build(structs.convert(data), parsed=parsed)
    except REFUSED:
        return None


def _build(document: RawDocument | DataDocument, parsed: bool) -> Snapshot:
    head = Snapshot.model_validate(
        {
            **{key: getattr(document, key) for key in HEAD if getattr(document, key) is not UNSET},
            "nodes": [],
            "jobs": [],
        }
    )
    raw: list[Any] = [] if document.jobs is UNSET else document.jobs
    from_bytes = type(document) is RawDocument
    gathered = Gathered(parsed, head, raw=from_bytes)
    nodes = built_nodes(document.nodes, gathered)
    gathered.job_names = [job.name for job in raw]
    odd, rich, read = uncommon_jobs(raw)
    maker = JobMaker(gathered)
    maker.resolved, maker.extras = job_columns(raw, gathered, odd, rich, read)  # odd jobs built, in place in raw
    del read
    built = {i: raw[i] for i in odd}
    raw[:] = maker.extras.shapes  # the structs let go: what a job is made of is in the columns and its shape
    for i, job in built.items():
        raw[i] = job
    if len(raw) >= _snapshot.COLUMNS_FROM:
        import numpy as np  # a large snapshot only: the command line starts without numpy

        maker.extras.starts = np.asarray(maker.extras.starts, dtype=np.int64)  # type: ignore[assignment]
        listed = JobList(raw, made=maker.make, raw=int, names=gathered.job_names)
        placements = [(i, f.get("placement")) for i, f in maker.extras.fields.items()]
        placements += [(i, job.placement) for i, job in built.items()]
        listed.topology = sorted(i for i, p in placements if p is not None and p.topology is not None)
        jobs: list[Job] = listed
    else:
        jobs = [job if type(job) is Job else maker.make(i, job) for i, job in enumerate(raw)]
    return assembled(head, document.jobs is not UNSET, nodes, jobs, gathered)


def assembled(head: Snapshot, has_jobs: bool, nodes: list[Node], jobs: list[Job], gathered: Gathered) -> Snapshot:
    """The snapshot of ``head`` (validated, without nodes and jobs) with ``nodes`` and ``jobs`` (whose columns
    ``gathered`` holds), checked as a whole; ``has_jobs``: the document gives ``jobs``."""
    if not {q.name for q in head.queues if head.is_leaf(q.name)}.issuperset(gathered.queues):
        raise Refused  # a job in an unknown queue, or in one with children
    fields = {**head.__dict__, "nodes": nodes, "jobs": jobs}
    given = head.model_fields_set if has_jobs else head.model_fields_set - {"jobs"}
    snapshot = Snapshot.model_construct(_fields_set=set(given), **fields)
    if len(jobs) >= _snapshot.COLUMNS_FROM:
        from ..columns import TaskColumns  # numpy: only for snapshots large enough to gain from it

        snapshot.__dict__["_columns"] = TaskColumns.assemble(
            nodes,
            job_names=gathered.job_names,
            job_queues=gathered.queues,
            names=gathered.names,
            node_names=gathered.nodes,
            statuses=gathered.statuses,
            shared=gathered.shared,
            counts=gathered.counts,
            own=gathered.own,
            devices=gathered.devices,
        )
        snapshot.__dict__["_ordered_jobs"] = (snapshot.jobs, frozenset(gathered.ordered))  # Snapshot.ordered_jobs
        snapshot.__dict__["_job_lists"] = {  # Snapshot.job_columns; validation adds the resolved values
            "names": gathered.job_names,
            "queues": gathered.queues,
            "classes": gathered.classes,
            "started": gathered.started,
            "since": gathered.since,
            "created": gathered.created,
            "minimum": gathered.minimum,
            "uniform": gathered.uniform,
            "resources": gathered.shared,
            "priority": gathered.priority,
            "preemptible": gathered.preemptible,
            "marked": gathered.marked,
        }
    snapshot._resolve(fitted=False)
    return snapshot
