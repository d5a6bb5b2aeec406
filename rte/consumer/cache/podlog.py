"""The recent pod sets of one node, and the fingerprint of each: which NRT accounts for which pods.

An agent publishes the fingerprint of the pods it counted when it read its kubelet
(:mod:`rte.agent.compute.podset`). That set is the node's *fingerprinted set* (the informer-mode rule,
:func:`rte.model.pod.counts_for_fingerprint`) at one moment of the pod event stream, because the
agent's pod watch and the scheduler's pod informer see the same stream of API changes. So the
set an NRT describes is one *cut* of that stream: every change up to some point, none after.

:class:`PodLog` keeps the node's current fingerprinted set and the last changes to it, each
with the fingerprint of the set just after it (for the ``all`` and the
``with-exclusive-resources`` methods). An NRT whose fingerprint equals the one at some cut
accounts for exactly the pods of that cut (:meth:`PodLog.find`, :meth:`PodLog.members_at`), even
when the node's pods have changed since, which is the normal case on a busy node. A fingerprint
identifies a set, not an order, so whatever order the changes are logged in, a match names the
right set; a change the log has not seen yet (the agent's watch was ahead) only makes the match
come later.

The log is bounded (``limit`` changes); older cuts are forgotten, which only loses matches. The
owner forgets the cuts before the one it adopted (:meth:`PodLog.forget_before`): NRTs only move
forward.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from rte.model import fingerprint as fp
from rte.model.pod import PodKey

K = TypeVar("K")
V = TypeVar("V")

EMPTY: Mapping[Any, Any] = MappingProxyType({})
"""The one read-only empty mapping every fresh node state and pod log holds until its first
write (issue #13: four empty dicts per node were ~5 MiB at 20 000 nodes). Read-only, so a write
that skipped :func:`owned` fails loudly instead of reaching every node."""


def shared_empty() -> Mapping[Any, Any]:
    """:data:`EMPTY`, as a dataclass default (a mapping proxy is not hashable, so not a default)."""
    return EMPTY


def owned(mapping: Mapping[K, V]) -> dict[K, V]:
    """``mapping`` itself when it is its holder's own dict, else a dict of its entries to put in
    its place (the holder had the shared :data:`EMPTY`, or a :class:`Single`)."""
    return mapping if isinstance(mapping, dict) else dict(mapping)


def compact(mapping: Mapping[K, V]) -> Mapping[K, V]:
    """What to store for ``mapping``: the shared :data:`EMPTY` in place of an empty one, a
    :class:`Single` in place of one entry, else ``mapping`` itself."""
    if not mapping:
        return EMPTY
    if len(mapping) == 1 and isinstance(mapping, dict):
        [(key, value)] = mapping.items()
        return Single(key, value)
    return mapping


class Single(Mapping[K, V]):
    """A read-only mapping of one entry, 48 bytes: what a node's one pod (its agent, nearly
    always) costs in the mappings of the node's state and log, where a dict of one entry takes
    about 230 (issue #27: two of them a node, 23 MiB at 50 000 nodes). Written through
    :func:`owned`, as :data:`EMPTY` is."""

    __slots__ = ("_key", "_value")

    def __init__(self, key: K, value: V) -> None:
        self._key = key
        self._value = value

    def __getitem__(self, key: K) -> V:
        if key == self._key:
            return self._value
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key == self._key

    def get(self, key: K, default: Any = None) -> Any:
        return self._value if key == self._key else default

    def __iter__(self) -> Iterator[K]:
        yield self._key

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"Single({self._key!r}: {self._value!r})"


DEFAULT_LIMIT = 256


@dataclass(frozen=True, slots=True)
class Change:
    key: PodKey
    added: bool
    """True: the pod joined the fingerprinted set; False: it left it (deleted)."""
    all_pods: str
    """The fingerprint of every pod of the set just after this change."""
    exclusive: str
    """The same over the pods holding exclusive resources."""


@dataclass(slots=True)
class PodLog:
    """One node's fingerprinted set, its recent changes and their fingerprints (slotted, and empty
    containers shared until the first change: one per node)."""

    limit: int = DEFAULT_LIMIT
    members: Mapping[PodKey, int] = field(default_factory=shared_empty)
    """The current set: each pod's :func:`~rte.model.fingerprint.pod_hash`, bitwise inverted
    (negative) when the pod holds exclusive resources: one int a pod, where a (hash, exclusive)
    pair was 72 bytes more (issue #27)."""
    changes: Sequence[Change] = ()
    """The logged changes, oldest first (a list of the log's own after the first change)."""
    start_all: str = fp.EMPTY_SET
    """The fingerprint of the set before the first logged change (:attr:`start`)."""
    start_exclusive: str = fp.EMPTY_SET
    """The same over the pods holding exclusive resources."""
    version: int = 0
    """Incremented on every change (lets the owner skip retrying a match that cannot appear)."""
    base: int = 0
    """Position of the first logged change among every change ever logged."""

    @property
    def start(self) -> tuple[str, str]:
        """Fingerprints (all, exclusive) of the set before the first logged change (two fields,
        not a tuple kept: 56 bytes a node less, issue #27)."""
        return self.start_all, self.start_exclusive

    @property
    def end(self) -> int:
        """Position of the current set (the cut after every change ever logged)."""
        return self.base + len(self.changes)

    def update(self, key: PodKey, counted: bool, exclusive: bool = True) -> bool:
        """Record that ``key`` is (``counted``) or is not in the set; True when that changed it."""
        present = key in self.members
        if counted == present:
            return False
        self.members = members = owned(self.members)
        if counted:
            pod_hash = fp.pod_hash(*key)
            members[key] = ~pod_hash if exclusive else pod_hash
        else:
            del members[key]
        self.members = compact(members)
        hashes = members.values()
        # Not a list only while empty: the shared () of a fresh log.
        self.changes = changes = self.changes if isinstance(self.changes, list) else []
        changes.append(
            Change(
                key,
                counted,
                fp.from_hashes(h if h >= 0 else ~h for h in hashes),
                fp.from_hashes(~h for h in hashes if h < 0),
            )
        )
        if len(self.changes) > self.limit:
            self.forget_before(len(self.changes) - self.limit)
        self.version += 1
        return True

    def fingerprint_at(self, cut: int, only_exclusive: bool) -> str:
        """The fingerprint of the set after the first ``cut`` logged changes."""
        if cut == 0:
            return self.start_exclusive if only_exclusive else self.start_all
        change = self.changes[cut - 1]
        return change.exclusive if only_exclusive else change.all_pods

    def find(self, expected: str, only_exclusive: bool) -> int | None:
        """The latest cut whose fingerprint is ``expected`` (compared as text), or None."""
        for cut in range(len(self.changes), -1, -1):
            if self.fingerprint_at(cut, only_exclusive) == expected:
                return cut
        return None

    def members_at(self, cut: int) -> set[PodKey]:
        """Every pod of the set at ``cut`` (all of them, whatever their exclusivity)."""
        keys = set(self.members)
        for change in reversed(self.changes[cut:]):
            if change.added:
                keys.discard(change.key)
            else:
                keys.add(change.key)
        return keys

    def forget_before(self, cut: int) -> None:
        """Drop the changes before ``cut``: that cut becomes the log's start."""
        if cut <= 0:
            return
        last = self.changes[cut - 1]
        self.start_all, self.start_exclusive = last.all_pods, last.exclusive
        # A new list, never written in place; none when nothing is left (a node's log is empty
        # after each adoption of its latest set: an empty list each was 56 bytes a node).
        self.changes = self.changes[cut:] or ()
        self.base += cut
