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

from collections.abc import Mapping, Sequence
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
    """``mapping`` itself when it is its holder's own dict, else a new empty dict to put in its
    place (the holder still had the shared :data:`EMPTY`)."""
    return mapping if isinstance(mapping, dict) else {}


def compact(mapping: Mapping[K, V]) -> Mapping[K, V]:
    """``mapping``, or the shared :data:`EMPTY` in place of an empty one (what to store)."""
    return mapping if mapping else EMPTY


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
    members: Mapping[PodKey, tuple[int, bool]] = field(default_factory=shared_empty)
    """The current set: each pod's :func:`~rte.model.fingerprint.pod_hash` and exclusivity."""
    changes: Sequence[Change] = ()
    """The logged changes, oldest first (a list of the log's own after the first change)."""
    start: tuple[str, str] = (fp.from_hashes(()), fp.from_hashes(()))
    """Fingerprints (all, exclusive) of the set before the first logged change."""
    version: int = 0
    """Incremented on every change (lets the owner skip retrying a match that cannot appear)."""
    base: int = 0
    """Position of the first logged change among every change ever logged."""

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
            members[key] = (fp.pod_hash(*key), exclusive)
        else:
            del members[key]
        hashes = members.values()
        # Not a list only while empty: the shared () of a fresh log.
        self.changes = changes = self.changes if isinstance(self.changes, list) else []
        changes.append(
            Change(
                key,
                counted,
                fp.from_hashes(h for h, _ in hashes),
                fp.from_hashes(h for h, excl in hashes if excl),
            )
        )
        if len(self.changes) > self.limit:
            self.forget_before(len(self.changes) - self.limit)
        self.version += 1
        return True

    def fingerprint_at(self, cut: int, only_exclusive: bool) -> str:
        """The fingerprint of the set after the first ``cut`` logged changes."""
        if cut == 0:
            return self.start[1] if only_exclusive else self.start[0]
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
        self.start = (last.all_pods, last.exclusive)
        self.changes = self.changes[cut:]  # a new list (or the shared empty), never written in place
        self.base += cut
