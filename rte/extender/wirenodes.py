"""The fast decoder's lists for :mod:`rte.extender.wire`: candidate names and whole Node objects.

A ``Nodes`` list (``nodeCacheCapable: false``) costs two passes of msgspec over the request
(:mod:`rte.extender.wire` makes them) and no Python call per Node. The first gives each item's
span (``msgspec.Raw``: a view of the request, sent back as it came); the second, made only for
a list not seen lately, reads what Filter reads: each name, and each ``status.allocatable`` as
its raw bytes. msgspec skips every other field without building it. A Node's allocatable map
decoded as a dict (a dict, its keys and values per Node) took three times as long as all the
rest of the pass; here the keys of each distinct map are read once, and Nodes listing the same
names share one set (the kernel checks each distinct set once). The result is kept as columns
(:class:`WireNodes`), not a tuple per Node: thousands of live objects would each count towards
the cyclic garbage collector's next pass. The structs are untracked (``gc=False``): they hold no
containers, so no cycles.

Lists sent again are not decoded again: kube-scheduler sends the same candidate list pod after
pod, and prioritize the very Nodes filter received when all passed (Go's encoder is
deterministic). A list is remembered by its items' texts, compared with those of the lists
kept at memory speed: copying the list's megabytes into a key and hashing it took ten times as
long. When only some passed, prioritize's list is a part of filter's, in its order: each text
is found in the kept list and its name and allocatable names read off there, without the
second pass.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from functools import partial
from itertools import chain, compress, repeat
from operator import attrgetter, ne, sub
from typing import Any, NamedTuple, overload

import msgspec
import orjson

from rte.consumer.kept import (
    LIST_BYTES_KEPT,
    MEMO_BYTES_KEPT,
    NAME_OVERHEAD,
    KeptByCost,
    names_cost,
    too_long,
)
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

    __slots__ = ("_by_name", "allocatable", "echoes", "names")

    def __init__(self, names: tuple[str, ...], allocatable: list[frozenset[str]], echoes: list[Any]) -> None:
        self.names = names
        """A tuple shared by equal lists of names (:func:`shared_names`)."""
        self.allocatable = allocatable
        self.echoes = echoes
        """Each Node's JSON as sent (``msgspec.Raw``, a view of the request that sent it)."""
        self._by_name: dict[str, frozenset[str]] | None = None

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

    def allocatable_by_name(self) -> dict[str, frozenset[str]]:
        """:attr:`allocatable` by name (the last Node of a name sent twice), built once."""
        if self._by_name is None:
            self._by_name = dict(zip(self.names, self.allocatable, strict=True))
        return self._by_name

    def echo_text(self, passed: Collection[str]) -> bytes:
        """``[node,...]``: the JSON of the Nodes named in ``passed``, as sent, in list order."""
        return json_list(list(compress(self.echoes, map(passed.__contains__, self.names))))


def json_list(texts: Sequence[Any]) -> bytes:
    """``[a,b,...]`` of JSON texts (bytes-like), built in one piece: adding the brackets to a
    joined answer of megabytes afterwards (two more copies of it, into fresh memory) cost 5-10 ms
    at 5000 Nodes."""
    if not texts:
        return b"[]"
    parts = [b","] * (2 * len(texts) + 1)
    parts[0], parts[-1] = b"[", b"]"
    parts[1::2] = texts
    return b"".join(parts)


class _Metadata(msgspec.Struct, gc=False):
    name: str


class _Status(msgspec.Struct, gc=False):
    allocatable: msgspec.Raw = msgspec.Raw(b"null")


class _Node(msgspec.Struct, gc=False):
    metadata: _Metadata
    status: _Status = msgspec.field(default_factory=_Status)


class NodeSpans(msgspec.Struct, gc=False):
    """A NodeList as the request's first pass reads it: each item's JSON text, a view of the
    request (its other fields, ``metadata`` and the like, are skipped)."""

    items: list[msgspec.Raw] | None = None


class NodeList(msgspec.Struct, gc=False):
    """A NodeList as the second pass reads it: what Filter reads of each Node."""

    items: list[_Node] | None = None


