"""Reading a YAML or JSON document safely: bounded nesting, bounded aliases, no duplicate keys.

Every input file (snapshot, scenario, sweep, Kubernetes dump) goes through
:func:`parse_document` before anything is built from it. It refuses, naming the
line:

* YAML nested deeper than :data:`MAX_DEPTH` levels (the formats need fewer than
  15; YAML nested 100,000 deep crashes PyYAML's composer), JSON nested
  deeper than its decoder allows (about 1,000 levels; deeper values are refused
  by the models with a short message, as any value of the wrong type);
* YAML aliases that would expand the document by more than
  :data:`MAX_ALIAS_NODES` nodes ("billion laughs": 550 bytes that expand to
  a billion strings);
* a key given twice in one mapping (YAML and JSON would silently keep the last).

YAML is built from the parser's event stream in one pass, without recursion, and
checked on the way (about twice as fast as ``yaml.load`` on a large snapshot);
the rare constructs it leaves to PyYAML (explicit tags, merge keys) are checked
on the events first. JSON is decoded by msgspec and checked by counting
(:func:`_decode_fast`), or by the standard decoder when msgspec cannot decide.

Examples
--------
>>> parse_document("a: 1\\nb: [2, 3]", json_format=False, source="x.yaml")
{'a': 1, 'b': [2, 3]}
>>> parse_document('{"a": 1, "a": 2}', json_format=True, source="x.json")
Traceback (most recent call last):
...
gpu_preempt.models.errors.SnapshotError: x.json: duplicate key 'a' (line 1 column 10)
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable
from typing import Any, BinaryIO, Final

import msgspec
import yaml

from ..errors import SnapshotError, shown

__all__ = [
    "LONG_LIST",
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "LongList",
    "colons",
    "decode_json_fast",
    "parse_document",
    "parse_stream",
]

try:  # the C parser is many times faster on large documents
    from yaml import CSafeLoader as _YamlLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _YamlLoader  # type: ignore[assignment]

MAX_DEPTH: Final = 64
"""The deepest nesting of mappings and lists a document may have."""

MAX_ALIAS_NODES: Final = 1_000_000
"""How many nodes YAML aliases may add to a document once expanded."""

_MERGE_KEY = "<<"


def parse_document(text: str, *, json_format: bool, source: str) -> Any:
    """The data in ``text`` (JSON when ``json_format``, else YAML); :class:`SnapshotError` naming the line if bad."""
    if not text.strip():
        raise SnapshotError.single("", f"{source}: the file is empty")
    if json_format:
        return _parse_json(text, source)
    try:
        documents = _read_yaml(text, source, build=True)
        if len(documents) > 1:
            raise _Unusual  # PyYAML says "expected a single document", with its line
        data = documents[0] if documents else None
    except _Unusual:  # explicit tags, merge keys, several documents: checked on the events, then built by PyYAML
        _read_yaml(text, source, build=False)
        try:
            data = yaml.load(text, Loader=_YamlLoader)
        except yaml.YAMLError as err:
            raise _yaml_error(err, source) from None
        except ValueError as err:  # a scalar the constructor cannot convert, e.g. an integer of 5,000 digits
            raise SnapshotError.single("", f"{source}: invalid YAML: {err}") from None
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from None
    if data is None:
        raise SnapshotError.single("", f"{source}: the file is empty (it holds only comments or null)")
    return data


def parse_stream(
    text: str | bytes | BinaryIO,
    *,
    source: str,
    long_list: LongList | None = None,
    item: Callable[[Any], Any] | None = None,
) -> list[Any]:
    """The documents of a YAML stream (``---`` between them; empty ones left out), checked as
    :func:`parse_document` checks one; :class:`SnapshotError` naming the line if bad. ``text`` may be the file's
    UTF-8 bytes, which the parser reads without a copy, or the file open to read them (read again from its start
    where the stream is read twice).

    ``long_list``, when given, is called with the path of keys and indexes from the root to a list as soon as that
    list gets its ``LONG_LIST + 1``-th item (the root's own list and its path first), and with the document's value
    at each step (``steps``), before the rest of the stream is read: a caller that bounds some lists refuses them
    without reading further (it raises :class:`SnapshotError`).

    ``item``, when given, is applied to each item of a root mapping's ``items`` list as soon as it is read, and its
    result kept instead (a List's objects: a caller drops what it never reads before the next item is built)."""
    try:
        documents = _read_yaml(text, source, build=True, long_list=long_list, item=item)
    except _Unusual:  # explicit tags, merge keys: checked on the events, then built by PyYAML
        _read_yaml(_rewound(text), source, build=False, long_list=long_list)
        try:
            documents = list(yaml.load_all(_rewound(text), Loader=_YamlLoader))
        except yaml.YAMLError as err:
            raise _yaml_error(err, source) from None
        except ValueError as err:
            raise SnapshotError.single("", f"{source}: invalid YAML: {err}") from None
        for document in documents:
            if item is not None and isinstance(document, dict) and isinstance(document.get("items"), list):
                document["items"] = [item(i) for i in document["items"]]
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from None
    found = [d for d in documents if d is not None]
    if not found:
        raise SnapshotError.single("", f"{source}: the file is empty (it holds only comments or null)")
    return found


def _rewound(text: str | bytes | BinaryIO) -> str | bytes | BinaryIO:
    """``text``, a file read again from its start."""
    if not isinstance(text, (str, bytes)):
        text.seek(0)
    return text


LONG_LIST: Final = 1000
"""How many items a list may have before :func:`parse_stream` shows its path to ``long_list``."""

LongList = Callable[[list[Any], list[Any]], None]
"""Called with the keys and indexes from a document's root to a list, and the values along them (``values[0]`` the
root, ``values[-1]`` the list)."""


def _yaml_error(err: yaml.YAMLError, source: str) -> SnapshotError:
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err)
    if "maximum nesting depth" in problem:  # PyYAML 6.0.4's own limit (1,000), met while scanning ahead of ours
        problem = f"nested more than {MAX_DEPTH} levels deep"
    return SnapshotError.single("", f"{source}: invalid YAML{where}: {problem}")


class _Unusual(Exception):
    """A construct :func:`_read_yaml` leaves to PyYAML."""


class _Open:
    """A mapping or list being built from the events."""

    __slots__ = ("anchor", "key", "keys", "nodes", "value", "want_key")

    def __init__(self, value: dict[Any, Any] | list[Any], anchor: str | None) -> None:
        self.value = value
        self.anchor = anchor
        self.nodes = 1
        self.want_key = isinstance(value, dict)
        self.key: Any = None


def _read_yaml(
    text: str | bytes | BinaryIO,
    source: str,
    *,
    build: bool,
    long_list: LongList | None = None,
    item: Callable[[Any], Any] | None = None,
) -> list[Any]:
    """The documents in ``text``, built from the parser's events in one pass, refusing on the way nesting deeper than
    :data:`MAX_DEPTH`, aliases that add more than :data:`MAX_ALIAS_NODES` nodes and duplicate keys: no recursion,
    so no depth can crash it.

    Scalars are resolved and constructed by PyYAML's own safe loader (so ``8`` is an int, ``2026-01-01`` a date,
    ``yes`` a string in YAML 1.1's way, exactly as ``yaml.safe_load``); plain scalars are constructed once per
    distinct text. Explicit tags and merge keys (``<<``) raise :class:`_Unusual`. ``long_list`` and ``item``: as
    :func:`parse_stream` says.
    Without ``build`` the same checks run on the events alone (scalars stay text, tags and merge keys pass, and a
    syntax error stops the check): PyYAML then builds the document.
    """
    loader = _YamlLoader("")
    cache: dict[str, Any] = {}
    anchors: dict[str, tuple[Any, int]] = {}
    stack: list[_Open] = []
    roots: list[Any] = []
    added = 0

    def refuse(event: yaml.Event, message: str) -> SnapshotError:
        mark = event.start_mark
        where = "" if mark is None else f" (line {mark.line + 1} column {mark.column + 1})"
        return SnapshotError.single("", f"{source}: {message}{where}")

    def place(value: Any, size: int, event: yaml.Event) -> None:
        if not stack:
            roots.append(value)
            return
        parent = stack[-1]
        parent.nodes += size
        if not parent.want_key and isinstance(parent.value, dict):
            if parent.key is not _NO_KEY:
                parent.value[parent.key] = value
            parent.want_key = True
        elif isinstance(parent.value, list):
            if item is not None and len(stack) == 2 and stack[0].key == "items" and isinstance(stack[0].value, dict):
                value = item(value)
            parent.value.append(value)
            if len(parent.value) == LONG_LIST + 1 and long_list is not None:
                long_list(*_path(stack))
        else:
            unusual = value == _MERGE_KEY or isinstance(value, (dict, list))
            if unusual and build:
                raise _Unusual
            if not unusual:
                if value in parent.value:
                    raise refuse(event, f"duplicate key {shown(value)}")
                parent.value[value] = None  # keeps the key's place, as PyYAML's dict does
            parent.key = _NO_KEY if unusual else value
            parent.want_key = False

    try:
        for event in yaml.parse(text, Loader=_YamlLoader):
            if isinstance(event, yaml.ScalarEvent):
                if build and event.tag not in (None, "!"):
                    raise _Unusual
                value = event.value
                if build and event.implicit[0]:  # plain: resolved by its text (int, float, bool, null, date, ...)
                    if value == _MERGE_KEY:
                        raise _Unusual
                    value = cache.get(event.value, cache)
                    if value is cache:
                        tag = loader.resolve(yaml.ScalarNode, event.value, (True, False))  # type: ignore[no-untyped-call]
                        try:
                            value = cache[event.value] = loader.construct_object(yaml.ScalarNode(tag, event.value))
                        except ValueError as err:
                            raise refuse(event, f"invalid YAML: {err}") from None
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1)
                place(value, 1, event)
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors and build:
                    raise _Unusual  # PyYAML reports the undefined alias with its line
                value, size = anchors.get(event.anchor or "", (None, 1))
                added += size - 1
                if added > MAX_ALIAS_NODES:
                    raise refuse(event, f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes")
                place(value, size, event)
            elif isinstance(event, yaml.CollectionStartEvent):
                if build and event.tag not in (None, "!"):
                    raise _Unusual
                container: dict[Any, Any] | list[Any] = {} if isinstance(event, yaml.MappingStartEvent) else []
                stack.append(_Open(container, event.anchor))
                if len(stack) > MAX_DEPTH:
                    raise refuse(event, f"nested more than {MAX_DEPTH} levels deep")
                if event.anchor is not None:
                    anchors[event.anchor] = (container, 1)  # an alias inside its own anchor: a recursive structure
            elif isinstance(event, yaml.CollectionEndEvent):
                done = stack.pop()
                if done.anchor is not None:
                    anchors[done.anchor] = (done.value, done.nodes)
                place(done.value, done.nodes, event)
    except yaml.YAMLError:
        if build:
            raise
        return []  # PyYAML reports it, with its line
    return roots


def _path(stack: list[_Open]) -> tuple[list[Any], list[Any]]:
    """The keys and indexes from the root to the innermost open container, and the values along them."""
    steps: list[Any] = []
    for parent in stack[:-1]:
        if isinstance(parent.value, list):
            steps.append(len(parent.value))
        else:
            steps.append(parent.key)
    return steps, [parent.value for parent in stack]


_NO_KEY = object()
"""The key of a mapping entry whose key is not kept (a merge key, or a list or mapping, when only checking)."""


class _Duplicate(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return found


def _parse_json(text: str, source: str) -> Any:
    data = _decode_fast(text)
    if data is not _SLOW:
        return data
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}"
        raise SnapshotError.single("", f"{source}: invalid JSON at {where}: {err.msg}") from None
    except _Duplicate as dup:
        key = dup.args[0]
        raise SnapshotError.single("", f"{source}: duplicate key {shown(key)}{_json_place(text, key)}") from None
    except RecursionError:  # the decoder's own limit, near 1,000 levels
        raise SnapshotError.single("", f"{source}: nested too deeply") from None
    except ValueError as err:  # e.g. an integer of more than 4,300 digits
        raise SnapshotError.single("", f"{source}: invalid JSON: {err}") from None
    return data


_SLOW = object()


def decode_json_fast(data: bytes) -> Any:
    """The JSON document in ``data`` decoded by msgspec, or ``None`` when :func:`parse_document` must read it as text
    (to say what is wrong, or to decide what msgspec would not): the bytes of a large file, read without first
    decoding them to a string."""
    found = _decode_fast(data)
    return None if found is _SLOW else found


def _decode_fast(text: str | bytes) -> Any:
    """``text`` decoded by msgspec (several times faster than :mod:`json` with a duplicate-key hook), or ``_SLOW``
    when the standard decoder must decide: msgspec refuses it (it is stricter: ``NaN``, lone surrogates and
    4,300-digit integers are errors there), or a key may be given twice.

    msgspec keeps the last of duplicate keys silently, so they are found by counting: every member of every object
    holds one ``:`` outside strings, and re-encoding the tree writes back every string it kept. Without a ``:``
    spelt as an escape, the text and the re-encoded tree hold as many colons exactly when no member was dropped.
    """
    given = colons(text) if isinstance(text, bytes) else None if "\\u003" in text else text.count(":")
    if given is None:
        return _SLOW
    try:
        data = msgspec.json.decode(text)
        encoded = msgspec.json.encode(data)  # msgspec spells no colon as an escape
        same = (encoded.count(b":") if len(encoded) <= _LARGE else colons(encoded)) == given
    except (msgspec.MsgspecError, RecursionError, ValueError, OverflowError):
        return _SLOW
    return data if same else _SLOW


_PIECE = 1 << 22
"""Bytes counted at a time by :func:`colons` (in a large document)."""
_LARGE = 2 * _PIECE
"""A document larger than this is counted by numpy."""


def colons(data: bytes | memoryview | mmap.mmap | msgspec.Raw) -> int | None:
    """How many ``:`` ``data`` (bytes, or any buffer: a mapped file, a part of one) holds, or ``None`` if one may be
    spelt as an escape (``\\u003a``), which the counts of the duplicate-key checks cannot tell from a dropped
    member. A large document is counted by numpy, a piece at a time, without a copy (the command line starts without
    numpy)."""
    if type(data) is bytes and len(data) <= _LARGE:  # most: an object of a List, decoded alone
        return None if b"\\u003" in data else data.count(b":")
    view = memoryview(data)
    if view.nbytes <= _LARGE:
        small = view.tobytes()
        return None if b"\\u003" in small else small.count(b":")
    import numpy as np

    values = np.frombuffer(view, dtype=np.uint8)
    found = escapes = 0
    for start in range(0, len(values), _PIECE):
        piece = values[start : start + _PIECE]
        found += int(np.count_nonzero(piece == ord(":")))
        escapes += int(np.count_nonzero(piece == ord("\\")))
    if escapes and any(b"\\u003" in values[at : at + _PIECE + 5].tobytes() for at in range(0, len(values), _PIECE)):
        return None
    return found


def _json_place(text: str, key: str) -> str:
    """`` (line L column C)`` of the second occurrence of ``"key":`` in ``text``, if it can be found."""
    needle = json.dumps(key)
    first = text.find(needle)
    second = text.find(needle, first + 1) if first >= 0 else -1
    while second >= 0 and not text[second + len(needle) :].lstrip().startswith(":"):
        second = text.find(needle, second + 1)
    if second < 0:
        return ""
    line = text.count("\n", 0, second) + 1
    column = second - (text.rfind("\n", 0, second) + 1) + 1
    return f" (line {line} column {column})"
