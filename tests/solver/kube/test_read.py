"""Reading a dump: a List's objects share their equal parts, and sharing never changes what is imported."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES

from gpu_preempt.kube.importer import import_objects
from gpu_preempt.kube.read import parse_objects, read_objects
from gpu_preempt.models import SnapshotError

NOW = 1_798_675_200.0  # 2027-01-01T00:00:00Z: after every time of the bundled dumps
BUNDLED = sorted(path.name for path in (FIXTURES / "kube").glob("*.json") if "kueue-preempted" not in path.name)


def _pod(name: str, selector: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {
            "containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
            "nodeSelector": selector,
        },
        "status": {"phase": "Pending"},
    }


@pytest.mark.parametrize("name", BUNDLED)
def test_a_dump_read_from_its_file_imports_as_its_text_does(name: str, tmp_path: Path) -> None:
    """The file path shares the equal parts of a List's objects; the text path reads each object on its own."""
    text = (FIXTURES / "kube" / name).read_text()
    shared = import_objects(read_objects([str(FIXTURES / "kube" / name)], io.StringIO()), now=NOW)[0]
    own = import_objects(parse_objects(text, name), now=NOW)[0]
    assert shared == own


def test_pods_with_equal_parts_share_them(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"kind": "List", "items": [_pod("a", {"zone": "z1"}), _pod("b", {"zone": "z1"})]}))
    a, b = read_objects([str(dump)], io.StringIO())
    assert a.body["spec"]["containers"] is b.body["spec"]["containers"]
    assert a.body["spec"]["nodeSelector"] is b.body["spec"]["nodeSelector"]
    assert a.body["status"] is b.body["status"]  # a whole section, when equal
    assert a.body["metadata"] is not b.body["metadata"] and (a.name, b.name) == ("a", "b")


@pytest.mark.parametrize("date_first", [True, False])
def test_a_yaml_date_is_never_shared_with_the_string_that_spells_it(tmp_path: Path, date_first: bool) -> None:
    """``zone: 2026-01-01`` is a date in YAML, ``zone: "2026-01-01"`` a string: only the first is a wrong type."""
    pods = [_pod("dated", {"zone": "DATE"}), _pod("quoted", {"zone": "2026-01-01"})]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": pods if date_first else pods[::-1]})
    dump = tmp_path / "dump.yaml"
    dump.write_text(text.replace("DATE", "2026-01-01"))
    with pytest.raises(SnapshotError) as refused:
        read_objects([str(dump)], io.StringIO())
    assert [e.path for e in refused.value.errors] == ["Pod team-a/dated: spec.nodeSelector.zone"]


def test_a_yaml_file_the_parser_reads_twice_is_read_from_its_start_each_time(tmp_path: Path) -> None:
    """A merge key (``<<``) is checked on the parser's events, then built by PyYAML: two reads of the open file."""
    dump = tmp_path / "dump.yaml"
    dump.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- &node {apiVersion: v1, kind: Node, metadata: {name: n0}}\n"
        "- {<<: *node, metadata: {name: n1}}\n"
    )
    assert [o.name for o in read_objects([str(dump)], io.StringIO())] == ["n0", "n1"]


def test_an_empty_file_and_a_folder_are_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_bytes(b"")
    for path, message in ((tmp_path / "empty.json", "the input is empty"), (tmp_path, "cannot read")):
        with pytest.raises(SnapshotError) as refused:
            read_objects([str(path)], io.StringIO())
        assert message in str(refused.value.errors[0])


def test_a_list_larger_than_the_pieces_its_pages_are_let_go_in_imports_as_its_text_does(tmp_path: Path) -> None:
    """A JSON List past 16 MiB: its mapped pages are let go while its objects are made, and read again as needed."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0", "labels": {"nvidia.com/gpu.product": "H100"}},
        "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi"}},
    }
    pods = []
    for i in range(400):
        pod = _pod(f"p{i}", {"zone": f"z{i % 3}"})
        pod["spec"]["containers"][0]["env"] = [{"name": "PAD", "value": "x" * 48_000}]  # unread: dropped
        if i % 2:
            pod["spec"]["nodeName"] = "n0"
            pod["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        pods.append(pod)
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, *pods]})
    assert len(text) > 16 * 2**20
    dump = tmp_path / "dump.json"
    dump.write_text(text)
    shared = import_objects(read_objects([str(dump)], io.StringIO()), now=NOW)[0]
    assert shared == import_objects(parse_objects(text, "dump.json"), now=NOW)[0]
    assert len(shared["jobs"]) == 400
