"""The fast decoder's lists for :mod:`rte.extender.wire`: candidate names and whole Node objects.

A ``Nodes`` list (``nodeCacheCapable: false``) is read in two passes of msgspec over its JSON and
no Python call per Node: one for what Filter reads (each name, and each ``status.allocatable``
as its raw bytes), one for the items' spans (``msgspec.Raw``: views of the JSON, sent back as
they came). msgspec skips every other field without building it. A Node's allocatable map
decoded as a dict (a dict, its keys and values per Node) took three times as long as all the
rest of the pass; here the keys of each distinct map are read once, and Nodes listing the same
names share one set (the kernel checks each distinct set once). The result is kept as columns
(:class:`WireNodes`), not a tuple per Node: thousands of live objects would each count towards
the cyclic garbage collector's next pass. The structs are untracked (``gc=False``): they hold no
containers, so no cycles.

Lists sent again are not decoded again: kube-scheduler sends the same candidate list pod after
pod, and prioritize the very Nodes filter received when all passed (Go's encoder is
deterministic). Each cache is keyed by the list's bytes, hashed and compared at memory speed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from operator import attrgetter
from typing import Any, NamedTuple, overload

import msgspec
import orjson

from rte.yamlfile import decode_json


class WireNode(NamedTuple):
    """A Node object of a request (``nodeCacheCapable: false``): what Filter needs of it, and
    what to send back when it passes."""

    name: str
    allocatable: frozenset[str]
    """The names in ``status.allocatable``; Filter only asks whether a resource is listed."""
    echo: Any
    """The object as sent: its JSON bytes as a ``msgspec.Raw`` (sent back verbatim), or the
    decoded object (requests the fast decoder leaves to ``json``)."""


_WIRE_NODE = partial(tuple.__new__, WireNode)


class WireNodes(Sequence[WireNode]):
    """Decoded Node objects as three columns; a :class:`WireNode` is built when one is asked for."""

    __slots__ = ("allocatable", "echoes", "names")

    def __init__(self, names: tuple[str, ...], allocatable: list[frozenset[str]], echoes: list[Any]) -> None:
        self.names = names
        """A tuple shared by equal lists of names (:func:`shared_names`)."""
        self.allocatable = allocatable
        self.echoes = echoes

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> WireNode: ...
    @overload
    def __getitem__(self, index: slice) -> list[WireNode]: ...
    def __getitem__(self, index: int | slice) -> WireNode | list[WireNode]:
        if isinstance(index, slice):
            return list(self)[index]
        return WireNode(self.names[index], self.allocatable[index], self.echoes[index])

    def __iter__(self) -> Iterator[WireNode]:
        return map(_WIRE_NODE, zip(self.names, self.allocatable, self.echoes, strict=True))


class _Metadata(msgspec.Struct, gc=False):
    name: str


class _Status(msgspec.Struct, gc=False):
    allocatable: msgspec.Raw = msgspec.Raw(b"null")


class _Node(msgspec.Struct, gc=False):
    metadata: _Metadata
    status: _Status = msgspec.field(default_factory=_Status)


class _NodeList(msgspec.Struct, gc=False):
    items: list[_Node] | None = None


class _NodeSpans(msgspec.Struct, gc=False):
    items: list[msgspec.Raw] | None = None


_NODE_LIST = msgspec.json.Decoder(_NodeList)
_NODE_SPANS = msgspec.json.Decoder(_NodeSpans)
_NAMES = msgspec.json.Decoder(tuple[str, ...] | None)
_NAME_OF = attrgetter("metadata.name")
_ALLOCATABLE_OF = attrgetter("status.allocatable")


class _Kept:
    """The last ``kept`` values computed, by key (bytes); thread-safe for the server's workers."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self.values: dict[bytes, Any] = {}
        self._lock = threading.Lock()

    def keep(self, key: bytes, value: Any) -> None:
        with self._lock:
            self.values[key] = value
            while len(self.values) > self.kept:
                del self.values[next(iter(self.values))]


_NAME_LISTS = _Kept(8)
_NODE_LISTS = _Kept(2)
"""Two lists: the one filter read, which prioritize may read next, and the one before. Each
keeps its own copy of the list's JSON (which the spans view), not the request body."""


def decode_names(raw: bytes) -> tuple[str, ...] | None:
    """A ``NodeNames`` list's JSON, as the same tuple for a list sent lately: the kernel's mirror
    maps a tuple to rows by identity (comparing 5000 names one by one took 1-5 ms)."""
    try:
        known: tuple[str, ...] | None = _NAME_LISTS.values[raw]
        return known
    except KeyError:
        pass
    names: tuple[str, ...] | None = _NAMES.decode(raw)
    _NAME_LISTS.keep(raw, names)
    return names


def shared_names(names: list[str]) -> tuple[str, ...]:
    """``tuple(names)``, the same object as :func:`decode_names` gives for an equal list."""
    try:
        key = orjson.dumps(names)
    except TypeError:  # a lone surrogate, which orjson refuses: not worth remembering
        return tuple(names)
    known: tuple[str, ...] | None = _NAME_LISTS.values.get(key)
    if known is not None:
        return known
    shared = tuple(names)
    _NAME_LISTS.keep(key, shared)
    return shared


def decode_nodes(raw: msgspec.Raw) -> WireNodes | None:
    """A NodeList's JSON: its Nodes, or None when one has no name (msgspec raises on the rest).
    A list sent lately costs a copy, a hash and a comparison (~1.5 ms at 5000 Nodes, 2.6 MiB)."""
    key = bytes(raw)
    try:
        known: WireNodes | None = _NODE_LISTS.values[key]
        return known
    except KeyError:
        pass
    nodes = _decode_nodes(key)
    _NODE_LISTS.keep(key, nodes)
    return nodes


def _decode_nodes(node_list: bytes) -> WireNodes | None:
    items = _NODE_LIST.decode(node_list).items or []
    spans = _NODE_SPANS.decode(node_list).items or []
    names = list(map(_NAME_OF, items))
    if not all(names):
        return None
    allocatable = list(map(bytes, map(_ALLOCATABLE_OF, items)))
    sets = {raw: _names_in(raw) for raw in dict.fromkeys(allocatable)}
    shared: dict[frozenset[str], frozenset[str]] = {}
    sets = {raw: shared.setdefault(found, found) for raw, found in sets.items()}
    return WireNodes(shared_names(names), list(map(sets.__getitem__, allocatable)), spans)


def _names_in(allocatable: bytes) -> frozenset[str]:
    """The keys of an allocatable map's JSON; none for anything else, as the whole decoder."""
    value = decode_json(allocatable, "ExtenderArgs.Nodes.items[].status.allocatable")
    return frozenset(value) if isinstance(value, Mapping) else frozenset()
