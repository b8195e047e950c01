"""Hostile Kubernetes dumps: every one is imported or refused (exit 0 or 2) with no traceback, within a memory and
time bound, and every one imported gives a snapshot that validates and runs a verified cycle.

The corpus stands for categories (docs/kubernetes.md, "Limits" and "Refused"): alias bombs, deep nesting, huge
numbers and strings, bad bytes and encodings, a wrong type at every field the importer reads, dangling references,
cycles among queues and cohorts, lists in lists, a multi-document stream with one bad document, unreadable paths,
limits passed, timestamps the API server would not write. It runs in one child process under a memory limit and a
timeout far above what it takes, so that a case that blows up fails the test instead of the machine. A property test
then mutates the bundled dumps field by field.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpu_preempt import run_cycle, verify_cycle
from gpu_preempt.cli import app
from gpu_preempt.kube.shapes import SHAPES
from gpu_preempt.models import load_snapshot

NOW = "2026-12-31T00:00:00Z"  # after every time of the bundled dumps
BUNDLED = ["kai-cluster.json", "kai-sharing.json", "kueue-cluster.json", "kueue-borrowing.json", "plain-cluster.json"]
LIMIT_BYTES = 3 * 2**30
"""The child's address space: the whole corpus imports within it."""
MAX_OUTPUT = 20_000

LAUGHS = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + LAUGHS


def bundled(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "kube" / name).read_text())


