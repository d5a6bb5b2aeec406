"""Typed settings of the node agent (``rte run``), layered: defaults < file < environment < flags.

* **file**: a YAML mapping given with ``--config FILE`` (or ``RTE_CONFIG``); keys are the field
  names below (``poll_interval: 500ms``). An unknown key is an error: a typo must not silently
  leave a default in place.
* **environment**: ``RTE_<FIELD>`` (``RTE_POLL_INTERVAL=2s``), plus ``NODE_NAME`` (the downward
  API convention) below ``RTE_NODE_NAME``. Unknown ``RTE_*`` variables are ignored on purpose:
  Kubernetes injects ``<SERVICE>_PORT``-style variables, and a Service named ``rte-...`` would
  otherwise stop the agent from starting.
* **flags**: ``--poll-interval 2s`` etc., one per field (see :func:`rte.commands.run_options`).

Durations are strings with units, as in Go (``500ms``, ``60s``, ``1m30s``, ``1h``); ``0`` means
"off" where a field says so. A bare number is refused, because "60" could mean seconds or, as in
the reference agent's config file, nanoseconds. Every mistake is a one-line
:class:`~rte.errors.ConfigError` naming the layer and key, e.g.
``RTE_POLL_INTERVAL: not a duration: 'fast'``.

Every host path the agent reads is a field here; no module below has a default path of its own.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

ENV_PREFIX = "RTE_"
CONFIG_FILE_ENV = "RTE_CONFIG"
ENV_ALIASES: Mapping[str, tuple[str, ...]] = {"node_name": ("NODE_NAME",)}
"""Extra environment variables for a field, applied below ``RTE_<FIELD>``."""

FINGERPRINT_METHODS = ("with-exclusive-resources", "all")
INFORMER_MODES = ("dedicated", "shared")
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")

# Field kinds (metadata["kind"]); the annotation alone cannot tell a duration from a float.
STR, PATH, BOOL, INT, FLOAT, DURATION, CHOICE, LIST = (
    "str",
    "path",
    "bool",
    "int",
    "float",
    "duration",
    "choice",
    "list",
)


def _m(kind: str, *, choices: tuple[str, ...] = (), minimum: float | None = None) -> dict[str, Any]:
    return {"kind": kind, "choices": choices, "minimum": minimum}


@dataclass(frozen=True)
class Settings:
    """The effective configuration of one agent process. Durations are in seconds."""

    # -- identity and cluster ------------------------------------------------------------------
    node_name: str = field(default="", metadata=_m(STR))
    """Name of this node and of its NRT object; empty means the host name. Also from NODE_NAME."""
    kubeconfig: Path | None = field(default=None, metadata=_m(PATH))
    """Kubeconfig file for the apiserver; empty means the in-cluster service account."""
    publish: bool = field(default=True, metadata=_m(BOOL))
    """Write the NRT object; false (--no-publish) prints each new object on stdout instead: no cluster."""

    # -- host paths ----------------------------------------------------------------------------
    sysfs_root: Path = field(default=Path("/sys"), metadata=_m(PATH))
    """The sysfs root holding devices/system/node (the host's /sys, mounted read-only)."""
    kubelet_root: Path = field(default=Path("/var/lib/kubelet"), metadata=_m(PATH))
    """The kubelet root dir: its checkpoint files and device-plugins/ are watched for changes."""
    podresources: str = field(default="unix:///var/lib/kubelet/pod-resources/kubelet.sock", metadata=_m(STR))
    """Kubelet podresources endpoint (unix socket) or a scenario directory (list.*, ...)."""
    kubelet_config: Path | None = field(default=None, metadata=_m(PATH))
    """Kubelet config file (YAML, /configz JSON or KubeletConfig CR); empty: TM attributes unknown."""
    kubelet_config_dir: Path | None = field(default=None, metadata=_m(PATH))
    """The kubelet's --config-dir of *.conf drop-ins merged over kubelet_config; empty: none."""
    notify_file: Path | None = field(default=Path("/run/rte/notify"), metadata=_m(PATH))
    """A file whose touch triggers a cycle (created if absent, watched with inotify); empty: off."""

    # -- triggers ------------------------------------------------------------------------------
    poll_interval: float = field(default=0.5, metadata=_m(DURATION))
    """How often podresources List is polled; a cycle runs only when its result changed. 0: off."""
    resync_interval: float = field(default=60.0, metadata=_m(DURATION, minimum=1.0))
    """Safety-net cycle that also re-reads the stored NRT (recreates it if deleted)."""
    allocatable_refresh: float = field(default=5.0, metadata=_m(DURATION))
    """How often GetAllocatableResources is re-read: device health changes publish in seconds. 0: never."""
    watch_kubelet_state: bool = field(default=True, metadata=_m(BOOL))
    """Also watch the kubelet checkpoint files and device-plugins/ under kubelet_root."""
    debounce: float = field(default=0.1, metadata=_m(DURATION))
    """Quiet time that ends a burst of triggers; the burst becomes one cycle."""
    max_delay: float = field(default=1.0, metadata=_m(DURATION))
    """Upper bound on how long debouncing may postpone a cycle during a continuous burst."""

    # -- kubelet -------------------------------------------------------------------------------
    kubelet_timeout: float = field(default=10.0, metadata=_m(DURATION, minimum=0.001))
    """Deadline of each podresources call."""
    kubelet_qps: float = field(default=5.0, metadata=_m(FLOAT, minimum=0.1))
    """Client-side limit on podresources calls per second (the kubelet allows 100, shared)."""
    kubelet_burst: int = field(default=5, metadata=_m(INT, minimum=1))
    """Burst of the podresources client-side limit."""

    # -- apiserver -----------------------------------------------------------------------------
    publish_qps: float = field(default=1.0, metadata=_m(FLOAT, minimum=0.001))
    """At most this many NRT writes per second (a token bucket)."""
    publish_burst: int = field(default=3, metadata=_m(INT, minimum=1))
    """Burst of the NRT write limit."""
    api_qps: float = field(default=5.0, metadata=_m(FLOAT, minimum=0.1))
    """Client-side limit on apiserver requests per second."""
    api_timeout: float = field(default=10.0, metadata=_m(DURATION, minimum=0.001))
    """Deadline of each apiserver request."""
    owner_reference: bool = field(default=True, metadata=_m(BOOL))
    """Make the Node the NRT's owner, so deleting the Node deletes its NRT."""
    field_manager: str = field(default="rte-agent", metadata=_m(STR))
    """Field manager name of our writes."""
    lease_duration: float = field(default=40.0, metadata=_m(DURATION))
    """Heartbeat Lease duration, renewed every quarter of it; 0 turns the heartbeat off."""
    lease_namespace: str = field(default="rte", metadata=_m(STR))
    """Namespace of the heartbeat Lease named after the node."""
    retry_base: float = field(default=0.5, metadata=_m(DURATION, minimum=0.001))
    """First retry delay after a failed cycle (kubelet or apiserver); doubles up to retry_cap."""
    retry_cap: float = field(default=30.0, metadata=_m(DURATION, minimum=0.001))
    """Longest retry delay."""

    # -- what is published ---------------------------------------------------------------------
    fingerprint_method: str = field(
        default="with-exclusive-resources", metadata=_m(CHOICE, choices=FINGERPRINT_METHODS)
    )
    """Which pods the fingerprint covers."""
    pod_watch: bool = field(default=True, metadata=_m(BOOL))
    """Watch the pods bound to this node so the fingerprint follows the scheduler's spec rule."""
    informer_mode: str = field(default="dedicated", metadata=_m(CHOICE, choices=INFORMER_MODES))
    """The consumer's informer mode, which decides which pods it fingerprints."""
    pod_exclude: tuple[str, ...] = field(default=(), metadata=_m(LIST))
    """namespace/name shell globs of pods left out of the fingerprint (comma-separated in env)."""
    zone_load: bool = field(default=False, metadata=_m(BOOL))
    """Publish per-zone CPU and memory use attributes (each changes only when leaving its band)."""
    zone_load_band: float = field(default=10.0, metadata=_m(FLOAT, minimum=0.0))
    """Width in percent points of the band a load value must leave to be republished."""

    # -- operations ----------------------------------------------------------------------------
    http_address: str = field(default="0.0.0.0:8080", metadata=_m(STR))
    """host:port of /healthz, /readyz and /metrics; empty turns the HTTP server off."""
    ready_factor: float = field(default=3.0, metadata=_m(FLOAT, minimum=1.0))
    """/readyz fails when no publish succeeded within ready_factor x resync_interval."""
    stall_timeout: float = field(default=300.0, metadata=_m(DURATION, minimum=1.0))
    """/healthz fails when one cycle has been running longer than this."""
    shutdown_timeout: float = field(default=5.0, metadata=_m(DURATION))
    """On SIGTERM, how long the current cycle may take to finish before it is abandoned."""
    log_level: str = field(default="info", metadata=_m(CHOICE, choices=LOG_LEVELS))
    """Least severe level logged."""
    log_format: str = field(default="text", metadata=_m(CHOICE, choices=LOG_FORMATS))
    """text (one line per record) or json (one object per line)."""

    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """Where each non-default value came from (``RTE_X``, ``<file>: key``, ``--flag``): for messages."""

    def origin(self, name: str) -> str:
        """Where field ``name`` got its value (``default`` when no layer set it)."""
        return self.origins.get(name, "default")


# ---- field catalogue -------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldInfo:
    """One setting as the loaders, ``--dump-config`` and the flag builder see it."""

    name: str
    kind: str
    default: Any
    choices: tuple[str, ...]
    minimum: float | None

    @property
    def doc(self) -> str:
        return _docstrings().get(self.name, "")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@functools.cache
def _docstrings() -> dict[str, str]:
    """Attribute docstrings of :class:`Settings`, read from its source (empty when unavailable).

    Only ``--help`` and ``--dump-config`` need them, so the parsing happens on first use.
    """
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(Settings)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for stmt, after in itertools.pairwise(body):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[stmt.target.id] = " ".join(after.value.value.split())
    return docs


@functools.cache
def catalogue() -> tuple[FieldInfo, ...]:
    return tuple(
        FieldInfo(
            f.name,
            f.metadata["kind"],
            f.default,
            f.metadata["choices"],
            f.metadata["minimum"],
        )
        for f in fields(Settings)
        if "kind" in f.metadata
    )
