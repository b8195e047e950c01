"""The struct path builds exactly the snapshot pydantic validates, and leaves to the others what it does not accept;
its jobs are made when read, and no one can tell (issue 14)."""

from __future__ import annotations

import contextlib
import copy
import json
import pickle
import sys
from typing import Any

import pytest
import test_fast_path
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from test_fast_path import BASE, FIXTURES, JOB_KEYS, VALUES, assert_same, mutated, pydantic_result

from gpu_preempt.models import Snapshot, SnapshotError, load_snapshot, parse_snapshot, snapshot_from_data
from gpu_preempt.models.document import parse_document
from gpu_preempt.models.job_list import JobList
from gpu_preempt.models.struct_path import struct_snapshot

checks = test_fast_path.checks  # the fixture: whole-document checks on task columns, and task by task

PLAIN = {  # the common case: tasks that give only their node, no labels, annotations or requeue state
    "name": "j3",
    "queue": "a",
    "priority_class": "train",
    "task_resources": {"cpu": 1, "memory": "1Gi"},
    "created_at": 1767268000,
    "started_at": "2026-01-01T11:30:00Z",
    "tasks": [{"node": "n1"}, {"node": "n1"}],
}
DOCUMENT = {
    **BASE,
    "priority_classes": [*BASE["priority_classes"], {"name": "urgent", "value": 50, "preemption_policy": "Never"}],
    "jobs": [
        *BASE["jobs"],
        PLAIN,
        {**PLAIN, "name": "j4", "min_available": 1, "priority": 50, "priority_class": "urgent"},
    ],
}


@st.composite
def plain_mutated(draw: st.DrawFn) -> dict[str, Any]:
    """``DOCUMENT`` with one or two fields of its jobs of the common case (made when read) set to other values or
    removed: the jobs whose every check the struct path makes on columns."""
    data = copy.deepcopy(DOCUMENT)
    for _ in range(draw(st.integers(1, 2))):
        target = draw(st.sampled_from(data["jobs"][2:]))
        key = draw(st.sampled_from(JOB_KEYS))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = copy.deepcopy(draw(VALUES))
    return data


