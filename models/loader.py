"""Reading snapshots from YAML or JSON.

Examples
--------
>>> snap = parse_snapshot('{"now": 0, "nodes": [], "queues": []}')
>>> snap.now
0.0
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .collector import loading_large, paused_collection
from .document import decode_json_fast, parse_document
from .errors import SnapshotError, kind_of
from .fast_path import fast_snapshot
from .snapshot import Snapshot
from .struct_path import struct_snapshot


def load_snapshot(path: str | Path) -> Snapshot:
    """Read and validate the snapshot in ``path`` (``.json`` as JSON, anything else as YAML).

    A JSON file with many jobs is read by the struct path (:mod:`.struct_path`) where it can be; any other file, or
    one that path leaves, by the fast path and pydantic. A file of :data:`~.collector.LARGE_DOCUMENT` bytes or more
    is loaded with :func:`~.collector.loading_large`: its objects are left out of the garbage collector's later
    passes.
    """
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0  # read_document says what is wrong
    with loading_large(size):
        if is_json(path):
            try:
                snapshot = _from_structs(Path(path).read_bytes())
            except OSError:
                snapshot = None  # read_document says what is wrong
            if snapshot is not None:
                return snapshot
        return _validated(read_document(path), again=lambda: read_document(path), json_format=is_json(path))


def _from_structs(data: bytes) -> Snapshot | None:
    """The snapshot in the JSON document ``data`` if the struct path builds it (:mod:`.struct_path`)."""
    with paused_collection():
        return struct_snapshot(data)


def read_document(path: str | Path) -> Any:
    """The parsed, not yet validated, document in ``path`` (``.json`` as JSON, anything else as YAML)."""
    path = Path(path)
    json_format = is_json(path)
    try:
        if json_format:  # bytes first: a large file is decoded by msgspec without a string of it being made
            with paused_collection():
                data = decode_json_fast(path.read_bytes())
            if data is not None:
                return data
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SnapshotError.single("", f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SnapshotError.single("", f"{path}: cannot read ({err})") from None
    with paused_collection():
        return parse_document(text, json_format=json_format, source=str(path))


def is_json(path: str | Path) -> bool:
    """Whether ``path`` is read as JSON (its suffix is ``.json``, in any case); YAML otherwise."""
    return Path(path).suffix.lower() == ".json"


def parse_snapshot(text: str, *, json_format: bool = False, source: str = "<input>") -> Snapshot:
    """Parse and validate a snapshot document (YAML, or JSON when ``json_format``); a large one as
    :func:`load_snapshot` loads it."""

    def parse() -> Any:
        with paused_collection():
            return parse_document(text, json_format=json_format, source=source)

    with loading_large(len(text)):
        snapshot = _from_structs(text.encode("utf-8", "surrogatepass")) if json_format else None
        if snapshot is not None:
            return snapshot
        return _validated(parse(), again=parse, json_format=json_format)


def snapshot_from_data(data: Any) -> Snapshot:
    """Validate already-parsed data (a mapping) as a snapshot; ``data`` is not changed."""
    return _validated(data, again=None)


def _validated(data: Any, again: Callable[[], Any] | None, json_format: bool = False) -> Snapshot:
    """``data`` validated. With ``again`` (how to parse the document once more), ``data`` is the caller's to give
    away: the fast path frees its nodes and jobs as it builds the models, and pydantic validates a new parse if
    the fast path refuses the document. ``json_format``: ``data`` is what a JSON parser made (and only that)."""
    if not isinstance(data, dict):
        holds = kind_of(data)
        raise SnapshotError.single("", f"a snapshot is a mapping with now, nodes, queues, ...; the file holds {holds}")
    with paused_collection():
        snapshot = fast_snapshot(data, consume=again is not None, parsed=json_format)
    if snapshot is not None:
        return snapshot
    if again is not None:
        data = again()
    try:
        with paused_collection():
            return Snapshot.model_validate(data)
    except ValidationError as err:
        raise SnapshotError.from_validation_error(err) from None
