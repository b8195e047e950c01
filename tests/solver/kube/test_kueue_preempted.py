"""What Kueue did, read from a dump of its Workloads: the preemptions their conditions record, the state before
each, and the audit of each against the least disruptive decision (docs/operations.md)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import FIXTURES

from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.kube.importer import import_objects
from gpu_preempt.kube.kueue_preempted import kueue_preemptions, state_before
from gpu_preempt.kube.read import parse_objects
from gpu_preempt.models import snapshot_from_data
from gpu_preempt.questions import audit_preemption
from gpu_preempt.state.cluster import ClusterState

GPU_PREEMPT = str(Path(sys.executable).parent / "gpu-preempt")
DUMP = FIXTURES / "kube" / "kueue-preempted.json"
B1, A1, A2, A3 = (f"team-{t}/job-{j}-7c1d2" for t, j in (("b", "b1"), ("a", "a1"), ("a", "a2"), ("a", "a3")))


def dump() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DUMP.read_text())
    return data


def objects(data: dict[str, Any] | None = None) -> Any:
    return parse_objects(json.dumps(data if data is not None else dump()), "dump.json")


def rebuilt(data: dict[str, Any] | None = None) -> Any:
    found = objects(data)
    (preemption,) = kueue_preemptions(found)
    return state_before(import_objects(found, now=preemption.at, times=False)[0], found, preemption, [preemption])


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GPU_PREEMPT, *args], capture_output=True, text=True, timeout=120, check=False)


def test_the_preempted_conditions_name_the_preemptor_its_victims_and_when():
    (preemption,) = kueue_preemptions(objects())
    assert preemption.preemptor == B1
    assert preemption.victims == (A2, A3)
    assert preemption.reasons == ("InCohortReclamation", "InCohortReclamation")
    assert preemption.to_dict()["at"] == "2026-11-23T11:50:01Z"


def test_before_the_preemption_the_preemptor_waits_and_its_victims_run():
    """b1 has since run a pod on gpu-node-1: pending then. a2's pod, terminating since, runs again from its start;
    a3's pod is gone: left for the audit to place, with the preemption's time as its start (said in a note)."""
    before = rebuilt()
    jobs = {j["name"]: j for j in before.document["jobs"]}
    assert all("node" not in t for t in jobs[B1]["tasks"]) and "started_at" not in jobs[B1]
    assert [(t["status"], t["node"]) for t in jobs[A2]["tasks"]] == [("running", "gpu-node-1")]
    assert jobs[A2]["started_at"] == "2026-11-23T10:30:05Z"
    assert before.unplaced == (A3,)
    assert jobs[A3]["started_at"] == "2026-11-23T11:50:01Z"
    assert any(A3 in note and "not in the dump" in note for note in before.notes)
    assert before.document["now"] == "2026-11-23T11:50:01Z"


def test_a_workload_created_after_the_preemption_is_left_out_and_one_admitted_after_it_waits():
    data = dump()
    late = copy.deepcopy(next(i for i in data["items"] if i["metadata"]["name"] == "job-a1-7c1d2"))
    late["metadata"].update(name="job-late-1", uid="late-1", creationTimestamp="2026-11-23T11:55:00Z")
    early = copy.deepcopy(late)
    early["metadata"].update(name="job-early-1", uid="early-1", creationTimestamp="2026-11-23T11:00:00Z")
    for condition in early["status"]["conditions"]:
        condition["lastTransitionTime"] = "2026-11-23T11:52:00Z"
    data["items"] += [late, early]
    before = rebuilt(data)
    names = {j["name"] for j in before.document["jobs"]}
    assert "team-a/job-late-1" not in names
    # a Workload with no pods has only pending tasks: nothing to take off the nodes, nothing said
    assert "team-a/job-early-1" in names


def test_kueue_evicting_two_jobs_where_one_frees_the_room_is_an_over_eviction():
    """Kueue takes the most recently admitted workloads of the lender first (a3, then a2: two jobs of one task each);
    a1 alone, two tasks on gpu-node-0, frees the same room with one job."""
    before = rebuilt()
    snapshot = snapshot_from_data(before.document)
    finding = audit_preemption(snapshot, B1, [A2, A3], unplaced=before.unplaced, notes=before.notes)
    assert finding.kind == "over-eviction"
    assert [v.job for v in finding.exact.victims] == [A1]
    assert sorted(v.job for v in finding.search.victims) == [A2, A3]
    assert (finding.extra_jobs, finding.extra_tasks) == (1, 0)
    assert finding.broken == ()  # Kueue's set keeps every rule of the snapshot: it is allowed, only not the least


def test_kueue_own_search_on_the_rebuilt_state_takes_what_kueue_took():
    """The rebuilt state is the one Kueue decided on: Kueue's own search (the greedy baseline under
    ``policy: kueue``) picks the victims its conditions record."""
    before = rebuilt()
    snapshot = snapshot_from_data(before.document)
    placed = audit_preemption(snapshot, B1, [A2, A3], unplaced=before.unplaced)
    assert placed.search.placed
    # the state with a3 placed, as the audit placed it
    state = ClusterState.of(snapshot_from_data(_with_a3_on_node_1(before.document)))
    greedy = attempt(state, state.snapshot.job(B1), "preempt", solver="greedy")
    assert sorted(v.job for v in greedy.victims) == [A2, A3]


def _with_a3_on_node_1(document: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(document)
    for job in out["jobs"]:
        if job["name"] == A3:
            job["tasks"] = [{**t, "node": "gpu-node-1", "status": "running"} for t in job["tasks"]]
    return out


def test_victims_whose_going_makes_no_room_on_the_nodes_are_said():
    """Kueue admits by quota alone: had it taken a1's quota for a job that needs all of gpu-node-1, the room freed on
    gpu-node-0 would hold none of it."""
    before = rebuilt()
    document = copy.deepcopy(before.document)
    for job in document["jobs"]:
        if job["name"] == B1:
            job["placement"] = {"node_selector": {"kubernetes.io/hostname": "gpu-node-1"}}
    finding = audit_preemption(snapshot_from_data(document), B1, [A1], unplaced=before.unplaced)
    assert finding.kind == "no room"
    assert not finding.search.placed and [v.job for v in finding.search.victims] == [A1]


def test_audit_reads_the_dump_and_answers_in_a_table_and_in_json():
    shown = run("audit", str(DUMP))
    assert shown.returncode == 0, shown.stderr
    assert "1 decision(s) of Kueue against the minimum: 1 over-evicting" in shown.stdout
    assert "Kueue evicted" in shown.stdout
    answer = json.loads(run("audit", str(DUMP), "--json").stdout)
    assert answer["by"] == "Kueue"
    (finding,) = answer["findings"]
    assert (finding["job"], finding["finding"], finding["extra_jobs"]) == (B1, "over-eviction", 1)
    assert any("not in the dump" in note for note in finding["notes"])


def test_a_preemptor_no_longer_in_the_dump_is_said_and_the_cycle_is_audited():
    """The bundled Kueue dump has a workload preempted by one that has finished since: not audited, said; the
    cycle of the dump as it is is audited with Kueue's own search."""
    answer = json.loads(run("audit", str(FIXTURES / "kube" / "kueue-cluster.json"), "--json").stdout)
    assert answer["by"] == "Kueue's search"
    assert len(answer["not_audited"]) == 1 and "UID 1b7f" in answer["not_audited"][0]


def test_a_preempted_condition_without_a_preemptor_or_a_time_is_refused_naming_the_field(tmp_path: Path):
    for field, value, said in (
        ("message", "Preempted to accommodate a workload", "names no preemptor"),
        ("lastTransitionTime", "yesterday at noon", "lastTransitionTime"),
    ):
        data = dump()
        victim = next(i for i in data["items"] if i["metadata"]["name"] == "job-a2-7c1d2")
        for condition in victim["status"]["conditions"]:
            if condition["type"] == "Preempted":
                condition[field] = value
        path = tmp_path / "dump.json"
        path.write_text(json.dumps(data))
        shown = run("audit", str(path))
        assert shown.returncode == 2, shown.stdout
        assert "Traceback" not in shown.stderr
        assert "Workload team-a/job-a2-7c1d2" in shown.stderr and said in shown.stderr
