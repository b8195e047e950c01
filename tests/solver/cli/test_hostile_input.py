"""Hostile input: every bad file or option exits 2 with a message naming the field, key or line; never a traceback,
never a crash, never a hang, never unbounded output.

The corpus below stands for categories: empty, binary, truncated, wrong types, out-of-range numbers and times,
nesting, aliases, duplicate keys, and bad command-line options, for each kind of input (snapshot, scenario, sweep,
Kubernetes dump). Most cases run in-process; those that once crashed or exhausted the machine (deep nesting, alias
bombs) run as real processes under a memory limit and a timeout. A property test then mutates a valid snapshot at
random places with hostile values.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, base_document, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpu_preempt.cli import app

LAUGHS = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + LAUGHS
"""Nine levels of nine aliases: 550 bytes that expand to 9^9 (387 million) strings."""

MAX_OUTPUT = 20_000
"""No message, however bad the input, prints more than this."""


def snapshot_yaml(**changes: Any) -> str:
    document = base_document()
    document.update(changes)
    return yaml.safe_dump(document, sort_keys=False)


def with_job(**fields: Any) -> str:
    document = base_document()
    document["jobs"][0].update(fields)
    return yaml.safe_dump(document, sort_keys=False)


def with_config(**fields: Any) -> str:
    return snapshot_yaml(config=fields)


def with_queue(**fields: Any) -> str:
    document = base_document()
    document["queues"][1].update(fields)
    return yaml.safe_dump(document, sort_keys=False)


def with_node(**fields: Any) -> str:
    document = base_document()
    document["nodes"][0].update(fields)
    return yaml.safe_dump(document, sort_keys=False)


VALID = snapshot_yaml()
VALID_JSON = json.dumps(base_document())

# (id, file name, content, extra arguments, words the message must hold)
SNAPSHOTS: list[tuple[str, str, str | bytes, list[str], str]] = [
    # empty
    ("empty YAML", "s.yaml", "", [], "the file is empty"),
    ("only blanks", "s.yaml", "  \n\t\n", [], "the file is empty"),
    ("only a comment", "s.yaml", "# nothing\n", [], "the file is empty"),
    ("null document", "s.yaml", "null\n", [], "the file is empty"),
    ("empty JSON", "s.json", "", [], "the file is empty"),
    # binary
    ("binary bytes", "s.yaml", bytes(range(256)) * 4, [], "cannot read"),
    ("UTF-16 text", "s.yaml", VALID.encode("utf-16"), [], "cannot read"),
    ("a NUL byte", "s.yaml", "now: 0\x00\n", [], "invalid YAML"),
    ("a NUL byte in JSON", "s.json", '{"now": 0\x00}', [], "invalid JSON"),
    ("gzip data", "s.json", b"\x1f\x8b\x08\x00" + bytes(64), [], "cannot read"),
    # truncated
    ("YAML cut in a flow mapping", "s.yaml", "now: 0\nnodes:\n  - {name: n0, resources: {gpu: 8", [], "line 4 col"),
    ("YAML cut in a string", "s.yaml", 'now: "2026-01-01', [], "invalid YAML at line 1"),
    ("JSON cut in an object", "s.json", VALID_JSON[: len(VALID_JSON) // 2], [], "invalid JSON at line 1"),
    ("JSON cut after a key", "s.json", '{"now": ', [], "invalid JSON at line 1 column 9"),
    ("YAML with a tab indent", "s.yaml", "now: 0\nnodes:\n\t- x\n", [], "invalid YAML at line 3"),
    # wrong types
    ("a list, not a mapping", "s.yaml", "- now\n- nodes\n", [], "the file holds a list"),
    ("a scalar, not a mapping", "s.yaml", "42\n", [], "the file holds a single value (42)"),
    ("a JSON string", "s.json", '"snapshot"', [], "the file holds a single value ('snapshot')"),
    ("now as a list", "s.yaml", snapshot_yaml(now=[1]), [], "now: expected an RFC 3339 time"),
    ("nodes as a mapping", "s.yaml", snapshot_yaml(nodes={"n0": 8}), [], "nodes: should be a valid list"),
    ("resources as a string", "s.yaml", with_node(resources="8 GPUs"), [], "nodes[0].resources"),
    ("tasks as a number", "s.yaml", with_job(tasks=5), [], "jobs[0].tasks"),
    ("priority as text", "s.yaml", with_job(priority="high"), [], "jobs[0].priority"),
    ("priority as a fraction", "s.yaml", with_job(priority=1.5), [], "jobs[0].priority"),
    ("priority as a boolean", "s.yaml", with_job(priority=True), [], "jobs[0].priority"),
    ("labels as a list", "s.yaml", with_node(labels=[1, 2]), [], "nodes[0].labels"),
    ("a key that is a list", "s.yaml", "now: 0\n? [a, b]\n: 1\nnodes: []\nqueues: []\n", [], "unhashable key"),
    ("a ten-megabyte priority", "s.yaml", with_job(priority="9" * 10_000_000), [], "jobs[0].priority"),
    ("a ten-megabyte unknown key", "s.yaml", snapshot_yaml(**{"k" * 1_000_000: 1}), [], "unknown field"),
    ("a Python object tag", "s.yaml", "now: !!python/object:os.system {}\n", [], "invalid YAML at line 1"),
    ("a bad base64 tag", "s.yaml", "now: !!binary zz\n", [], "invalid YAML"),
    ("an impossible date", "s.yaml", "now: 2026-13-45\nnodes: []\nqueues: []\n", [], "invalid YAML"),
    ("an integer of 5,000 digits", "s.yaml", "now: " + "9" * 5000 + "\n", [], "invalid YAML"),
    ("a JSON integer of 5,000 digits", "s.json", '{"now": ' + "9" * 5000 + "}", [], "invalid JSON"),
    # out-of-range numbers
    ("2^50 GPUs on a node", "s.yaml", with_node(resources={"gpu": 2**50}), [], "nodes[0].resources.gpu"),
    ("more GPUs than a node may have", "s.yaml", with_node(resources={"gpu": 20000}), [], "at most 16384"),
    ("1e999 memory", "s.yaml", with_node(resources={"gpu": 8, "memory": "1e999"}), [], "largest amount supported"),
    ("1e30 memory", "s.yaml", with_node(resources={"gpu": 8, "memory": 1e30}), [], "largest amount supported"),
    ("memory in exabytes", "s.yaml", with_node(resources={"gpu": 8, "memory": "2Ei"}), [], "largest amount"),
    ("negative GPUs", "s.yaml", with_node(resources={"gpu": -8}), [], "negative amount -8"),
    ("negative deserved", "s.yaml", with_queue(deserved={"gpu": -2}), [], "queues[1].deserved.gpu: negative"),
    ("1.5 GPUs a task", "s.yaml", with_job(task_resources={"gpu": 1.5}), [], "more must be whole GPUs (got 1.5)"),
    ("infinite memory", "s.yaml", with_node(resources={"gpu": 8, "memory": float("inf")}), [], "not a finite"),
    ("priority 2^40", "s.yaml", with_job(priority=2**40), [], "jobs[0].priority"),
    ("min_available 2^40", "s.yaml", with_job(min_available=2**40), [], "jobs[0].min_available"),
    ("seed 2^70", "s.yaml", with_config(solver={"seed": 2**70}), [], "config.solver.seed"),
    ("workers -5 in the file", "s.yaml", with_config(solver={"workers": -5}), [], "config.solver.workers"),
    ("time_limit 0 in the file", "s.yaml", with_config(solver={"time_limit": 0}), [], "config.solver.time_limit"),
    ("an infinite multiplier", "s.yaml", with_config(reclaimer_saturation_multiplier=float("inf")), [], "multiplier"),
    ("an infinite weight", "s.yaml", with_queue(over_quota_weight=float("inf")), [], "over_quota_weight"),
    ("a weight of 1e300", "s.yaml", with_queue(over_quota_weight={"gpu": 1e300}), [], "over_quota_weight.gpu"),
    ("a NaN weight", "s.yaml", with_queue(over_quota_weight=float("nan")), [], "over_quota_weight"),
    ("requeue count 2^40", "s.yaml", with_job(requeue={"count": 2**40}), [], "jobs[0].requeue.count"),
    # out-of-range times
    ("now 1e30", "s.yaml", snapshot_yaml(now=1e30), [], "now: 1e+30 is outside the years 1 to 9999"),
    ("started_at -1e18", "s.yaml", with_job(started_at=-1e18), [], "jobs[0].started_at: -1e+18 is outside"),
    ("started_at in the year 10000", "s.yaml", with_job(started_at="10000-01-01T00:00:00Z"), [], "started_at"),
    ("now without a time zone", "s.yaml", snapshot_yaml(now="2026-01-01T12:00:00"), [], "has no time zone"),
    ("now as an infinite number", "s.yaml", snapshot_yaml(now=float("inf")), [], "not a finite time"),
    ("a month 13", "s.yaml", snapshot_yaml(now="2026-13-01T00:00:00Z"), [], "not an RFC 3339 time"),
    ("toleration 1e300", "s.yaml", snapshot_yaml(
        priority_classes=[{"name": "train", "value": 50,
                           "preemption_toleration": {"toleration_seconds": 1e300}}]), [], "10,000 years"),
    ("a min-runtime of 1e300 s", "s.yaml", with_config(reclaim_min_runtime=1e300), [], "longest duration"),
    ("a min-runtime of 10^12 hours", "s.yaml", with_config(reclaim_min_runtime="1000000000000h"), [], "longest"),
    ("a backoff of 1e300 s", "s.yaml", with_config(requeue={"backoff_max": 1e300}), [], "config.requeue.backoff_max"),
    ("requeued before evicted", "s.yaml", with_job(
        requeue={"count": 1, "evicted_at": "2026-01-01T11:00:00Z", "requeue_at": "2026-01-01T10:00:00Z"}),
     [], "jobs[0].requeue.requeue_at: requeue_at is before evicted_at"),
    ("an overcommitted node", "s.yaml", with_job(task_resources={"gpu": 8}, tasks=[{"node": "n0"}, {"node": "n0"}]),
     [], "nodes[0].resources.gpu: node n0 is over-committed"),
    # nesting
    ("YAML nested 100,000 deep", "s.yaml", "now: 0\njobs: " + "[" * 100_000 + "]" * 100_000, [], "64 levels"),
    ("YAML nested 2,000 deep", "s.yaml", "now: 0\njobs: " + "[" * 2000 + "]" * 2000, [], "line 2 column"),
    ("YAML block lists 3,000 deep", "s.yaml", "now: 0\njobs:\n" + "- " * 3000 + "x\n", [], "64 levels deep"),
    ("JSON nested 5,000 deep", "s.json", '{"jobs": ' + "[" * 5000 + "]" * 5000 + "}", [], "nested too deeply"),
    ("JSON nested 900 deep in jobs", "s.json", '{"now": 0, "nodes": [], "queues": [], "jobs": '
     + "[" * 900 + "]" * 900 + "}", [], "jobs[0]: should be a valid dictionary"),
    ("JSON nested 900 deep in labels", "s.json", json.dumps(base_document())[:-1] + ', "expect": {"a": '
     + "[" * 900 + "]" * 900 + "}}", [], "expect: nested more than 32 levels deep"),
    ("a list that holds itself", "s.yaml", "now: 0\nnodes: &a [*a]\nqueues: []\n", [], "nodes[0]"),
    ("labels that hold themselves", "s.yaml", "now: 0\nnodes: [{name: n, resources: {gpu: 1}, labels: &l {x: *l}}]\n"
     "queues: []\n", [], "nodes[0].labels: nested more than 32 levels deep"),
    # aliases
    ("a billion laughs in unknown keys", "s.yaml", "now: 0\nnodes: []\nqueues: []\n" + BOMB, [], "aliases expand"),
    ("a billion laughs as the jobs", "s.yaml", "now: 0\nnodes: []\nqueues: []\n" + BOMB + "jobs: *i\n", [],
     "more than 1,000,000 nodes"),
    ("an undefined alias", "s.yaml", "now: 0\nnodes: *nowhere\nqueues: []\n", [], "found undefined alias"),
    # duplicate keys
    ("a duplicate top-level key", "s.yaml", "now: 0\nnow: 5\nnodes: []\nqueues: []\n", [],
     "duplicate key 'now' (line 2 column 1)"),
    ("a duplicate key in a job", "s.yaml", VALID.replace("  queue: a\n", "  queue: a\n  queue: b\n", 1), [],
     "duplicate key 'queue'"),
    ("a duplicate key in a flow mapping", "s.yaml", "now: 0\nnodes: [{name: a, name: b}]\nqueues: []\n", [],
     "duplicate key 'name' (line 2 column 19)"),
    ("a duplicate JSON key", "s.json", '{"now": 0, "nodes": [], "now": 1, "queues": []}', [],
     "duplicate key 'now' (line 1 column 25)"),
]  # fmt: skip

OPTIONS: list[tuple[str, list[str], str]] = [
    ("--time-limit -1", ["cycle", "--time-limit", "-1"], "--time-limit: expected a positive number of seconds"),
    ("--time-limit nan", ["cycle", "--time-limit", "nan"], "--time-limit: expected a positive number"),
    ("--time-limit inf", ["solve", "--job", "wait", "--time-limit", "inf"], "--time-limit: expected a positive"),
    ("--time-limit 0", ["enforce-quota", "--time-limit", "0"], "--time-limit: expected a positive"),
    ("--time-limit text", ["cycle", "--time-limit", "soon"], "Invalid value for '--time-limit'"),
    ("--workers -5", ["cycle", "--workers", "-5"], "--workers: expected 0 (all cores) to 1024, got -5"),
    ("--workers 5000", ["solve", "--job", "wait", "--workers", "5000"], "--workers: expected 0 (all cores) to 1024"),
    ('--actions ""', ["cycle", "--actions", ""], "--actions: name at least one of enforce-quota, allocate"),
    ("--actions ,,", ["cycle", "--actions", ",,"], "--actions: name at least one of"),
    ("--actions bogus", ["cycle", "--actions", "allocate,bogus"], "--actions: 'bogus' is not one of"),
    ("--solver bogus", ["cycle", "--solver", "bogus"], "'bogus' is not one of 'cpsat',"),
    ("--action bogus", ["solve", "--job", "wait", "--action", "evict"], "'evict' is not one of"),
    ("--job unknown", ["solve", "--job", "nobody"], "--job: unknown job 'nobody'"),
    ("--queue unknown", ["enforce-quota", "--queue", "nobody"], "--queue: unknown queue 'nobody'"),
    ("plan --format bogus", ["plan", "--cycle", "--format", "yaml"], "'yaml' is not one of"),
    ("plan without --job or --cycle", ["plan"], "give either --job NAME or --cycle"),
    ("--next-snapshot in a missing folder", ["cycle", "--next-snapshot", "/no/such/folder/next.yaml"],
     "--next-snapshot: cannot write /no/such/folder/next.yaml"),
]  # fmt: skip


def refused(result: Any, words: str) -> None:
    """Exit 2, the words in the message, no exception other than the exit, no traceback, bounded output."""
    assert result.exit_code == 2, (result.exit_code, result.output[:2000], result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    text = result.output
    assert words in " ".join(text.split()), text[:3000]
    assert "Traceback" not in text
    assert len(text) < MAX_OUTPUT, len(text)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    ("name", "content", "args", "words"), [c[1:] for c in SNAPSHOTS], ids=[c[0] for c in SNAPSHOTS]
)
def test_a_bad_snapshot_is_refused_by_every_command(tmp_path: Path, name: str, content: Any, args: list, words: str):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    for command in (["validate"], ["cycle"], ["solve", "--job", "wait"], ["validate", "--json"]):
        result = invoke(*command, *args, str(path))
        if command[-1] == "--json":  # --json reports the problems on stdout, as JSON
            report = json.loads(result.stdout)
            assert result.exit_code == 2 and report["valid"] is False
            problems = " ".join(f"{e['path']}: {e['message']}" if e["path"] else e["message"] for e in report["errors"])
            assert words in " ".join(problems.split())
        else:
            refused(result, words)


@pytest.mark.parametrize(("args", "words"), [c[1:] for c in OPTIONS], ids=[c[0] for c in OPTIONS])
def test_a_bad_option_is_refused(tmp_path: Path, args: list[str], words: str):
    path = tmp_path / "s.yaml"
    path.write_text(VALID, encoding="utf-8")
    refused(invoke(*args, str(path)), words)


def test_a_missing_file_and_a_folder_are_refused(tmp_path: Path):
    refused(invoke("cycle", str(tmp_path / "absent.yaml")), "absent.yaml: no such file")
    refused(invoke("validate", str(tmp_path)), "cannot read")


def test_nothing_is_half_written_when_a_cycle_cannot_write_its_next_snapshot(tmp_path: Path):
    snapshot = tmp_path / "s.yaml"
    snapshot.write_text(VALID, encoding="utf-8")
    target = tmp_path / "next.yaml"
    target.mkdir()  # a folder where the file should go: refused before the cycle runs
    refused(invoke("cycle", "--next-snapshot", str(target), str(snapshot)), "is a folder, not a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["next.yaml", "s.yaml"]


# -- the other inputs go through the same reader -------------------------------------------------------------------


def test_bad_scenarios_sweeps_and_kubernetes_dumps_are_refused(tmp_path: Path):
    cases = [
        (["simulate", "--out", str(tmp_path / "o")], "sc.yaml", "", "the file is empty"),
        (["simulate", "--out", str(tmp_path / "o")], "sc.yaml", "cluster: 1\ncluster: 2\n", "duplicate key 'cluster'"),
        (["simulate", "--out", str(tmp_path / "o")], "sc.yaml", "queues: [" * 200 + "]" * 200, "64 levels deep"),
        (["simulate", "--out", str(tmp_path / "o")], "sc.yaml", BOMB + "queues: *i\n", "aliases expand"),
        (["simulate", "--out", str(tmp_path / "o")], "sc.yaml", "- a list\n", "the file holds a list"),
        (["simulate", "--out", str(tmp_path / "o")], "sc.yaml", "cluster: {nodes: [{count: 1000000000, gpu: 8}]}\n",
         "cluster.nodes[0].count"),
        (["simulate", "--out", str(tmp_path / "o"), "--dump-at", "tomorrow"], "sc.yaml", "x: 1\n", "--dump-at"),
        (["sweep", "--out", str(tmp_path / "o")], "sw.yaml", "grid: {a: [1]}\ngrid: {b: [2]}\n", "duplicate key"),
        (["sweep", "--out", str(tmp_path / "o")], "sw.yaml", "", "the file is empty"),
        (["sweep", "--out", str(tmp_path / "o"), "--workers", "0"], "sw.yaml", "x: 1\n", "--workers: expected 1"),
        (["import"], "dump.json", '{"kind": "List", "kind": "List", "items": []}', "duplicate key 'kind'"),
        (["import"], "dump.json", "[" * 5000 + "]" * 5000, "nested too deeply"),
        (["import"], "dump.json", bytes(range(256)), "cannot read"),
        (["import"], "dump.json", "", "the input is empty"),
    ]  # fmt: skip
    for args, name, content, words in cases:
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        refused(invoke(*args, str(path)), words)
        assert not (tmp_path / "o").exists()


TRACE_SCENARIO = """
cluster: {nodes: [{count: 2, gpu: 8}]}
queues: [{name: a, deserved: {gpu: 16}}]
workload:
  trace:
    format: csv
    path: trace.csv
    columns: {id: id, submit: submit, duration: duration, gpus: gpus}
