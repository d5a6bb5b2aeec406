"""Every knob of a simulation, with defaults and validation (one-line errors naming the option)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rte.consumer.score import STRATEGIES
from rte.errors import InputError
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.sim.kubelet import POLICIES, SCOPES
from rte.sim.specs import Burst, GiB, parse_burst, parse_node_shapes, parse_pod_mix

CACHE_NONE = "none"
CACHE_RESERVE = "reserve"
CACHE_DISCARD = "discard"
CACHE_MODES = (CACHE_NONE, CACHE_RESERVE, CACHE_DISCARD)

DEFAULT_SHAPES = "2x32c-192Gi"
DEFAULT_POD_MIX = "50%:2c-4Gi,25%:4c-8Gi,15%:8c-16Gi,10%:16c-32Gi"


@dataclass(frozen=True)
class SimConfig:
    """A simulation's inputs. Times are seconds; amounts are bytes."""

    nodes: int = 100
    pods: int = 2000
    shapes: str = DEFAULT_SHAPES
    """Node shapes, see :func:`rte.sim.specs.parse_node_shapes`."""
    pod_mix: str = DEFAULT_POD_MIX
    """Pod shapes, see :func:`rte.sim.specs.parse_pod_mix`."""
    policy: str = "single-numa-node"
    scope: str = "container"
    reserved_cpus: int = 2
    """CPUs of zone 0 kept for the system (``reservedSystemCPUs``)."""
    reserved_memory: int = GiB
    """Memory of zone 0 kept for the system (``reservedMemory``)."""
    # --- node agents ---
    agent_interval: float = 10.0
    """Seconds between agent updates; 0 publishes on every change, at once."""
    publish_delay: float = 0.2
    """From reading the kubelet to the write reaching the apiserver."""
    fingerprint_method: FingerprintMethod = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES
    # --- scheduler ---
    cache: str = CACHE_NONE
    resync_period: float = 5.0
    """Reserve cache: seconds between resync passes."""
    dirty_after_failures: int = 1
    follow_clean_nodes: bool = True
    requeue_on_flush: bool = False
    """Treat a reserve-cache flush as a cluster event that requeues unschedulable pods. The
    reference plugin does not (it requeues on NRT and pod events only)."""
    informer_mode: InformerMode = InformerMode.DEDICATED
    watch_delay: float = 0.1
    """From the NRT write to the scheduler's store applying it."""
    strategy: str = "LeastAllocated"
    schedule_cycle: float = 0.005
    """Seconds one scheduling cycle occupies the (single) scheduler."""
    bind_latency: float = 0.05
    """From Reserve to the pod being bound (the API write)."""
    admit_delay: float = 0.5
    """From the bind to the kubelet's admission."""
    tae_backoff: float = 1.0
    """From a TopologyAffinityError to the controller's replacement pod."""
    # --- workload ---
    rate: float | None = None
    """Poisson arrivals per second; None derives it from ``load``."""
    load: float = 0.7
    """Offered CPU load (fraction of allocatable CPUs) used to derive ``rate``."""
    burst: str | None = None
    """``N/T``: N pods at once every T seconds (on top of the Poisson stream)."""
    mean_duration: float = 300.0
    seed: int = 1
    max_time: float | None = None
    """Stop here even if pods are still pending; None: last arrival + 1800 s."""
    sample_period: float | None = None
    """Seconds between time-series samples; None: about 200 samples."""
    verify: bool = False
    """Cross-check every memoised decision against a full recomputation (slow; for tests)."""

    def __post_init__(self) -> None:
        def positive(name: str, value: float, allow_zero: bool = True) -> None:
            if value < 0 or (value == 0 and not allow_zero):
                raise InputError(
                    f"--{name.replace('_', '-')}", f"must be {'>= 0' if allow_zero else '> 0'}, got {value}"
                )

        if self.nodes < 1:
            raise InputError("--nodes", f"must be at least 1, got {self.nodes}")
        positive("pods", self.pods)
        for name in (
            "agent_interval",
            "publish_delay",
            "watch_delay",
            "schedule_cycle",
            "bind_latency",
            "admit_delay",
            "tae_backoff",
            "reserved_cpus",
            "reserved_memory",
        ):
            positive(name, getattr(self, name))
        positive("resync_period", self.resync_period, allow_zero=False)
        positive("mean_duration", self.mean_duration, allow_zero=False)
        positive("load", self.load, allow_zero=False)
        if self.rate is not None:
            positive("rate", self.rate)
        if self.cache not in CACHE_MODES:
            raise InputError("--cache", f"{self.cache!r} is not one of {', '.join(CACHE_MODES)}")
        if self.policy not in POLICIES:
            raise InputError("--policy", f"{self.policy!r} is not one of {', '.join(POLICIES)}")
        if self.scope not in SCOPES:
            raise InputError("--scope", f"{self.scope!r} is not one of {', '.join(SCOPES)}")
        if self.strategy not in STRATEGIES:
            raise InputError("--strategy", f"{self.strategy!r} is not one of {', '.join(STRATEGIES)}")
        # Spellings from a caller (any case) become the members, so the JSON prints one spelling.
        method = FingerprintMethod.parse(self.fingerprint_method, "--fingerprint-method")
        object.__setattr__(self, "fingerprint_method", method)
        object.__setattr__(self, "informer_mode", InformerMode.parse(self.informer_mode, "--informer-mode"))
        if self.dirty_after_failures < 1:
            raise InputError("--dirty-after", f"must be at least 1, got {self.dirty_after_failures}")
        parse_node_shapes(self.shapes)
        parse_pod_mix(self.pod_mix)
        if self.burst is not None:
            parse_burst(self.burst)

    def parsed_burst(self) -> Burst | None:
        return parse_burst(self.burst) if self.burst is not None else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
