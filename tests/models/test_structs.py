"""The struct path builds exactly the snapshot pydantic validates, from parsed data and from JSON bytes alike, and
leaves to pydantic what pydantic refuses; a large snapshot's jobs are made when read, and no one can tell."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import pickle
import re
import sys
from typing import Any

import numpy as np
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpu_preempt.models import Snapshot, SnapshotError, load_snapshot, parse_snapshot, snapshot_from_data
from gpu_preempt.models.columns import JobColumns
from gpu_preempt.models.job import Job
from gpu_preempt.models.load.build import from_data, from_json
from gpu_preempt.models.load.checked import LARGE_COLUMN
from gpu_preempt.models.load.document import parse_document
from gpu_preempt.models.load.job_list import JobList

FIXTURES = sorted(ROOT.glob("fixtures/*.yaml"))

BASE: dict[str, Any] = {
    "now": "2026-01-01T12:00:00Z",
    "nodes": [
        {"name": "n1", "resources": {"gpu": 8, "cpu": "96", "memory": "1Ti"}, "labels": {"rack": "r1"}},
        {"name": "n2", "resources": {"gpu": 8}, "gpu_model": "H100", "schedulable": False},
    ],
    "queues": [{"name": "root"}, {"name": "a", "parent": "root"}, {"name": "b", "parent": "root"}],
    "priority_classes": [{"name": "train", "value": 50}],
    "jobs": [
        {
            "name": "j1",
            "queue": "a",
            "priority_class": "train",
            "task_resources": {"gpu": 4},
            "created_at": 1767268000,
            "started_at": "2026-01-01T11:00:00Z",
            "checkpointed_at": 1767268900,
            "tasks": [{"node": "n1"}, {"node": "n2", "status": "releasing"}],
        },
        {
            "name": "j2",
            "queue": "b",
            "priority": 10,
            "preemptible": True,
            "min_available": 1,
            "task_resources": {"gpu": 2},
            "tasks": [{}, {"name": "j2-x", "resources": {"gpu": 1}}, {"node": "n1", "status": "nominated"}],
            "annotations": {"note": {"deep": [1, 2]}},
            "requeue": {"count": 1, "evicted_at": 1767267000},
        },
    ],
}

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([0, 1, 2, 3, 4, 8, 17, -1, 2**31, 0.5, 1.0, 2.5e11, 1e300]),
    st.sampled_from(["", "n1", "n2", "a", "b", "root", "train", "x", "1", "64Gi", "500m", "1.5", "unlimited"]),
    st.sampled_from(["running", "pending", "releasing", "nominated", "2026-01-01T11:00:00Z", "2026-01-01T11:00:00"]),
    st.just([]),
    st.just({}),
    st.just({"gpu": 1}),
    st.just({"gpu": 0.5}),
    st.just({"gpu": True}),  # equal to {"gpu": 1} as a dict: a cache of parsed maps must tell them apart
    st.just({"gpu": 1.0}),
    st.just({"rack": {"a": [{"b": 1}]}}),
    st.just([{}]),
    st.just({"count": 2, "evicted_at": 5, "requeue_at": 1}),
    st.just([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),  # taints
    st.just([{"key": "a", "effect": "Sometimes"}]),
    st.just({"node_selector": {"rack": "r1"}, "tolerations": [{"operator": "Exists"}]}),  # placements
    st.just({"node_affinity": [[{"key": "metadata.name", "operator": "In", "values": ["n1"]}]]}),
    st.just({"topology": {"required": "rack"}}),
    st.sampled_from([[0], [7], [8], [0, 1], [0, 0], [-1], [True], ["0"]]),  # devices of a share of a GPU
    st.just({"gpu": "250m"}),
)
NODE_KEYS = [
    "name",
    "resources",
    "gpu_model",
    "labels",
    "annotations",
    "schedulable",
    "taints",
    "gpu_memory",
    "unknown",
]
JOB_KEYS = [
    "name",
    "queue",
    "priority_class",
    "priority",
    "preemptible",
    "min_available",
    "task_resources",
    "created_at",
    "started_at",
    "tasks",
    "labels",
    "annotations",
    "requeue",
    "placement",
    "checkpointed_at",
    "gpu_devices",
    "unknown",
]
TASK_KEYS = ["name", "node", "status", "resources", "devices", "unknown"]


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any] = BASE) -> dict[str, Any]:
    """``base`` with a few fields of its nodes, jobs and tasks set to other values or removed."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["node", "job", "task"]))
        if kind == "node":
            target, keys = draw(st.sampled_from(data["nodes"])), NODE_KEYS
        elif kind == "job":
            target, keys = draw(st.sampled_from(data["jobs"])), JOB_KEYS
        else:
            tasks = [t for j in data["jobs"] if type(j.get("tasks")) is list for t in j["tasks"] if type(t) is dict]
            if not tasks:
                continue
            target, keys = draw(st.sampled_from(tasks)), TASK_KEYS
        key = draw(st.sampled_from(keys))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = copy.deepcopy(draw(VALUES))  # st.just gives the same object every time
    return data


