"""What every NRT cache offers the filter, the score and the front ends (reference §5.1).

Three implementations exist, chosen by :func:`rte.consumer.caches.make_cache`: OverReserve (the
reserve cache, :mod:`rte.consumer.cache`), DiscardReserved and Passthrough
(:mod:`rte.consumer.caches`). The simulator swaps them to compare modes.

The shared freshness rule (an agent heartbeat too old) lives here so that every mode applies it
the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from rte.consumer.cacheconfig import CacheConfig, StaleAction
from rte.consumer.numaview import NumaView
from rte.consumer.podset import Comparison
from rte.consumer.store import NRTStore
from rte.model.pod import Pod

PodsInput = Iterable[Pod] | Mapping[str, Iterable[Pod]]
"""All pods the informer holds, or the same grouped by node name."""


class Lookup(NamedTuple):
    """The answer for one node: the view to decide on (None: no NRT) and whether it is usable.

    ``fresh`` False means the filter must reject the node ("invalid node topology data") and the
    score must give 0, whatever ``view`` holds. Feed it straight to the filter:
    ``filter_node(pod, lookup.view, allocatable, fresh=lookup.fresh)``.
    """

    view: NumaView | None
    fresh: bool


NOT_FRESH = Lookup(None, False)
NO_NRT = Lookup(None, True)


@dataclass(frozen=True)
class ResyncReport:
    """What one resync pass did, for logs, metrics and tests."""

    flushed: tuple[str, ...] = ()
    """Nodes whose fingerprint matched: cache replaced, marks cleared."""
    config_flushed: tuple[str, ...] = ()
    """Nodes replaced because their Topology Manager configuration changed (no fingerprint check)."""
    still_dirty: tuple[str, ...] = ()
    """Nodes checked without a match: they stay marked and are retried next time."""
    comparisons: Mapping[str, Comparison] = field(default_factory=dict)


class NRTCache(Protocol):
    """The interface the filter, the score and the front ends use."""

    @property
    def generation(self) -> int: ...

    @property
    def config(self) -> CacheConfig: ...

    def get(self, node: str, pod: Pod | None = None) -> Lookup: ...

    def reserve(self, node: str, pod: Pod) -> None: ...

    def unreserve(self, node: str, pod: Pod) -> None: ...

    def post_bind(self, node: str, pod: Pod) -> None: ...

    def mark_maybe_over_reserved(self, node: str) -> None: ...

    def note_filter_success(self, node: str) -> None: ...

    def on_pod_event(self, event_type: str, pod: Pod) -> None: ...

    def resync(self, pods: PodsInput, now: float | None = None) -> ResyncReport: ...

    def unfresh_reason(self, node: str) -> str: ...

    def state_dump(self, now: float | None = None) -> dict[str, Any]: ...


def heartbeat_age(store: NRTStore, node: str, now: float) -> float | None:
    beat = store.heartbeat(node)
    return None if beat is None else now - beat


def is_stale(store: NRTStore, config: CacheConfig, node: str, now: float) -> bool:
    """Whether the node's agent heartbeat is older than allowed (always False when the rule is off)."""
    if config.heartbeat_max_age is None:
        return False
    age = heartbeat_age(store, node, now)
    if age is None:
        return config.stale_if_no_heartbeat
    return age > config.heartbeat_max_age


def stale_verdict(store: NRTStore, config: CacheConfig, node: str, now: float) -> Lookup | None:
    """The forced answer for a stale node, or None when the node is not stale or the action is ignore."""
    if config.stale_action is StaleAction.IGNORE or not is_stale(store, config, node, now):
        return None
    return NO_NRT if config.stale_action is StaleAction.NO_NRT else NOT_FRESH


def group_pods(pods: PodsInput) -> tuple[dict[str, list[Pod]], dict[tuple[str, str], Pod]]:
    """``(bound pods by node, every pod by (namespace, name))`` from either input shape."""
    by_node: dict[str, list[Pod]] = {}
    known: dict[tuple[str, str], Pod] = {}
    flat: Iterable[Pod]
    flat = (p for group in pods.values() for p in group) if isinstance(pods, Mapping) else pods
    for pod in flat:
        known[pod.key] = pod
        if pod.node_name:
            by_node.setdefault(pod.node_name, []).append(pod)
    return by_node, known
