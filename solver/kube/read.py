"""Kubernetes objects as ``kubectl get ... -o json`` (or ``-o yaml``) prints them: a ``List`` (or ``XxxList``) of
items, or one object; YAML may hold several documents (``---``), each a List or an object.

Several files (or ``-`` for standard input) may be given; their items are read in order. Every problem names the
file, and the object's kind, namespace and name with the field path once the object is known. An object without a
name is kept with an empty one (its ``origin`` says where it was): the importer refuses it only if it reads its
kind.

Examples
--------
>>> objects = parse_objects('{"kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", '
...                         '"metadata": {"name": "n0"}}]}', "dump.json")
>>> objects[0].ref, objects[0].group
('Node n0', '')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gpu_preempt.models import SnapshotError
from gpu_preempt.models.errors import FieldError
from gpu_preempt.models.load.document import parse_document, parse_stream

from .kai_config import KaiSettings
from .kai_snapshot import is_zip, kai_snapshot_list
from .shapes import wrong_types

__all__ = ["KubeObject", "parse_objects", "read_objects"]


@dataclass(frozen=True)
class KubeObject:
    """One object of a dump: its kind, API group and version, namespace and name, and the whole body."""

    kind: str
    group: str
    version: str
    namespace: str | None
    name: str
    body: dict[str, Any]
    source: str
    origin: str = ""
    """Where it was read: the file, and the item (``dump.json: items[3]``)."""

    @property
    def ref(self) -> str:
        """``Kind namespace/name`` (``Kind name`` for cluster-scoped objects)."""
        return f"{self.kind} {self.key}"

    @property
    def key(self) -> str:
        return self.name if self.namespace is None else f"{self.namespace}/{self.name}"

    def at(self, field: str) -> str:
        """The error path of ``field`` of this object."""
        return f"{self.ref}: {field}"

    def get(self, *path: str) -> Any:
        """The value at ``path`` in the body (``None`` where any step is missing)."""
        value: Any = self.body
        for step in path:
            if not isinstance(value, dict):
                return None
            value = value.get(step)
        return value

    @property
    def labels(self) -> dict[str, str]:
        found = self.get("metadata", "labels")
        return found if isinstance(found, dict) else {}

    @property
    def annotations(self) -> dict[str, str]:
        found = self.get("metadata", "annotations")
        return found if isinstance(found, dict) else {}


def read_objects(sources: list[str], stdin: IO[str], settings: list[KaiSettings] | None = None) -> list[KubeObject]:
    """The objects of every source, in order (``-`` reads ``stdin``); a KAI scheduler snapshot ZIP is read as the
    List of its objects (:mod:`.kai_snapshot`), the snapshot config its scheduler configuration gives added to
    ``settings``. Raises :class:`SnapshotError`."""
    objects: list[KubeObject] = []
    for source in sources:
        if source == "-":
            text, name = stdin.read(), "<stdin>"
        else:
            try:
                data, name = Path(source).read_bytes(), source
            except FileNotFoundError:
                raise SnapshotError.single(source, "no such file") from None
            except OSError as err:
                raise SnapshotError.single(source, f"cannot read ({err})") from None
            if is_zip(data):
                text, said = kai_snapshot_list(data, source)
                if settings is not None:
                    settings.append(said)
            else:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise SnapshotError.single(source, f"cannot read ({err})") from None
        objects += parse_objects(text, name)
    return objects


def parse_objects(text: str, source: str) -> list[KubeObject]:
    """The objects of one file: a JSON document, or a YAML stream of documents (each a List or one object)."""
    if not text.strip():
        raise SnapshotError.single(source, "the input is empty; expected what kubectl get -o json (or -o yaml) prints")
    if text.lstrip().startswith(("{", "[")):
        documents = [parse_document(text, json_format=True, source=source)]
    else:
        documents = parse_stream(text, source=source)
    found: list[KubeObject | FieldError | list[FieldError]] = []
    for d, document in enumerate(documents):
        at = source if len(documents) == 1 else f"{source}: document {d + 1}"
        if not isinstance(document, dict) or not isinstance(document.get("kind"), str):
            raise SnapshotError.single(at, "not a Kubernetes object or List (expected an object with a kind)")
        if document["kind"] == "List" or (document["kind"].endswith("List") and "items" in document):
            items = document.get("items")
            if not isinstance(items, list):
                raise SnapshotError.single(f"{at}: items", "a List needs an items array")
            found += [_object(item, f"{at}: items[{i}]", source) for i, item in enumerate(items)]
        else:
            found.append(_object(document, at, source))
    errors = [e for f in found if not isinstance(f, KubeObject) for e in (f if isinstance(f, list) else [f])]
    if errors:
        raise SnapshotError(errors)
    return [f for f in found if isinstance(f, KubeObject)]


def _object(item: Any, where: str, source: str) -> KubeObject | FieldError | list[FieldError]:
    if not isinstance(item, dict):
        return FieldError(where, "not an object")
    version, kind = item.get("apiVersion"), item.get("kind")
    metadata = item.get("metadata")
    if not isinstance(version, str) or not version:
        return FieldError(f"{where}.apiVersion", "missing: every object has an apiVersion")
    if not isinstance(kind, str) or not kind:
        return FieldError(f"{where}.kind", "missing: every object has a kind")
    if metadata is not None and not isinstance(metadata, dict):
        return FieldError(f"{where}.metadata", "not an object")
    name = (metadata or {}).get("name")
    if name is not None and not isinstance(name, str):
        return FieldError(f"{where}.metadata.name", "not a string")
    namespace = (metadata or {}).get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        return FieldError(f"{where}.metadata.namespace", "not a string")
    group, _, ver = version.rpartition("/")
    found = KubeObject(kind, group, ver, namespace or None, name or "", item, source, where)
    problems = wrong_types(item, group, kind)
    if problems:
        return [FieldError(found.at(path), message) for path, message in problems]
    return found