_NAMES = msgspec.json.Decoder(tuple[str, ...] | None)
_NAME_OF = attrgetter("metadata.name")
_ALLOCATABLE_OF = attrgetter("status.allocatable")


class Recent:
    """The values last used, at most ``kept``, by keys compared whole (``==``, not hashed): a
    key of megabytes, or a list of thousands of texts, costs a comparison at memory speed (one
    of another length none), not a hash. Thread-safe for the server's workers.

    Each value comes with its cost in bytes (besides the key, which the caller bounds): one
    over ``each`` is not kept, and the values kept cost at most ``total`` together
    (:mod:`rte.consumer.kept`)."""

    def __init__(self, kept: int, total: int = MEMO_BYTES_KEPT, each: int = LIST_BYTES_KEPT) -> None:
        self.kept = kept
        self.total = total
        self.each = each
        self.entries: list[tuple[Any, Any, int]] = []
        """(key, value, cost), most recently used first; replaced whole, never changed, so
        readers need no lock."""
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        """The value kept under a key equal to ``key``, now the most recent; None if none."""
        for i, (known, value, cost) in enumerate(self.entries):
            if known == key:
                if i:
                    self.keep(known, value, cost)
                return value
        return None

    def keep(self, key: Any, value: Any, cost: int = 0) -> None:
        if cost > self.each:
            return
        with self._lock:
            kept = [(key, value, cost)]
            total = cost
            for entry in self.entries:
                if entry[0] is key:
                    continue
                if len(kept) == self.kept or total + entry[2] > self.total:
                    break
                kept.append(entry)
                total += entry[2]
            self.entries = kept


class _Kept:
    """The last values computed, by key (bytes), bounded in count and bytes (the key's and the
    value's, :class:`~rte.consumer.kept.KeptByCost`); thread-safe for the server's workers."""

    def __init__(self, kept: int) -> None:
        self._kept: KeptByCost[bytes, Any] = KeptByCost(kept)
        self.values = self._kept.values
        self._lock = threading.Lock()

    def keep(self, key: bytes, value: Any, cost: int) -> None:
        with self._lock:
            self._kept.keep(key, value, len(key) + cost)


_NAME_LISTS = _Kept(8)
_NODE_LISTS = Recent(2)
"""Two lists: the one filter read, which prioritize may read next, and the one before (their
spans hold the requests that sent them: two bodies, within the body limit)."""

NODE_OVERHEAD = NAME_OVERHEAD + 96
"""Bytes a kept Node costs besides its name's characters and its request's text: its span (a
``msgspec.Raw``), its entry in each column and its share of the allocatable sets."""


def decode_names(raw: bytes) -> tuple[str, ...] | None:
    """A ``NodeNames`` list's JSON, as the same tuple for a list sent lately: the kernel's mirror
    maps a tuple to rows by identity (comparing 5000 names one by one took 1-5 ms)."""
    try:
        known: tuple[str, ...] | None = _NAME_LISTS.values[raw]
        return known
    except KeyError:
        pass
    names: tuple[str, ...] | None = _NAMES.decode(raw)
    if names is not None and not too_long(names):
        _NAME_LISTS.keep(raw, names, names_cost(names))
    return names


def shared_names(names: list[str]) -> tuple[str, ...]:
    """``tuple(names)``, the same object as :func:`decode_names` gives for an equal list."""
    if too_long(names):  # not remembered: not worth the key's copy either
        return tuple(names)
    try:
        key = orjson.dumps(names)
    except TypeError:  # a lone surrogate, which orjson refuses: not worth remembering
        return tuple(names)
    known: tuple[str, ...] | None = _NAME_LISTS.values.get(key)
    if known is not None:
        return known
    shared = tuple(names)
    if not too_long(shared):
        _NAME_LISTS.keep(key, shared, names_cost(shared))
    return shared


