"""numaplacement: which NUMA node each exclusive container sits on, in two NRT attributes.

Byte-compatible with the upstream Go package ``github.com/k8stopologyawareschedwg/numaplacement``
(``numaplacement.go``, ``leb89/leb89.go``, read at commit 05c4e97), which RTE v0.25 publishes and
scheduler-plugins' NUMA-aware preemption decodes. ``tests/fixtures/numaplacement`` holds vectors
printed by that package; the tests compare every encode and decode with them.

**Wire format.** The node attribute :data:`METADATA_ATTRIBUTE` is
``npv0v001::ve=leb89::cc=<containers>::nn=<NUMA nodes>::bn=<busiest NUMA id>``; every zone but
the busiest one that holds containers carries :data:`VECTOR_ATTRIBUTE`. A container is identified
by ``xxh64("<namespace>\\0<pod>\\0<container>")`` (seed 0); the hashes of all encoded containers
are sorted ascending and a container's *offset* is its index there. A zone's vector is the LEB89
text of its offsets, ascending, the first as is and the others as deltas to the previous one. The
busiest node (most containers, ties to the lowest id; 0 when there are none) has no vector: the
decoder gives it every container no vector names. Decoding therefore needs the exact container
set the encoder used (``cc`` must equal its size), which is why a consumer decodes only when its
pod set matches the agent's (:mod:`rte.consumer.placement`).

**LEB89.** The 89 printable ASCII bytes ``0x21..0x7e`` except ``" & < > \\`` (the ones Go's
``json.Marshal`` never escapes), in byte order. Indices 0..63 are terminal digits, 64..88
continuation digits. ``v < 64`` is one terminal; otherwise ``v - 64`` is written as
``(v - 64) // 64`` in base 25 (most significant first, at least one digit) as continuation
digits, then ``(v - 64) % 64`` as the terminal: 64..1663 take two characters, 1664..40063 three.

**Where we differ from upstream, on purpose.** For every input the Go package encodes or decodes,
this module gives the same text, the same placement, or an error of the same name. The Go
decoder does not check the vector text itself: a byte outside the alphabet reads as digit -1, a
trailing continuation digit as value -1, a byte above 0x7f crashes it, and the values wrap at
32 bits, so a corrupted vector may crash it or decode to a wrong placement. Here every such vector
raises :class:`CorruptedNUMAVectorError`: a consumer must never charge a pod to a zone it read
from a damaged attribute.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import xxhash

from rte.errors import RteError

__all__ = [
    "METADATA_ATTRIBUTE",
    "METADATA_PREFIX",
    "METADATA_VERSION",
    "VECTOR_ATTRIBUTE",
    "VECTOR_ENCODING_LEB89",
    "ContainerId",
    "NumaPlacementError",
    "Payload",
    "container_hash",
    "decode",
    "decode_vector",
    "encode",
    "encode_vector",
    "leb89_decode",
    "leb89_encode",
    "unpack_metadata",
]

METADATA_ATTRIBUTE = "topology.node.k8s.io/numaplacement-metadata"
VECTOR_ATTRIBUTE = "topology.node.k8s.io/numaplacement-vector"
METADATA_PREFIX = "npv0"
METADATA_VERSION = "v001"
VECTOR_ENCODING_LEB89 = "leb89"
_SEPARATOR = "::"
_UNKNOWN = -1  # upstream UnknownMetadataValue: a metadata field the text did not set


class NumaPlacementError(RteError):
    """Base class: the attributes cannot be encoded or decoded. ``upstream`` names the Go error."""

    upstream = ""


class MalformedMetadataError(NumaPlacementError):
    """The metadata does not start with ``npv0v001::``."""

    upstream = "ErrMalformedMetadata"


class UnknownMetadataError(NumaPlacementError):
    """A metadata field other than ve, cc, nn, bn."""

    upstream = "ErrUnknownMetadata"


class MalformedMetadataPairError(NumaPlacementError):
    """A metadata field without ``=``."""

    upstream = "ErrMalformedMetadataPair"


class MissingMetadataKeyError(NumaPlacementError):
    """A metadata field with nothing before ``=``."""

    upstream = "ErrMissingMetadataKey"


class MissingMetadataValueError(NumaPlacementError):
    """A metadata field with nothing after ``=``."""

    upstream = "ErrMissingMetadataValue"


class InconsistentContainerSetError(NumaPlacementError):
    """``cc`` is negative, or differs from the number of containers given."""

    upstream = "ErrInconsistentContainerSet"


class InconsistentBusiestNodeError(NumaPlacementError):
    """``bn`` is not in ``[0, nn)``."""

    upstream = "ErrInconsistentBusiestNode"


class InconsistentNUMANodesError(NumaPlacementError):
    """``nn`` is not positive."""

    upstream = "ErrInconsistentNUMANodes"


class InconsistentNUMAVectorsError(NumaPlacementError):
    """As many vectors as NUMA nodes, or vectors without containers."""

    upstream = "ErrInconsistentNUMAVectors"


class CorruptedNUMAVectorError(NumaPlacementError):
    """A vector on the busiest node or outside ``[0, nn)``, or one that is not LEB89."""

    upstream = "ErrCorruptedNUMAVector"


class DuplicatedNUMAVectorError(NumaPlacementError):
    """One container named twice by the vectors."""

    upstream = "ErrDuplicatedNUMAVector"


class WrongNUMAAffinityError(NumaPlacementError):
    """A NUMA id below -1, or not below ``nn``."""

    upstream = "ErrWrongNUMAAffinity"


class UnsupportedUnknownNUMAAffinityError(NumaPlacementError):
    """NUMA id -1 (no single node): the format cannot say it."""

    upstream = "ErrUnsupportedUnknownNUMAAffinity"


class UnsupportedVectorEncodingError(NumaPlacementError):
    """``ve`` is not ``leb89``."""

    upstream = "ErrUnsupportedVectorEncoding"


class MetadataNumberError(NumaPlacementError):
    """A cc, nn or bn value Go's ``strconv.Atoi`` refuses (``upstream``: ErrSyntax or ErrRange)."""

    def __init__(self, message: str, upstream: str) -> None:
        super().__init__(message)
        self.upstream = upstream


