"""Reading snapshots from YAML or JSON.

Every document takes the struct path first (:mod:`.build`): a JSON file from its bytes, anything else from its
parsed data. What that path does not accept goes to pydantic's validation, which names every problem.

The garbage collector is left as it is found: a long-running program that loads a large snapshot may want to
freeze it out of the collector's passes (``gc.freeze()`` once loaded; docs/performance.md).

Examples
--------
>>> snap = parse_snapshot('{"now": 0, "nodes": [], "queues": []}')
>>> snap.now
0.0
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import SnapshotError, kind_of
from ..snapshot import Snapshot
from .build import from_data, from_json
from .document import decode_json_fast, parse_document

__all__ = ["is_json", "load_snapshot", "parse_snapshot", "read_document", "snapshot_from_data"]


def load_snapshot(path: str | Path) -> Snapshot:
    """Read and validate the snapshot in ``path`` (``.json`` as JSON, anything else as YAML)."""
    if is_json(path):
        try:
            snapshot = from_json(Path(path).read_bytes())
        except OSError:
            snapshot = None  # read_document says what is wrong
        if snapshot is not None:
            return snapshot
    return _validated(read_document(path), parsed=is_json(path))


def read_document(path: str | Path) -> Any:
    """The parsed, not yet validated, document in ``path`` (``.json`` as JSON, anything else as YAML)."""
    path = Path(path)
    json_format = is_json(path)
    try:
        if json_format:  # bytes first: a large file is decoded by msgspec without a string of it being made
            data = decode_json_fast(path.read_bytes())
            if data is not None:
                return data
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SnapshotError.single("", f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SnapshotError.single("", f"{path}: cannot read ({err})") from None
    return parse_document(text, json_format=json_format, source=str(path))


def is_json(path: str | Path) -> bool:
    """Whether ``path`` is read as JSON (its suffix is ``.json``, in any case); YAML otherwise."""
    return Path(path).suffix.lower() == ".json"


def parse_snapshot(text: str, *, json_format: bool = False, source: str = "<input>") -> Snapshot:
    """Parse and validate a snapshot document (YAML, or JSON when ``json_format``)."""
    if json_format:
        snapshot = from_json(text.encode("utf-8", "surrogatepass"))
        if snapshot is not None:
            return snapshot
    return _validated(parse_document(text, json_format=json_format, source=source), parsed=json_format)


def snapshot_from_data(data: Any) -> Snapshot:
    """Validate already-parsed data (a mapping) as a snapshot; ``data`` is not changed."""
    return _validated(data, parsed=False)


def _validated(data: Any, *, parsed: bool) -> Snapshot:
    """``data`` validated: on the struct path, else by pydantic. ``parsed``: ``data`` is what a JSON parser made
    (and only that)."""
    if not isinstance(data, dict):
        holds = kind_of(data)
        raise SnapshotError.single("", f"a snapshot is a mapping with now, nodes, queues, ...; the file holds {holds}")
    snapshot = from_data(data, parsed=parsed)
    if snapshot is not None:
        return snapshot
    try:
        return Snapshot.model_validate(data)
    except ValidationError as err:
        raise SnapshotError.from_validation_error(err) from None
