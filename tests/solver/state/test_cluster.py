"""The session state: applied decisions update loads and usage as a fresh count from the task statuses would (plus,
for the current load, the old pods of moved tasks, which a status cannot show)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.models import Resources, Snapshot, load_snapshot, snapshot_from_data
from gpu_preempt.models.quantity import add
from gpu_preempt.state.cluster import ClusterState
from gpu_preempt.state.node_loads import Overlay

ALL = sorted(FIXTURES.glob("*.yaml"))


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_applied_decisions_update_the_state_like_a_fresh_count(path: Path) -> None:
    """The cycle updates loads and usage incrementally; recounting from the task statuses gives the same."""
    result = run_cycle(load_snapshot(path))
    end = result.end
    fresh = ClusterState(end.snapshot, end.tree, end.shares, dict(end.status), dict(end.node_of))

    def nonzero(amounts: Resources) -> Resources:
        return {r: a for r, a in amounts.items() if a}

    leaving: dict[str, Resources] = {}
    for decision in result.decisions:
        for move in decision.moves:
            job = end.snapshot.job(move.job)
            task = next(t for t in job.tasks if str(t.name) == move.task)
            leaving[move.source] = add(leaving.get(move.source, {}), job.requests(task))
    for node in end.snapshot.nodes:
        assert nonzero(end.final_load(node.name)) == nonzero(fresh.final_load(node.name)), node.name
        now = add(fresh.current_load(node.name), leaving.get(node.name, {}))
        assert nonzero(end.current_load(node.name)) == nonzero(now), node.name
    for job in end.snapshot.jobs:
        assert end.running_count(job) == fresh.running_count(job), job.name
        assert nonzero(end.running_on(job)) == nonzero(fresh.running_on(job)), job.name
    for queue in end.tree.queues():
        assert nonzero(end.usage[queue].allocated) == nonzero(fresh.usage[queue].allocated), queue
    assert end.running_by_queue() == fresh.running_by_queue()  # the end's lists were filtered, not recounted
    assert end.running_jobs() == fresh.running_jobs()
    every = tuple(sorted({r for node in end.snapshot.nodes for r in node.resources}))
    for resources in {every, ("gpu",)}:
        for priority in sorted({job.resolved_priority for job in end.snapshot.jobs}):
            expected = [
                tuple(node.resources.get(r, 0) - end.room_load(node.name, priority).get(r, 0) for r in resources)
                for node in end.snapshot.nodes
            ]
            assert end.rooms(priority, resources) == expected == fresh.rooms(priority, resources), priority


def test_a_state_after_evictions_lists_running_jobs_by_queue_like_a_fresh_count() -> None:
    snapshot = load_snapshot(FIXTURES / "example-cluster.yaml")
    state = ClusterState.of(snapshot)
    before = state.running_by_queue()
    victims = [j for jobs in before.values() for j in jobs][:3]
    after = state.with_changes((str(t.name), "pending", None) for j in victims for t in j.tasks)
    assert after.running.by_queue is not None  # passed on, filtered
    fresh = ClusterState(snapshot, after.tree, after.shares, dict(after.status), dict(after.node_of))
    assert after.running_by_queue() == fresh.running_by_queue()
    assert not any(j in jobs for j in victims for jobs in after.running_by_queue().values())


def _state(cluster: ClusterState) -> dict[str, object]:
    """Everything a fresh state counts, with the order of every mapping."""

    def ordered(mapping: dict[str, Resources]) -> list[tuple[str, list[tuple[str, int]]]]:
        return [(k, list(v.items())) for k, v in mapping.items()]

    return {
        "loads per node": _loads_per_node(cluster),  # first: before anything makes the maps of every node
        "status": list(cluster.status.items()),
        "node_of": list(cluster.node_of.items()),
        "running": list(cluster.running_counts().items()),
        "running_on": ordered(cluster.running_hosts()),
        "running nodes": cluster.running_nodes().tolist(),
        "final": ordered(cluster.loads.final),
        "current": ordered(cluster.loads.current),
        "nominated": list(cluster.promised.items()),
        "waiting": [job.name for job in cluster.waiting_jobs()],
        "usage": {q: (u.allocated, u.allocated_non_preemptible, u.requested) for q, u in cluster.usage.items()},
        "shares": cluster.shares,
        "rooms": {resources: _rooms(cluster, resources) for resources in ROOMS},
        "status counts": [cluster.status_counts(s) for s in ("pending", "running", "releasing", "nominated")],
    }


def _loads_per_node(cluster: ClusterState) -> list[tuple[str, list[tuple[str, int]], list[tuple[str, int]]]]:
    """Each node's final and current load as asked for one node at a time, keys in order."""
    return [
        (node.name, list(cluster.final_load(node.name).items()), list(cluster.current_load(node.name).items()))
        for node in cluster.snapshot.nodes
    ]


