"""A reserve cache seen through the per-node interface only, as front ends asked it before batching.

The caches offer a request-wide snapshot (``lookup_changed``) and batched Filter bookkeeping
(``record_filter``); :mod:`rte.consumer.cycle` falls back to one ``get`` per candidate for a cache
without them (the simulator's oracle). Wrapping a real cache in :class:`PerNodeCache` hides the
batched calls, so a test can hold the two paths equal and a benchmark can time the old one.
"""

from __future__ import annotations

from collections.abc import Collection

from rte.consumer.cache.interface import Lookup, NRTCache, ScoreViewsCache
from rte.consumer.numaview import NumaView
from rte.model.pod import Pod


class PerNodeCache:
    """``cache`` without ``lookup_changed`` and ``record_filter``."""

    def __init__(self, cache: NRTCache) -> None:
        self._cache = cache
        self.config = cache.config

    def get(self, node: str, pod: Pod | None = None) -> Lookup:
        return self._cache.get(node, pod)

    def note_filter_success(self, node: str) -> None:
        self._cache.note_filter_success(node)

    def mark_maybe_over_reserved(self, node: str) -> None:
        self._cache.mark_maybe_over_reserved(node)

    def unfresh_reason(self, node: str) -> str:
        return self._cache.unfresh_reason(node)

    def reserve(self, node: str, pod: Pod) -> None:
        self._cache.reserve(node, pod)

    def unreserve(self, node: str, pod: Pod) -> None:
        self._cache.unreserve(node, pod)

    def score_views(self, nodes: Collection[str] | None = None) -> dict[str, NumaView]:
        # Not a batched call: Score's views, which both paths must rate alike.
        return self._cache.score_views(nodes) if isinstance(self._cache, ScoreViewsCache) else {}
