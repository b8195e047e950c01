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

import codecs
import functools
import mmap
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, BinaryIO

import msgspec

from gpu_preempt.models import SnapshotError
from gpu_preempt.models.errors import FieldError
from gpu_preempt.models.load.document import colons, decode_json_fast, parse_document, parse_stream

from .kai_config import KaiSettings
from .kai_snapshot import is_zip, kai_snapshot_list
from .limits import MAX_ITEMS, MAX_NAME, MAX_NAMESPACE, MAX_OBJECT, bounded_list, over_limits
from .shapes import wrong_types

__all__ = ["UNREAD", "UNREAD_CONTAINER", "KubeObject", "parse_objects", "read_objects"]


@dataclass(frozen=True, slots=True)
class KubeObject:
    """One object of a dump: its kind, API group and version, namespace and name, and the whole body."""

    kind: str
    group: str
    version: str
    namespace: str | None
    name: str
    body: dict[str, Any]
    source: str
    place: str = ""
    """Where it was read: the file, or its document (``dump.yaml: document 2``)."""
    item: int = -1
    """Its index in the List at ``place`` (-1 when it is not a List's item)."""

    @property
    def origin(self) -> str:
        """Where it was read: the file, and the item (``dump.json: items[3]``)."""
        return self.place if self.item < 0 else f"{self.place}: items[{self.item}]"

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
            objects += parse_objects(stdin.read(), "<stdin>")
            continue
        try:
            with open(source, "rb") as handle:
                objects += _read_file(handle, source, settings)
        except FileNotFoundError:
            raise SnapshotError.single(source, "no such file") from None
        except OSError as err:
            raise SnapshotError.single(source, f"cannot read ({err})") from None
    return objects


def _read_file(handle: BinaryIO, source: str, settings: list[KaiSettings] | None) -> list[KubeObject]:
    """The objects of one file. A JSON List is read from the file mapped into memory (:func:`_mapped`), a YAML
    stream by its parser from the open file: a large dump's bytes are never all held beside its objects."""
    data = _mapped(handle)
    if is_zip(data):
        text, said = kai_snapshot_list(data[:], source)
        if settings is not None:
            settings.append(said)
        return parse_objects(text, source)
    _check_utf8(data, source)
    found = _json_list(data, source)
    if found is not None:
        return found
    _let_go(data)
    head = data[:4096].lstrip()
    if head and not head.startswith((b"{", b"[", b"\xef\xbb\xbf")):
        handle.seek(0)
        return parse_objects(handle, source)
    return parse_objects(data[:].decode("utf-8"), source)


def _mapped(handle: BinaryIO) -> bytes | mmap.mmap:
    """The file's bytes, mapped into memory where the file can be (not empty, not a pipe), else read."""
    try:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (ValueError, OSError):
        return handle.read()


