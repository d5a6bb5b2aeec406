"""NRTs from files (``--nrt-file``), read at JSON speed into a compact memory layout.

:func:`rte.model.nrt.from_nrt` checks every field with a path for its error message, which
costs about half a millisecond per 8-zone NRT; and decoding a whole file keeps every object of
it alive at once (700 MiB of Python objects for 20 000 NRTs in 112 MiB of JSON), which the
process keeps as RSS long after the objects are gone. Here:

* **one item at a time**: msgspec splits a JSON file's ``items`` into their bytes without
  building anything, then decodes each item straight into typed structs (types checked in C,
  unknown fields skipped), from which the topology is built and the structs dropped;
* **shared parts**: equal costs, attributes, resources, zones, strings and amounts are one
  object each (every node of a cluster has the same cost tables, zone names and capacities);
  a topology takes about a third of the memory of one read as is;
* **from_nrt decides the rest**: an item the structs do not fit (a field of another type, a
  negative amount, another apiVersion) is read by ``from_nrt``, with its checks, warnings and
  messages. YAML files, and JSON that msgspec does not read (a byte order mark, say), go through
  :func:`rte.yamlfile.read_objects`, and each object through the same structs
  (``msgspec.convert``): :meth:`CompactReader.read` and :meth:`CompactReader.read_raw` build
  from one set of structs, and differential tests hold both equal to ``from_nrt``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import orjson

from rte.errors import InputError
from rte.model.fingerprint import ATTRIBUTE as FINGERPRINT_ATTRIBUTE
from rte.model.nrt import GROUP, KIND, READABLE_VERSIONS, check_topology, from_nrt
from rte.model.quantity import Amount, parse_quantity
from rte.model.topology import Attribute, Cost, NodeTopology, OwnerReference, ResourceInfo, Zone
from rte.yamlfile import decode_json, read_objects

T = TypeVar("T")
_API_VERSIONS = frozenset(f"{GROUP}/{v}" for v in READABLE_VERSIONS)


class _NotPlain(Exception):
    """The object is not of the plain shape: ``from_nrt`` reads it."""


# The plain shape of an NRT: msgspec decodes a JSON item straight into these, or converts an
# object already decoded (YAML) into them, its types checked in C and unknown fields skipped.
# An object they do not fit is read by from_nrt, with its checks and messages.


class _SCost(msgspec.Struct, gc=False):
    name: str
    value: int


class _SResource(msgspec.Struct, gc=False):
    name: str
    capacity: str | int
    allocatable: str | int
    available: str | int


class _SAttribute(msgspec.Struct, gc=False):
    name: str
    value: str


class _SZone(msgspec.Struct, gc=False):
    name: str
    type: str
    parent: str | None = None
    costs: list[_SCost] | None = None
    attributes: list[_SAttribute] | None = None
    resources: list[_SResource] | None = None


class _SOwner(msgspec.Struct, gc=False):
    apiVersion: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""


class _SMetadata(msgspec.Struct, gc=False):
    name: str
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[_SOwner] | None = None


class _SNRT(msgspec.Struct, gc=False):
    metadata: _SMetadata
    apiVersion: str | None = None
    kind: str | None = None
    zones: list[_SZone] | None = None
    attributes: list[_SAttribute] | None = None
    topologyPolicies: list[str] | None = None


class _SPage(msgspec.Struct, gc=False):
    metadata: dict[str, Any] | None = None
    items: list[msgspec.Raw] | None = None


_NRT_DECODER = msgspec.json.Decoder(_SNRT)
_PAGE = msgspec.json.Decoder(_SPage)
_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


PARTS_LIMIT = 1 << 13
"""How many shared parts :class:`CompactReader` remembers (see :meth:`CompactReader.bound`)."""


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

    @staticmethod
    def _own(text: str) -> str:
        """A copy of a text that no other NRT has (its name, its owner's uid), not remembered:
        the reader of an extender's watch lives as long as the process, and 20 000 names in
        :attr:`_texts` would be kept there for nothing."""
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")

    def _shared_tuple(self, items: list[T]) -> tuple[T, ...]:
        key = (tuple, *map(id, items))
        shared = self._parts.get(key)
        if shared is None:
            shared = self._parts[key] = tuple(items)
        return shared

    def _text(self, text: str) -> str:
        shared = self._texts.get(text)
        if shared is None:
            # A copy: the decoded object's own string would keep its memory block alive.
            shared = self._own(text)
            self._texts[shared] = shared
        return shared

    def _amount(self, value: str | int) -> Amount:
        if isinstance(value, str):
            amount = self._quantities.get(value)
            if amount is None:
                try:
                    amount = parse_quantity(value)
                except ValueError:
                    raise _NotPlain from None
                self._quantities[value] = amount
        else:
            amount = value
        if amount < 0:
            raise _NotPlain  # from_nrt warns or refuses
        return amount

    def _string_map(self, value: dict[str, str] | None) -> dict[str, str]:
        """The shared copy of a string map (labels, annotations): most NRTs carry equal ones."""
        text = self._text
        items = tuple((text(k), text(v)) for k, v in value.items()) if value is not None else ()
        key = (dict, *items)
        shared = self._parts.get(key)
        if shared is None:
            shared = self._parts[key] = dict(items)
        return shared

    def bound(self) -> None:
        """Forget the parts seen so far once there are :data:`PARTS_LIMIT` of them (between two
        objects only: within one, keys name parts by id, which must stay alive).

        A zone whose amounts no other zone shares costs its key here as much as the zone itself;
        kept to the end, 20 000 NRTs' keys left 25 MiB of holes among the topologies (RSS that
        nothing reused). Parts equal within a window are still shared.
        """
        if len(self._parts) >= PARTS_LIMIT:
            self._parts.clear()

    def read(self, obj: Any, *, strict: bool = False) -> NodeTopology:
        """``from_nrt(obj, strict=strict)``, faster for the plain shape, with shared parts."""
        self.bound()
        try:
            return self._from_struct(msgspec.convert(obj, _SNRT))
        except (msgspec.ValidationError, _NotPlain):
            pass
        return from_nrt(obj, strict=strict)

    def read_raw(self, raw: bytes | msgspec.Raw, *, strict: bool) -> NodeTopology | None:
        """The NRT in ``raw``; None when it is not an object (the caller words that)."""
        self.bound()
        try:
            return self._from_struct(_NRT_DECODER.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError, _NotPlain):
            pass
        obj = decode_json(bytes(raw), "NRT")  # what the structs do not fit: from_nrt words it
        return from_nrt(obj, strict=strict) if isinstance(obj, Mapping) else None

    def _attributes(self, items: list[_SAttribute] | None) -> tuple[Attribute, ...]:
        parts, text = self._parts, self._text
        out = []
        for item in items or ():
            # A fingerprint is each node's own, and new whenever its pods change: remembered in
            # _texts it would stay there for the life of a watch (issue #27). Its attribute is
            # still shared through _parts, which is bounded.
            value = self._own(item.value) if item.name == FINGERPRINT_ATTRIBUTE else text(item.value)
            key = (Attribute, text(item.name), value)
            attribute = parts.get(key)
            if attribute is None:
                attribute = parts[key] = Attribute(key[1], key[2])
            out.append(attribute)
        return self._shared_tuple(out)

    def _zone(self, zone: _SZone) -> Zone:
        parts, text, amount = self._parts, self._text, self._amount
        costs = []
        for c in zone.costs or ():
            key: tuple[Any, ...] = (Cost, text(c.name), c.value)
            cost = parts.get(key)
            if cost is None:
                cost = parts[key] = Cost(key[1], key[2])
            costs.append(cost)
        resources = []
        for r in zone.resources or ():
            key = (ResourceInfo, text(r.name), amount(r.capacity), amount(r.allocatable), amount(r.available))
            resource = parts.get(key)
            if resource is None:
                resource = parts[key] = ResourceInfo(*key[1:])
            resources.append(resource)
        fields = (
            text(zone.name),
            text(zone.type),
            text(zone.parent) if zone.parent else None,
            self._shared_tuple(costs),
            self._attributes(zone.attributes),
            self._shared_tuple(resources),
        )
        key = (Zone, *fields[:3], *map(id, fields[3:]))
        shared = parts.get(key)
        if shared is None:
            shared = parts[key] = Zone(*fields)
        return shared

    def _from_struct(self, nrt: _SNRT) -> NodeTopology:
        if nrt.apiVersion is not None and nrt.apiVersion not in _API_VERSIONS:
            raise _NotPlain
        if nrt.kind is not None and nrt.kind != KIND:
            raise _NotPlain
        meta, text = nrt.metadata, self._text
        owners = tuple(
            OwnerReference(text(o.apiVersion), text(o.kind), self._own(o.name), self._own(o.uid))
            for o in meta.ownerReferences or ()
        )
        return check_topology(
            NodeTopology(
                # Interned: the node's pods (rte.model.pod) and agent pod intern its name too,
                # so the pod index, the agent-pod states and the store hold one string (issue #27).
                name=sys.intern(self._own(meta.name)),
                zones=self._shared_tuple([self._zone(z) for z in nrt.zones or ()]),
                attributes=self._attributes(nrt.attributes),
                topology_policies=self._shared_tuple([text(p) for p in nrt.topologyPolicies or ()]),
                annotations=self._string_map(meta.annotations),
                labels=self._string_map(meta.labels),
                owner_references=owners,
            )
        )


def list_page(data: bytes) -> tuple[Mapping[str, Any], list[msgspec.Raw] | list[Any]]:
    """A page of an NRT list from the apiserver: its metadata and its items as JSON bytes (for
    :meth:`CompactReader.read_raw`), nothing of them decoded yet. Decoding a page of 500 8-zone
    NRTs whole made 15 MiB of dicts per page, which freed left scattered as RSS. A body of
    another shape is decoded whole: its items are then objects (or whatever they are).
    """
    try:
        page = _PAGE.decode(data)
        return page.metadata or {}, page.items or []
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    body = decode_json(data, "NRT list")
    if not isinstance(body, Mapping):
        raise InputError("NRT list", f"expected an object, got {type(body).__name__}")
    items = body.get("items")
    return body.get("metadata") or {}, items if isinstance(items, list) else []


def _raw_items(path: Path) -> list[tuple[str, msgspec.Raw | bytes]] | None:
    """``(where, JSON bytes)`` of every object of a JSON file, nothing decoded; None when the file
    is not a JSON object that msgspec reads (the slower paths decide then)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if path.suffix.lower() != ".json" and data.lstrip()[:1] != b"{":
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")  # msgspec passes over strings it skips unchecked
        except UnicodeDecodeError:
            return None
    try:
        top = _OBJECT.decode(data)
        kind = top.get("kind")
        if kind is None or not str(orjson.loads(bytes(kind))).endswith("List"):
            return [(str(path), data)]
        items = top.get("items")
        raws = _RAW_LIST.decode(items) if items is not None else None
    except (msgspec.ValidationError, msgspec.DecodeError, orjson.JSONDecodeError):
        return None
    if raws is None:
        return None  # read_objects words the error
    # Views into the file's bytes, not copies: those would be scattered over the heap (one
    # malloc'd block per item) and outlive the reading as RSS; the file's one block is given back.
    return [(f"{path}: items[{i}]", raw) for i, raw in enumerate(raws)]


def read_nrt_file(path: Path) -> list[NodeTopology]:
    """Every NRT in a JSON or YAML file: one object, a ``...List`` with ``items``, or many documents.

    Strict, as for any file a user hands us: a negative amount is a mistake. Errors name the file
    and the item (``nrts.json: items[3]: zones[0].name: required field is missing``).
    """
    reader = CompactReader()
    out: list[NodeTopology] = []
    raws = _raw_items(path)
    if raws is not None:
        for where, raw in raws:
            try:
                topology = reader.read_raw(raw, strict=True)
            except InputError as e:
                raise InputError(f"{where}: {e.source}", e.detail) from e
            if topology is None:
                kind = type(decode_json(bytes(raw), where)).__name__
                raise InputError(where, f"expected an NRT object, got {kind}")
            out.append(topology)
        return out
    for where, obj in read_objects(path):  # YAML, or JSON msgspec does not read
        if not isinstance(obj, Mapping):
            raise InputError(where, f"expected an NRT object, got {type(obj).__name__}")
        try:
            out.append(reader.read(obj, strict=True))
        except InputError as e:
            raise InputError(f"{where}: {e.source}", e.detail) from e
    return out
