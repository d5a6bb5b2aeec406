"""Settings of the reserve cache: the reference plugin's ``cache`` arguments plus rte's additions.

Enum values are spelled as in the reference plugin arguments (``OnlyExclusiveResources``,
``Dedicated``), so a scheduler profile can be carried over verbatim; see
:func:`cache_settings_from_plugin_args`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, TypeVar

from rte.errors import ConfigError
from rte.model.attributes import ZONE_CPU_UTILIZATION
from rte.model.vocabulary import InformerMode


class CacheMode(StrEnum):
    """Which cache serves the filter and score (the reference's three, see :mod:`.selection`)."""

    PASSTHROUGH = "Passthrough"
    OVER_RESERVE = "OverReserve"
    DISCARD_RESERVED = "DiscardReserved"


class ForeignPodsDetect(StrEnum):
    NONE = "None"
    ALL = "All"
    ONLY_EXCLUSIVE_RESOURCES = "OnlyExclusiveResources"


class ResyncMethod(StrEnum):
    AUTODETECT = "Autodetect"
    ALL = "All"
    ONLY_EXCLUSIVE_RESOURCES = "OnlyExclusiveResources"


class ResyncScope(StrEnum):
    ALL = "All"
    """Also flush a node when its Topology Manager configuration changes."""
    ONLY_RESOURCES = "OnlyResources"


class Reconcile(StrEnum):
    """When the reserve cache adopts a newer NRT of a node it holds reservations on."""

    HISTORY = "History"
    """On every NRT whose fingerprint matches any recent pod set of the node (rte's default):
    reservations of pods that set lacks stay (:mod:`rte.consumer.cache.reconcile`)."""
    EXACT = "ExactMatch"
    """Only at a resync of a node marked dirty whose NRT matches the node's current pod set (the
    reference plugin)."""


class StaleAction(StrEnum):
    """What a node whose agent heartbeat is too old turns into."""

    IGNORE = "ignore"
    """Only reported in the state dump."""
    NO_NRT = "treat-as-no-nrt"
    """Served as a node without an NRT: the NUMA filter lets it pass, like a node the agent never ran on."""
    UNSCHEDULABLE = "unschedulable"
    """Not fresh: the filter rejects it and it scores 0, like a node with foreign pods."""


class LoadMode(StrEnum):
    OFF = "off"
    FILTER = "filter"
    """Zones above the threshold are removed from the view: nothing is placed on them."""
    SCORE = "score"
    """Zones above the threshold stay placeable, but the score is scaled down."""


DEFAULT_PROFILE = "topo-aware-scheduler"


@dataclass(frozen=True)
class LoadAwareConfig:
    """Utilisation thresholds applied per NUMA zone (:mod:`rte.consumer.load`); off by default.

    ``thresholds`` maps a zone attribute holding an integer percent to the percent above which
    a zone counts as busy (the agent publishes the attribute only while the zone is outside its
    normal band, so an absent attribute means "not busy").
    """

    mode: LoadMode = LoadMode.OFF
    thresholds: Mapping[str, int] = field(default_factory=lambda: {ZONE_CPU_UTILIZATION: 80})
    score_factor: float = 0.5
    """Score mode: the node score is multiplied by this when the zone the pod lands on is busy."""


@dataclass(frozen=True)
class CacheConfig:
    """Everything that shapes the OverReserve cache's behaviour (defaults = reference defaults)."""

    profiles: frozenset[str] = frozenset({DEFAULT_PROFILE})
    """Scheduler names served by this scheduler; a bound pod with any other name is foreign."""
    foreign_pods_detect: ForeignPodsDetect = ForeignPodsDetect.ALL
    resync_method: ResyncMethod = ResyncMethod.AUTODETECT
    informer_mode: InformerMode = InformerMode.DEDICATED
    resync_scope: ResyncScope = ResyncScope.ALL
    reconcile: Reconcile = Reconcile.HISTORY
    history_limit: int = 256
    """Reconcile.HISTORY: pod-set changes remembered per node (older pod sets no longer match)."""
    dirty_after_failures: int = 1
    """Filter failures in a row before a node is resynced: 1 is the reference, more is what the
    reserve-plugin design proposes (kubernetes-sigs/scheduler-plugins
    ``pkg/noderesourcetopology/cache/docs/NUMA-aware-scheduler-side-reserve-plugin.md``): a node
    that fails once may just be too small for one pod."""
    absent_pod_grace: float = 30.0
    """Seconds a reservation survives a flush when its pod is missing from the pod list (the pod
    informer may lag the scheduler's own queue); after that, a missing pod counts as deleted."""
    follow_clean_nodes: bool = True
    """A node with no reservation and no mark adopts every new NRT at once: there is nothing of
    ours the NRT could be missing. Off gives the reference (cache updated only by resync)."""
    heartbeat_max_age: float | None = None
    """Seconds; None disables the staleness rule."""
    stale_action: StaleAction = StaleAction.IGNORE
    stale_if_no_heartbeat: bool = False
    """Whether a node with no Lease at all counts as stale (off: agents without leases still work)."""
    startup_grace: float = 0.0
    """Seconds after start during which a node not yet confirmed by a fingerprint match is not
    fresh; 0 disables the startup rule. See :mod:`rte.consumer.cache.overreserve`."""
    load: LoadAwareConfig = field(default_factory=LoadAwareConfig)

    def __post_init__(self) -> None:
        if self.history_limit < 1:
            raise ConfigError("historyLimit", f"must be at least 1, got {self.history_limit}")
        if self.dirty_after_failures < 1:
            raise ConfigError("dirtyAfterFailures", f"must be at least 1, got {self.dirty_after_failures}")
        for name, value in (("absentPodGrace", self.absent_pod_grace), ("startupGrace", self.startup_grace)):
            if value < 0:
                raise ConfigError(name, f"must not be negative, got {value}")
        if self.heartbeat_max_age is not None and self.heartbeat_max_age <= 0:
            raise ConfigError("heartbeatMaxAge", f"must be positive, got {self.heartbeat_max_age}")
        if not 0 <= self.load.score_factor <= 1:
            raise ConfigError("load.scoreFactor", f"must be within 0..1, got {self.load.score_factor}")


@dataclass(frozen=True)
class CacheSettings:
    """The reference plugin's cache selection plus the OverReserve configuration."""

    mode: CacheMode
    resync_period: float
    config: CacheConfig


E = TypeVar("E", bound=Enum)


def parse_enum(kind: type[E], value: Any, where: str) -> E:
    """``kind(value)`` or a one-line :class:`ConfigError` listing the accepted spellings."""
    try:
        return kind(value)
    except ValueError as e:
        accepted = ", ".join(str(m.value) for m in kind)
        raise ConfigError(where, f"{value!r} is not one of {accepted}") from e


def cache_settings_from_plugin_args(
    args: Mapping[str, Any], profiles: frozenset[str] = frozenset({DEFAULT_PROFILE})
) -> CacheSettings:
    """Read the reference ``NodeResourceTopologyMatchArgs`` (kubernetes-sigs/scheduler-plugins
    ``apis/config/types.go``).

    ``discardReservedNodes`` wins over the resync period; a period <= 0 (the default) means
    Passthrough. The ``cache`` block's defaults are the reference's.
    """
    period_raw = args.get("cacheResyncPeriodSeconds", 0) or 0
    if isinstance(period_raw, bool) or not isinstance(period_raw, int | float):
        raise ConfigError("cacheResyncPeriodSeconds", f"expected a number, got {period_raw!r}")
    discard = args.get("discardReservedNodes", False)
    if not isinstance(discard, bool):
        raise ConfigError("discardReservedNodes", f"expected true or false, got {discard!r}")
    cache = args.get("cache") or {}
    if not isinstance(cache, Mapping):
        raise ConfigError("cache", f"expected an object, got {cache!r}")
    config = CacheConfig(
        profiles=profiles,
        foreign_pods_detect=parse_enum(
            ForeignPodsDetect, cache.get("foreignPodsDetect", "All"), "cache.foreignPodsDetect"
        ),
        resync_method=parse_enum(ResyncMethod, cache.get("resyncMethod", "Autodetect"), "cache.resyncMethod"),
        informer_mode=InformerMode.parse(cache.get("informerMode", "Dedicated"), "cache.informerMode"),
        resync_scope=parse_enum(ResyncScope, cache.get("resyncScope", "All"), "cache.resyncScope"),
        reconcile=parse_enum(Reconcile, cache.get("reconcile", "History"), "cache.reconcile"),
    )
    if discard:
        mode = CacheMode.DISCARD_RESERVED
    elif period_raw <= 0:
        mode = CacheMode.PASSTHROUGH
    else:
        mode = CacheMode.OVER_RESERVE
    return CacheSettings(mode=mode, resync_period=float(period_raw), config=config)
