"""The freshness rule every cache mode applies the same way: an agent heartbeat too old.

**Staleness** (off by default): with ``heartbeat_max_age`` set, a node whose agent Lease is older
is ignored, served as having no NRT, or unschedulable (``stale_action``), like the filter on
expired node metrics of Koordinator's load-aware scheduling (koordinator-sh/koordinator
``docs/proposals/scheduling/20220510-load-aware-scheduling.md``): data from a dead agent is no data."""

from __future__ import annotations

from rte.consumer.cache.interface import NO_NRT, NOT_FRESH, Lookup
from rte.consumer.config import CacheConfig, StaleAction
from rte.consumer.store import NRTStore


def heartbeat_age(store: NRTStore, node: str, now: float) -> float | None:
    """Seconds since the node's agent last vouched for its NRT; 0 while it vouches now (a ready agent
    pod's heartbeat is ``+inf``, :mod:`rte.consumer.agentpods`); None: no heartbeat at all."""
    beat = store.heartbeat(node)
    return None if beat is None else max(0.0, now - beat)


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
