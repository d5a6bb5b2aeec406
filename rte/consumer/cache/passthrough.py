"""The cache without accounting: every answer is the store's latest NRT, always fresh.

The reference (kubernetes-sigs/scheduler-plugins ``pkg/noderesourcetopology/cache/passthrough.go``)
does a live GET per decision; our store is watch-fed, so the data is as recent without the
apiserver load. Correctness rests entirely on how fast agents publish.

It applies the shared heartbeat-staleness rule and the load-aware filter mode, like the other
modes, so that the simulator compares cache policies, not feature sets.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rte.consumer import load
from rte.consumer.cache.batched import BatchedLookups, Deadlines
from rte.consumer.cache.freshness import stale_verdict
from rte.consumer.cache.interface import NO_NRT, NOT_FRESH, Clock, Lookup, ResyncReport
from rte.consumer.cache.resync import PodsInput
from rte.consumer.changelog import ChangeLog
from rte.consumer.config import CacheConfig, CacheMode
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.store import NRTStore
from rte.model.pod import Pod


class _StoreViews:
    """Views of the store's NRTs, rebuilt only when a node's revision changes."""

    def __init__(self, store: NRTStore, config: CacheConfig) -> None:
        self._store = store
        self._config = config
        self._views: dict[str, tuple[int, NumaView]] = {}
        self._lock = threading.Lock()

    def get(self, node: str) -> NumaView | None:
        topology, revision = self._store.get_with_revision(node)
        with self._lock:
            if topology is None:
                self._views.pop(node, None)
                return None
            memo = self._views.get(node)
            if memo is not None and memo[0] == revision:
                return memo[1]
            view = build_view(load.filter_view(topology, self._config.load))
            self._views[node] = (revision, view)
            return view


class PassthroughCache(BatchedLookups):
    """No accounting: the latest published NRT, always fresh."""

    mode = CacheMode.PASSTHROUGH.value

    def __init__(self, store: NRTStore, config: CacheConfig | None = None, clock: Clock = time.time) -> None:
        self._store = store
        self._config = config or CacheConfig()
        self._clock = clock
        self._views = _StoreViews(store, self._config)
        self._lock = threading.Lock()
        self._changes = ChangeLog()
        self._deadlines = Deadlines()

    @property
    def generation(self) -> int:
        return self._store.generation

    @property
    def config(self) -> CacheConfig:
        return self._config

    def get(self, node: str, pod: Pod | None = None) -> Lookup:
        with self._lock:
            return self._lookup(node, self._clock())

    def _lookup(self, node: str, now: float) -> Lookup:
        forced = stale_verdict(self._store, self._config, node, now)
        if forced is not None:
            return forced
        view = self._views.get(node)
        return NO_NRT if view is None else Lookup(view, True)

    def reserve(self, node: str, pod: Pod) -> None:
        pass

    def unreserve(self, node: str, pod: Pod) -> None:
        pass

    def post_bind(self, node: str, pod: Pod) -> None:
        pass

    def mark_maybe_over_reserved(self, node: str) -> None:
        pass

    def note_filter_success(self, node: str) -> None:
        pass

    def on_pod_event(self, event_type: str, pod: Pod) -> None:
        pass

    def resync(self, pods: PodsInput, now: float | None = None) -> ResyncReport:
        return ResyncReport()

    def unfresh_reason(self, node: str) -> str:
        with self._lock:
            return self._reason(node, self._clock())

    def _reason(self, node: str, now: float) -> str:
        if stale_verdict(self._store, self._config, node, now) == NOT_FRESH:
            return "node topology agent heartbeat is stale"
        return ""

    def state_dump(self, now: float | None = None) -> dict[str, Any]:
        if now is None:
            now = self._clock()
        return {"mode": self.mode, "generation": self.generation, "now": now, "nodes": {}}
