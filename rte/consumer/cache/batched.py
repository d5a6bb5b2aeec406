"""The batched lookups every cache of this package offers (:class:`~.interface.BatchedCache`).

One request of the scheduler extender asks about thousands of nodes. Asked node by node, a cache
takes its lock and builds a lookup thousands of times per request, and concurrent requests hand
the lock back and forth as often. Instead, a cache notes which nodes' answers changed (its own
:class:`~rte.consumer.changelog.ChangeLog`, plus the store's), and a reader holding a cursor gets,
under one lock, those names and the lookups it asks for: per request, the cost is the nodes that
changed, not the nodes asked about.

Answers that depend on the clock (the heartbeat-staleness rule, the startup grace) can change
without any event; while they do, every answer counts as changed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from rte.consumer.cache.config import CacheConfig, StaleAction
from rte.consumer.cache.interface import Clock, Cursor, Lookup, Select, Snapshot
from rte.consumer.changelog import ChangeLog
from rte.consumer.store import NRTStore


def heartbeat_rule_on(config: CacheConfig) -> bool:
    """Whether the staleness rule can change an answer as time passes."""
    return config.heartbeat_max_age is not None and config.stale_action is not StaleAction.IGNORE


class BatchedLookups:
    """:class:`~.interface.BatchedCache` for a cache that defines the per-node hooks below."""

    _store: NRTStore
    _config: CacheConfig
    _clock: Clock
    _lock: threading.Lock | threading.RLock
    _changes: ChangeLog
    """Nodes whose answer changed for a reason other than their store revision."""

    def lookup_changed(self, cursor: Cursor | None, select: Select) -> Snapshot:
        with self._lock:
            now = self._clock()
            volatile = self._volatile(now)
            generation, stored = self._store.changed_since(None if cursor is None else cursor[0])
            own = self._changes.since(None if cursor is None else cursor[1])
            changed = None
            if not (volatile or cursor is None or cursor[2] or stored is None or own is None):
                changed = stored + own
            names = select(changed)
            lookups = [(node, self._lookup(node, now)) for node in names]
            return Snapshot((generation, self._changes.serial, volatile), lookups)

    def record_filter(
        self, passed: Iterable[str], failed: Iterable[str], unfresh: Sequence[str]
    ) -> list[str]:
        with self._lock:
            now = self._clock()
            self._successes(passed)
            for node in failed:
                self._mark(node, now)
            return [self._reason(node, now) for node in unfresh]

    # --- hooks ---------------------------------------------------------------------------------

    def _volatile(self, now: float) -> bool:
        """Whether answers may change with ``now`` alone."""
        return heartbeat_rule_on(self._config)

    def _lookup(self, node: str, now: float) -> Lookup:
        raise NotImplementedError

    def _reason(self, node: str, now: float) -> str:
        raise NotImplementedError

    def _successes(self, nodes: Iterable[str]) -> None:
        """Filter passed on ``nodes``; nothing to do for a cache that keeps no failure streaks."""

    def _mark(self, node: str, now: float) -> None:
        """Filter failed on ``node`` on trusted data; nothing to do for a cache without marks."""
