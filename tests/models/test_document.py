"""Reading documents: the one-pass YAML builder gives what PyYAML's safe loader gives, and refuses what it must."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_preempt.models import SnapshotError
from gpu_preempt.models.load.document import LONG_LIST, MAX_DEPTH, parse_document, parse_stream

BUNDLED = sorted([*ROOT.glob("fixtures/**/*.yaml"), *ROOT.glob("docs/**/*.yaml"), *ROOT.glob("benchmarks/**/*.yaml")])


def read(text: str, json_format: bool = False) -> object:
    return parse_document(text, json_format=json_format, source="f")


def refusal(text: str, json_format: bool = False) -> str:
    with pytest.raises(SnapshotError) as caught:
        read(text, json_format)
    return str(caught.value)


def test_every_bundled_yaml_file_reads_as_pyyaml_reads_it():
    assert len(BUNDLED) > 50
    for path in BUNDLED:
        text = path.read_text(encoding="utf-8")
        if "\n---\n" in text:  # a stream of documents (a kubectl -o yaml dump)
            found = parse_stream(text, source=str(path))
            assert repr(found) == repr([d for d in yaml.safe_load_all(text) if d is not None]), path
            continue
        assert repr(read(text)) == repr(yaml.safe_load(text)), path


def test_a_stream_of_documents_refuses_what_one_document_refuses():
    with pytest.raises(SnapshotError) as caught:
        parse_stream("a: 1\n---\nb: 1\nb: 2\n", source="f")
    assert "duplicate key 'b'" in str(caught.value)
    with pytest.raises(SnapshotError) as caught:
        parse_stream("---\n---\n", source="f")
    assert "empty" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: 0x1F\nc: 1.5e3\nd: .inf\ne: ~\nf: yes\ng: 'yes'\nh: 2026-01-01\ni: 2026-01-01T12:00:00Z\nj: \"8\"\n",
        "base: &b {gpu: 8, cpu: 4}\ncopy: *b\nlist: &l [1, [2, 3]]\nagain: [*l, *l]\n",
        "base: &b {gpu: 8}\nmerged: {<<: *b, cpu: 4}\n",  # a merge key: left to PyYAML
        "a: !!str 8\nb: !!float 1\nc: !!binary aGVsbG8=\n",  # explicit tags: left to PyYAML
        "? [1, 2]\n: complex key\n",
        "1: one\n2.5: two\nnull: nothing\n",
        "- |\n  literal\n  text\n- >\n  folded\n  text\n",
        "",
    ],
    ids=["scalars", "aliases", "merge key", "tags", "complex key", "non-string keys", "block scalars", "empty"],
)
def test_yaml_constructs_read_as_pyyaml_reads_them(text: str):
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        assert "invalid YAML" in refusal(text)
        return
    if not text:
        assert "the file is empty" in refusal(text)
    else:
        assert repr(read(text)) == repr(expected)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\n---\nb: [2, 3]\n---\n",
        "--- &x {a: 1}\n--- {b: 2}\n---\n- 8\n- yes\n",
        "a: &b {c: 1}\n---\nd: {<<: {e: 2}}\n",  # a merge key: the whole stream left to PyYAML
        "# nothing\n---\n",
    ],
    ids=["two documents", "anchors per document", "merge key", "empty"],
)
def test_a_stream_reads_as_pyyaml_reads_it(text: str):
    expected = [d for d in yaml.safe_load_all(text) if d is not None]
    if not expected:
        with pytest.raises(SnapshotError, match="empty"):
            parse_stream(text, source="f")
    else:
        assert repr(parse_stream(text, source="f")) == repr(expected)


def test_a_long_list_is_shown_by_its_path_before_the_rest_is_read():
    seen: list[tuple[list[object], object]] = []

    def long_list(steps: list[object], values: list[object]) -> None:
        seen.append((steps, values[-1]))
        if steps[-1] == "refused":
            raise SnapshotError.single("f", "too long")

    items = "\n".join(f"  - {i}" for i in range(LONG_LIST + 1))
    short = "\n".join(f"  - {i}" for i in range(LONG_LIST))
    text = f"a:\n- b:\n{items}\n  c:\n{short}\n"
    documents = parse_stream(text, source="f", long_list=long_list)
    assert [steps for steps, _ in seen] == [["a", 0, "b"]]
    assert seen[0][1] is documents[0]["a"][0]["b"] and len(documents[0]["a"][0]["b"]) == LONG_LIST + 1
    with pytest.raises(SnapshotError, match="too long"):  # the unclosed list after it is never read
        parse_stream(f"refused:\n{items}\nthen: [unclosed\n", source="f", long_list=long_list)
    with pytest.raises(SnapshotError, match="invalid YAML"):
        parse_stream(f"kept:\n{items}\nthen: [unclosed\n", source="f", long_list=long_list)


def test_a_list_that_holds_itself_is_built_as_pyyaml_builds_it():
    built = read("a: &a [1, *a]\n")
    assert isinstance(built, dict) and built["a"][1] is built["a"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: 1\na: 2\n", "f: duplicate key 'a' (line 2 column 1)"),
        ("a: {x: 1, x: 2}\n", "duplicate key 'x' (line 1 column 11)"),
        ("base: &b {gpu: 8}\nmerged: {<<: *b, cpu: 4, cpu: 5}\n", "duplicate key 'cpu' (line 2 column 26)"),
        ("a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} levels deep"),
        ("a: 2026-13-45\n", "invalid YAML: month must be in 1..12 (line 1 column 4)"),
        ("a: *nowhere\n", "found undefined alias"),
        ("a: 1\n---\nb: 2\n", "invalid YAML at line 2 column 1: but found another document"),
        ("a: [1, 2\n", "invalid YAML at line 2 column 1"),
        ('{"a": 1, "a": 2}', "duplicate key 'a' (line 1 column 10)"),
        ("1: one\ntrue: yes\n", "duplicate key True (line 2 column 1)"),  # 1 == True: PyYAML keeps one silently
    ],
    ids=["top level", "flow", "after a merge", "depth", "bad date", "undefined alias", "two documents",
         "truncated", "JSON", "1 and true"],
)  # fmt: skip
def test_a_bad_document_is_refused_naming_the_line(text: str, words: str):
    assert words in refusal(text, json_format=text.startswith("{"))


def test_a_kept_alias_expansion_is_counted_and_bounded():
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcde", "bcdef", strict=True)
    )
    assert "aliases expand to more than 1,000,000 nodes" in refusal(laughs)
    assert len(read(laughs.rsplit("\n", 2)[0] + "\n")["e"]) == 10  # a 100,000-node expansion is fine


def test_json_reads_as_the_json_module_reads_it():
    text = (ROOT / "fixtures" / "kube" / "kai-cluster.json").read_text(encoding="utf-8")
    assert read(text, json_format=True) == json.loads(text)


def _reference_json(text: str) -> object:
    """The standard library's reading, refusing a key given twice: what every JSON document must read as."""

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        if len({k for k, _ in pairs}) != len(pairs):
            raise ValueError("duplicate key")
        return dict(pairs)

    return json.loads(text, object_pairs_hook=unique)


