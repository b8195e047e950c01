"""Reading snapshots from YAML or JSON.

Examples
--------
>>> snap = parse_snapshot('{"now": 0, "nodes": [], "queues": []}')
>>> snap.now
0.0
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .collector import paused_collection
from .errors import SnapshotError
from .snapshot import Snapshot

try:  # the C loader is many times faster on large snapshots
    from yaml import CSafeLoader as _YamlLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _YamlLoader  # type: ignore[assignment]


def load_snapshot(path: str | Path) -> Snapshot:
    """Read and validate the snapshot in ``path`` (``.json`` as JSON, anything else as YAML)."""
    return snapshot_from_data(read_document(path))


def read_document(path: str | Path) -> Any:
    """The parsed, not yet validated, document in ``path`` (``.json`` as JSON, anything else as YAML)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SnapshotError.single("", f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SnapshotError.single("", f"{path}: cannot read ({err})") from None
    with paused_collection():
        return _parse(text, path.suffix.lower() == ".json", str(path))


def parse_snapshot(text: str, *, json_format: bool = False, source: str = "<input>") -> Snapshot:
    """Parse and validate a snapshot document (YAML, or JSON when ``json_format``)."""
    with paused_collection():
        return snapshot_from_data(_parse(text, json_format, source))


def snapshot_from_data(data: Any) -> Snapshot:
    """Validate already-parsed data (a mapping) as a snapshot."""
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise SnapshotError.single("", f"a snapshot is a mapping with now, nodes, queues, ...; got {kind}")
    try:
        with paused_collection():
            return Snapshot.model_validate(data)
    except ValidationError as err:
        raise SnapshotError.from_validation_error(err) from None


def _parse(text: str, json_format: bool, source: str) -> Any:
    if json_format:
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            where = f"line {err.lineno} column {err.colno}"
            raise SnapshotError.single("", f"{source}: invalid JSON at {where}: {err.msg}") from None
    try:
        return yaml.load(text, Loader=_YamlLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise SnapshotError.single("", f"{source}: invalid YAML{where}: {problem}") from None
