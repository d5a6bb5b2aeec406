"""NRTs from files (``--nrt-file``), read at JSON speed into a compact memory layout.

:func:`rte.model.nrt.from_nrt` checks every field with a path for its error message, which
costs about half a millisecond per 8-zone NRT; and decoding a whole file keeps every object of
it alive at once (700 MiB of Python objects for 20 000 NRTs in 112 MiB of JSON), which the
process keeps as RSS long after the objects are gone. Here:

* **a fast reader for the plain shape** (:class:`CompactReader`): objects of exactly the types
  JSON gives, quantities in base units (what rte's agents publish), nothing negative. It builds
  the same :class:`~rte.model.topology.NodeTopology` that ``from_nrt`` would (a differential
  test holds them equal) or gives up, and ``from_nrt`` then reads the object, with its checks,
  warnings and messages;
* **shared parts**: equal costs, attributes, resources, zones, strings and amounts are one
  object each (every node of a cluster has the same cost tables, zone names and capacities),
  about a third of the memory of a topology read as is;
* **one object at a time**: a JSON file is decoded, each item encoded again on its own, the
  document dropped, and then each item decoded and read in turn; all of the document's memory
  is free (and given back) before the topologies are built, so it is not mixed in with them.
  YAML files are decoded by :func:`rte.yamlfile.read_objects` as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from rte.errors import InputError
from rte.model.nrt import GROUP, KIND, READABLE_VERSIONS, from_nrt
from rte.model.quantity import Amount, parse_quantity
from rte.model.topology import Attribute, Cost, NodeTopology, OwnerReference, ResourceInfo, Zone
from rte.yamlfile import decode_json, read_objects

T = TypeVar("T")
_API_VERSIONS = frozenset(f"{GROUP}/{v}" for v in READABLE_VERSIONS)


class _NotPlain(Exception):
    """The object is not of the plain shape: ``from_nrt`` reads it."""


def _str(value: Any) -> str:
    if type(value) is not str:
        raise _NotPlain
    return value


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise _NotPlain
    return value


def _dict(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise _NotPlain
    return value


class CompactReader:
    """Reads NRT objects into topologies whose equal parts are shared (see the module).

    Parts are looked up by keys of plain values and of the ids of parts already shared (alive
    for as long as the reader is, so an id names one value), which hashes in C; hashing the
    frozen dataclasses themselves would run their Python ``__hash__`` down every level.
    """

    def __init__(self) -> None:
        self._parts: dict[tuple[Any, ...], Any] = {}
        self._texts: dict[str, str] = {}
        self._quantities: dict[str, Amount] = {}

    def _shared_tuple(self, items: list[T]) -> tuple[T, ...]:
        key = (tuple, *map(id, items))
        shared = self._parts.get(key)
        if shared is None:
            shared = self._parts[key] = tuple(items)
        return shared

    def _text(self, value: Any) -> str:
        text = _str(value)
        shared = self._texts.get(text)
        if shared is None:
            # A copy: the decoded object's own string would keep its memory block alive.
            shared = text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
            self._texts[shared] = shared
        return shared

    def _amount(self, value: Any) -> Amount:
        kind = type(value)
        if kind is str:
            amount = self._quantities.get(value)
            if amount is None:
                try:
                    amount = parse_quantity(value)
                except ValueError:
                    raise _NotPlain from None
                self._quantities[value] = amount
        elif kind is int:
            amount = value
        else:
            raise _NotPlain
        if amount < 0:
            raise _NotPlain  # from_nrt warns or refuses
        return amount

    def _attributes(self, value: Any) -> tuple[Attribute, ...]:
        parts = self._parts
        out = []
        for item in map(_dict, _items(value)):
            key = (Attribute, self._text(item["name"]), self._text(item["value"]))
            attribute = parts.get(key)
            if attribute is None:
                attribute = parts[key] = Attribute(key[1], key[2])
            out.append(attribute)
        return self._shared_tuple(out)

    def _zone(self, value: Any) -> Zone:
        obj = _dict(value)
        parts, text, amount = self._parts, self._text, self._amount
        costs = []
        for item in map(_dict, _items(obj.get("costs"))):
            key: tuple[Any, ...] = (Cost, text(item["name"]), item["value"])
            if type(key[2]) is not int:
                raise _NotPlain
            cost = parts.get(key)
            if cost is None:
                cost = parts[key] = Cost(key[1], key[2])
            costs.append(cost)
        resources = []
        for item in map(_dict, _items(obj.get("resources"))):
            key = (
                ResourceInfo,
                text(item["name"]),
                amount(item["capacity"]),
                amount(item["allocatable"]),
                amount(item["available"]),
            )
            resource = parts.get(key)
            if resource is None:
                resource = parts[key] = ResourceInfo(*key[1:])
            resources.append(resource)
        parent = obj.get("parent")
        fields = (
            text(obj["name"]),
            text(obj["type"]),
            text(parent) if parent else None,
            self._shared_tuple(costs),
            self._attributes(obj.get("attributes")),
            self._shared_tuple(resources),
        )
        key = (Zone, *fields[:3], *map(id, fields[3:]))
        zone = parts.get(key)
        if zone is None:
            zone = parts[key] = Zone(*fields)
        return zone

    def _plain(self, obj: Any) -> NodeTopology:
        obj = _dict(obj)
        api_version = obj.get("apiVersion")
        if api_version is not None and api_version not in _API_VERSIONS:
            raise _NotPlain
        kind = obj.get("kind")
        if kind is not None and kind != KIND:
            raise _NotPlain
        metadata = _dict(obj["metadata"])
        owners = [
            OwnerReference(
                self._text(item.get("apiVersion", "")),
                self._text(item.get("kind", "")),
                self._text(item.get("name", "")),
                self._text(item.get("uid", "")),
            )
            for item in map(_dict, _items(metadata.get("ownerReferences")))
        ]
        policies = [self._text(p) for p in _items(obj.get("topologyPolicies"))]
        name = self._text(metadata["name"])
        zones = [self._zone(z) for z in _items(obj.get("zones"))]
        return NodeTopology(
            name=name,
            zones=self._shared_tuple(zones),
            attributes=self._attributes(obj.get("attributes")),
            topology_policies=self._shared_tuple(policies),
            annotations=self._string_map(metadata.get("annotations")),
            labels=self._string_map(metadata.get("labels")),
            owner_references=tuple(owners),  # one per node: the Node's uid
        )

    def _string_map(self, value: Any) -> dict[str, str]:
        return {self._text(k): self._text(v) for k, v in _dict(value).items()} if value is not None else {}

    def read(self, obj: Any, *, strict: bool = False) -> NodeTopology:
        """``from_nrt(obj, strict=strict)``, faster for the plain shape, with shared parts."""
        try:
            return self._plain(obj)
        except (_NotPlain, KeyError, TypeError):
            pass  # KeyError: a required field is missing; TypeError: a value cannot be shared
        return from_nrt(obj, strict=strict)


def _json_items(path: Path) -> Iterator[tuple[str, Any]] | None:
    """``(where, object)`` for every object of a JSON file, decoded one at a time; None when the
    file is not JSON (see the module docstring)."""
    import orjson

    try:
        data = path.read_bytes()
    except OSError:
        return None  # read_objects words the error
    if path.suffix.lower() != ".json" and data.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        document = decode_json(data, str(path))
    except InputError:
        return None  # YAML's flow style, or broken: read_objects decides and words it
    del data
    if not (isinstance(document, Mapping) and str(document.get("kind", "")).endswith("List")):
        return iter(() if document is None else [(str(path), document)])
    items = document.get("items")
    if not isinstance(items, list):
        return None
    where = [f"{path}: items[{i}]" for i in range(len(items))]
    try:
        encoded = [orjson.dumps(item) for item in items]
    except TypeError:  # an integer beyond 64 bits, kept exact by decode_json: keep the objects
        return zip(where, items, strict=True)
    del document, items
    return zip(where, map(orjson.loads, encoded), strict=True)


def read_nrt_file(path: Path, reader: CompactReader | None = None) -> list[NodeTopology]:
    """Every NRT in a JSON or YAML file: one object, a ``...List`` with ``items``, or many documents.

    Strict, as for any file a user hands us: a negative amount is a mistake. Errors name the file
    and the item (``nrts.json: items[3]: zones[0].name: required field is missing``).
    """
    reader = reader or CompactReader()
    objects = _json_items(path)
    if objects is None:
        objects = read_objects(path)
    out: list[NodeTopology] = []
    for where, obj in objects:
        if not isinstance(obj, Mapping):
            raise InputError(where, f"expected an NRT object, got {type(obj).__name__}")
        try:
            out.append(reader.read(obj, strict=True))
        except InputError as e:
            raise InputError(f"{where}: {e.source}", e.detail) from e
    return out
