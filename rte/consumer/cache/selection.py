"""Which cache the scheduler's settings select.

The same choice as the reference plugin (kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/pluginhelpers.go``): ``discardReservedNodes`` first, then a resync
period <= 0 for Passthrough, else OverReserve (see
:func:`rte.consumer.config.cache_settings_from_plugin_args`).
"""

from __future__ import annotations

import time

from rte.consumer.cache.discardreserved import DiscardReservedCache
from rte.consumer.cache.interface import Clock, NRTCache
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.passthrough import PassthroughCache
from rte.consumer.config import CacheMode, CacheSettings
from rte.consumer.store import NRTStore


def make_cache(settings: CacheSettings, store: NRTStore, clock: Clock = time.time) -> NRTCache:
    """The cache ``settings`` select (built by ``cache_settings_from_plugin_args``)."""
    if settings.mode is CacheMode.DISCARD_RESERVED:
        return DiscardReservedCache(store, settings.config, clock)
    if settings.mode is CacheMode.PASSTHROUGH:
        return PassthroughCache(store, settings.config, clock)
    return OverReserveCache(store, settings.config, clock)