class _Pairs(list):  # type: ignore[type-arg]
    """An object written member by member, so that a key may be given twice."""


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab:"\\\x01\u00e9\U0001f600 '), max_size=6)
)
_keys = st.text(alphabet=st.sampled_from('ab:"\\\u00e9'), max_size=3)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.lists(st.tuples(_keys, inner), max_size=4).map(_Pairs),
    max_leaves=20,
)


def _write(value: object, ascii_only: bool) -> str:
    if isinstance(value, _Pairs):
        members = (f"{json.dumps(k, ensure_ascii=ascii_only)} : {_write(v, ascii_only)}" for k, v in value)
        return "{" + ", ".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_write(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


@settings(max_examples=400, deadline=None)
@given(value=_values, ascii_only=st.booleans())
def test_json_reads_as_the_standard_library_reads_it_and_refuses_a_key_given_twice(value: object, ascii_only: bool):
    """The msgspec path (with its duplicate count) and the standard decoder agree on every document."""
    text = _write(value, ascii_only)
    try:
        expected = _reference_json(text)
    except ValueError:
        assert "duplicate key" in refusal(text, json_format=True)
    else:
        assert repr(read(text, json_format=True)) == repr(expected)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 1}',
        '{"x": {"a": "p:q", "a": "p:q"}}',
        '{"a\\u003a": 1, "a:": 2}',
        '[{"a": []}, {"b": 1, "b": 1}]',
    ],
)
def test_a_key_given_twice_is_refused_even_with_the_same_value(text: str):
    assert "duplicate key" in refusal(text, json_format=True)


def test_json_the_fast_decoder_refuses_is_reported_by_the_standard_one():
    assert "invalid JSON at line 1 column 11: Expecting ',' delimiter" in refusal('{"a": NaN x}', json_format=True)
    assert math.isnan(read('{"a": NaN}', json_format=True)["a"])  # type: ignore[index]


@pytest.mark.parametrize("piece", [1, 3, 64])
def test_a_large_documents_colons_are_counted_a_piece_at_a_time_and_escapes_still_found(monkeypatch, piece):
    """Past two pieces, the duplicate-key check counts colons with numpy a piece at a time: the counts are the
    bytes', a ``:`` spelt as an escape still sends the document to the standard decoder, and a key given twice is
    still refused."""
    from gpu_preempt.models.load import document

    monkeypatch.setattr(document, "_PIECE", piece)
    monkeypatch.setattr(document, "_LARGE", 2 * piece)
    plain = json.dumps({"a": {"b": "x:y", "c": [1, {"d": 2}]}, "e": "\\\\"}).encode()
    assert document.colons(plain) == plain.count(b":")
    assert document.colons(b'{"a": "x\\u003ay", "b": 1}' + b" " * 200) is None
    assert document.decode_json_fast(plain) == json.loads(plain)
    assert document.decode_json_fast(b'{"a": 1, "a": 2}' + b" " * 200) is None  # left to the decoder that names it
    assert document.decode_json_fast(b'{"a": 1, "a": 2, "b": "\\u003a"}' + b" " * 200) is None