ROOMS = [("cpu", "gpu", "memory"), ("gpu",), ("gpu", "tpu")]
"""Resources rooms are compared in: all of them, one, and one no node has."""


def _rooms(cluster: ClusterState, resources: tuple[str, ...]) -> tuple[object, object]:
    """Every node's room as a matrix (asked for first) and as tuples."""
    matrix = cluster.room_matrix(resources)
    return None if matrix is None else matrix.tolist(), cluster.base_rooms(resources)


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_a_state_counted_from_the_task_columns_is_the_task_by_task_count(path: Path) -> None:
    snapshot = load_snapshot(path)
    snapshot.task_columns()  # built on demand: a fixture is below COLUMNS_FROM
    from_columns, at_once = ClusterState.of(snapshot), ClusterState.of(snapshot)
    del snapshot.__dict__["_columns"]
    task_by_task = ClusterState.of(snapshot)
    assert _state(from_columns) == _state(task_by_task)
    _assert_summed_at_once(at_once, task_by_task)


def _assert_summed_at_once(from_columns: ClusterState, task_by_task: ClusterState) -> None:
    """Every other node's loads summed in one pass (:meth:`ClusterState.load_nodes`) are the task-by-task count's,
    keys in order, and so are the others', summed one at a time after them."""
    names = [node.name for node in from_columns.snapshot.nodes]
    from_columns.load_nodes(names[::2])
    assert not from_columns.loads.every_node_summed or len(names) < 2  # summed per node, not every node's maps
    assert _loads_per_node(from_columns) == _loads_per_node(task_by_task)