def first(dump: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(item for item in dump["items"] if item["kind"] == kind)


_WRONG = {"map": "text", "list": {"a": 1}, "text": 12, "whole": "x", "number": "x", "quantity": [1], "bool": "yes"}
"""A value of the wrong type for each kind of field (docs/kubernetes.md, "Refused")."""


def _set(body: Any, steps: list[str], value: Any) -> bool:
    """Put ``value`` at the dotted ``steps`` of ``body`` (``[]``: the first item, ``*``: the first value), making
    maps on the way; ``False`` where a step cannot be taken (an empty list or map)."""
    step, rest = steps[0], steps[1:]
    key, many = step.removesuffix("[]"), step.endswith("[]")
    if key == "*":
        if not isinstance(body, dict) or not body:
            return False
        key = next(iter(body))
    if not isinstance(body, dict):
        return False
    if not rest and not many:
        body[key] = value
        return True
    child = body.setdefault(key, [] if many else {})
    if many:
        if not isinstance(child, list) or not child:
            return False
        if not rest:
            child[0] = value
            return True
        return _set(child[0], rest, value)
    return _set(child, rest, value)


def wrong_type_cases() -> list[tuple[str, bytes]]:
    """For every bundled dump and every kind of object in it, each field the importer reads given the wrong type."""
    cases = []
    for name in BUNDLED:
        dump = bundled(name)
        for (group, kind), shape in SHAPES.items():
            items = [i for i in dump["items"] if i["kind"] == kind and i["apiVersion"].rpartition("/")[0] == group]
            if not items:
                continue
            for path, expected in shape.items():
                changed = copy.deepcopy(dump)
                target = next(i for i in changed["items"] if i["kind"] == kind)
                if _set(target, path.split("."), _WRONG[expected]):
                    cases.append((f"{name} {kind} {path} wrong", json.dumps(changed).encode()))
    return cases


def crafted_cases() -> list[tuple[str, bytes]]:
    """The other categories, each a few ways."""
    kai = bundled("kai-cluster.json")
    kueue = bundled("kueue-cluster.json")
    cases: list[tuple[str, Any]] = []

    def changed(base: dict[str, Any], name: str, change: Any) -> None:
        document = copy.deepcopy(base)
        change(document)
        cases.append((name, document))

    # aliases, nesting, lists in lists, streams
    cases.append(("alias bomb", "apiVersion: v1\nkind: List\n" + BOMB + "items: [*i, *i]\n"))
    cases.append(("deep JSON", '{"kind": "List", "items": ' + "[" * 100_000 + "]" * 100_000 + "}"))
    cases.append(("deep YAML", "kind: List\nitems: " + "[" * 10_000 + "]" * 10_000 + "\n"))
    cases.append(("items in a list", json.dumps({"apiVersion": "v1", "kind": "List", "items": [kai["items"]]})))
    cases.append(("items a map", json.dumps({"apiVersion": "v1", "kind": "List", "items": {"a": 1}})))
    cases.append(("a top-level list", json.dumps(kai["items"])))
    stream = "\n---\n".join(yaml.safe_dump(i) for i in kai["items"])
    cases.append(("a stream", stream))
    cases.append(("a stream with one bad document", stream + "\n---\nkind: [unclosed\n"))
    cases.append(("a stream with a scalar", stream + "\n---\n42\n"))
    # bad bytes and encodings
    text = json.dumps(kai)
    cases.append(("UTF-16", text.encode("utf-16")))
    cases.append(("UTF-8 with a BOM", b"\xef\xbb\xbf" + text.encode()))
    cases.append(
        ("a bad byte in a name", text.replace("gpu-node-0", "gpu-node-\udcff", 1).encode("utf-8", "surrogateescape"))
    )
    cases.append(("a NUL byte", text.replace('"gpu-node-0"', '"gpu\\u0000node"', 1)))
    cases.append(("binary", bytes(range(256)) * 64))
    cases.append(("truncated", text[: len(text) // 2]))
    cases.append(("empty", ""))
    cases.append(("a duplicate key in an item", text.replace('"kind": "Node"', '"kind": "Node", "kind": "Node"', 1)))
    # huge numbers and strings
    changed(kai, "a huge priority", lambda d: first(d, "PriorityClass").update(value=10**30))
    changed(kai, "a 2^63 priority", lambda d: first(d, "Pod")["spec"].update(priority=2**63))
    changed(kai, "a float priority", lambda d: first(d, "Pod")["spec"].update(priority=1e300))
    for value in ("1" * 5000, "1e400", "9" * 70 + "Ki", "1e-400", "-5", "1056Gi ", " 8", "8 Gi", "0x10", "nan", "inf"):
        changed(kai, f"allocatable memory {value[:12]}",
                lambda d, v=value: first(d, "Node")["status"]["allocatable"].update(memory=v))  # fmt: skip
    changed(kai, "a 4 MB name", lambda d: first(d, "Queue")["metadata"].update(name="q" * 4_000_000))
    changed(kai, "a 300-character name", lambda d: first(d, "Node")["metadata"].update(name="n" * 300))
    changed(kai, "a long label value", lambda d: first(d, "Node")["metadata"]["labels"].update(rack="r" * 64))
    changed(kai, "huge annotations", lambda d: first(d, "Pod")["metadata"]["annotations"].update(x="a" * 300_000))
    tolerations = [{"key": f"k{i}", "operator": "Exists"} for i in range(2000)]
    changed(kai, "2,000 tolerations", lambda d: first(d, "Pod")["spec"].update(tolerations=tolerations))

    def affinity(terms: list[Any]) -> dict[str, Any]:
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}

    terms = [{"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}] * 5000
    changed(kai, "5,000 affinity terms", lambda d: first(d, "Pod")["spec"].update(affinity=affinity(terms)))
    many = [{"matchExpressions": [{"key": "a", "operator": "In", "values": [str(i) for i in range(5000)]}]}]
    changed(kai, "5,000 values", lambda d: first(d, "Pod")["spec"].update(affinity=affinity(many)))
    for name in ("2,000 tolerations", "5,000 affinity terms", "5,000 values", "a 4 MB name"):  # refused as read
        cases.append((f"{name} (YAML)", yaml.safe_dump(dict(cases)[name], width=2**30)))
    # dangling references and cycles
    changed(kai, "a pod on an unknown node", lambda d: first(d, "Pod")["spec"].update(nodeName="nowhere"))
    changed(kai, "a group in an unknown queue", lambda d: first(d, "PodGroup")["spec"].update(queue="nowhere"))
    changed(kai, "an unknown priority class", lambda d: first(d, "Pod")["spec"].update(priorityClassName="nowhere"))
    changed(kai, "a queue under an unknown parent", lambda d: first(d, "Queue")["spec"].update(parentQueue="nowhere"))

    def kai_cycle(d: dict[str, Any]) -> None:
        queues = [i for i in d["items"] if i["kind"] == "Queue"]
        queues[0]["spec"]["parentQueue"] = queues[1]["metadata"]["name"]
        queues[1]["spec"]["parentQueue"] = queues[0]["metadata"]["name"]

    changed(kai, "queues in a cycle", kai_cycle)

    def self_parent(d: dict[str, Any]) -> None:
        queue = first(d, "Queue")
        queue["spec"]["parentQueue"] = queue["metadata"]["name"]

    changed(kai, "a queue its own parent", self_parent)

    def deep_queues(d: dict[str, Any]) -> None:
        for i in range(200):
            spec: dict[str, Any] = {"resources": {"gpu": {"quota": 1, "limit": -1, "overQuotaWeight": 1}}}
            if i:
                spec["parentQueue"] = f"deep-{i - 1}"
            d["items"].append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                               "metadata": {"name": f"deep-{i}"}, "spec": spec})  # fmt: skip

    changed(kai, "200 nested queues", deep_queues)

    def cohort_cycle(d: dict[str, Any]) -> None:
        d["items"] += [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort", "metadata": {"name": "x"},
             "spec": {"parentName": "y"}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort", "metadata": {"name": "y"},
             "spec": {"parentName": "x"}},
        ]  # fmt: skip

    changed(kueue, "cohorts in a cycle", cohort_cycle)
    changed(kueue, "a LocalQueue of an unknown ClusterQueue",
            lambda d: first(d, "LocalQueue")["spec"].update(clusterQueue="nowhere"))  # fmt: skip
    changed(kueue, "a workload in an unknown LocalQueue", lambda d: first(d, "Workload")["spec"].update(queueName="x"))
    # objects without what every object has
    changed(kai, "no kind", lambda d: first(d, "Node").pop("kind"))
    changed(kai, "no apiVersion", lambda d: first(d, "Node").pop("apiVersion"))
    changed(kai, "no name", lambda d: first(d, "Pod")["metadata"].pop("name"))
    changed(kai, "metadata a list", lambda d: first(d, "Pod").update(metadata=[1]))
    changed(kai, "an unknown kind", lambda d: first(d, "Node").update(kind="Gizmo"))
    changed(kai, "a phase never written", lambda d: first(d, "Pod")["status"].update(phase="Sleeping"))
    # timestamps
    for value in ("0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "yesterday at noon", "2026-13-45T99:99:99Z",
                  "2027-01-01T00:00:00Z", 5, None):  # fmt: skip
        changed(kai, f"PodScheduled at {value}",
                lambda d, v=value: first(d, "Pod")["status"]["conditions"][0].update(lastTransitionTime=v))  # fmt: skip
        changed(kai, f"a node heartbeat at {value}",
                lambda d, v=value: first(d, "Node")["status"]["conditions"][0].update(lastHeartbeatTime=v))  # fmt: skip
        changed(kai, f"a group's last start at {value}",
                lambda d, v=value: first(d, "PodGroup")["metadata"]["annotations"].update(
                    {"kai.scheduler/last-start-timestamp": v}))  # fmt: skip
    soon = [{"key": "a", "tolerationSeconds": "soon"}]
    changed(kai, "tolerationSeconds in words", lambda d: first(d, "Pod")["spec"].update(tolerations=soon))
    return [(n, c if isinstance(c, bytes) else (c if isinstance(c, str) else json.dumps(c)).encode()) for n, c in cases]


CHILD = """
import json, sys, traceback
from pathlib import Path
from typer.testing import CliRunner
from gpu_preempt.cli import app
from gpu_preempt import run_cycle, verify_cycle
from gpu_preempt.models import load_snapshot
folder = Path(sys.argv[1])
results = {}
for path in sorted(folder.glob("case-*")):
    print(path.name, file=sys.stderr, flush=True)  # the case a crash of the child stops at
    out = folder / "out" / (path.name + ".json")
    result = CliRunner().invoke(app, ["import", str(path), "--now", sys.argv[2], "-o", str(out), "--force"])
    entry = {"exit": result.exit_code, "output": result.output[-3000:],
             "exception": None if isinstance(result.exception, (SystemExit, type(None))) else repr(result.exception),
             "length": len(result.output)}
    if result.exit_code == 0:
        try:
            cycle = run_cycle(load_snapshot(out))
            entry["violations"] = [str(v) for v in verify_cycle(cycle)]
        except Exception:
            entry["exception"] = traceback.format_exc()[-3000:]
    results[path.name] = entry
print(json.dumps(results))
"""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def test_every_hostile_dump_is_imported_or_refused_cleanly(tmp_path: Path):
    cases = [*wrong_type_cases(), *crafted_cases()]
    assert len(cases) >= 100
    names = {}
    for i, (name, content) in enumerate(cases):
        (tmp_path / f"case-{i:04d}.{'json' if content[:1] in b'{[' else 'yaml'}").write_bytes(content)
        names[f"case-{i:04d}"] = name
    (tmp_path / "out").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), NOW],
        capture_output=True,
        text=True,
        timeout=600,  # far above the corpus's time: a guard against a hang, not a measure
        preexec_fn=_limited,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    outcomes: dict[int, int] = {}
    for file, entry in results.items():
        name = names[file.split(".")[0]]
        assert entry["exit"] in (0, 2), (name, entry)
        assert entry["exception"] is None, (name, entry["exception"])
        assert "Traceback" not in entry["output"] and entry["length"] < MAX_OUTPUT, name
        assert entry.get("violations", []) == [], (name, entry["violations"])
        outcomes[entry["exit"]] = outcomes.get(entry["exit"], 0) + 1
    assert outcomes.get(2, 0) > 100  # most are refused; the accepted ones ran a verified cycle above
    refused = {names[f.split(".")[0]]: r["output"] for f, r in results.items() if r["exit"] == 2}
    for name in ("a 2^63 priority", "2,000 tolerations", "200 nested queues", "a 4 MB name", "queues in a cycle",
                 "tolerationSeconds in words", "allocatable memory 1056Gi ", "PodScheduled at yesterday at noon",
                 "a group's last start at 2027-01-01T00:00:00Z", "a stream with one bad document"):  # fmt: skip
        assert name in refused, name
    assert "is after the snapshot's instant" in refused["PodScheduled at 2027-01-01T00:00:00Z"]
    assert "at most 1000 are read" in refused["2,000 tolerations"]
    for name in ("2,000 tolerations (YAML)", "5,000 affinity terms (YAML)", "5,000 values (YAML)"):
        assert "has more than 1000 items; at most 1000 are read" in refused[name], refused[name]
    assert "a name has at most 253" in refused["a 4 MB name (YAML)"]
    accepted = {names[f.split(".")[0]] for f, r in results.items() if r["exit"] == 0}
    assert {"a stream", "UTF-8 with a BOM", "a node heartbeat at yesterday at noon"} <= accepted
    heartbeat = next(r["output"] for f, r in results.items() if names[f.split(".")[0]] == "a node heartbeat at 5")
    assert "guessed: Node gpu-node-0: status.conditions[0].lastHeartbeatTime" in " ".join(heartbeat.split())


