"""The batched lookups every cache of this package offers (:class:`~.interface.BatchedCache`).

One request of the scheduler extender asks about thousands of nodes. Asked node by node, a cache
takes its lock and builds a lookup thousands of times per request, and concurrent requests hand
the lock back and forth as often. Instead, a cache notes which nodes' answers changed (its own
:class:`~rte.consumer.changelog.ChangeLog`, plus the store's), and a reader holding a cursor gets,
under one lock, those names and the lookups it asks for: per request, the cost is the nodes that
changed, not the nodes asked about.

The heartbeat-staleness rule makes answers change with the clock alone: a node turns stale when
its last heartbeat gets older than ``heartbeat_max_age``. The cache keeps the instants at which
that happens, sorted (:class:`Deadlines`), and a reader also gets the nodes whose instant fell
between its last call and this one, and the nodes whose heartbeat changed. The startup grace is
not tracked that way: while it lasts, every answer counts as changed.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, insort
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field

from rte.consumer.cache.interface import Clock, Cursor, Lookup, Select, Snapshot
from rte.consumer.changelog import MIN_KEPT, ChangeLog
from rte.consumer.config import CacheConfig, StaleAction
from rte.consumer.store import NRTStore


def heartbeat_rule_on(config: CacheConfig) -> bool:
    """Whether the staleness rule can change an answer as time passes."""
    return config.heartbeat_max_age is not None and config.stale_action is not StaleAction.IGNORE


MARGIN = 1e-3
"""Seconds added on both sides of a reader's interval: a node found stale a little early or
late is only looked up once more, while rounding (``now - beat`` against ``beat + max_age``)
must never hide one."""


@dataclass
class Deadlines:
    """When nodes turn stale: ``(last heartbeat + heartbeat_max_age, node)``, sorted."""

    entries: list[tuple[float, str]] = field(default_factory=list)
    read: int | None = None
    """The store's heartbeat serial up to which :attr:`entries` are filled (None: not yet)."""
    since: float = float("inf")
    """Entries due before this instant may have been dropped: a reader from before starts over."""

    def ingest(self, store: NRTStore, max_age: float, now: float) -> int:
        """Add the heartbeats the store saw since the last call; the store's serial."""
        serial, beats = store.heartbeats_since(self.read)
        if beats is None:  # the first call, or too far behind the log: from every heartbeat
            serial, every = store.heartbeats()
            beats = dict(every)
            self.entries = []
            self.since = now
        for node, beat in beats.items():
            if beat is not None:
                insort(self.entries, (beat + max_age, node))
        self.read = serial
        return serial

    def due(self, then: float, now: float) -> list[str] | None:
        """The nodes turning stale between ``then`` and ``now`` (None: some may be forgotten)."""
        if then < self.since:
            return None
        entries = self.entries
        start = bisect_left(entries, (then - MARGIN,))
        return [node for _, node in entries[start : bisect_left(entries, (now + MARGIN,))]]

    def prune(self, now: float, nodes: int) -> None:
        """Drop the entries already due once they outnumber the nodes well (memory stays bounded)."""
        if len(self.entries) > MIN_KEPT + 4 * nodes:
            del self.entries[: bisect_left(self.entries, (now - MARGIN,))]
            self.since = now - MARGIN


class BatchedLookups:
    """:class:`~.interface.BatchedCache` for a cache that defines the per-node hooks below."""

    _store: NRTStore
    _config: CacheConfig
    _clock: Clock
    _lock: threading.Lock | threading.RLock
    _changes: ChangeLog
    """Nodes whose answer changed for a reason other than their store revision."""
    _deadlines: Deadlines

    def lookup_changed(self, cursor: Cursor | None, select: Select) -> Snapshot:
        with self._lock:
            now = self._clock()
            volatile = self._volatile(now)
            generation, stored = self._store.changed_since(None if cursor is None else cursor[0])
            own = self._changes.since(None if cursor is None else cursor[1])
            beats, aged = self._aged(cursor, now)
            changed = None
            if not (cursor is None or volatile or cursor[4] or stored is None or own is None or aged is None):
                changed = stored + own + aged
            names = select(changed)
            lookups = [(node, self._lookup(node, now)) for node in names]
            return Snapshot((generation, self._changes.serial, beats, now, volatile), lookups)

    def _aged(self, cursor: Cursor | None, now: float) -> tuple[int, list[str] | None]:
        """The store's heartbeat serial, and the nodes whose staleness may have changed since
        ``cursor`` (a new heartbeat, or the last one grown too old); None: any node's may have."""
        max_age = self._config.heartbeat_max_age
        if max_age is None or not heartbeat_rule_on(self._config):
            return 0, []
        deadlines = self._deadlines
        serial = deadlines.ingest(self._store, max_age, now)
        if cursor is None:
            return serial, None
        _, beaten = self._store.heartbeats_since(cursor[2])
        due = deadlines.due(cursor[3], now)
        deadlines.prune(now, len(self._store))
        if beaten is None or due is None:
            return serial, None
        return serial, [*beaten, *due]

    def record_filter(
        self, passed: Iterable[str], failed: Iterable[str], unfresh: Sequence[str]
    ) -> list[str]:
        with self._lock:
            now = self._clock()
            self._successes(passed)
            for node in failed:
                self._mark(node, now)
            return [self._reason(node, now) for node in unfresh]

    def tracked(self, nodes: Sequence[str]) -> list[bool]:
        """:meth:`~.interface.TrackingCache.tracked`: the store's nodes (an NRT or a heartbeat)
        and those the cache keeps state of (:meth:`_own_nodes`); any other name gets the answer
        of a node without NRT nor heartbeat, which depends on the configuration alone.
        Called from a ``select`` of :meth:`lookup_changed`, so under the cache's lock already."""
        # A heartbeat changes an answer only under the staleness rule, and only then is it
        # reported as a change (:meth:`_aged`).
        known = self._store.known(nodes, heartbeats=heartbeat_rule_on(self._config))
        own = self._own_nodes()
        if own:
            known = [k or node in own for k, node in zip(known, nodes, strict=True)]
        return known

    # --- hooks ---------------------------------------------------------------------------------

    def _own_nodes(self) -> Container[str]:
        """The nodes the cache keeps state of (reservations, foreign pods, marks), if any."""
        return ()

    def _volatile(self, now: float) -> bool:
        """Whether answers may change with ``now`` alone in a way :meth:`_aged` does not track."""
        return False

    def _lookup(self, node: str, now: float) -> Lookup:
        raise NotImplementedError

    def _reason(self, node: str, now: float) -> str:
        raise NotImplementedError

    def _successes(self, nodes: Iterable[str]) -> None:
        """Filter passed on ``nodes``; nothing to do for a cache that keeps no failure streaks."""

    def _mark(self, node: str, now: float) -> None:
        """Filter failed on ``node`` on trusted data; nothing to do for a cache without marks."""