def structs(data: Any) -> Snapshot | None:
    return struct_snapshot(json.dumps(data).encode(), least_jobs=0, most_odd=1.0)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],  # the fixture is constant
)
@given(data=st.one_of(mutated(DOCUMENT), plain_mutated()))
def test_struct_path_builds_what_pydantic_validates_and_leaves_the_rest(checks: str, data: dict[str, Any]):
    """What the struct path builds, pydantic accepts, and the snapshots are equal in every way; what pydantic refuses,
    the struct path leaves (``None``), and the loader says what pydantic says."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 10**9)
        slow = pydantic_result(data)
        with pytest.raises(ValidationError) if slow is None else contextlib.nullcontext() as refused:
            Snapshot.model_validate(data)
    fast = structs(data)
    if fast is not None:
        assert slow is not None
        assert_same(fast, slow)
    if slow is None:
        assert fast is None and refused is not None
        with pytest.raises(SnapshotError) as caught:
            parse_snapshot(json.dumps(data), json_format=True)
        assert str(caught.value) == str(SnapshotError.from_validation_error(refused.value))


def test_the_document_takes_the_struct_path_and_its_plain_jobs_are_made_when_read(checks):
    fast, slow = structs(DOCUMENT), pydantic_result(DOCUMENT)
    assert fast is not None and slow is not None
    assert isinstance(fast.jobs, JobList)
    if checks == "columns":  # the task-by-task checks read every job
        assert fast.jobs.left == 2  # j1 (a releasing task) and j2 (pending tasks, annotations) are built at once
        assert fast.job("j4").min_available == 1 and fast.jobs.left == 1
    assert_same(fast, slow)
    assert fast.jobs.left == 0


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda text: text.replace('"cpu": 1, "memory"', '"cpu": 1, "cpu": 2, "memory"', 1), "a duplicate key"),
        (lambda text: text.replace('"queue": "a"', '"queue": "a", "queue": "b"', 1), "a duplicate field"),
        (lambda text: text.replace('"name": "j3"', '"name": "j3", "labels": null', 1), "a null spelt out"),
        (
            lambda text: text.replace('"task_resources": {"cpu": 1, "memory": "1Gi"}', '"task_resources": null', 1),
            "a null map",
        ),
        (lambda text: text.replace('"created_at": 1767268000', '"created_at": true', 1), "a boolean instant"),
        (lambda text: text.replace('{"node": "n1"}', '{"node": 2}', 1), "a number for a node"),
        (lambda text: text.replace('"name": "j3"', '"name": "j3\\u003a"', 1), "an escaped colon"),
    ],
)
def test_what_the_structs_cannot_tell_goes_to_the_other_paths(checks, change, why):
    """Documents whose structs would drop or hide something: the struct path leaves them, the loader decides as
    before (pydantic's snapshot or pydantic's message)."""
    text = change(json.dumps(DOCUMENT))
    assert text != json.dumps(DOCUMENT), why
    assert struct_snapshot(text.encode(), least_jobs=0, most_odd=1.0) is None
    try:
        expected: Snapshot | str = Snapshot.model_validate(json.loads(text))  # the last of duplicates, as json does
    except ValidationError as err:
        expected = str(SnapshotError.from_validation_error(err))
    try:
        got: Snapshot | str = parse_snapshot(text, json_format=True)
    except SnapshotError as err:
        got = str(err)
    if why.startswith("a duplicate"):  # refused by the JSON reader, whose message names the key and place
        assert isinstance(got, str) and "duplicate key" in got
    else:
        assert got == expected


def test_few_jobs_or_many_out_of_the_common_case_are_left_to_the_fast_path():
    """Fewer than COLUMNS_FROM jobs, or more than a tenth of them built at once (as in a snapshot imported from
    Kubernetes, whose tasks are named): the fast path builds those sooner."""
    text = json.dumps(DOCUMENT).encode()
    assert struct_snapshot(text, most_odd=1.0) is None  # 4 jobs
    assert struct_snapshot(text, least_jobs=4) is None  # 2 of 4 are built at once (j1, j2)
    assert struct_snapshot(text, least_jobs=4, most_odd=0.5) is not None
    plain = {**DOCUMENT, "jobs": [*DOCUMENT["jobs"], *({**PLAIN, "name": f"p{i}"} for i in range(18))]}
    assert struct_snapshot(json.dumps(plain).encode(), least_jobs=4) is not None  # 2 of 22: taken


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_builds_the_same_snapshot_and_decisions(path, monkeypatch):
    from gpu_preempt.actions.cycle import run_cycle

    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    data = parse_document(path.read_text(encoding="utf-8"), json_format=False, source=str(path))
    slow, fast = pydantic_result(copy.deepcopy(data)), structs(data)
    assert slow is not None and fast is not None
    mine, theirs = run_cycle(fast), run_cycle(slow)
    assert [d.to_dict(timing=False) for d in mine.decisions] == [d.to_dict(timing=False) for d in theirs.decisions]
    assert_same(fast, slow)


def test_a_large_json_file_is_loaded_by_the_struct_path_and_decides_alike(tmp_path):
    """A generated cluster with more than COLUMNS_FROM jobs, written as JSON: loaded with its jobs made when read,
    and every pending job gets the decision it gets from pydantic's snapshot."""
    from gpu_preempt.actions.job_solver import attempt
    from gpu_preempt.state.cluster import Cluster

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    data = generate(300, seed=3, pending=3)
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    slow, fast = snapshot_from_data(data), load_snapshot(path)
    cases = [(job, action) for job in slow.jobs if job.name.startswith("pending-") for action in ("reclaim", "preempt")]
    assert isinstance(fast.jobs, JobList) and len(fast.jobs) >= 1000
    before = fast.jobs.left
    assert before > 0.9 * len(fast.jobs)
    mine, theirs = Cluster.of(fast), Cluster.of(slow)
    for job, action in cases:
        a, b = attempt(mine, fast.job(job.name), action), attempt(theirs, job, action)
        assert a.to_dict(timing=False) == b.to_dict(timing=False)
        for solver in ("greedy", "cpsat"):  # in a state derived by applying the decision, as a simulator does
            after = attempt(mine.with_changes(a.changes()), fast.job(job.name), action, solver=solver)
            expected = attempt(theirs.with_changes(b.changes()), job, action, solver=solver)
            assert after.to_dict(timing=False) == expected.to_dict(timing=False)
    names = [job.name for job in slow.jobs][::-7]
    assert mine.job_positions(names) == theirs.job_positions(names) == list(range(len(slow.jobs)))[::-7]
    assert 0 < fast.jobs.left < before  # the decisions read some jobs, not all
    assert fast == slow


def test_jobs_made_when_read_cannot_be_told_apart(monkeypatch):
    """Equality, dumps, copies, pickles, reprs and every way of reading the list give what pydantic's list gives."""
    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    slow = pydantic_result(DOCUMENT)
    assert slow is not None
    ways: list[Any] = [
        lambda s: s.model_dump_json(),
        lambda s: s.model_dump(),
        lambda s: pickle.loads(pickle.dumps(s)).model_dump_json(),
        lambda s: copy.deepcopy(s).model_dump_json(),
        lambda s: copy.copy(s).model_dump_json(),
        lambda s: s.model_copy(update={"now": 5}).model_dump_json(),
        lambda s: repr(s.jobs),
        lambda s: list(s.jobs),
        lambda s: s.jobs[1:],
        lambda s: s.jobs[-1],
        lambda s: list(reversed(s.jobs)),
        lambda s: s.jobs.index(slow.job("j4")),
        lambda s: slow.job("j3") in s.jobs,
        lambda s: s.jobs == slow.jobs,
        lambda s: s.jobs + [],  # noqa: RUF005  # list.__add__ reads the items
        lambda s: s.jobs.copy(),
        lambda s: dict(s.jobs_by_name()),
        lambda s: s.job("j4").model_dump_json(),
        lambda s: [(t.name, t.node, t.status) for t in s.job("j3").tasks],
        lambda s: s.jobs_by_name().get("nope"),
    ]
    for way in ways:
        fast = structs(DOCUMENT)
        assert fast is not None and fast.jobs.left == 2
        assert way(fast) == way(slow)