def _let_go(data: bytes | mmap.mmap) -> None:
    """Drop from this process the pages of a mapped file read so far (the kernel keeps them cached: a later read
    of them is no read from the disk)."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        data.madvise(mmap.MADV_DONTNEED)


def _check_utf8(data: bytes | mmap.mmap, source: str) -> None:
    """Refuse bytes that are not UTF-8, read in pieces (the text of a large dump is not kept)."""
    if isinstance(data, bytes) and data.isascii():
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(data), _PIECE):
            piece = data[start : start + _PIECE]
            if not piece.isascii() or decoder.getstate()[0]:
                decoder.decode(piece)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as err:
        raise SnapshotError.single(source, f"cannot read ({err})") from None


_PIECE = 1 << 24


class _Meta(msgspec.Struct):
    name: Any = None
    namespace: Any = None


class _Status(msgspec.Struct):
    phase: Any = None


class _Head(msgspec.Struct):
    """What tells a finished pod (the rest of an item is skipped unread)."""

    kind: Any = None
    apiVersion: Any = None
    metadata: _Meta | None = None
    status: _Status | None = None

    @property
    def finished(self) -> bool:
        return (
            self.kind == "Pod"
            and self.apiVersion == "v1"
            and self.status is not None
            and self.status.phase in ("Succeeded", "Failed")
            and self.metadata is not None
            and _names(self.metadata)
        )


_KIND = msgspec.json.Decoder(str)
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_HEAD = msgspec.json.Decoder(_Head)


def _json_list(data: bytes | mmap.mmap, source: str) -> list[KubeObject] | None:
    """The objects of a JSON ``List``, its finished pods read no further than their kind, name and phase (a busy
    cluster's dump holds more of them than of anything else); ``None`` where :func:`parse_objects` must read the
    document (not a List, or an item msgspec does not take as the standard decoder would). A mapped file's pages
    are let go before its objects are made, and every :data:`_PIECE` bytes of items as they are."""
    head = data[:4096].lstrip()
    if not head.startswith(b"{"):
        return None
    every = colons(data)
    if every is None:  # an escaped ':' defeats the count of members below
        return None
    try:
        top = _MEMBERS.decode(data)
        kind, items = _KIND.decode(top["kind"]), _ITEMS.decode(top["items"])
    except (msgspec.MsgspecError, RecursionError, ValueError, KeyError):
        return None
    if kind != "List" and not kind.endswith("List"):
        return None
    # A key given twice is found as decode_json_fast finds it: every member holds one ':' outside strings.
    members = len(top) + sum(map(_colons, (value for key, value in top.items() if key != "items")))
    if members + _colons(top["items"]) != every:
        return None
    _let_go(data)
    found: list[KubeObject | FieldError | list[FieldError]] = []
    parts: dict[Any, Any] = {}
    read = 0
    for i, raw in enumerate(items):
        read += len(raw)
        if read > _PIECE:
            _let_go(data)
            read = 0
        if len(raw) > MAX_OBJECT:
            where = _named(raw, f"{source}: items[{i}]")
            found.append(FieldError(where, f"is {len(raw)} bytes long; an object has at most {MAX_OBJECT}"))
            continue
        pod = _head(raw)
        if pod is not None and pod.finished:
            assert pod.metadata is not None and pod.status is not None
            name, namespace = pod.metadata.name, parts.setdefault(pod.metadata.namespace, pod.metadata.namespace)
            metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": metadata,
                "status": _FINISHED_STATUS[pod.status.phase],
            }
            if (
                name and len(name) <= MAX_NAME and len(namespace or "") <= MAX_NAMESPACE
            ):  # typed already: no more checks
                found.append(KubeObject("Pod", "", "v1", namespace or None, name, body, source, source, i))
            else:
                found.append(_object(body, source, source, i))
            continue
        item = decode_json_fast(bytes(raw))
        if item is None:
            return None  # a duplicate key, or what the standard decoder decides
        found.append(_object(_shared(item, parts, _JSON_KEY), source, source, i))
    errors = [e for f in found if not isinstance(f, KubeObject) for e in (f if isinstance(f, list) else [f])]
    if errors:
        raise SnapshotError(errors)
    return [f for f in found if isinstance(f, KubeObject)]


def _head(raw: msgspec.Raw) -> _Head | None:
    try:
        return _HEAD.decode(raw)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None


_FINISHED_STATUS = {"Succeeded": {"phase": "Succeeded"}, "Failed": {"phase": "Failed"}}
"""The status a finished pod is kept with, one per phase (shared: nothing writes to an object's body)."""


def _colons(raw: msgspec.Raw) -> int:
    """The ``:`` bytes of a part of a List whose whole holds no escaped one (a List's items are most of the file: no
    copy of them)."""
    found = colons(raw)
    assert found is not None
    return found


UNREAD = {
    "metadata": ("managedFields", "resourceVersion", "generation"),
    "spec": ("volumes", "imagePullSecrets", "readinessGates", "hostAliases", "dnsConfig", "securityContext",
             "terminationGracePeriodSeconds", "podCIDR", "podCIDRs", "providerID"),
    "status": ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses", "images", "nodeInfo",
               "addresses", "daemonEndpoints", "podIPs", "hostIPs", "qosClass", "capacity"),
}  # fmt: skip
"""Fields the importer never reads, dropped as each object of a large List is read (they can be most of its size)."""
UNREAD_CONTAINER = (
    "image", "command", "args", "env", "envFrom", "volumeMounts", "volumeDevices", "ports", "livenessProbe",
    "readinessProbe", "startupProbe", "lifecycle", "securityContext", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "workingDir",
)  # fmt: skip
"""Container fields the importer never reads (it reads the resources)."""


def _kept(item: Any) -> Any:
    """What the importer reads of a finished pod: its kind, names and phase; any other item as it is."""
    if not isinstance(item, dict) or item.get("kind") != "Pod" or item.get("apiVersion") != "v1":
        return item
    status, metadata = item.get("status"), item.get("metadata")
    if not isinstance(status, dict) or status.get("phase") not in ("Succeeded", "Failed"):
        return item
    if not isinstance(metadata, dict) or not _names(_Meta(metadata.get("name"), metadata.get("namespace"))):
        return item
    kept = {key: metadata[key] for key in ("name", "namespace") if key in metadata}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": kept, "status": {"phase": status["phase"]}}


def _shared(item: Any, parts: dict[Any, Any], known_by: Callable[[Any], bytes]) -> Any:
    """``item`` without the fields :data:`UNREAD` and :data:`UNREAD_CONTAINER` name, and with each string of its own
    (``kind``), each string, mapping and list of its sections (``metadata.namespace``, ``spec.containers``,
    ``status.conditions``) and each whole section but its metadata replaced by the first equal one in ``parts``
    (changed in place): the pods of a job hold the same containers, tolerations and conditions, often the same
    ``spec`` and ``status``, and a dump's objects the same few kinds, namespaces, phases and times. The importer
    never writes to a body, so equal parts can be one object. A mapping or list is known by
    ``known_by``: bytes that tell apart every two values of the kinds the document holds (:data:`_JSON_KEY`,
    :data:`_YAML_KEY`); containers by what they were before their unread fields were dropped, so that the pods of
    a job drop them once."""
    if type(item) is not dict:
        return item
    setdefault = parts.setdefault
    for name, section in item.items():
        if type(section) is str:
            item[name] = setdefault(section, section)
        elif type(section) is dict:
            unread = _UNREAD_SETS.get(name)
            for key, value in section.items():
                kind = type(value)
                if kind is str:
                    section[key] = setdefault(value, value)
                elif (kind is dict or kind is list) and (unread is None or key not in unread):
                    try:
                        known = known_by(value)
                    except OverflowError:  # an integer past 64 bits: kept as it is
                        continue
                    same = parts.get(known)
                    if same is None:
                        if kind is list and key in _CONTAINERS and name == "spec":
                            _trim_containers(value)
                        parts[known] = value
                    else:
                        section[key] = same
            if unread is not None:
                for key in section.keys() & unread:
                    del section[key]
            if name != "metadata":  # a name of its own
                try:
                    item[name] = setdefault(known_by(section), section)
                except OverflowError:
                    continue
    return item


def _trim_containers(containers: list[Any]) -> None:
    for container in containers:
        if type(container) is dict:
            for key in container.keys() & _UNREAD_CONTAINER:
                del container[key]


_UNREAD_SETS = {part: frozenset(names) for part, names in UNREAD.items()}
_UNREAD_CONTAINER = frozenset(UNREAD_CONTAINER)
_CONTAINERS = ("containers", "initContainers")
_JSON_KEY: Callable[[Any], bytes] = msgspec.msgpack.Encoder().encode
"""A JSON part's MessagePack bytes: exact for what JSON holds (strings, numbers, booleans, null)."""
_YAML_KEY: Callable[[Any], bytes] = functools.partial(pickle.dumps, protocol=5)
"""A YAML part's pickle: YAML also holds dates (a string in MessagePack) and keys that are not strings."""


class _Ident(msgspec.Struct):
    kind: Any = None
    metadata: Any = None


def _named(raw: msgspec.Raw, where: str) -> str:
    """``Kind namespace/name`` of the object in ``raw`` where its kind and names are within their limits, else
    ``where``."""
    try:
        ident = msgspec.json.decode(raw, type=_Ident)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return where
    metadata = ident.metadata if isinstance(ident.metadata, dict) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(ident.kind, str) or len(ident.kind) > 63 or not isinstance(name, str) or len(name) > MAX_NAME:
        return where
    if isinstance(namespace, str) and len(namespace) <= 63:
        return f"{ident.kind} {namespace}/{name}"
    return f"{ident.kind} {name}"


def _names(metadata: _Meta) -> bool:
    return isinstance(metadata.name, str) and (metadata.namespace is None or isinstance(metadata.namespace, str))


def parse_objects(text: str | bytes | BinaryIO, source: str) -> list[KubeObject]:
    """The objects of one file: a JSON document, or a YAML stream of documents (each a List or one object); YAML may
    be given as its UTF-8 bytes, or as the file open to read them."""
    if not isinstance(text, str):
        return _listed(_yaml_stream(text, source), source)
    if not text.strip():
        raise SnapshotError.single(source, "the input is empty; expected what kubectl get -o json (or -o yaml) prints")
    if text.lstrip().startswith(("{", "[")):
        documents = [parse_document(text, json_format=True, source=source)]
    else:
        documents = _yaml_stream(text, source)
    return _listed(documents, source)


def _yaml_stream(text: str | bytes | BinaryIO, source: str) -> list[Any]:
    """The documents of a YAML stream, each item of a List checked against the limits and kept (:func:`_kept`) as
    soon as it is read, a bounded list refused at its item past the bound: a dump past a limit stops there."""
    count = [0]
    parts: dict[Any, Any] = {}

    def item(value: Any) -> Any:
        where = f"{source}: items[{count[0]}]"
        count[0] += 1
        if isinstance(value, dict):
            over = over_limits(value)
            if over:
                refused = _object(value, where, source)
                assert not isinstance(refused, KubeObject)
                raise SnapshotError(refused if isinstance(refused, list) else [refused])
        return _shared(_kept(value), parts, _YAML_KEY)

    return parse_stream(
        text, source=source, long_list=lambda steps, values: _long_list(steps, values, source), item=item
    )


def _listed(documents: list[Any], source: str) -> list[KubeObject]:
    """The objects of ``documents``: each a List or one object."""
    found: list[KubeObject | FieldError | list[FieldError]] = []
    for d, document in enumerate(documents):
        at = source if len(documents) == 1 else f"{source}: document {d + 1}"
        if not isinstance(document, dict) or not isinstance(document.get("kind"), str):
            raise SnapshotError.single(at, "not a Kubernetes object or List (expected an object with a kind)")
        if document["kind"] == "List" or (document["kind"].endswith("List") and "items" in document):
            items = document.get("items")
            if not isinstance(items, list):
                raise SnapshotError.single(f"{at}: items", "a List needs an items array")
            found += [_object(item, at, source, i) for i, item in enumerate(items)]
        else:
            found.append(_object(document, at, source))
    errors = [e for f in found if not isinstance(f, KubeObject) for e in (f if isinstance(f, list) else [f])]
    if errors:
        raise SnapshotError(errors)
    return [f for f in found if isinstance(f, KubeObject)]


def _long_list(steps: list[Any], values: list[Any], source: str) -> None:
    """Refuse a list :data:`~.limits.MAX_ITEMS` bounds as soon as the YAML reader meets its item past the bound,
    before the rest of the file is read."""
    root = values[0]
    kind = root.get("kind") if isinstance(root, dict) else None
    listed = steps[:1] == ["items"] and len(steps) > 1 and isinstance(steps[1], int)
    if listed and (kind is None or (isinstance(kind, str) and kind.endswith("List"))):
        body, where, steps = values[2], f"{source}: items[{steps[1]}]", steps[2:]
    else:
        body, where = root, source
    path = bounded_list(steps)
    if path is None or not isinstance(body, dict):
        return
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    name, namespace = metadata.get("name"), metadata.get("namespace") or ""
    kind = body.get("kind")
    strings = isinstance(name, str) and isinstance(namespace, str) and isinstance(kind, str)
    if strings and len(str(name)) <= MAX_NAME and len(str(namespace)) <= MAX_NAMESPACE:
        where = f"{kind} {namespace + '/' if namespace else ''}{name}"
    raise SnapshotError.single(f"{where}: {path}", f"has more than {MAX_ITEMS} items; at most {MAX_ITEMS} are read")


def _object(item: Any, at: str, source: str, index: int = -1) -> KubeObject | FieldError | list[FieldError]:
    """The object ``item`` read at ``at`` (item ``index`` of the List there), or what is wrong with it."""
    where = at if index < 0 else f"{at}: items[{index}]"
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
    over = over_limits(item)
    if over:  # an object's name in the message only if it is within its limit
        named = not any(path.startswith("metadata.name") for path, _ in over)
        ref = where
        if named and len(namespace or "") <= 63:
            ref = f"{kind} {(namespace + '/') if namespace else ''}{name}"
        return [FieldError(f"{ref}: {path}", message) for path, message in over]
    found = KubeObject(kind, group, ver, namespace or None, name or "", item, source, at, index)
    problems = wrong_types(item, group, kind)
    if problems:
        return [FieldError(found.at(path), message) for path, message in problems]
    return found