def decode_nodes(spans: list[msgspec.Raw], read: Callable[[], list[Any]]) -> WireNodes | None:
    """The Nodes of a NodeList, given each item's JSON text (views of the request) and how to
    read what Filter reads of them (msgspec's second pass, :class:`NodeList`'s items): its
    Nodes, or None when one has no name (msgspec raises on the rest). A list sent lately is not
    read again; telling it costs a comparison of the texts (lists of another length none)."""
    known: WireNodes | None = _NODE_LISTS.get(spans)
    if known is not None:
        return known
    nodes = _part_of_kept(spans)
    if nodes is None:
        nodes = _decode_nodes(read(), spans)
    _NODE_LISTS.keep(spans, nodes, nodes_cost(nodes))
    return nodes


def nodes_cost(nodes: WireNodes | None) -> int:
    """What a kept Node list holds besides its request's text (:data:`NODE_OVERHEAD` a Node)."""
    if nodes is None:
        return 0
    if len(nodes) * NODE_OVERHEAD > LIST_BYTES_KEPT:
        return len(nodes) * NODE_OVERHEAD  # too long whatever its names: not summed
    return sum(map(len, nodes.names)) + NODE_OVERHEAD * len(nodes)


def _part_of_kept(spans: list[msgspec.Raw]) -> WireNodes | None:
    """The Nodes of a list whose items all stand, in the same order, in a list kept (prioritize
    sends those of filter's Nodes that passed), read off that list: a Node's name and allocatable
    names follow from its text. None when no kept list holds them all."""
    for kept_spans, kept, _ in _NODE_LISTS.entries:
        if kept is None or len(kept_spans) <= len(spans):
            continue
        rows = _rows_in(kept_spans, spans)
        if rows is not None:
            names = list(map(kept.names.__getitem__, rows))
            return WireNodes(shared_names(names), list(map(kept.allocatable.__getitem__, rows)), spans)
    return None


def _rows_in(kept: list[msgspec.Raw], spans: list[msgspec.Raw]) -> list[int] | None:
    """Where each of ``spans`` stands in ``kept``, each after the one before; None if one does
    not. ``list.index`` compares in C, the texts at memory speed."""
    rows = []
    row = -1
    find = kept.index
    try:
        for span in spans:
            row = find(span, row + 1)
            rows.append(row)
    except ValueError:
        return None
    return rows


def _decode_nodes(items: list[Any], spans: list[msgspec.Raw]) -> WireNodes | None:
    names = list(map(_NAME_OF, items))
    if not all(names) or len(names) != len(spans):
        return None
    return WireNodes(shared_names(names), _allocatable_sets(list(map(_ALLOCATABLE_OF, items))), spans)


def _allocatable_sets(maps: list[msgspec.Raw]) -> list[frozenset[str]]:
    """Each Node's allocatable names, from each map's JSON; equal sets are one object.

    Neighbours in a list often send the same map (a node pool's): a run of equal maps is read
    once (comparing two maps' bytes costs a tenth of copying one).
    """
    if not maps:
        return []
    heads = [0, *compress(range(1, len(maps)), map(ne, maps[1:], maps))]
    shared: dict[frozenset[str], frozenset[str]] = {}
    sets = [shared.setdefault(names, names) for names in _names([maps[i] for i in heads])]
    runs = map(sub, [*heads[1:], len(maps)], heads)
    return list(chain.from_iterable(map(repeat, sets, runs)))


_KEYS = msgspec.json.Decoder(list[dict[str, msgspec.Raw] | None])


def _names(maps: list[msgspec.Raw]) -> list[frozenset[str]]:
    """:func:`_names_in` of each map, read in one pass: Nodes of a cluster mostly differ in
    their maps' values (memory and storage quantities, to the KiB), and one ``json`` call per
    map cost more than all the rest of the Nodes' decoding."""
    try:
        return [frozenset(keys or ()) for keys in _KEYS.decode(json_list(maps))]
    except (msgspec.DecodeError, msgspec.ValidationError):  # not an object, a lone surrogate...
        return list(map(_names_in, map(bytes, maps)))


def _names_in(allocatable: bytes) -> frozenset[str]:
    """The keys of an allocatable map's JSON; none for anything else, as the whole decoder."""
    value = decode_json(allocatable, "ExtenderArgs.Nodes.items[].status.allocatable")
    return frozenset(value) if isinstance(value, Mapping) else frozenset()
