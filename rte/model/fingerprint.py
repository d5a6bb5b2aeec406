"""The pod-set fingerprint (``pfp0`` / ``v001``), byte-compatible with the Go podfingerprint library.

The node agent publishes the fingerprint of the pods it accounted for; the scheduler recomputes
it from the pods it believes are bound to that node. Equal values mean "this NRT reflects exactly
the pods I know about", which lets a reserve cache drop its pessimistic reservations.

Algorithm: every pod hashes to ``xxh64(name, seed=xxh64(namespace))``; the 64-bit hashes are
sorted (duplicates kept: it is a multiset hash), fed as little-endian uint64s into one more
xxh64 stream, and the digest is printed as 16 lowercase hex digits after ``pfp0v001``. It
identifies a set of (namespace, name) pairs only: no UIDs, no amounts, not cryptographic.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import xxhash

from rte.errors import RteError

PREFIX = "pfp0"
FORMAT_VERSION = "v001"
ANNOTATION = "topology.node.k8s.io/fingerprint"
ATTRIBUTE = "nodeTopologyPodsFingerprint"
ATTRIBUTE_METHOD = "nodeTopologyPodsFingerprintMethod"
"""Its values are :class:`rte.model.vocabulary.FingerprintMethod`."""

_MIN_LENGTH = len(PREFIX) + len(FORMAT_VERSION) + 8


class FingerprintError(RteError):
    """Base class of the three ways a check can fail."""


class MalformedFingerprintError(FingerprintError):
    """The text is not a fingerprint at all (too short, or the wrong prefix)."""


class IncompatibleVersionError(FingerprintError):
    """A well-formed fingerprint of an algorithm version we do not implement."""


class FingerprintMismatchError(FingerprintError):
    """A valid fingerprint of a different pod set (routine: the node is simply not in sync)."""

    def __init__(self, computed: str, expected: str) -> None:
        super().__init__(f"fingerprint mismatch got={computed} expected={expected}")
        self.computed = computed
        self.expected = expected


_xxh64 = xxhash.xxh64_intdigest
# Namespaces repeat a lot; hashing each once per process is the single biggest saving.
_namespace_seeds: dict[str, int] = {}
_NAMESPACE_CACHE_LIMIT = 65536


def pod_hash(namespace: str, name: str) -> int:
    """The 64-bit hash of one pod identity."""
    seed = _namespace_seeds.get(namespace)
    if seed is None:
        seed = _xxh64(namespace.encode())
        if len(_namespace_seeds) < _NAMESPACE_CACHE_LIMIT:
            _namespace_seeds[namespace] = seed
    return _xxh64(name.encode(), seed)


def _digest(hashes: list[int]) -> str:
    hashes.sort()
    return PREFIX + FORMAT_VERSION + xxhash.xxh64_hexdigest(struct.pack(f"<{len(hashes)}Q", *hashes))


EMPTY_SET = _digest([])
"""The fingerprint of no pods, made once: a reserve cache logs it for every node whose pods hold
nothing exclusive, and one string each was about 80 bytes a node (issue #27)."""


def from_hashes(hashes: Iterable[int]) -> str:
    """The fingerprint of the pods whose :func:`pod_hash` values are ``hashes``, in any order."""
    listed = list(hashes)
    return _digest(listed) if listed else EMPTY_SET


def compute(pods: Iterable[tuple[str, str]]) -> str:
    """The fingerprint of an iterable of ``(namespace, name)`` pairs, in any order."""
    return _digest([pod_hash(ns, name) for ns, name in pods])


def check(sign: str, computed: str) -> None:
    """Validate ``sign`` against our own ``computed`` fingerprint, as the Go ``Check`` does.

    Raises :class:`MalformedFingerprintError`, :class:`IncompatibleVersionError` or
    :class:`FingerprintMismatchError`. The sum is compared as text, so an uppercase or otherwise
    re-encoded digest is a mismatch, not a parse error.
    """
    if len(sign) < _MIN_LENGTH or not sign.startswith(PREFIX):
        raise MalformedFingerprintError(f"malformed fingerprint: {sign!r}")
    if sign[len(PREFIX) : len(PREFIX) + len(FORMAT_VERSION)] != FORMAT_VERSION:
        raise IncompatibleVersionError(f"incompatible version: {sign!r}")
    expected_sum = sign[len(PREFIX) + len(FORMAT_VERSION) :]
    computed_sum = computed[len(PREFIX) + len(FORMAT_VERSION) :]
    if expected_sum != computed_sum:
        raise FingerprintMismatchError(computed_sum, expected_sum)


class Fingerprint:
    """An incremental fingerprint: ``add`` pods, then ``sign`` or ``check``."""

    __slots__ = ("_hashes",)

    def __init__(self) -> None:
        self._hashes: list[int] = []

    def add(self, namespace: str, name: str) -> None:
        self._hashes.append(pod_hash(namespace, name))

    def __len__(self) -> int:
        return len(self._hashes)

    def sign(self) -> str:
        return _digest(list(self._hashes))

    def check(self, sign: str) -> None:
        check(sign, self.sign())


@dataclass
class Status:
    """The trace of one computation; JSON keys and layout match the Go ``Status``."""

    node_name: str = ""
    pods: list[tuple[str, str]] = field(default_factory=list)
    computed: str = ""
    expected: str = ""

    def to_dict(self) -> dict[str, Any]:
        # Every key is omitempty in Go; the pod keys are capitalised because the Go struct has no tags.
        out: dict[str, Any] = {}
        if self.expected:
            out["fingerprintExpected"] = self.expected
        if self.computed:
            out["fingerprintComputed"] = self.computed
        if self.pods:
            out["pods"] = [{"Namespace": ns, "Name": name} for ns, name in self.pods]
        if self.node_name:
            out["nodeName"] = self.node_name
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def repr(self) -> str:
        """The human-readable trace, one line per step."""
        lines = [f'> processing node "{self.node_name}"', f"> processing {len(self.pods)} pods"]
        lines += [f"+ {ns}/{name}" for ns, name in self.pods]
        lines.append(f"= {self.computed}")
        if self.expected:
            lines.append(f"V {self.expected}")
        return "\n".join(lines) + "\n"


class TracingFingerprint(Fingerprint):
    """A fingerprint that records what it did in a :class:`Status`."""

    __slots__ = ("status",)

    def __init__(self, node_name: str = "") -> None:
        super().__init__()
        self.status = Status(node_name=node_name)

    def add(self, namespace: str, name: str) -> None:
        super().add(namespace, name)
        self.status.pods.append((namespace, name))

    def sign(self) -> str:
        self.status.computed = super().sign()
        return self.status.computed

    def check(self, sign: str) -> None:
        self.status.expected = sign
        check(sign, self.sign())