def test_an_unreadable_path_is_refused(tmp_path: Path):
    for path, words in ((tmp_path, "cannot read"), (tmp_path / "missing.json", "no such file")):
        result = CliRunner().invoke(app, ["import", str(path), "--now", NOW])
        assert result.exit_code == 2 and words in result.output, result.output
        assert isinstance(result.exception, SystemExit)


def test_a_time_not_read_is_a_guess_that_strict_refuses(tmp_path: Path):
    dump = bundled("kai-cluster.json")
    first(dump, "Node")["status"]["conditions"][0]["lastHeartbeatTime"] = "yesterday at noon"
    pod = first(dump, "Pod")
    pod["status"]["conditions"].append(
        {"type": "Ready", "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}
    )
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    result = CliRunner().invoke(app, ["import", str(path), "--now", NOW])
    assert result.exit_code == 0
    assert (
        "status.conditions[1].lastTransitionTime: 2027-01-01T00:00:00Z is after the snapshot's instant" in result.output
    )
    strict = CliRunner().invoke(app, ["import", str(path), "--now", NOW, "--strict"])
    assert strict.exit_code == 2


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0.5, 1e300, -1.0, float("inf")]),
    st.sampled_from(["", "x", "8", "1Gi", "1056Gi ", "Running", "Succeeded", "2026-01-01T00:00:00Z", "nope/nope"]),
    st.just([]),
    st.just({}),
    st.just([None]),
    st.just({"a": None}),
    st.just([[1]]),
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in ``value`` (keys and indices)."""
    found = [at] if at else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*at, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*at, i))
    return found


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_bundled_dump_mutated_field_by_field_is_imported_or_refused(tmp_path: Path, data: st.DataObject):
    dump = bundled(data.draw(st.sampled_from(BUNDLED)))
    item = data.draw(st.integers(0, len(dump["items"]) - 1))
    paths = _paths(dump["items"][item])
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        target: Any = dump["items"][item]
        for step in path[:-1]:
            target = target[step]
        if isinstance(target, (dict, list)):
            with contextlib.suppress(IndexError, KeyError, TypeError):
                target[path[-1]] = copy.deepcopy(data.draw(_VALUES))
        paths = _paths(dump["items"][item]) or paths
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump, allow_nan=True))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(app, ["import", str(path), "--now", NOW, "-o", str(out), "--force"])
    assert result.exit_code in (0, 2), (result.exit_code, result.output[-2000:], result.exception)
    assert isinstance(result.exception, (SystemExit, type(None))), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 0:
        assert verify_cycle(run_cycle(load_snapshot(out))) == []


@pytest.mark.parametrize("name", BUNDLED)
def test_the_bundled_dumps_import_as_before_through_the_fast_reader(tmp_path: Path, name: str):
    """The reader that skips finished pods and unread fields of a JSON List gives the snapshot the whole reading
    gives (a YAML form of the same dump takes the whole reading)."""
    as_yaml = tmp_path / "dump.yaml"
    as_yaml.write_text(yaml.safe_dump(bundled(name)))
    outputs = []
    for source in (FIXTURES / "kube" / name, as_yaml):
        out = tmp_path / f"{source.suffix[1:]}.json"
        result = CliRunner().invoke(app, ["import", str(source), "--now", NOW, "-o", str(out)])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(out.read_text()))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("first_item", "words"),
    [
        ({"spec": {"tolerations": [{"key": f"k{i}"} for i in range(1001)]}}, "spec.tolerations: has more than 1000"),
        ({"metadata": {"name": "p" * 300}}, "metadata.name: is 300 characters long"),
    ],
    ids=["a long list", "a long name"],
)
def test_a_yaml_dump_past_a_limit_is_refused_before_the_rest_is_read(
    tmp_path: Path, first_item: dict[str, Any], words: str
):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, **first_item}
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pod]}) + "  - kind: [unclosed\n"
    path = tmp_path / "dump.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["import", str(path), "--now", NOW])
    assert result.exit_code == 2 and words in " ".join(result.output.split()), result.output
    assert "invalid YAML" not in result.output  # the unclosed list after the object is never read