class ContainerId(NamedTuple):
    """One container, as the podresources API and the pod spec both name it."""

    namespace: str
    pod: str
    container: str


def container_hash(cid: ContainerId) -> int:
    """The container's upstream identity: ``xxh64(namespace \\0 pod \\0 container)``, seed 0."""
    return xxhash.xxh64_intdigest(f"{cid.namespace}\x00{cid.pod}\x00{cid.container}".encode())


# --- LEB89 --------------------------------------------------------------------------------------

_ALPHABET = "".join(chr(b) for b in range(0x21, 0x7F) if chr(b) not in '"&<>\\')
_INDEX = {c: i for i, c in enumerate(_ALPHABET)}
_TERMINALS = 64
_CONTINUATIONS = 25


def leb89_encode(value: int) -> str:
    """The LEB89 text of one non-negative integer."""
    if value < 0:
        raise ValueError(f"LEB89 encodes non-negative integers only, not {value}")
    if value < _TERMINALS:
        return _ALPHABET[value]
    rest, terminal = divmod(value - _TERMINALS, _TERMINALS)
    digits = []
    while True:
        rest, digit = divmod(rest, _CONTINUATIONS)
        digits.append(_ALPHABET[_TERMINALS + digit])
        if rest == 0:
            break
    return "".join(reversed(digits)) + _ALPHABET[terminal]


def leb89_decode(text: str, pos: int = 0) -> tuple[int, int]:
    """One value read from ``text[pos:]`` and the position after it.

    Raises :class:`CorruptedNUMAVectorError` on a character outside the alphabet or a value whose
    continuation digits are not followed by a terminal.
    """
    continued = 0
    digits = 0
    while pos < len(text):
        index = _INDEX.get(text[pos])
        if index is None:
            raise CorruptedNUMAVectorError(f"not a LEB89 character at {pos}: {text[pos]!r}")
        pos += 1
        if index < _TERMINALS:
            return (index if digits == 0 else _TERMINALS + continued * _TERMINALS + index), pos
        continued = continued * _CONTINUATIONS + index - _TERMINALS
        digits += 1
    raise CorruptedNUMAVectorError("LEB89 value cut short: continuation digits without a terminal")