def pydantic_result(data: dict[str, Any]) -> Snapshot | None:
    try:
        return Snapshot.model_validate(data)
    except ValidationError:
        return None


def reference(data: dict[str, Any]) -> tuple[Snapshot | None, ValidationError | None]:
    """pydantic's answer with the task-by-task checks: its snapshot, or its error."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 10**9)
        try:
            return Snapshot.model_validate(data), None
        except ValidationError as error:
            return None, error


def assert_same(fast: Snapshot, slow: Snapshot) -> None:
    """Equal fields everywhere, the same fields given, the same resolved priorities."""
    assert fast == slow
    assert fast.model_dump() == slow.model_dump()
    assert fast.model_fields_set == slow.model_fields_set
    for mine, theirs in zip(fast.nodes, slow.nodes, strict=True):
        assert mine.model_fields_set == theirs.model_fields_set
    for mine, theirs in zip(fast.jobs, slow.jobs, strict=True):
        assert mine.model_fields_set == theirs.model_fields_set
        assert (mine.resolved_priority, mine.is_preemptible, mine.may_evict) == (
            theirs.resolved_priority,
            theirs.is_preemptible,
            theirs.may_evict,
        )
        for a, b in zip(mine.tasks, theirs.tasks, strict=True):
            assert a.model_fields_set == b.model_fields_set
    assert fast.job(fast.jobs[0].name) is fast.jobs[0] if fast.jobs else True
    gathered, read = fast.job_columns(), JobColumns.of(slow.jobs)  # the struct path's lists, the models' values
    for field in dataclasses.fields(JobColumns):
        if field.name in ("shapes", "shape"):  # told apart by identity: the struct path shares maps, pydantic does not
            continue
        mine, theirs = getattr(gathered, field.name), getattr(read, field.name)
        if isinstance(mine, np.ndarray):
            assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs, equal_nan=mine.dtype == float), field
        else:
            assert mine == theirs, field.name
    for columns, jobs in ((gathered, fast.jobs), (read, slow.jobs)):
        assert all(columns.shapes[k] is job.task_resources for k, job in zip(columns.shape.tolist(), jobs, strict=True))


@pytest.fixture(params=["columns", "task by task"])
def checks(request, monkeypatch):
    """Whole-document checks on task columns (as on large snapshots) or task by task (as on small ones)."""
    if request.param == "columns":
        monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    return request.param


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],  # the fixture is constant
)
@given(data=mutated(), parsed=st.booleans())
def test_the_struct_path_accepts_and_refuses_what_pydantic_does(checks: str, data: dict[str, Any], parsed: bool):
    """Against pydantic with the task-by-task checks: the struct path from parsed data, with either kind of checks,
    and with resource maps looked up by their encoding or by their entries and types (``parsed``: the documents
    are JSON), accepts the same documents, builds equal snapshots, and the loader refuses the others with the same
    words."""
    before = copy.deepcopy(data)
    slow, refused = reference(data)
    fast = from_data(data, parsed=parsed)
    assert data == before  # the document is not changed
    assert (fast is None) == (slow is None)
    if fast is not None and slow is not None:
        assert_same(fast, slow)
    else:  # refused: the loader's messages are pydantic's, whichever path it tried first
        assert refused is not None
        with pytest.raises(SnapshotError) as caught:
            snapshot_from_data(data)
        assert str(caught.value) == str(SnapshotError.from_validation_error(refused))


@pytest.mark.parametrize("parsed", [False, True])
def test_a_map_equal_to_one_parsed_before_but_of_other_types_is_judged_by_its_own_types(parsed: bool):
    """``{"gpu": True}`` equals ``{"gpu": 1}`` as a dict and hashes the same; ``{"gpu": 1.0}`` too, but it is a valid
    amount. Whichever is seen first, the others are accepted or refused as pydantic does."""
    for first, then in (({"gpu": 1}, {"gpu": True}), ({"gpu": 1}, {"gpu": 1.0}), ({"gpu": 1.0}, {"gpu": True})):
        for resources in (first, then):
            data = copy.deepcopy(BASE)
            data["nodes"][1]["resources"] = dict(resources)
            data["jobs"][0]["task_resources"] = dict(resources)
            fast, slow = from_data(copy.deepcopy(data), parsed=parsed), pydantic_result(data)
            assert (fast is None) == (slow is None) == any(amount is True for amount in resources.values())
            if fast is not None and slow is not None:
                assert_same(fast, slow)


def test_the_base_document_takes_the_struct_path():
    fast = from_data(copy.deepcopy(BASE))
    assert fast is not None
    assert [t.status for t in fast.job("j2").tasks] == ["pending", "pending", "nominated"]
    assert [t.name for t in fast.job("j2").tasks] == ["j2-0", "j2-x", "j2-2"]


def test_shares_are_read_by_fraction_by_memory_and_on_several_devices():
    """The struct path reads shares of a GPU: by fraction or by memory (the nodes' ``gpu_memory`` too), on one device
    or several (``gpu_devices``), their ``devices``; what pydantic refuses it leaves to pydantic
    (docs/snapshot-format.md, "GPU sharing")."""
    data = copy.deepcopy(BASE)
    data["jobs"][0]["task_resources"] = {"gpu": "500m"}
    data["jobs"][0]["tasks"] = [{"node": "n1", "devices": [0]}]
    fast = from_data(copy.deepcopy(data))
    assert fast is not None and fast.jobs[0].tasks[0].devices == [0]
    assert_same(fast, pydantic_result(copy.deepcopy(data)))
    memory = copy.deepcopy(data)
    memory["nodes"][0]["gpu_memory"] = "80Gi"
    memory["jobs"][0]["task_resources"] = {"gpu_memory": "20Gi"}
    fast = from_data(copy.deepcopy(memory))
    assert fast is not None and fast.nodes[0].gpu_memory == 80 * 2**30 * 1000  # milli-units
    assert_same(fast, pydantic_result(copy.deepcopy(memory)))
    memory["nodes"][0]["gpu_memory"] = "lots"
    assert from_data(copy.deepcopy(memory)) is None  # pydantic names the field
    several = copy.deepcopy(data)
    several["jobs"][0].update(gpu_devices=2, tasks=[{"node": "n1", "devices": [0, 3]}])
    fast = from_data(copy.deepcopy(several))
    assert fast is not None and fast.jobs[0].gpu_devices == 2 and fast.jobs[0].tasks[0].devices == [0, 3]
    assert_same(fast, pydantic_result(copy.deepcopy(several)))
    for wrong in ([0], [0, 0], [0, "1"]):  # not as many as gpu_devices, a device twice, not a number
        several["jobs"][0]["tasks"] = [{"node": "n1", "devices": wrong}]
        assert from_data(copy.deepcopy(several)) is None and pydantic_result(copy.deepcopy(several)) is None


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_builds_the_same_snapshot_on_both_paths(path):
    """From the YAML's data; JSON bytes are tested below."""
    data = parse_document(path.read_text(encoding="utf-8"), json_format=False, source=str(path))
    slow = pydantic_result(copy.deepcopy(data))
    fast = from_data(data)
    assert slow is not None and fast is not None
    assert_same(fast, slow)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["jobs"][0]["tasks"][0].update(node="n9"), "jobs[0].tasks[0].node: unknown node 'n9'"),
        (lambda d: d["nodes"][1]["resources"].update(gpu=0.5), "nodes[1].resources.gpu: a node has whole GPU devices"),
        (lambda d: d["jobs"][1].update(min_available=4), "jobs[1].min_available: min_available 4 exceeds the 3 tasks"),
        (lambda d: d["jobs"][1]["tasks"][0].update(status="running"), "jobs[1].tasks[0].node: a running task needs"),
        (lambda d: d["jobs"][1].update(queue="x"), "jobs[1].queue: unknown queue 'x'"),
        (
            lambda d: d["jobs"][1].update(queue="root"),
            "jobs[1].queue: queue 'root' is not a leaf (it has children: a, b)",
        ),
        (lambda d: d["jobs"][1].update(priority_class="x"), "jobs[1].priority_class: unknown priority class 'x'"),
        (lambda d: d["jobs"][0].update(priority=10), "jobs[0].priority: priority 10 disagrees with priority class"),
    ],
    ids=[
        "unknown node",
        "fractional GPU",
        "gang minimum",
        "running without node",
        "unknown queue",
        "queue not a leaf",
        "unknown class",
        "priority not the class's",
    ],
)
def test_a_refused_document_gets_pydantics_messages(checks, change, message):
    """Refused by the struct path (which then leaves it to pydantic) with either kind of whole-document checks, and
    the loader's message is pydantic's."""
    data = copy.deepcopy(BASE)
    change(data)
    assert from_data(copy.deepcopy(data)) is None
    with pytest.raises(SnapshotError) as caught:
        snapshot_from_data(data)
    assert message in str(caught.value)


