"""The two caches without accounting, and the selection among all three (reference §5.1).

* :class:`PassthroughCache`: every answer is the store's latest NRT, always fresh. The reference
  does a live GET per decision; our store is watch-fed, so the data is as recent without the
  apiserver load. Correctness rests entirely on how fast agents publish.
* :class:`DiscardReservedCache` (reference §5.4): a node with a pod between Reserve and
  Unreserve/PostBind is not fresh at all (Unschedulable, score 0); otherwise like Passthrough.
  No resync, no foreign-pod detection, no fingerprint.

Both apply the shared heartbeat-staleness rule and the load-aware filter mode, so that the
simulator compares cache policies, not feature sets.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rte.consumer import load
from rte.consumer.cache import Clock, OverReserveCache
from rte.consumer.cachebase import NO_NRT, NOT_FRESH, Lookup, NRTCache, PodsInput, ResyncReport, stale_verdict
from rte.consumer.cacheconfig import CacheConfig, CacheMode, CacheSettings
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


class PassthroughCache:
    """No accounting: the latest published NRT, always fresh."""

    mode = CacheMode.PASSTHROUGH.value

    def __init__(self, store: NRTStore, config: CacheConfig | None = None, clock: Clock = time.time) -> None:
        self._store = store
        self._config = config or CacheConfig()
        self._clock = clock
        self._views = _StoreViews(store, self._config)

    @property
    def generation(self) -> int:
        return self._store.generation

    @property
    def config(self) -> CacheConfig:
        return self._config

    def get(self, node: str, pod: Pod | None = None) -> Lookup:
        forced = stale_verdict(self._store, self._config, node, self._clock())
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
        if stale_verdict(self._store, self._config, node, self._clock()) == NOT_FRESH:
            return "node topology agent heartbeat is stale"
        return ""

    def state_dump(self, now: float | None = None) -> dict[str, Any]:
        if now is None:
            now = self._clock()
        return {"mode": self.mode, "generation": self.generation, "now": now, "nodes": {}}


def _pod_id(pod: Pod) -> str:
    # The reference keys by UID; pods read from files may have none.
    return pod.uid or f"{pod.namespace}/{pod.name}"


class DiscardReservedCache(PassthroughCache):
    """Reference §5.4: a node is unusable while one of our pods is between Reserve and bind."""

    mode = CacheMode.DISCARD_RESERVED.value

    def __init__(self, store: NRTStore, config: CacheConfig | None = None, clock: Clock = time.time) -> None:
        super().__init__(store, config, clock)
        self._lock = threading.Lock()
        self._reserved: dict[str, set[str]] = {}

    def get(self, node: str, pod: Pod | None = None) -> Lookup:
        with self._lock:
            if self._reserved.get(node):
                return NOT_FRESH
        return super().get(node, pod)

    def reserve(self, node: str, pod: Pod) -> None:
        with self._lock:
            self._reserved.setdefault(node, set()).add(_pod_id(pod))

    def unreserve(self, node: str, pod: Pod) -> None:
        with self._lock:
            pods = self._reserved.get(node)
            if pods is not None:
                pods.discard(_pod_id(pod))
                if not pods:
                    del self._reserved[node]

    def post_bind(self, node: str, pod: Pod) -> None:
        self.unreserve(node, pod)

    def unfresh_reason(self, node: str) -> str:
        with self._lock:
            if self._reserved.get(node):
                return "node has a pod being bound (DiscardReserved)"
        return super().unfresh_reason(node)

    def state_dump(self, now: float | None = None) -> dict[str, Any]:
        out = super().state_dump(now)
        with self._lock:
            out["nodes"] = {node: {"reserved": sorted(pods)} for node, pods in sorted(self._reserved.items())}
        return out


def make_cache(settings: CacheSettings, store: NRTStore, clock: Clock = time.time) -> NRTCache:
    """The cache ``settings`` select (built by ``cache_settings_from_plugin_args``)."""
    if settings.mode is CacheMode.DISCARD_RESERVED:
        return DiscardReservedCache(store, settings.config, clock)
    if settings.mode is CacheMode.PASSTHROUGH:
        return PassthroughCache(store, settings.config, clock)
    return OverReserveCache(store, settings.config, clock)