def _large_states(seed: int) -> tuple[Snapshot, ClusterState, ClusterState]:
    """A generated 700-node snapshot (more nodes than the per-node limit, an eighth: 87) with some pods leaving (the
    two loads differ on their nodes), and its state counted from task columns and task by task."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    data = generate(700, seed=seed, pending=2)
    for job in data["jobs"][::40]:
        if job["tasks"][0].get("node"):
            job["tasks"][0]["status"] = "releasing"
    snapshot = snapshot_from_data(data)
    snapshot.task_columns()
    from_columns = ClusterState.of(snapshot)
    del snapshot.__dict__["_columns"]
    return snapshot, from_columns, ClusterState.of(snapshot)


def test_a_large_state_reads_a_few_jobs_tasks_as_its_task_maps_say() -> None:
    """A state counted from columns reads a job's tasks, where they run, on which nodes and in which status from the
    columns until its maps of every task are made, and finds what the task-by-task count's maps say, before and
    after deriving a state from it."""
    snapshot, from_columns, task_by_task = _large_states(seed=5)
    jobs = snapshot.jobs[::29]
    kinds = [("running",), ("releasing",), ("pending",), ("running", "releasing"), ("allocated", "pipelined")]

    def read(state: ClusterState) -> list[object]:
        return [
            (
                [[str(t.name) for t in state.tasks(job, *kind)] for kind in kinds],
                dict(state.count_hosts(job)),
                {str(t.name): state.task_nodes(job)[str(t.name)] for t in job.tasks},
                {str(t.name): state.task_statuses(job)[str(t.name)] for t in job.tasks},
            )
            for job in jobs
        ]

    expected = read(task_by_task)
    assert read(from_columns) == expected
    assert any(hosts for _, hosts, _, _ in expected) and any(r[0][1] for r in expected)  # running, and releasing
    derived = from_columns.with_changes([(str(jobs[0].tasks[0].name), "pending", None)])
    assert read(from_columns) == expected  # the maps made for the derived state say the same
    assert read(derived)[1:] == expected[1:]


def test_a_large_state_sums_a_few_nodes_one_by_one_and_every_node_past_that() -> None:
    """A state counted from columns sums the loads of the nodes a decision asks for one at a time, and makes the
    maps of every node once many are asked for: the loads are the task-by-task count's either way, whatever the order
    nodes are asked in."""
    snapshot, from_columns, task_by_task = _large_states(seed=3)
    names = [node.name for node in snapshot.nodes][::-1]
    assert not from_columns.loads.every_node_summed  # nothing summed yet
    first = [(from_columns.final_load(n), from_columns.current_load(n)) for n in names[:20]]
    from_columns.load_nodes(names[10:40])
    assert not from_columns.loads.every_node_summed  # forty nodes: one by one, then thirty at once
    every = [(from_columns.final_load(n), from_columns.current_load(n)) for n in names]
    assert from_columns.loads.every_node_summed  # past the limit: every node's at once
    expected = [(task_by_task.final_load(n), task_by_task.current_load(n)) for n in names]
    assert every == expected and first == expected[:20]
    assert any(final != current for final, current in expected)  # releasing or nominated tasks somewhere
    assert _state(from_columns) == _state(task_by_task)


def test_a_decision_applied_to_a_large_state_changes_the_loads_of_its_nodes_only() -> None:
    """Applying changes to a state counted from columns sums no node's load but those asked for; the derived
    states' loads (and their own derived states') are those of the same changes applied to the task-by-task count."""
    snapshot, from_columns, task_by_task = _large_states(seed=4)
    running = [job for job in snapshot.jobs if from_columns.running_count(job)][:12]
    evicted = [(str(t.name), "pending", None) for job in running[:6] for t in job.tasks]
    moved = [(str(running[6].tasks[0].name), "pipelined", snapshot.nodes[-1].name)]
    names = [node.name for node in snapshot.nodes]
    for changes in (evicted, moved):
        from_columns, task_by_task = from_columns.with_changes(changes), task_by_task.with_changes(changes)
        touched = {from_columns.node_of[t] for t, _, _ in changes} | {n for _, _, n in changes if n}
        assert all(from_columns.final_load(n) == task_by_task.final_load(n) for n in touched if n)
    overlay = from_columns.loads.final  # read through the fresh state, which has not summed every node's
    assert isinstance(overlay, Overlay) and not overlay.origin.every_node_summed
    from_columns.load_nodes(names[1:60:3])  # read through the derived state: summed in the fresh one
    assert not overlay.origin.every_node_summed
    loads = [(from_columns.final_load(n), from_columns.current_load(n)) for n in names]
    assert loads == [(task_by_task.final_load(n), task_by_task.current_load(n)) for n in names]
    assert dict(from_columns.loads.final) == dict(task_by_task.loads.final)


REQUESTS = [{}, {"gpu": 1}, {"cpu": 2, "gpu": 1}, {"memory": "1Gi", "gpu": 0}, {"gpu": 2, "cpu": "500m"}]


@st.composite
def small_snapshots(draw: st.DrawFn) -> dict[str, object]:
    """Valid snapshots with every task status, shared and own requests naming resources in different orders, and
    tasks named by their job's default or by names of their own (some of them other jobs' default names)."""
    nodes = [f"n{i}" for i in range(draw(st.integers(1, 4)))]
    jobs = []
    for j in range(draw(st.integers(0, 6))):
        tasks = []
        for _ in range(draw(st.integers(1, 4))):
            status = draw(st.sampled_from(["pending", "running", "releasing", "nominated"]))
            task: dict[str, object] = {"status": status}
            if status != "pending":
                task["node"] = draw(st.sampled_from(nodes))
            if draw(st.integers(0, 3)) == 0:
                task["resources"] = draw(st.sampled_from(REQUESTS))
            if draw(st.booleans()):  # a name of its own, maybe another task's default one
                task["name"] = draw(st.sampled_from(["x", "y", "j0-1", "j1-0", "j1-1", "j1-7", "j1-\u00b2"]))
            tasks.append(task)
        job = {"name": f"j{j}", "queue": draw(st.sampled_from(["a", "b"])), "tasks": tasks}
        job["task_resources"] = draw(st.sampled_from(REQUESTS))
        job["preemptible"] = draw(st.booleans())
        jobs.append(job)
    names = [t.get("name", f"{j['name']}-{i}") for j in jobs for i, t in enumerate(j["tasks"])]  # type: ignore[attr-defined]
    assume(len(names) == len(set(names)))  # task names are unique in a snapshot
    return {
        "now": 0,
        "nodes": [{"name": n, "resources": {"gpu": 64, "cpu": 64, "memory": "1Ti"}} for n in nodes],
        "queues": [{"name": "root"}, {"name": "a", "parent": "root"}, {"name": "b", "parent": "root"}],
        "jobs": jobs,
    }


@settings(max_examples=150, deadline=None)
@given(small_snapshots())
def test_a_state_counted_from_columns_is_the_task_by_task_count_on_random_snapshots(data: dict[str, object]) -> None:
    snapshot = snapshot_from_data(data)
    snapshot.task_columns()
    from_columns = ClusterState.of(snapshot)
    owners = from_columns.index.owners  # through the columns (asked for before they are gone)
    del snapshot.__dict__["_columns"]
    task_by_task = ClusterState.of(snapshot)
    assert _state(from_columns) == _state(task_by_task)
    snapshot.task_columns()
    _assert_summed_at_once(ClusterState.of(snapshot), task_by_task)
    assert len(owners) == len(task_by_task.index.owners)
    for name, (job, task) in task_by_task.index.owners.items():
        assert owners[name][0] is job and owners[name][1] is task


@settings(max_examples=100, deadline=None)
@given(small_snapshots(), st.data())
def test_running_nodes_and_hosts_of_derived_states_are_those_of_a_fresh_count(
    data: dict[str, object], draw: st.DataObject
):
    """Each job's single running node (or none, or several) is updated for the jobs a change moves, from a parent
    that knew them or from an ancestor that did (states in between never asked), as a fresh count finds it."""
    snapshot = snapshot_from_data(data)
    assume(snapshot.jobs)
    if draw.draw(st.booleans()):
        snapshot.task_columns()  # counted from columns: every job's host map is built only when asked for
    state = ClusterState.of(snapshot)
    state.running_nodes()
    tasks = [str(t.name) for j in snapshot.jobs for t in j.tasks]
    nodes = [n.name for n in snapshot.nodes]
    steps = draw.draw(st.integers(1, 4))
    for step in range(steps):
        changes = draw.draw(
            st.lists(st.tuples(st.sampled_from(tasks), st.sampled_from(["pending", "running"]), st.sampled_from(nodes)))
        )
        once = {t: (t, s, n if s == "running" else None) for t, s, n in changes}  # one change a task
        if draw.draw(st.booleans()):
            state.running_array()  # known to the parent: the child patches it
        state = state.with_changes(once.values())
        if step < steps - 1 and draw.draw(st.booleans()):
            continue  # not asked: the next state updates an earlier state's answer
        fresh = ClusterState(snapshot, state.tree, state.shares, dict(state.status), dict(state.node_of))
        assert state.running_nodes().tolist() == fresh.running_nodes().tolist()
        assert state.running_array().tolist() == fresh.running_array().tolist()
        assert dict(state.running_counts()) == dict(fresh.running_counts())
        assert [job.name for job in state.running_jobs()] == [job.name for job in fresh.running_jobs()]
        for status in ("pending", "running"):  # a derived state's statuses are not its snapshot's columns'
            counts = [state.count(job, status) for job in snapshot.jobs]
            assert state.status_counts(status) == (sum(1 for c in counts if c), sum(counts))
        assert [state.running_on(job) for job in snapshot.jobs] == [fresh.running_on(job) for job in snapshot.jobs]
        assert state.running_hosts() == fresh.running_hosts()
        for job, node in zip(snapshot.jobs, fresh.running_nodes().tolist(), strict=True):
            hosts = fresh.running_on(job)
            assert node == (-1 if not hosts else -2 if len(hosts) > 1 else nodes.index(next(iter(hosts))))


def test_job_positions_are_found_by_scan_or_map_alike() -> None:
    jobs = [{"name": f"j{i}", "queue": "a", "task_resources": {"gpu": 1}, "tasks": [{}]} for i in range(12)]
    data = {"now": 0, "nodes": [], "queues": [{"name": "a"}], "jobs": jobs}
    state = ClusterState.of(snapshot_from_data(data))
    names = [job["name"] for job in jobs]
    one_by_one = [state.job_positions([name])[0] for name in reversed(names)]  # scanned
    assert state.job_positions(reversed(names)) == one_by_one == list(reversed(range(12)))  # 12 > 8: the map


def test_caches_of_the_node_models_pass_to_a_later_snapshot_of_the_same_nodes_only() -> None:
    """``for_nodes`` holds what depends on the node models alone: a replay's next snapshot of the same node models
    (and the states derived from it) shares it; a snapshot with other node models starts afresh."""

    class Seen(dict[str, int]):
        pass

    first = load_snapshot(FIXTURES / "cycle-no-double-booking.yaml")
    state = ClusterState.of(first)
    state.for_nodes(Seen)["judged"] = 1
    later = first.model_copy(update={"now": first.now + 60})
    following = ClusterState.of(later, state)
    assert following.for_nodes(Seen) == {"judged": 1}
    assert following.with_changes([]).for_nodes(Seen) is following.for_nodes(Seen)
    assert following.for_snapshot(Seen) == {}  # a snapshot's own caches do not pass on
    other = later.model_copy(update={"nodes": [node.model_copy() for node in later.nodes]})
    assert ClusterState.of(other, following).for_nodes(Seen) == {}
