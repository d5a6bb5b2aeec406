"""Typed settings of the node agent (``rte run``), layered: defaults < file < environment < flags.

The mechanism (flags, ``RTE_<SETTING>`` environment, ``--config FILE``, ``--dump-config``) is
:mod:`rte.settings`; this module declares the agent's settings and their cross-checks.

* **file**: keys are the field names below (``poll_interval: 500ms``); ``RTE_CONFIG`` names the
  file when ``--config`` is not given.
* **environment**: ``RTE_<FIELD>`` (``RTE_POLL_INTERVAL=2s``), plus ``NODE_NAME`` (the downward
  API convention) below ``RTE_NODE_NAME``.

Durations take Go's units (``500ms``, ``60s``, ``1m30s``, ``1h``) or a bare number of seconds
(``2``), as in every rte command; ``0`` means "off" where a field says so. (The reference agent's
own config file counts bare numbers in nanoseconds; its keys differ, so such a file is refused
before any of its values is read.)

Every host path the agent reads is a field here; no module below has a default path of its own.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rte.durations import format_duration
from rte.errors import SettingError
from rte.model.names import object_name_problem
from rte.model.vocabulary import FingerprintMethod, InformerMode, NumaPlacementMode, ZoneNames
from rte.podres.reader import endpoint_problem
from rte.settings.loader import load, located, render_settings
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
    setting,
)

LOG_FORMATS = ("text", "json")


@dataclass(frozen=True)
class AgentSettings:
    """The effective configuration of one agent process. Durations are in seconds."""

    # -- identity and cluster ------------------------------------------------------------------
    node_name: str = field(default="", metadata=setting(STR, env_aliases=("NODE_NAME",)))
    """Name of this node and of its NRT object; empty means the host name. Also from NODE_NAME."""
    kubeconfig: Path | None = field(default=None, metadata=setting(PATH))
    """Kubeconfig file for the apiserver; empty: $KUBECONFIG if set, else the in-cluster service account."""
    publish: bool = field(default=True, metadata=setting(BOOL))
    """Write the NRT object; false (--no-publish) prints each new object on stdout instead: no cluster."""

    # -- host paths ----------------------------------------------------------------------------
    sysfs_root: Path = field(default=Path("/sys"), metadata=setting(PATH, aliases=("--sysfs",)))
    """The sysfs root holding devices/system/node (the host's /sys, mounted read-only)."""
    kubelet_root: Path = field(default=Path("/var/lib/kubelet"), metadata=setting(PATH))
    """The kubelet root dir: its checkpoint files and device-plugins/ are watched for changes."""
    podresources: str = field(
        default="unix:///var/lib/kubelet/pod-resources/kubelet.sock", metadata=setting(STR)
    )
    """Kubelet podresources endpoint (unix socket) or a scenario directory (list.*, ...)."""
    kubelet_config: Path | None = field(default=None, metadata=setting(PATH))
    """Kubelet config file (YAML, /configz JSON or KubeletConfig CR); empty: TM attributes unknown."""
    kubelet_config_dir: Path | None = field(default=None, metadata=setting(PATH))
    """The kubelet's --config-dir of *.conf drop-ins merged over kubelet_config; empty: none."""
    notify_file: Path | None = field(default=Path("/run/rte/notify"), metadata=setting(PATH))
    """A file whose touch triggers a cycle (created if absent, watched with inotify); empty: off."""

    # -- triggers ------------------------------------------------------------------------------
    poll_interval: float = field(default=0.5, metadata=setting(DURATION))
    """How often podresources List is polled; a cycle runs only when its result changed. 0: off."""
    resync_interval: float = field(default=60.0, metadata=setting(DURATION, minimum=1.0))
    """Safety-net cycle that also re-reads the stored NRT (recreates it if deleted)."""
    allocatable_refresh: float = field(default=5.0, metadata=setting(DURATION))
    """How often GetAllocatableResources is re-read: device health changes publish in seconds. 0: never."""
    watch_kubelet_state: bool = field(default=True, metadata=setting(BOOL))
    """Also watch the kubelet checkpoint files and device-plugins/ under kubelet_root."""
    debounce: float = field(default=0.1, metadata=setting(DURATION))
    """Quiet time that ends a burst of triggers; the burst becomes one cycle."""
    max_delay: float = field(default=1.0, metadata=setting(DURATION))
    """Upper bound on how long debouncing may postpone a cycle during a continuous burst."""

    # -- kubelet -------------------------------------------------------------------------------
    kubelet_timeout: float = field(default=10.0, metadata=setting(DURATION, minimum=0.001))
    """Deadline of each podresources call."""
    kubelet_qps: float = field(default=5.0, metadata=setting(FLOAT, minimum=0.1))
    """Client-side limit on podresources calls per second (the kubelet allows 100, shared)."""
    kubelet_burst: int = field(default=5, metadata=setting(INT, minimum=1))
    """Burst of the podresources client-side limit."""
    max_listed_pods: int = field(default=0, metadata=setting(INT, minimum=0))
    """Most pods one List answer may hold; more is bad data (unready, nothing decoded or published).
    0: 4 x the kubelet config's maxPods (4000 when no kubelet config is read)."""

    # -- apiserver -----------------------------------------------------------------------------
    publish_qps: float = field(default=1.0, metadata=setting(FLOAT, minimum=0.001))
    """At most this many NRT writes per second (a token bucket)."""
    publish_burst: int = field(default=3, metadata=setting(INT, minimum=1))
    """Burst of the NRT write limit."""
    api_qps: float = field(default=5.0, metadata=setting(FLOAT, minimum=0.1))
    """Client-side limit on apiserver requests per second."""
    request_timeout: float = field(
        default=10.0, metadata=setting(DURATION, minimum=0.001, old_names=("api_timeout",))
    )
    """Deadline of each apiserver request."""
    owner_reference: bool = field(default=True, metadata=setting(BOOL))
    """Make the Node the NRT's owner, so deleting the Node deletes its NRT."""
    field_manager: str = field(default="rte-agent", metadata=setting(STR))
    """Field manager name of our writes."""
    lease_duration: float = field(default=0.0, metadata=setting(DURATION))
    """Heartbeat Lease duration, renewed every quarter of it; 0 (the default): no Lease, consumers
    read the agent pod's readiness instead (written by the kubelet on change only: no steady-state
    writes; docs/freshness.md). 40s is the kubelet's own node-Lease choice, for consumers that read
    Leases."""
    lease_namespace: str = field(default="rte", metadata=setting(STR))
    """Namespace of the heartbeat Lease named after the node."""
    retry_base: float = field(default=0.5, metadata=setting(DURATION, minimum=0.001))
    """First retry delay after a failed cycle (kubelet or apiserver); doubles up to retry_cap."""
    retry_cap: float = field(default=30.0, metadata=setting(DURATION, minimum=0.001))
    """Longest retry delay."""

    # -- what is published ---------------------------------------------------------------------
    fingerprint_method: FingerprintMethod = field(
        default=FingerprintMethod.WITH_EXCLUSIVE_RESOURCES, metadata=setting(CHOICE, enum=FingerprintMethod)
    )
    """Which pods the fingerprint covers."""
    pod_watch: bool = field(default=True, metadata=setting(BOOL))
    """Watch the pods bound to this node so the fingerprint follows the scheduler's spec rule."""
    nrt_watch: bool = field(default=True, metadata=setting(BOOL))
    """Watch this node's own NRT and repair a deletion or foreign edit at once (needs list and
    watch on noderesourcetopologies); off: the resync repairs it, within resync_interval."""
    pod_watch_as_node: bool = field(default=False, metadata=setting(BOOL))
    """List and watch those pods as the node itself (constrained impersonation, Kubernetes 1.36+):
    the agent's token then needs no right to read pods (deploy/components/pods-as-node)."""
    informer_mode: InformerMode = field(
        default=InformerMode.DEDICATED, metadata=setting(CHOICE, enum=InformerMode)
    )
    """The consumer's informer mode, which decides which pods it fingerprints."""
    pod_exclude: tuple[str, ...] = field(default=(), metadata=setting(LIST, metavar="GLOB"))
    """namespace/name shell globs of pods left out of the fingerprint (comma-separated in env)."""
    numa_placement: NumaPlacementMode = field(
        default=NumaPlacementMode.CONTAINER, metadata=setting(CHOICE, enum=NumaPlacementMode)
    )
    """container: publish which NUMA node each exclusive container sits on (numaplacement
    attributes, single-numa-node policy only); none: do not."""
    zone_names: ZoneNames = field(default=ZoneNames.NUMA_ID, metadata=setting(CHOICE, enum=ZoneNames))
    """numa-id: zones node-<kernel NUMA id> (truthful); dense: node-0..node-<k-1> by ascending id,
    for consumers that crash on sparse ids (scheduler-plugins' Score); docs/compatibility.md."""
    zone_load: bool = field(default=False, metadata=setting(BOOL))
    """Publish per-zone CPU and memory use attributes (each changes only when leaving its band)."""
    zone_load_band: float = field(default=10.0, metadata=setting(FLOAT, above=0.0, maximum=100.0))
    """Width in percent points of the band a load value must leave to be republished."""

    # -- operations ----------------------------------------------------------------------------
    http_address: str = field(default="0.0.0.0:8080", metadata=setting(STR))
    """host:port of /healthz, /readyz and /metrics; empty turns the HTTP server off."""
    ready_factor: float = field(default=3.0, metadata=setting(FLOAT, minimum=1.0))
    """/readyz fails when no publish succeeded within ready_factor x resync_interval."""
    stall_timeout: float = field(default=300.0, metadata=setting(DURATION, minimum=1.0))
    """/healthz fails when one cycle has been running longer than this."""
    shutdown_timeout: float = field(default=5.0, metadata=setting(DURATION))
    """On SIGTERM, how long the current cycle may take to finish before it is abandoned."""
    log_level: str = field(default="info", metadata=setting(CHOICE, choices=LOG_LEVELS))
    """Least severe level logged."""
    log_format: str = field(default="text", metadata=setting(CHOICE, choices=LOG_FORMATS))
    """text (one line per record) or json (one object per line)."""

    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """Where each non-default value came from (``RTE_X``, ``<file>: key``, ``--flag``): for messages."""

    def origin(self, name: str) -> str:
        """Where field ``name`` got its value (``default`` when no layer set it)."""
        return self.origins.get(name, "default")


AGENT_SCHEMA = Schema(AgentSettings, env_prefix="RTE_", config_env="RTE_CONFIG")


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` (``:8080`` listens everywhere) -> (host, port); ``ValueError`` otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"not host:port: {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def _validate(s: AgentSettings) -> None:
    """Checks across settings; each raises a :class:`SettingError` naming the field to fix."""
    problem = object_name_problem(s.node_name)
    if problem:
        raise SettingError("node_name", problem)
    if not s.podresources:
        raise SettingError("podresources", "must not be empty")
    # A socket that is not there yet is waited for; a regular file or another scheme never works.
    problem = endpoint_problem(s.podresources, must_exist=False)
    if problem:
        raise SettingError("podresources", f"{s.podresources}: {problem}")
    if s.debounce > s.max_delay:
        raise SettingError(
            "debounce", f"{format_duration(s.debounce)} exceeds max_delay {format_duration(s.max_delay)}"
        )
    if s.retry_base > s.retry_cap:
        raise SettingError(
            "retry_base", f"{format_duration(s.retry_base)} exceeds retry_cap {format_duration(s.retry_cap)}"
        )
    if s.lease_duration and s.lease_duration < 1:
        raise SettingError("lease_duration", "must be 0 (off) or at least 1s")
    if s.http_address:
        try:
            parse_address(s.http_address)
        except ValueError as e:
            raise SettingError("http_address", str(e)) from e


def load_settings(
    *,
    config_file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    hostname: Callable[[], str] = socket.gethostname,
) -> AgentSettings:
    """Defaults < ``config_file`` (else ``$RTE_CONFIG``) < ``env`` (default ``os.environ``) < ``flags``.

    ``flags`` maps field names to flag values; ``None`` means "not given". Raises
    :class:`~rte.errors.ConfigError` naming the layer and key of the first bad value.
    """
    settings = load(AGENT_SCHEMA, config_file=config_file, env=env, flags=flags)
    if not settings.node_name:
        settings = replace(settings, node_name=hostname().lower())
    try:
        _validate(settings)
    except SettingError as e:
        raise located(AGENT_SCHEMA, settings.origins, e) from e
    return settings


def dump_settings(s: AgentSettings) -> str:
    """The effective settings as a YAML config file (loadable with ``--config``), with comments."""
    return render_settings(AGENT_SCHEMA, s)
