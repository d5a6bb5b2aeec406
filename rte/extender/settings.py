"""Settings of ``rte extender``, named after the reference plugin's arguments (reference §6).

| flag (env ``RTE_EXTENDER_*``) | plugin argument | default |
|---|---|---|
| ``--strategy`` | ``scoringStrategy.type`` | ``LeastAllocated`` |
| ``--weight RES=W`` (repeatable) | ``scoringStrategy.resources`` | cpu=1, memory=1 |
| ``--cache-resync-period SECONDS`` | ``cacheResyncPeriodSeconds`` | 0: Passthrough, no reserve cache |
| ``--discard-reserved`` | ``discardReservedNodes`` | off (see below) |
| ``--foreign-pods-detect`` | ``cache.foreignPodsDetect`` | ``All`` |
| ``--resync-method`` | ``cache.resyncMethod`` | ``Autodetect`` |
| ``--informer-mode`` | ``cache.informerMode`` | ``Dedicated`` |
| ``--scheduler-profile`` (repeatable) | the profiles' ``schedulerName`` | ``topo-aware-scheduler`` |

The defaults are the reference's; the example deployment sets the values its README recommends
(a 5 s period, ``OnlyExclusiveResources``). rte's own additions: ``--listen``, ``--kubeconfig``,
``--heartbeat-namespace`` (where the agents renew their Leases; empty disables the Lease watch),
``--heartbeat-max-age`` and ``--stale-action`` (the staleness rule, off by default), and
``--nrt-file`` (serve NRTs from files, with no cluster: for trying it out and for tests).

``--discard-reserved`` is accepted for parity, but an extender is told of a placement only once
the pod is bound, which is when DiscardReserved stops blocking the node: behind an extender it
behaves like Passthrough.

Every mistake is a one-line :class:`~rte.errors.ConfigError` naming the flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rte.commands.scoring import scoring_strategy
from rte.consumer.cacheconfig import (
    DEFAULT_PROFILE,
    CacheConfig,
    CacheSettings,
    ForeignPodsDetect,
    InformerMode,
    ResyncMethod,
    StaleAction,
    cache_settings_from_plugin_args,
    parse_enum,
)
from rte.consumer.score import ScoringStrategy
from rte.durations import parse_duration
from rte.errors import ConfigError
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE

DEFAULT_LISTEN = ":8888"
ENV_PREFIX = "RTE_EXTENDER_"


@dataclass(frozen=True)
class ExtenderSettings:
    strategy: ScoringStrategy
    cache: CacheSettings
    host: str = "0.0.0.0"
    port: int = 8888
    kubeconfig: str | None = None
    heartbeat_namespace: str = HEARTBEAT_LEASE_NAMESPACE
    nrt_files: tuple[Path, ...] = ()


def parse_listen(text: str, source: str = "--listen") -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` (every address) or ``PORT``; ``[::1]:PORT`` for IPv6."""
    host, sep, port_text = text.strip().rpartition(":")
    if not sep:
        host, port_text = "", text.strip()
    host = host.strip("[]") or "0.0.0.0"
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(source, f"expected HOST:PORT, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise ConfigError(source, f"port out of range: {port}")
    return host, port


def _seconds(text: str | None, source: str) -> float:
    """A duration (``5s``, ``1m``) or bare seconds, like the plugin's ``cacheResyncPeriodSeconds``."""
    if text is None or not str(text).strip():
        return 0.0
    try:
        return parse_duration(str(text), bare_seconds=True)
    except ValueError:
        raise ConfigError(source, f"expected a duration or a number of seconds, got {text!r}") from None


def extender_settings(
    *,
    strategy: str | None = None,
    weights: Sequence[str] = (),
    cache_resync_period: str | None = None,
    discard_reserved: bool = False,
    foreign_pods_detect: str = "All",
    resync_method: str = "Autodetect",
    informer_mode: str = "Dedicated",
    scheduler_profiles: Sequence[str] = (),
    listen: str = DEFAULT_LISTEN,
    kubeconfig: str | None = None,
    heartbeat_namespace: str = HEARTBEAT_LEASE_NAMESPACE,
    heartbeat_max_age: str | None = None,
    stale_action: str = "ignore",
    nrt_files: Sequence[str] = (),
) -> ExtenderSettings:
    """Validate the raw flag values into :class:`ExtenderSettings`."""
    scoring = scoring_strategy(strategy, weights)
    period = _seconds(cache_resync_period, "--cache-resync-period")
    max_age = _seconds(heartbeat_max_age, "--heartbeat-max-age")
    profiles = frozenset(p.strip() for p in scheduler_profiles if p.strip()) or frozenset({DEFAULT_PROFILE})
    selection = cache_settings_from_plugin_args(
        {"cacheResyncPeriodSeconds": period, "discardReservedNodes": bool(discard_reserved)}, profiles
    )
    config = CacheConfig(
        profiles=profiles,
        foreign_pods_detect=parse_enum(ForeignPodsDetect, foreign_pods_detect, "--foreign-pods-detect"),
        resync_method=parse_enum(ResyncMethod, resync_method, "--resync-method"),
        informer_mode=parse_enum(InformerMode, informer_mode, "--informer-mode"),
        heartbeat_max_age=max_age or None,
        stale_action=parse_enum(StaleAction, stale_action, "--stale-action"),
    )
    host, port = parse_listen(listen)
    return ExtenderSettings(
        strategy=scoring,
        cache=CacheSettings(mode=selection.mode, resync_period=period, config=config),
        host=host,
        port=port,
        kubeconfig=kubeconfig or None,
        heartbeat_namespace=heartbeat_namespace.strip(),
        nrt_files=tuple(Path(p) for p in nrt_files),
    )