simulation: {period: 10s, seed: 1}
"""


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        ("", "empty file: expected a header line"),
        ("id,submit,duration,gpus\nj1,0,60,1\x00\n", "line 2: gpus: not a whole number of GPUs"),
        ("id,submit,duration,gpus\nj1,0," + "9" * 200_000 + ",1\n", "not a CSV file"),
        ("id,submit,duration,gpus\nj1,0,60," + "9" * 4000 + "\n", "line 2: gpus: 99999999"),
        ("id,submit,duration,gpus\nj1,0,60,2000000\n", "a job asks for 0 to 1,048,576"),
        ("id,submit,duration,gpus\nj1,1e300,60,1\n", "submit: '1e300' is not a number of seconds >= 0"),
        ("id,submit,duration,gpus\nj1,0,nan,1\n", "duration: 'nan' is not a positive number of seconds"),
        ("id,submit,duration,gpus\nj1,0,60\n", "line 2: 3 fields, the header has 4"),
        ("id,submit,duration,gpus\nj1,0,60,1\nj1,5,60,1\n", "job 'j1' appears twice"),
    ],
    ids=["empty", "NUL byte", "huge field", "4,000-digit GPUs", "2 million GPUs", "submit 1e300", "NaN duration",
         "short row", "duplicate id"],
)  # fmt: skip
def test_a_bad_trace_is_refused_naming_the_line(tmp_path: Path, rows: str, words: str):
    (tmp_path / "trace.csv").write_text(rows, encoding="utf-8")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(TRACE_SCENARIO, encoding="utf-8")
    refused(invoke("simulate", "--out", str(tmp_path / "out"), str(scenario)), words)
    assert not (tmp_path / "out").exists()


def test_extreme_values_within_the_bounds_are_decided_without_a_crash(tmp_path: Path):
    """The largest accepted amounts and the widest span of times: single products fit in 64 bits; a sum that does
    not (the lost work of two jobs of coprime sizes started a millisecond apart, which no common factor shrinks) is
    reported as ``unknown`` with its reason, not as a crash."""
    document = {
        "now": "9999-12-31T21:59:59Z",  # the latest instant that leaves room for the longest backoff, 1h
        "nodes": [{"name": f"n{i}", "resources": {"gpu": 16384, "memory": "1Pi"}} for i in range(2)],
        "queues": [{"name": "q", "deserved": {"gpu": 1}}],
        "jobs": [
            *(
                {"name": f"old{i}", "queue": "q", "priority": -(2**31), "started_at": f"0001-01-01T00:00:00.00{i}Z",
                 "task_resources": {"gpu": 16384 - i, "memory": "1Pi"}, "tasks": [{"node": f"n{i}"}]}
                for i in range(2)
            ),
            {"name": "new", "queue": "q", "priority": 2**31 - 1, "task_resources": {"gpu": 16384}, "tasks": [{}, {}]},
        ],
    }  # fmt: skip
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    result = invoke("cycle", "--json", str(path))
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.stdout)["decisions"]
    preempt = next(d for d in decisions if d["action"] == "preempt")
    assert preempt["outcome"] == "unknown" and "64-bit integers" in preempt["reason"]


def test_protections_past_the_year_9999_last_forever_and_backoffs_are_never_clamped(tmp_path: Path):
    """A protection that ends after the year 9999 has no end; a requeue time is written as computed, since the
    snapshot's instant leaves room for the longest backoff (docs/rules.md, "Requeue with backoff"), and a cycle's
    own decisions pass the verifier."""
    document = {
        "now": "9997-01-01T00:00:00Z",
        "config": {"requeue": {"backoff_base": "10000h", "backoff_max": "10000h"}},
        "nodes": [{"name": "n0", "resources": {"gpu": 8}}],
        "queues": [{"name": "a", "deserved": {"gpu": 0}}, {"name": "b", "deserved": {"gpu": 8}}],
        "priority_classes": [{"name": "tol", "value": 10, "preemption_toleration": {
            "minimum_preemptable_priority": 40, "toleration_seconds": 3e11}}],
        "jobs": [
            {"name": "r", "queue": "a", "priority_class": "tol", "task_resources": {"gpu": 8},
             "started_at": "9996-12-31T22:00:00Z", "tasks": [{"node": "n0"}]},
            {"name": "p", "queue": "a", "priority": 50, "task_resources": {"gpu": 8}, "tasks": [{}]},
        ],
    }  # fmt: skip
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    summary = json.loads(invoke("validate", "--json", str(path)).stdout)
    assert [(p["rule"], p["until"]) for p in summary["protected"]] == [("toleration", None)]
    following = tmp_path / "next.yaml"
    result = invoke("cycle", "--json", "--verify", "--next-snapshot", str(following), str(path))
    assert result.exit_code == 0, result.output
    requeue = json.loads(result.stdout)["jobs"]["r"]["requeue"]
    assert requeue["requeue_at"].startswith("9998-02-21T1")  # now + 10,000 hours and at most 0.01% (an hour) more
    assert invoke("validate", str(following)).exit_code == 0  # and the next snapshot loads
    document["now"] = "9999-12-31T23:00:00Z"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    refused = invoke("validate", str(path))
    assert refused.exit_code == 2 and "at most 9997-09-19T15:59:59Z" in " ".join(refused.output.split())


# -- real processes: crashes and exhaustion ---------------------------------------------------------------------------

LIMIT_BYTES = 1536 * 2**20
"""The address space a hostile input's process may use (CP-SAT and numpy alone reserve a few hundred MB)."""


