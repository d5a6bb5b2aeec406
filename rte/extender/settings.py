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
(a 5 s period, ``OnlyExclusiveResources``). rte's own additions, each off or at the reference's
behaviour by default (see :class:`~rte.consumer.cacheconfig.CacheConfig` for their meaning):

| flag | ``CacheConfig`` field | default |
|---|---|---|
| ``--resync-scope All|OnlyResources`` | ``resync_scope`` | ``All`` |
| ``--dirty-after-failures N`` | ``dirty_after_failures`` | 1 (the reference) |
| ``--absent-pod-grace DURATION`` | ``absent_pod_grace`` | 30s |
| ``--no-follow-clean-nodes`` | ``follow_clean_nodes`` | follow |
| ``--heartbeat-max-age DURATION`` | ``heartbeat_max_age`` | 0: off |
| ``--stale-action ignore|treat-as-no-nrt|unschedulable`` | ``stale_action`` | ``ignore`` |
| ``--stale-if-no-heartbeat`` | ``stale_if_no_heartbeat`` | off |
| ``--startup-grace DURATION`` | ``startup_grace`` | 0: off |
| ``--load-mode off|filter|score`` | ``load.mode`` | ``off`` |
| ``--load-threshold ATTR=PERCENT`` (repeatable) | ``load.thresholds`` | cpuUtilizationPercent=80 |
| ``--load-score-factor F`` | ``load.score_factor`` | 0.5 |

and ``--kubelet-accurate-sidecars`` (account sidecars as the kubelet does, see
:mod:`rte.consumer.filter`), ``--max-request-body`` (the largest request body accepted, a
quantity such as ``32Mi``; see ``rte.extender.server.DEFAULT_MAX_BODY``), ``--listen``,
``--kubeconfig``, ``--heartbeat-namespace`` (where the agents renew their Leases; empty
disables the Lease watch) and ``--nrt-file`` (serve NRTs from files, with no cluster: for trying
it out and for tests).

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
    LoadAwareConfig,
    LoadMode,
    ResyncMethod,
    ResyncScope,
    StaleAction,
    cache_settings_from_plugin_args,
    parse_enum,
)
from rte.consumer.score import ScoringStrategy
from rte.durations import parse_duration
from rte.errors import ConfigError
from rte.extender.server import DEFAULT_MAX_BODY
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE
from rte.model.quantity import ceil_value, parse_quantity

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
    kubelet_accurate_sidecars: bool = False
    max_request_body: int = DEFAULT_MAX_BODY


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


def _integer(value: int | str, source: str, *, minimum: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(source, f"expected an integer, got {value!r}") from None
    if number < minimum:
        raise ConfigError(source, f"must be at least {minimum}, got {number}")
    return number


def _size(value: int | str, source: str) -> int:
    """A byte count as a quantity (``32Mi``, ``1000000``), at least 1 KiB."""
    try:
        number = ceil_value(parse_quantity(str(value).strip()))
    except ValueError:
        raise ConfigError(source, f"expected a size such as 32Mi, got {value!r}") from None
    if number < 1024:
        raise ConfigError(source, f"must be at least 1Ki, got {value!r}")
    return number


def _load(mode: str, thresholds: Sequence[str], score_factor: float | str) -> LoadAwareConfig:
    """The load-aware option: ``--load-threshold ATTR=PERCENT`` replaces the default thresholds."""
    parsed: dict[str, int] = {}
    for item in thresholds:
        attribute, sep, percent = item.partition("=")
        try:
            value = int(percent.strip()) if sep and attribute.strip() else None
        except ValueError:
            value = None
        if value is None or not 0 <= value <= 100:
            raise ConfigError("--load-threshold", f"expected ATTRIBUTE=PERCENT (0..100), got {item!r}")
        parsed[attribute.strip()] = value
    try:
        factor = float(str(score_factor).strip())
    except ValueError:
        raise ConfigError("--load-score-factor", f"expected a number, got {score_factor!r}") from None
    if not 0 <= factor <= 1:
        raise ConfigError("--load-score-factor", f"must be within 0..1, got {factor:g}")
    default = LoadAwareConfig()
    return LoadAwareConfig(
        mode=parse_enum(LoadMode, mode, "--load-mode"),
        thresholds=parsed or default.thresholds,
        score_factor=factor,
    )


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
    resync_scope: str = "All",
    dirty_after_failures: int | str = 1,
    absent_pod_grace: str | None = "30s",
    follow_clean_nodes: bool = True,
    stale_if_no_heartbeat: bool = False,
    startup_grace: str | None = None,
    load_mode: str = "off",
    load_thresholds: Sequence[str] = (),
    load_score_factor: float | str = 0.5,
    kubelet_accurate_sidecars: bool = False,
    max_request_body: int | str = DEFAULT_MAX_BODY,
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
        resync_scope=parse_enum(ResyncScope, resync_scope, "--resync-scope"),
        dirty_after_failures=_integer(dirty_after_failures, "--dirty-after-failures", minimum=1),
        absent_pod_grace=_seconds(absent_pod_grace, "--absent-pod-grace"),
        follow_clean_nodes=bool(follow_clean_nodes),
        stale_if_no_heartbeat=bool(stale_if_no_heartbeat),
        startup_grace=_seconds(startup_grace, "--startup-grace"),
        load=_load(load_mode, load_thresholds, load_score_factor),
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
        kubelet_accurate_sidecars=bool(kubelet_accurate_sidecars),
        max_request_body=_size(max_request_body, "--max-request-body"),
    )