def test_priorities_resolve_alike_on_both_paths(checks):
    """Priority, preemptibility and the right to evict, resolved by the struct path as the snapshot resolves them:
    from a class (one that never preempts), from the job's own priority, from the default, and with
    ``preemptible`` given or left to the threshold."""
    data = copy.deepcopy(BASE)
    data["config"] = {"default_priority": 7, "preemptible_below_priority": 60}
    data["priority_classes"].append({"name": "urgent", "value": 1000, "preemption_policy": "Never"})
    job = data["jobs"][1]
    variants = [{"priority_class": "urgent"}, {"priority": 100}, {"priority": 100, "preemptible": True}, {}]
    for k, variant in enumerate(variants):
        data["jobs"].append({"name": f"v{k}", "queue": "a", "tasks": [{}], **variant})
    del job["preemptible"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 10**9)
        slow = pydantic_result(copy.deepcopy(data))
    fast = from_data(data)
    assert slow is not None and fast is not None
    assert_same(fast, slow)
    resolved = [(j.resolved_priority, j.is_preemptible, j.may_evict) for j in fast.jobs]
    assert resolved == [
        (50, True, True),
        (10, True, True),
        (1000, False, False),
        (100, False, True),
        (100, True, True),
        (7, True, True),
    ]


def test_jobs_of_one_shape_share_one_request_map_and_equal_snapshots_do_not_depend_on_it():
    """The struct path gives every job (and node) of one shape the same map object, which the reductions tell apart
    by identity; pydantic's snapshot has a map per job and is equal."""
    data = copy.deepcopy(BASE)
    data["jobs"].append({**copy.deepcopy(data["jobs"][0]), "name": "j3", "tasks": [{}]})
    fast, slow = from_data(copy.deepcopy(data)), pydantic_result(copy.deepcopy(data))
    assert fast is not None and slow is not None
    assert fast.job("j3").task_resources is fast.job(data["jobs"][0]["name"]).task_resources
    assert slow.job("j3").task_resources is not slow.job(data["jobs"][0]["name"]).task_resources
    assert_same(fast, slow)


