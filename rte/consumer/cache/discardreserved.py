"""The cache that refuses a node while one of our pods is being bound to it.

As the reference's DiscardReserved (kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/cache/discardreserved.go``): a node with a pod between Reserve and
Unreserve/PostBind is not fresh at all (Unschedulable, score 0); otherwise it answers like
:class:`~rte.consumer.cache.passthrough.PassthroughCache`. No resync, no foreign-pod detection,
no fingerprint.
"""

from __future__ import annotations

import time
from collections.abc import Container
from typing import Any

from rte.consumer.cache.interface import NOT_FRESH, Clock, Lookup
from rte.consumer.cache.passthrough import PassthroughCache
from rte.consumer.config import CacheConfig, CacheMode
from rte.consumer.store import NRTStore
from rte.model.pod import Pod


def _pod_id(pod: Pod) -> str:
    # The reference keys by UID; pods read from files may have none.
    return pod.uid or f"{pod.namespace}/{pod.name}"


class DiscardReservedCache(PassthroughCache):
    """A node is unusable while one of our pods is between Reserve and bind."""

    mode = CacheMode.DISCARD_RESERVED.value

    def __init__(self, store: NRTStore, config: CacheConfig | None = None, clock: Clock = time.time) -> None:
        super().__init__(store, config, clock)
        self._reserved: dict[str, set[str]] = {}

    def _lookup(self, node: str, now: float) -> Lookup:
        if self._reserved.get(node):
            return NOT_FRESH
        return super()._lookup(node, now)

    def reserve(self, node: str, pod: Pod) -> None:
        with self._lock:
            self._reserved.setdefault(node, set()).add(_pod_id(pod))
            self._changes.note(node)

    def unreserve(self, node: str, pod: Pod) -> None:
        with self._lock:
            pods = self._reserved.get(node)
            if pods is not None:
                pods.discard(_pod_id(pod))
                if not pods:
                    del self._reserved[node]
                    self._changes.note(node)

    def post_bind(self, node: str, pod: Pod) -> None:
        self.unreserve(node, pod)

    def _own_nodes(self) -> Container[str]:
        return self._reserved

    def _reason(self, node: str, now: float) -> str:
        if self._reserved.get(node):
            return "node has a pod being bound (DiscardReserved)"
        return super()._reason(node, now)

    def state_dump(self, now: float | None = None) -> dict[str, Any]:
        out = super().state_dump(now)
        with self._lock:
            out["nodes"] = {node: {"reserved": sorted(pods)} for node, pods in sorted(self._reserved.items())}
        return out
