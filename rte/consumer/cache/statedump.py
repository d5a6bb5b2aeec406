"""The reserve cache's state, as its debug endpoint shows it (:meth:`ReserveStateDump.state_dump`)."""

from __future__ import annotations

import threading
from typing import Any

from rte.consumer.cache.diagnosis import EXPLANATIONS, diagnose
from rte.consumer.cache.freshness import heartbeat_age, is_stale
from rte.consumer.cache.interface import Clock, Lookup
from rte.consumer.cache.nodestate import NodeState
from rte.consumer.config import CacheConfig
from rte.consumer.store import NRTStore


class ReserveStateDump:
    """The dump and the diagnosis of :class:`~rte.consumer.cache.overreserve.OverReserveCache`,
    over the state and the per-node rules that class defines."""

    mode: str
    _store: NRTStore
    _config: CacheConfig
    _clock: Clock
    _lock: threading.Lock | threading.RLock
    _nodes: dict[str, NodeState]
    _generation: int
    _started_at: float
    _history: bool

    def _current(self, node: str, now: float) -> NodeState | None:
        raise NotImplementedError

    def _reason(self, node: str, now: float) -> str:
        raise NotImplementedError

    def _lookup(self, node: str, now: float) -> Lookup:
        raise NotImplementedError

    def _in_startup(self, now: float) -> bool:
        raise NotImplementedError

    def _blocked_at_startup(self, st: NodeState, now: float) -> bool:
        raise NotImplementedError

    def state_dump(self, now: float | None = None) -> dict[str, Any]:
        """A JSON-able picture of the cache, per node, for the extender's debug endpoint."""
        with self._lock:
            if now is None:
                now = self._clock()
            nodes: dict[str, Any] = {}
            for node in sorted(set(self._nodes) | set(self._store.nodes())):
                st = self._current(node, now)
                if st is None:
                    continue
                nodes[node] = self._dump_node(node, st, now)
            return {
                "mode": self.mode,
                "generation": self._generation,
                "storeGeneration": self._store.generation,
                "now": now,
                "startedAt": self._started_at,
                "inStartupGrace": self._in_startup(now),
                "nodes": nodes,
            }

    def diagnose(self, node: str) -> str:
        """Why the node may be refused although its kubelet has room (:mod:`.diagnosis`)."""
        with self._lock:
            now = self._clock()
            st = self._current(node, now)
            return diagnose(st, self._reason(node, now), self._store.revision(node), self._history)

    def _dump_node(self, node: str, st: NodeState, now: float) -> dict[str, Any]:
        reason = self._reason(node, now)
        code = diagnose(st, reason, self._store.revision(node), self._history)
        return {
            "cachedRevision": st.revision,
            "storeRevision": self._store.revision(node),
            "fresh": self._lookup(node, now).fresh,
            "reason": reason,
            "diagnosis": code,
            "diagnosisDetail": EXPLANATIONS[code],
            **st.dump(),
            "unverified": self._blocked_at_startup(st, now),
            "heartbeatAgeSeconds": heartbeat_age(self._store, node, now),
            "stale": is_stale(self._store, self._config, node, now),
        }