def test_a_document_the_struct_path_refuses_gets_pydantics_message_from_json_too():
    broken = json.dumps({**BASE, "jobs": [{**BASE["jobs"][0], "min_available": 3}]})
    assert from_json(broken.encode()) is None
    with pytest.raises(SnapshotError) as caught:
        parse_snapshot(broken, json_format=True)
    assert "jobs[0].min_available: min_available 3 exceeds the 2 tasks" in str(caught.value)


def test_validating_parsed_data_leaves_it_as_it_was():
    data = copy.deepcopy(BASE)
    snapshot_from_data(data)
    assert data == BASE


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_gets_the_same_decisions_from_both_paths(path):
    """The struct path's snapshot, its state counted from task columns, and pydantic's, counted task by task, give
    the same cycle of decisions."""
    from gpu_preempt.actions.cycle import run_cycle

    data = parse_document(path.read_text(encoding="utf-8"), json_format=False, source=str(path))
    slow = pydantic_result(copy.deepcopy(data))
    fast = from_data(data)
    assert slow is not None and fast is not None
    fast.task_columns()  # a fixture is below COLUMNS_FROM: its columns are built on demand
    mine, theirs = run_cycle(fast), run_cycle(slow)  # the state counted from columns, and task by task
    assert [d.to_dict(timing=False) for d in mine.decisions] == [d.to_dict(timing=False) for d in theirs.decisions]


