"""Settings of ``rte extender``: :class:`ExtenderOptions` as typed (flags, ``RTE_EXTENDER_*``
environment, ``--config FILE``; see :mod:`rte.settings`) and :class:`ExtenderSettings`, what
the extender runs with. The plugin arguments are ``NodeResourceTopologyMatchArgs``
(kubernetes-sigs/scheduler-plugins ``apis/config/types.go``).

Options named after the reference plugin's arguments keep its defaults:

| flag | plugin argument |
|---|---|
| ``--strategy`` | ``scoringStrategy.type`` |
| ``--weight RES=W`` (repeatable) | ``scoringStrategy.resources`` |
| ``--cache-resync-period`` | ``cacheResyncPeriodSeconds`` (0: Passthrough, no reserve cache) |
| ``--discard-reserved`` | ``discardReservedNodes`` |
| ``--foreign-pods-detect`` | ``cache.foreignPodsDetect`` |
| ``--resync-method`` | ``cache.resyncMethod`` |
| ``--informer-mode`` | ``cache.informerMode`` |
| ``--scheduler-profile`` (repeatable) | the profiles' ``schedulerName`` |
| ``--stale-after`` | ``heartbeatMaxAge`` in :class:`~rte.consumer.config.CacheConfig` |

rte's additions (see :class:`~rte.consumer.config.CacheConfig` for their meaning) are off
or at the reference's behaviour by default, except ``--follow-clean-nodes``, which is on. The
example deployment sets the values the reference README recommends (a 5 s period,
``OnlyExclusiveResources``).

``--discard-reserved`` is accepted for parity, but an extender is told of a placement only once
the pod is bound, which is when DiscardReserved stops blocking the node: behind an extender it
behaves like Passthrough.

**Trust** (:mod:`rte.extender.leadership` for the election): ``--tls-cert-file``,
``--tls-private-key-file`` and ``--client-ca-file`` together make ``--listen`` HTTPS with required
client certificates; ``--probe-listen`` then serves the probes and metrics in plain HTTP on
another port. ``--leader-elect`` lets replicas elect one leader on a Lease; only it answers the
verbs, and with ``--leader-elect-service`` it points that Service's EndpointSlice at itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rte.consumer.agentpods import DEFAULT_AGENT_SELECTOR, HeartbeatSource, parse_selector
from rte.consumer.config import (
    DEFAULT_PROFILE,
    CacheConfig,
    CacheSettings,
    ForeignPodsDetect,
    LoadAwareConfig,
    LoadMode,
    Reconcile,
    ResyncMethod,
    ResyncScope,
    StaleAction,
    cache_settings_from_plugin_args,
)
from rte.consumer.strategies import DEFAULT_STRATEGY_NAME, STRATEGIES, parse_weight, weight_table
from rte.errors import ConfigError
from rte.extender.server import DEFAULT_MAX_BODY
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE, ZONE_CPU_UTILIZATION
from rte.model.quantity import ceil_value, parse_quantity
from rte.model.vocabulary import Compat, InformerMode
from rte.runtime.leaderelection import ElectionConfig
from rte.runtime.tls import TlsFiles
from rte.settings.loader import load
from rte.settings.schema import (
    BOOL,
    CHOICE,
    DURATION,
    FLOAT,
    INT,
    LIST,
    LOG_LEVELS,
    PATH,
    STR,
    Schema,
    Spec,
    setting,
)

if TYPE_CHECKING:
    from rte.consumer.score import ScoringStrategy


def parse_size(value: str, source: str = "--max-request-body") -> int:
    """A byte count as a quantity (``32Mi``, ``1000000``), at least 1 KiB."""
    try:
        number = ceil_value(parse_quantity(str(value).strip()))
    except ValueError:
        raise ConfigError(source, f"expected a size such as 32Mi, got {value!r}") from None
    if number < 1024:
        raise ConfigError(source, f"must be at least 1Ki, got {value!r}")
    return number


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


def parse_load_threshold(text: str, source: str = "--load-threshold") -> tuple[str, int]:
    """``"cpuUtilizationPercent=80"`` -> ``("cpuUtilizationPercent", 80)``; percents are 0..100."""
    attribute, sep, percent = text.partition("=")
    try:
        value = int(percent.strip()) if sep and attribute.strip() else None
    except ValueError:
        value = None
    if value is None or not 0 <= value <= 100:
        raise ConfigError(source, f"expected ATTRIBUTE=PERCENT (0..100), got {text!r}")
    return attribute.strip(), value


def _enum(kind: type) -> dict[str, Any]:
    return setting(CHOICE, enum=kind)


@dataclass(frozen=True)
class ExtenderOptions:
    """What ``rte extender`` is told; durations are seconds."""

    listen: str = field(default=":8888", metadata=setting(STR, check=parse_listen, metavar="HOST:PORT"))
    """Address to serve on: HOST:PORT, :PORT (every address) or PORT; [::1]:PORT for IPv6."""
    kubeconfig: Path | None = field(default=None, metadata=setting(PATH))
    """kubeconfig file; empty: the in-cluster service account, else $KUBECONFIG or ~/.kube/config."""
    strategy: str = field(default=DEFAULT_STRATEGY_NAME, metadata=setting(CHOICE, choices=STRATEGIES))
    """Score strategy (the plugin's scoringStrategy.type)."""
    weights: tuple[str, ...] = field(
        default=(),
        metadata=setting(LIST, flag="weight", item=Spec(STR, check=parse_weight), metavar="RES=W"),
    )
    """Score weight of a resource, a positive integer (scoringStrategy.resources); repeatable;
    applied over cpu=1, memory=1."""
    cache_resync_period: float = field(default=0.0, metadata=setting(DURATION))
    """cacheResyncPeriodSeconds (5s, 1m, or bare seconds): > 0 enables the reserve cache (OverReserve)."""
    discard_reserved: bool = field(default=False, metadata=setting(BOOL))
    """discardReservedNodes: the DiscardReserved cache (behind an extender it acts as Passthrough)."""
    foreign_pods_detect: ForeignPodsDetect = field(
        default=ForeignPodsDetect.ALL, metadata=_enum(ForeignPodsDetect)
    )
    """cache.foreignPodsDetect: which pods of other schedulers make a node's cached data untrusted."""
    resync_method: ResyncMethod = field(default=ResyncMethod.AUTODETECT, metadata=_enum(ResyncMethod))
    """cache.resyncMethod: which pods the cache fingerprints to compare with an NRT."""
    informer_mode: InformerMode = field(default=InformerMode.DEDICATED, metadata=_enum(InformerMode))
    """cache.informerMode: which pods count, as the agents' --informer-mode must match."""
    scheduler_profiles: tuple[str, ...] = field(
        default=(DEFAULT_PROFILE,), metadata=setting(LIST, flag="scheduler-profile", metavar="NAME")
    )
    """schedulerName whose pods are ours (others are foreign); repeatable."""
    heartbeat_source: HeartbeatSource = field(
        default=HeartbeatSource.AGENT_PODS, metadata=_enum(HeartbeatSource)
    )
    """How an agent says it still vouches for its NRT: its pod's readiness (no writes; the pods are
    watched anyway) or the Lease it renews (rte run --lease-duration)."""
    lease_namespace: str = field(
        default=HEARTBEAT_LEASE_NAMESPACE, metadata=setting(STR, old_names=("heartbeat_namespace",))
    )
    """Namespace of the agents: their pods (--heartbeat-source agent-pods) or their heartbeat Leases;
    empty: no heartbeats."""
    agent_selector: str = field(
        default=DEFAULT_AGENT_SELECTOR, metadata=setting(STR, check=parse_selector, metavar="K=V,...")
    )
    """Labels of the agent pods (equality only), for --heartbeat-source agent-pods."""
    stale_after: float = field(default=0.0, metadata=setting(DURATION, old_names=("heartbeat_max_age",)))
    """A node whose agent stopped vouching (pod not ready, Lease not renewed) longer ago than this
    is stale; 0: off."""
    stale_action: StaleAction = field(default=StaleAction.IGNORE, metadata=_enum(StaleAction))
    """What a stale node becomes: ignore (reported only), treat-as-no-nrt or unschedulable."""
    stale_if_no_heartbeat: bool = field(default=False, metadata=setting(BOOL))
    """A node with no agent Lease at all counts as stale."""
    resync_scope: ResyncScope = field(default=ResyncScope.ALL, metadata=_enum(ResyncScope))
    """OnlyResources: a Topology Manager change alone does not flush a node's cached data."""
    cache_reconcile: Reconcile = field(default=Reconcile.HISTORY, metadata=_enum(Reconcile))
    """History: adopt every NRT whose fingerprint matches a recent pod set of the node, keeping
    the reservations of pods it lacks; ExactMatch: only on a match with the current set at a
    resync of a node marked dirty (the reference plugin)."""
    dirty_after_failures: int = field(default=1, metadata=setting(INT, minimum=1))
    """Filter failures in a row before a node's fingerprint is checked (1: the reference)."""
    absent_pod_grace: float = field(default=30.0, metadata=setting(DURATION))
    """How long a reservation survives a flush while its pod is missing from the pod list."""
    follow_clean_nodes: bool = field(default=True, metadata=setting(BOOL))
    """Adopt new NRTs at once on nodes with no reservation and no mark (off: the reference)."""
    startup_grace: float = field(default=0.0, metadata=setting(DURATION))
    """After start, nodes not yet confirmed by a fingerprint match are not trusted this long; 0: off."""
    load_mode: LoadMode = field(default=LoadMode.OFF, metadata=_enum(LoadMode))
    """Zones above a load threshold get no pods (filter) or lower the node's score (score)."""
    load_thresholds: tuple[str, ...] = field(
        default=(f"{ZONE_CPU_UTILIZATION}=80",),
        metadata=setting(
            LIST, flag="load-threshold", item=Spec(STR, check=parse_load_threshold), metavar="ATTR=PERCENT"
        ),
    )
    """Zone attribute and the percent above which the zone is busy; repeatable (replaces the default)."""
    load_score_factor: float = field(default=0.5, metadata=setting(FLOAT, minimum=0.0, maximum=1.0))
    """Score mode: the factor applied to a node whose chosen zone is busy."""
    compat: Compat = field(default=Compat.KUBELET, metadata=_enum(Compat))
    """Whose rules Filter and Score follow: the kubelet's admission, or the reference plugin's bit
    for bit (reference)."""
    max_request_body: str = field(default="64Mi", metadata=setting(STR, check=parse_size, metavar="SIZE"))
    """Largest request body accepted, a quantity (64Mi: 5000 whole Nodes); larger ones are answered 413
    before they are read."""
    tls_cert_file: Path | None = field(default=None, metadata=setting(PATH))
    """Serve --listen over HTTPS with this certificate (PEM, chain first); reloaded when it changes."""
    tls_private_key_file: Path | None = field(default=None, metadata=setting(PATH))
    """The private key of --tls-cert-file (PEM)."""
    client_ca_file: Path | None = field(default=None, metadata=setting(PATH))
    """Only clients with a certificate signed by these CAs (PEM) are served; required with TLS."""
    probe_listen: str = field(default="", metadata=setting(STR, metavar="HOST:PORT"))
    """Plain-HTTP address serving only /healthz, /readyz and /metrics (for kubelet and Prometheus);
    empty: those are served on --listen too."""
    leader_elect: bool = field(default=False, metadata=setting(BOOL))
    """Replicas elect a leader on a Lease; only the leader answers filter and prioritize."""
    leader_elect_lease_namespace: str = field(default="rte-scheduler", metadata=setting(STR))
    """Namespace of the leader election Lease."""
    leader_elect_lease_name: str = field(default="rte-extender", metadata=setting(STR))
    """Name of the leader election Lease."""
    leader_elect_lease_duration: float = field(default=15.0, metadata=setting(DURATION))
    """How long a candidate waits after the leader's last renewal before taking over."""
    leader_elect_renew_deadline: float = field(default=10.0, metadata=setting(DURATION))
    """The leader stops acting this long after its last successful renewal began."""
    leader_elect_retry_period: float = field(default=2.0, metadata=setting(DURATION))
    """Time between two attempts to acquire or renew the Lease."""
    leader_elect_identity: str = field(default="", metadata=setting(STR))
    """This replica's name in the Lease; empty: the host name (the pod's name) and a random suffix."""
    leader_elect_service: str = field(default="", metadata=setting(STR, metavar="NAME"))
    """A Service without selector in the Lease's namespace: the leader points its EndpointSlice at
    itself (--leader-elect-advertise-address and the --listen port); empty: no EndpointSlice."""
    leader_elect_advertise_address: str = field(default="", metadata=setting(STR, metavar="IP"))
    """The address the leader publishes for --leader-elect-service (the pod's IP)."""
    nrt_files: tuple[Path, ...] = field(
        default=(), metadata=setting(LIST, flag="nrt-file", item=Spec(PATH), metavar="NRT.yaml")
    )
    """Serve the NRTs in these files instead of watching a cluster (no pods, no Leases); repeatable."""
    log_level: str = field(default="info", metadata=setting(CHOICE, choices=LOG_LEVELS))
    """Least severe level logged."""

    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """Where each non-default value came from (``RTE_EXTENDER_X``, ``<file>: key``, ``--flag``)."""


EXTENDER_SCHEMA = Schema(ExtenderOptions, env_prefix="RTE_EXTENDER_", config_env="RTE_EXTENDER_CONFIG")


@dataclass(frozen=True)
class ExtenderSettings:
    """What the extender runs with, derived from :class:`ExtenderOptions`."""

    strategy: ScoringStrategy
    cache: CacheSettings
    host: str = "0.0.0.0"
    port: int = 8888
    kubeconfig: str | None = None
    heartbeat_namespace: str = HEARTBEAT_LEASE_NAMESPACE
    heartbeat_source: HeartbeatSource = HeartbeatSource.AGENT_PODS
    agent_selector: str = DEFAULT_AGENT_SELECTOR
    nrt_files: tuple[Path, ...] = ()
    compat: Compat = Compat.KUBELET
    max_request_body: int = DEFAULT_MAX_BODY
    tls: TlsFiles | None = None
    probe_address: tuple[str, int] | None = None
    election: ElectionConfig | None = None
    leader_service: str = ""
    advertise_address: str = ""


def _tls(options: ExtenderOptions) -> TlsFiles | None:
    given = {
        "--tls-cert-file": options.tls_cert_file,
        "--tls-private-key-file": options.tls_private_key_file,
        "--client-ca-file": options.client_ca_file,
    }
    missing = [flag for flag, path in given.items() if not path]
    if len(missing) == len(given):
        return None
    if missing:
        raise ConfigError(
            missing[0],
            "TLS needs a certificate, its key and a client CA: without the client CA anyone could call"
            " the verbs",
        )
    assert options.tls_cert_file and options.tls_private_key_file and options.client_ca_file
    return TlsFiles(options.tls_cert_file, options.tls_private_key_file, options.client_ca_file)


def _election(options: ExtenderOptions) -> ElectionConfig | None:
    if not options.leader_elect:
        if options.leader_elect_service:
            raise ConfigError("--leader-elect-service", "needs --leader-elect")
        return None
    if options.nrt_files:
        raise ConfigError("--leader-elect", "needs a cluster; --nrt-file serves files to one process")
    if options.leader_elect_service and not options.leader_elect_advertise_address:
        raise ConfigError("--leader-elect-advertise-address", "must be set with --leader-elect-service")
    identity = options.leader_elect_identity.strip()
    if not identity:
        import socket
        import uuid

        identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    return ElectionConfig(
        identity=identity,
        namespace=options.leader_elect_lease_namespace.strip(),
        name=options.leader_elect_lease_name.strip(),
        lease_duration=options.leader_elect_lease_duration,
        renew_deadline=options.leader_elect_renew_deadline,
        retry_period=options.leader_elect_retry_period,
    ).check()


def resolve(options: ExtenderOptions) -> ExtenderSettings:
    """The scoring strategy, the cache selection and configuration, and the address of ``options``."""
    from rte.consumer.score import ScoringStrategy

    profiles = frozenset(p.strip() for p in options.scheduler_profiles if p.strip()) or frozenset(
        {DEFAULT_PROFILE}
    )
    period = options.cache_resync_period
    selection = cache_settings_from_plugin_args(
        {"cacheResyncPeriodSeconds": period, "discardReservedNodes": options.discard_reserved}, profiles
    )
    thresholds = dict(parse_load_threshold(item) for item in options.load_thresholds)
    config = CacheConfig(
        profiles=profiles,
        foreign_pods_detect=options.foreign_pods_detect,
        resync_method=options.resync_method,
        informer_mode=options.informer_mode,
        heartbeat_max_age=options.stale_after or None,
        stale_action=options.stale_action,
        resync_scope=options.resync_scope,
        reconcile=options.cache_reconcile,
        dirty_after_failures=options.dirty_after_failures,
        absent_pod_grace=options.absent_pod_grace,
        follow_clean_nodes=options.follow_clean_nodes,
        stale_if_no_heartbeat=options.stale_if_no_heartbeat,
        startup_grace=options.startup_grace,
        load=LoadAwareConfig(
            mode=options.load_mode,
            thresholds=thresholds or LoadAwareConfig().thresholds,
            score_factor=options.load_score_factor,
        ),
    )
    host, port = parse_listen(options.listen)
    probe = parse_listen(options.probe_listen, "--probe-listen") if options.probe_listen.strip() else None
    return ExtenderSettings(
        strategy=ScoringStrategy(options.strategy, weight_table(options.weights)),
        cache=CacheSettings(mode=selection.mode, resync_period=period, config=config),
        host=host,
        port=port,
        kubeconfig=str(options.kubeconfig) if options.kubeconfig else None,
        heartbeat_namespace=options.lease_namespace.strip(),
        heartbeat_source=options.heartbeat_source,
        agent_selector=options.agent_selector,
        nrt_files=options.nrt_files,
        compat=options.compat,
        max_request_body=parse_size(options.max_request_body),
        tls=_tls(options),
        probe_address=probe,
        election=_election(options),
        leader_service=options.leader_elect_service.strip(),
        advertise_address=options.leader_elect_advertise_address.strip(),
    )


def extender_settings(**flags: Any) -> ExtenderSettings:
    """:class:`ExtenderSettings` from option values as typed (``cache_resync_period="5s"``), no
    file or environment: for tests and programs embedding the extender."""
    return resolve(load(EXTENDER_SCHEMA, env={}, flags=flags))