def encode_vector(offsets: Iterable[int]) -> str:
    """The vector of ascending ``offsets``: the first as is, then each delta to the previous one."""
    out: list[str] = []
    previous = 0
    for i, offset in enumerate(offsets):
        out.append(leb89_encode(offset if i == 0 else offset - previous))
        previous = offset
    return "".join(out)


def decode_vector(text: str) -> list[int]:
    """The offsets of a vector (the inverse of :func:`encode_vector`)."""
    offsets: list[int] = []
    pos = 0
    previous = 0
    while pos < len(text):
        value, pos = leb89_decode(text, pos)
        previous = value if not offsets else previous + value
        offsets.append(previous)
    return offsets


# --- payload ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    """The decoded form of the attributes: metadata fields, and the vector text per NUMA id."""

    containers: int
    numa_nodes: int
    busiest_node: int
    vector_encoding: str = VECTOR_ENCODING_LEB89
    vectors: Mapping[int, str] = field(default_factory=dict)

    def pack_metadata(self) -> str:
        """The metadata attribute's value, fields in upstream's order."""
        fields = (
            f"ve={self.vector_encoding}",
            f"cc={self.containers}",
            f"nn={self.numa_nodes}",
            f"bn={self.busiest_node}",
        )
        return METADATA_PREFIX + METADATA_VERSION + _SEPARATOR + _SEPARATOR.join(fields)

    def with_vectors(self, vectors: Mapping[int, str]) -> Payload:
        return Payload(
            self.containers, self.numa_nodes, self.busiest_node, self.vector_encoding, dict(vectors)
        )

    def validate(self) -> None:
        """The checks upstream's ``NewDecoder`` makes, in its order (so the first error matches)."""
        # decoderValidate: the LEB89 scheme omits the busiest node's vector.
        if self.vector_encoding != VECTOR_ENCODING_LEB89:
            raise UnsupportedVectorEncodingError(f"vector encoding {self.vector_encoding!r} is not leb89")
        if len(self.vectors) >= self.numa_nodes:
            raise InconsistentNUMAVectorsError(
                f"{len(self.vectors)} vectors for {self.numa_nodes} NUMA nodes"
            )
        if self.busiest_node in self.vectors:
            raise CorruptedNUMAVectorError(f"a vector for the busiest NUMA node {self.busiest_node}")
        # Payload.Validate
        if self.containers < 0:
            raise InconsistentContainerSetError(f"container count {self.containers}")
        if self.numa_nodes <= 0:
            raise InconsistentNUMANodesError(f"NUMA node count {self.numa_nodes}")
        if not 0 <= self.busiest_node < self.numa_nodes:
            raise InconsistentBusiestNodeError(f"busiest node {self.busiest_node} of {self.numa_nodes}")
        if self.containers == 0 and self.vectors:
            raise InconsistentNUMAVectorsError("vectors without containers")
        for numa in self.vectors:
            if not 0 <= numa < self.numa_nodes:
                raise CorruptedNUMAVectorError(f"a vector for NUMA node {numa} of {self.numa_nodes}")


# Go's strconv.Atoi in base 10: an optional sign and ASCII digits, nothing else (no spaces, no
# underscores, no other Unicode digits, which Python's int() would all accept).
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63


def _go_atoi(text: str) -> int:
    if not _GO_INT.fullmatch(text):
        raise MetadataNumberError(f"not an integer: {text!r}", "strconv.ErrSyntax")
    value = int(text)
    if not -_INT64 <= value < _INT64:
        raise MetadataNumberError(f"out of range: {text!r}", "strconv.ErrRange")
    return value