def test_yaml_is_not_looked_up_by_encoding_where_a_date_and_a_string_encode_alike():
    """A YAML date key is written as a string by MessagePack: after the map with that string as a resource name,
    the map with the date must still be refused (resource names are strings)."""
    text = """
now: 0
queues: [{name: q}]
nodes:
  - {name: n1, resources: {"2026-01-01": 8}}
  - {name: n2, resources: {2026-01-01: 8}}
"""
    with pytest.raises(SnapshotError, match=re.escape("nodes[1].resources")):
        parse_snapshot(text)
    assert parse_snapshot(text.replace("{2026-01-01: 8}", '{"2026-01-01": 8}')).nodes[1].resources == {
        "2026-01-01": 8000
    }


TOO_DEEP = functools.reduce(lambda inner, _: {"a": inner}, range(40), "x")  # labels nest at most 32 levels


@pytest.mark.parametrize("parsed", [False, True])
@pytest.mark.parametrize(
    ("labels", "accepted"),
    [({"rack": "r1", "zone": "z"}, True), ({"rack": 1}, True), (TOO_DEEP, False)],
    ids=["strings", "a number", "too deep"],
)
def test_labels_are_accepted_and_refused_as_pydantic_does_on_either_lookup(
    parsed: bool, labels: dict[str, Any], accepted: bool
):
    data = copy.deepcopy(BASE)
    data["nodes"][0]["labels"] = labels
    data["jobs"][0]["labels"] = copy.deepcopy(labels)
    fast, slow = from_data(copy.deepcopy(data), parsed=parsed), pydantic_result(data)
    assert (fast is not None) == (slow is not None) == accepted
    if fast is not None and slow is not None:
        assert_same(fast, slow)


def test_tasks_left_out_by_the_struct_path_are_made_when_read_and_no_one_can_tell(monkeypatch):
    """A job whose every task gives only its node keeps the nodes, and its tasks are made when first read; equality,
    dumps (in the same key order), copies, pickles and reprs make them first, so the snapshot is the one pydantic
    validates in every way. (Checked on columns, as a large snapshot is: the task-by-task checks read every task.)"""
    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    data = copy.deepcopy(BASE)
    data["jobs"].append({"name": "j3", "queue": "a", "task_resources": {"gpu": 1}, "tasks": [{"node": "n1"}] * 2})
    slow = pydantic_result(copy.deepcopy(data))
    assert slow is not None
    ways: list[Any] = [
        lambda s: s.model_dump_json(),
        lambda s: s.model_dump(),
        lambda s: s.job("j3").model_dump_json(),
        lambda s: repr(s.job("j3")),
        lambda s: pickle.loads(pickle.dumps(s)).model_dump_json(),
        lambda s: copy.deepcopy(s).model_dump_json(),
        lambda s: copy.copy(s.job("j3")).model_dump_json(),
        lambda s: s.job("j3").model_copy(update={"queue": "b"}).model_dump_json(),
        lambda s: [(t.name, t.node, t.status, t.model_fields_set) for t in s.job("j3").tasks],
    ]
    for way in ways:
        fast = from_data(copy.deepcopy(data))
        assert fast is not None
        lazy = [job.name for job in fast.jobs if "_task_nodes" in job.__dict__]
        assert lazy == ["j3"]  # j1 has a releasing task, j2 pending ones: built at once
        assert way(fast) == way(slow)
        assert "_task_nodes" not in fast.job("j3").__dict__ and fast == slow
    fast = from_data(copy.deepcopy(data))
    assert fast is not None and fast.job("j3") == slow.job("j3") and slow.job("j3") == fast.job("j3")