def _limited() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


PROCESS_CASES = {
    "deep.yaml": "now: 0\njobs: " + "[" * 100_000 + "]" * 100_000,
    "blocks.yaml": "now: 0\njobs:\n" + "- " * 50_000 + "x\n",
    "bomb.yaml": "now: 0\nnodes: []\nqueues: []\n" + BOMB + "jobs: [*i, *i]\n",
    "deep.json": '{"jobs": ' + "[" * 200_000 + "]" * 200_000 + "}",
    "wide.yaml": "now: 0\nnodes: []\nqueues: []\njobs:\n" + "  - x\n" * 200_000,
}


@pytest.mark.parametrize("name", sorted(PROCESS_CASES))
def test_no_input_crashes_or_exhausts_the_process(tmp_path: Path, name: str):
    path = tmp_path / name
    path.write_text(PROCESS_CASES[name], encoding="utf-8")
    executable = Path(sys.executable).with_name("gpu-preempt")
    done = subprocess.run(
        [str(executable), "cycle", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and len(done.stderr) < MAX_OUTPUT
    assert name in done.stderr


# -- random places, hostile values ----------------------------------------------------------------------------------

HOSTILE = [
    None, True, -1, 0, 2**31, 2**63, 2**70, -(2**63), 1e300, -1e300, float("nan"), float("inf"), "", " ", "x" * 5000,
    "1e999", "-1", "unlimited", "forever", "9999-12-31T23:59:59Z", "10000-01-01T00:00:00Z", "0001-01-01T00:00:00Z",
    "1h30m", "-5m", [], [[[]]], {}, {"a": {"b": {"c": None}}}, [None], {"": 1}, "n0", "a", "wait", "run",
]  # fmt: skip


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _places(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _places(child, (*path, i))
    return found


def _put(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


RICH = yaml.safe_load((FIXTURES / "example-cluster.yaml").read_text(encoding="utf-8"))
PLACES = _places(RICH)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.sampled_from(PLACES), st.sampled_from(HOSTILE)), min_size=1, max_size=3),
    st.booleans(),
)
def test_hostile_values_anywhere_exit_0_or_2_and_never_crash(tmp_path: Path, changes, as_json: bool):
    import copy

    document = copy.deepcopy(RICH)
    for path, value in changes:
        try:
            document = _put(document, path, copy.deepcopy(value))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the place
    path = tmp_path / ("s.json" if as_json else "s.yaml")
    if as_json:
        path.write_text(json.dumps(document), encoding="utf-8")  # NaN and Infinity as Python writes them
    else:
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
    for command in (["validate"], ["cycle", "--time-limit", "2"]):
        result = invoke(*command, str(path))
        assert result.exit_code in (0, 2), (command, changes, result.output[-3000:], result.exception)
        assert isinstance(result.exception, SystemExit) or result.exception is None, repr(result.exception)
        assert "Traceback" not in result.output
        if result.exit_code == 2:
            assert result.stderr.strip(), "a refusal says why"


DUMPS = {n: json.loads((FIXTURES / "kube" / f"{n}-cluster.json").read_text()) for n in ("kai", "kueue", "plain")}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["items"][6]["spec"].update(containers=5), "spec.containers: expected a list, got 5"),
        (lambda d: d["items"][0]["status"]["allocatable"].update({"cpu": None}), "status.allocatable.cpu: expected a"),
        (lambda d: d["items"][0]["metadata"]["labels"].update(x=[1]), "metadata.labels.x: expected a string"),
        (
            lambda d: (d["items"][6]["spec"].update(priority="high"), d["items"][6]["status"].update(phase=3)),
            "Pod ml/train-0: spec.priority: expected a whole number, got 'high' Pod ml/train-0: status.phase: expected",
        ),
    ],
    ids=["containers as a number", "a null quantity", "a label that is a list", "two wrong fields of one pod"],
)
def test_a_dump_with_a_wrong_type_names_the_object_and_field(tmp_path: Path, change, words: str):
    import copy

    dump = copy.deepcopy(DUMPS["plain"])
    change(dump)
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump), encoding="utf-8")
    refused(invoke("import", "-o", str(tmp_path / "out.yaml"), str(path)), words)
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize(
    ("name", "change", "words"),
    [
        (
            "kai",
            lambda d: d["items"][8]["spec"].update(minMember=2**31),
            "spec.minMember: expected a whole number from",
        ),
        (
            "kueue",
            lambda d: d["items"][8]["spec"]["podSets"][0].update(count=2**31),
            "spec.podSets[0].count: expected a whole number from 0 to 100,000, got 2147483648",
        ),
    ],
    ids=["a PodGroup of two billion members", "a Workload of two billion pods"],
)
def test_a_member_count_no_cluster_holds_is_refused_before_any_task_is_made(tmp_path: Path, name, change, words):
    """Each member without a pod becomes a pending task: two billion of them would fill the memory."""
    import copy

    dump = copy.deepcopy(DUMPS[name])
    change(dump)
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump), encoding="utf-8")
    refused(invoke("import", "--now", "2026-11-23T12:00:00Z", "-o", str(tmp_path / "out.yaml"), str(path)), words)
    assert not (tmp_path / "out.yaml").exists()


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(DUMPS)), st.data())
def test_hostile_values_anywhere_in_a_dump_exit_0_or_2_and_never_crash(tmp_path: Path, name: str, data):
    import copy

    dump = copy.deepcopy(DUMPS[name])
    for _ in range(data.draw(st.integers(1, 3))):
        place = data.draw(st.sampled_from(_places(dump)))
        try:
            dump = _put(dump, place, copy.deepcopy(data.draw(st.sampled_from(HOSTILE))))
        except (KeyError, IndexError, TypeError):
            continue
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump), encoding="utf-8")
    result = invoke("import", "--now", "2026-11-23T12:00:00Z", "-o", str(tmp_path / "out.yaml"), str(path))
    assert result.exit_code in (0, 2), (result.output[-3000:], result.exception)
    assert isinstance(result.exception, SystemExit) or result.exception is None, repr(result.exception)
    assert "Traceback" not in result.output