def unpack_metadata(text: str) -> Payload:
    """The metadata fields of ``text`` (no vectors), parsed as upstream's ``UnpackMetadataInto``.

    Fields may come in any order and repeat (the last wins); a field the text lacks stays -1
    (``ve``: empty), which :meth:`Payload.validate` then refuses.
    """
    head = METADATA_PREFIX + METADATA_VERSION + _SEPARATOR
    if not text.startswith(head):
        raise MalformedMetadataError(f"metadata does not start with {head!r}: {text[:40]!r}")
    values: dict[str, int] = {"cc": _UNKNOWN, "nn": _UNKNOWN, "bn": _UNKNOWN}
    encoding = ""
    for pair in text[len(head) :].split(_SEPARATOR):
        eq = pair.find("=")
        if eq == -1:
            raise MalformedMetadataPairError(f"metadata field without '=': {pair!r}")
        if eq == 0:
            raise MissingMetadataKeyError(f"metadata field without a name: {pair!r}")
        if eq == len(pair) - 1:
            raise MissingMetadataValueError(f"metadata field without a value: {pair!r}")
        key, value = pair[:eq], pair[eq + 1 :]
        if key == "ve":
            encoding = value
            continue
        number = _go_atoi(value)  # upstream parses before it looks the name up
        if key not in values:
            raise UnknownMetadataError(f"unknown metadata field: {key!r}")
        values[key] = number
    return Payload(values["cc"], values["nn"], values["bn"], encoding)


# --- encoder and decoder ------------------------------------------------------------------------


def encode(numa_nodes: int, placements: Iterable[tuple[ContainerId, int]]) -> Payload:
    """The payload of ``placements`` (container, NUMA id) on a machine of ``numa_nodes`` ids.

    NUMA ids must be in ``[0, numa_nodes)``; a container given twice keeps its last id.
    """
    if numa_nodes <= 0:
        raise InconsistentNUMANodesError(f"NUMA node count {numa_nodes}")
    located: dict[int, int] = {}
    for cid, numa in placements:
        if numa == -1:
            raise UnsupportedUnknownNUMAAffinityError(
                f"{cid.namespace}/{cid.pod}/{cid.container}: NUMA id -1"
            )
        if numa < 0 or numa >= numa_nodes:
            raise WrongNUMAAffinityError(
                f"{cid.namespace}/{cid.pod}/{cid.container}: NUMA id {numa} not in [0, {numa_nodes})"
            )
        located[container_hash(cid)] = numa
    if not located:
        return Payload(0, numa_nodes, 0)
    per_numa: dict[int, list[int]] = {}
    for offset, digest in enumerate(sorted(located)):
        per_numa.setdefault(located[digest], []).append(offset)
    # Most containers; on a tie the lowest id, as upstream's scan of the sorted ids with ">" does.
    busiest = min(per_numa, key=lambda numa: (-len(per_numa[numa]), numa))
    vectors = {numa: encode_vector(offsets) for numa, offsets in sorted(per_numa.items()) if numa != busiest}
    return Payload(len(located), numa_nodes, busiest, VECTOR_ENCODING_LEB89, vectors)


def decode(payload: Payload, containers: Iterable[ContainerId]) -> dict[ContainerId, int]:
    """The NUMA id of each of ``containers``, which must be exactly the set the encoder saw.

    Raises :class:`NumaPlacementError` (never returns a partial answer): on a payload upstream
    refuses, when the number of distinct containers differs from ``cc``, and on any vector that
    names an offset twice, beyond the set, or is not LEB89. A same-sized but different set decodes
    without error to a meaningless answer: the caller must know the sets are equal (a matching
    pod-set fingerprint), as upstream requires.
    """
    payload.validate()
    by_hash: dict[int, ContainerId] = {}
    for cid in containers:
        by_hash[container_hash(cid)] = cid
    if len(by_hash) != payload.containers:
        raise InconsistentContainerSetError(
            f"{len(by_hash)} containers given, the placement encodes {payload.containers}"
        )
    hashes = sorted(by_hash)
    numa_of: dict[int, int] = {}
    for numa, text in sorted(payload.vectors.items()):
        for offset in decode_vector(text):
            if offset >= len(hashes):
                raise CorruptedNUMAVectorError(
                    f"NUMA node {numa}: offset {offset} of {len(hashes)} containers"
                )
            if hashes[offset] in numa_of:
                raise DuplicatedNUMAVectorError(f"NUMA node {numa}: offset {offset} named twice")
            numa_of[hashes[offset]] = numa
    return {by_hash[h]: numa_of.get(h, payload.busiest_node) for h in hashes}