# -- from JSON bytes: raw resource maps, duplicate keys, jobs made when read ----------------------------------------

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
    removed: the jobs whose every check the struct path makes on lists."""
    data = copy.deepcopy(DOCUMENT)
    for _ in range(draw(st.integers(1, 2))):
        target = draw(st.sampled_from(data["jobs"][2:]))
        key = draw(st.sampled_from(JOB_KEYS))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = copy.deepcopy(draw(VALUES))
    return data


def from_bytes(data: Any) -> Snapshot | None:
    return from_json(json.dumps(data).encode())


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],  # the fixture is constant
)
@given(data=st.one_of(mutated(DOCUMENT), plain_mutated()))
def test_json_bytes_build_what_pydantic_validates_and_leave_the_rest(checks: str, data: dict[str, Any]):
    """What the struct path builds from JSON bytes, pydantic accepts, and the snapshots are equal in every way; what
    pydantic refuses, the struct path leaves (``None``), and the loader says what pydantic says."""
    slow, refused = reference(data)
    fast = from_bytes(data)
    if fast is not None:
        assert slow is not None
        assert_same(fast, slow)
    if slow is None:
        assert fast is None and refused is not None
        with pytest.raises(SnapshotError) as caught:
            parse_snapshot(json.dumps(data), json_format=True)
        assert str(caught.value) == str(SnapshotError.from_validation_error(refused))


def test_a_large_document_makes_its_plain_jobs_when_read_and_a_small_one_at_once(monkeypatch):
    small = from_bytes(DOCUMENT)
    assert small is not None and type(small.jobs) is list
    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    fast, slow = from_bytes(DOCUMENT), pydantic_result(DOCUMENT)
    assert fast is not None and slow is not None
    assert isinstance(fast.jobs, JobList)
    assert fast.jobs.left == 3  # j2 (a task with its own resources) is built at once; j1 (a releasing task) is not
    assert fast.job("j4").min_available == 1 and fast.jobs.left == 2
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
def test_what_the_raw_structs_cannot_tell_is_decided_from_the_data(change, why):
    """Documents whose bytes the structs cannot take: the loader decides as pydantic does (pydantic's snapshot or
    pydantic's message; a duplicate key is refused by the JSON reader, naming the key and the place)."""
    text = change(json.dumps(DOCUMENT))
    assert text != json.dumps(DOCUMENT), why
    assert from_json(text.encode()) is None
    try:
        expected: Snapshot | str = Snapshot.model_validate(json.loads(text))  # the last of duplicates, as json does
    except ValidationError as err:
        expected = str(SnapshotError.from_validation_error(err))
    try:
        got: Snapshot | str = parse_snapshot(text, json_format=True)
    except SnapshotError as err:
        got = str(err)
    if why.startswith("a duplicate"):
        assert isinstance(got, str) and "duplicate key" in got
    else:
        assert got == expected


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_as_json_builds_the_same_snapshot_and_decisions(path, monkeypatch):
    from gpu_preempt.actions.cycle import run_cycle

    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    data = parse_document(path.read_text(encoding="utf-8"), json_format=False, source=str(path))
    fast = from_bytes(json.loads(json.dumps(data, default=str)))  # YAML datetimes written as text
    slow = pydantic_result(copy.deepcopy(data))
    assert slow is not None and fast is not None
    mine, theirs = run_cycle(fast), run_cycle(slow)
    assert [d.to_dict(timing=False) for d in mine.decisions] == [d.to_dict(timing=False) for d in theirs.decisions]
    assert fast.model_dump_json() == slow.model_dump_json()


def test_a_large_json_file_is_loaded_with_jobs_made_when_read_and_decides_alike(tmp_path):
    """A generated cluster with more than COLUMNS_FROM jobs, written as JSON: loaded with its jobs made when read,
    and every pending job gets the decision it gets from pydantic's snapshot."""
    from gpu_preempt.actions.job_solver import attempt
    from gpu_preempt.state.cluster import ClusterState

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    data = generate(300, seed=3, pending=3)
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    slow, fast = Snapshot.model_validate(data), load_snapshot(path)
    cases = [(job, action) for job in slow.jobs if job.name.startswith("pending-") for action in ("reclaim", "preempt")]
    assert isinstance(fast.jobs, JobList) and len(fast.jobs) >= 1000
    before = fast.jobs.left
    assert before > 0.9 * len(fast.jobs)
    mine, theirs = ClusterState.of(fast), ClusterState.of(slow)
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
        fast = from_bytes(DOCUMENT)
        assert fast is not None and fast.jobs.left == 3
        assert way(fast) == way(slow)


def test_a_large_yaml_document_takes_the_struct_path_too(monkeypatch):
    """Parsed data of any origin is converted into structs (``msgspec.convert``): a YAML document with timestamps
    builds pydantic's snapshot, its plain jobs made when read."""
    monkeypatch.setattr("gpu_preempt.models.snapshot.COLUMNS_FROM", 0)
    text = (ROOT / "fixtures" / "example-cluster.yaml").read_text(encoding="utf-8")
    data = parse_document(text, json_format=False, source="example")
    fast, slow = from_data(data), pydantic_result(copy.deepcopy(data))
    assert fast is not None and slow is not None and isinstance(fast.jobs, JobList)
    assert_same(fast, slow)


@pytest.mark.parametrize("left_out", ["name", "status"])
def test_a_large_document_of_named_tasks_with_a_few_left_out_builds_what_pydantic_validates(tmp_path, left_out):
    """Past the size where the columns are read with numpy, tasks that all give a name and a status but a few
    (their defaults then stand) build the snapshot pydantic validates."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    data = generate(1200, seed=5, pending=3, style="named")
    tasks = [task for job in data["jobs"] for task in job["tasks"]]
    assert len(tasks) > LARGE_COLUMN
    for task in tasks[3::997]:
        if task.get("node"):
            task.pop(left_out, None)
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    fast = load_snapshot(path)
    assert isinstance(fast.jobs, JobList)
    assert fast == Snapshot.model_validate(data)


def test_a_large_mixed_document_keeps_every_given_field_without_its_structs(tmp_path):
    """Past the size where the columns are read with numpy, a snapshot of every style at once (labels, annotations,
    checkpoints, shares on named devices, task order, priorities given or not, nulls): its jobs are held as their
    shapes, not as the structs they were decoded into, and build what pydantic validates, given fields and all."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    data = generate(1200, seed=7, pending=3, style="mixed")
    jobs = data["jobs"]
    jobs[5]["priority"], jobs[6]["priority_class"], jobs[7]["preemptible"] = None, None, False
    jobs[8]["min_available"], jobs[9]["created_at"] = 1, None
    jobs[10]["tasks"][0]["order"] = None
    assert sum(map(len, (job["tasks"] for job in jobs))) > LARGE_COLUMN
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    fast, slow = load_snapshot(path), Snapshot.model_validate(data)
    assert isinstance(fast.jobs, JobList)
    held = {type(list.__getitem__(fast.jobs, i)) for i in range(len(fast.jobs))}
    assert held <= {int, Job} and int in held  # nothing decoded is kept beside the columns
    assert_same(fast, slow)


def test_a_json_documents_jobs_share_the_names_of_their_queue_and_priority_class():
    """Decoded from JSON, a job's queue and priority class are the one string the document's names give: a large
    snapshot does not keep a copy per job."""
    data = copy.deepcopy(BASE)
    data["jobs"] = [
        {"name": f"j{i}", "queue": data["jobs"][0]["queue"], "priority_class": "train", "tasks": [{}]} for i in range(3)
    ]
    fast = from_json(json.dumps(data).encode())
    assert fast is not None
    first, *others = fast.jobs
    assert all(job.queue is first.queue and job.priority_class is first.priority_class for job in others)
    data["jobs"][2]["queue"] = "nowhere"  # a name the document does not give: refused, as pydantic refuses it
    assert from_json(json.dumps(data).encode()) is None
    with pytest.raises(ValidationError):
        Snapshot.model_validate(data)
