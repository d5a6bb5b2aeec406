"""Every knob of one simulation, with defaults, bounds and a docstring each.

The fields carry :mod:`rte.settings` metadata, so ``rte simulate`` offers each as a flag, an
``RTE_SIMULATE_*`` variable and a scenario-file key (:mod:`rte.sim.scenario`), and a bad value
is one line naming where it came from. Constructed directly, a bad value is a
:class:`~rte.errors.SettingError` naming the field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rte.consumer.strategies import DEFAULT_STRATEGY_NAME, STRATEGIES
from rte.errors import SettingError
from rte.model.vocabulary import Compat, FingerprintMethod, InformerMode, NumaPlacementMode
from rte.settings.schema import BOOL, CHOICE, DURATION, FLOAT, INT, STR, setting
from rte.settings.values import validate
from rte.sim.cadence import CADENCE_ADAPTIVE, CADENCES
from rte.sim.kubelet import POLICIES, SCOPES
from rte.sim.priorities import PriorityClass, parse_priority_mix
from rte.sim.specs import Burst, GiB, parse_burst, parse_node_shapes, parse_pod_mix

CACHE_NONE = "none"
CACHE_RESERVE = "reserve"
CACHE_DISCARD = "discard"
CACHE_REFERENCE = "reference-reserve"
"""The reserve cache as the reference plugin reconciles: only on an exact fingerprint match."""
CACHE_ORACLE = "oracle"
"""A scheduler that reads every kubelet's exact state (:mod:`rte.sim.oracle`): the lower bound."""
CACHE_MODES = (CACHE_NONE, CACHE_RESERVE, CACHE_REFERENCE, CACHE_DISCARD, CACHE_ORACLE)

# The headline sweep's dimensions when neither they nor their one-run setting are given (rte.sim.sweep).
SWEEP_NODES = (100, 1000)
SWEEP_INTERVALS = (1.0, 10.0, 60.0)
SWEEP_CACHES = (CACHE_NONE, CACHE_REFERENCE, CACHE_RESERVE, CACHE_ORACLE)

PREEMPTION_OFF = "off"
PREEMPTION_BLIND = "blind"
"""kube-scheduler's default preemption: victims chosen with the node-level fit only."""
PREEMPTION_NUMA = "numa"
"""The same, its victims then checked and completed by rte's preempt verb (rte.consumer.preemption)."""
PREEMPTIONS = (PREEMPTION_OFF, PREEMPTION_BLIND, PREEMPTION_NUMA)

DEFAULT_SHAPES = "2x32c-192Gi"
DEFAULT_POD_MIX = "50%:2c-4Gi,25%:4c-8Gi,15%:8c-16Gi,10%:16c-32Gi"

# Bounds that keep a run within memory: about 10 KiB per simulated node and 0.4 KiB per planned
# pod before the run starts, so the largest run needs well under 2 GiB.
MAX_NODES = 50_000
MAX_PODS = 2_000_000


def _seconds(default: float, **bounds: Any) -> Any:
    """A duration field (seconds; text takes units or a bare number of seconds, as everywhere)."""
    return field(default=default, metadata=setting(DURATION, **bounds))


@dataclass(frozen=True)
class SimConfig:
    """A simulation's inputs. Times are seconds; amounts are bytes."""

    nodes: int = field(default=100, metadata=setting(INT, minimum=1, maximum=MAX_NODES))
    """Cluster size."""
    pods: int = field(default=2000, metadata=setting(INT, minimum=0, maximum=MAX_PODS))
    """Pods created in the run."""
    shapes: str = field(default=DEFAULT_SHAPES, metadata=setting(STR, flag="shape", check=parse_node_shapes))
    """Node shapes, e.g. '70%:2x32c2t-192Gi,30%:4x16c-128Gi+nic4' (zones x CPUs per zone,
    optionally in cores of N threads: 2t; node memory; per-zone extras: hpN, <device>N;
    <device>N@W: N devices attached to each group of W consecutive zones)."""
    pod_mix: str = field(default=DEFAULT_POD_MIX, metadata=setting(STR, check=parse_pod_mix))
    """Pod shapes, e.g. '80%:4c-8Gi,20%:2x2c-4Gi+nic1' (containers x per-container request,
    Guaranteed). CPUs may be fractional (1.5c); per-pod extras: +init<C>c[-<mem>] (init container),
    +sidecar<C>c[-<mem>] (restartPolicy Always), +burstable (CPU limits twice the requests)."""
    policy: str = field(default="single-numa-node", metadata=setting(CHOICE, choices=POLICIES))
    """The kubelets' Topology Manager policy."""
    scope: str = field(default="container", metadata=setting(CHOICE, choices=SCOPES))
    """The kubelets' Topology Manager scope."""
    reserved_cpus: int = field(default=2, metadata=setting(INT, minimum=0))
    """CPUs of zone 0 kept for the system (reservedSystemCPUs); at most a zone's CPUs."""
    reserved_memory: int = GiB
    """Memory of zone 0 kept for the system (``reservedMemory``)."""
    align_by_socket: bool = field(default=False, metadata=setting(BOOL))
    """The kubelets' CPU manager option align-by-socket (restricted only; give node shapes several
    zones per socket, e.g. 4x16c2t2s, for it to matter)."""
    distribute_cpus_across_numa: bool = field(default=False, metadata=setting(BOOL))
    """The kubelets' CPU manager option ``distribute-cpus-across-numa``: a container whose CPUs
    span NUMA zones gets them evenly from each (off: packed, filling zones one by one)."""
    # --- node agents ---
    agent_interval: float = _seconds(10.0)
    """Agent update period; 0 publishes on every change, at once."""
    agent_cadence: str = field(default=CADENCE_ADAPTIVE, metadata=setting(CHOICE, choices=CADENCES))
    """adaptive: a change on a busy node is published as soon as the write rate allows (rte's
    agent); periodic: only on the agent's timer (the reference agents). See rte.sim.cadence."""
    agent_min_gap: float = _seconds(1.0, above=0.0)
    """Adaptive cadence: seconds per write token of one node's agent (1/publish_qps; bursts of 3)."""
    publish_delay: float = _seconds(0.2)
    """From the agent reading the kubelet to its write reaching the apiserver."""
    fingerprint_method: FingerprintMethod = field(
        default=FingerprintMethod.WITH_EXCLUSIVE_RESOURCES, metadata=setting(CHOICE, enum=FingerprintMethod)
    )
    """Which pods the agents' and the scheduler's fingerprints cover."""
    numa_placement: NumaPlacementMode = field(
        default=NumaPlacementMode.CONTAINER, metadata=setting(CHOICE, enum=NumaPlacementMode)
    )
    """container: the agents publish numaplacement, which the reserve cache uses to give ended
    pods' room back sooner (docs/numaplacement.md); none: they do not."""
    # --- scheduler ---
    cache: str = field(default=CACHE_NONE, metadata=setting(CHOICE, choices=CACHE_MODES))
    """none = Passthrough; reserve = the reserve cache reconciling on every NRT (rte's default);
    reference-reserve = the reserve cache reconciling only on an exact fingerprint match (the
    reference plugin); discard = DiscardReserved; oracle = the kubelets' exact state."""
    cache_resync_period: float = field(
        default=5.0, metadata=setting(DURATION, above=0.0, old_names=("resync_period",))
    )
    """Reserve cache: time between resync passes."""
    dirty_after_failures: int = field(
        default=1, metadata=setting(INT, minimum=1, old_flags=("--dirty-after",))
    )
    """Reserve cache: filter failures in a row before a node is resynced (1: the reference)."""
    follow_clean_nodes: bool = field(default=True, metadata=setting(BOOL, old_flags=("--no-follow-clean",)))
    """Reserve cache: adopt new NRTs at once on nodes with no reservation and no mark (off: the
    reference, where clean nodes wait for a resync too)."""
    requeue_on_flush: bool = field(default=False, metadata=setting(BOOL))
    """Treat a reserve-cache flush as a cluster event that requeues unschedulable pods. The
    reference plugin does not (it requeues on NRT and pod events only)."""
    informer_mode: InformerMode = field(
        default=InformerMode.DEDICATED, metadata=setting(CHOICE, enum=InformerMode)
    )
    """The scheduler's informer mode (cache.informerMode), which the agents follow."""
    watch_delay: float = _seconds(0.1)
    """From the NRT write to the scheduler's store applying it."""
    strategy: str = field(default=DEFAULT_STRATEGY_NAME, metadata=setting(CHOICE, choices=STRATEGIES))
    """Score strategy."""
    compat: Compat = field(default=Compat.KUBELET, metadata=setting(CHOICE, enum=Compat))
    """Whose rules the scheduler's Filter and Score follow: the kubelet's admission, or the
    reference plugin's bit for bit (reference)."""
    schedule_cycle: float = _seconds(0.005)
    """Time one scheduling cycle occupies the (single) scheduler."""
    bind_latency: float = _seconds(0.05)
    """From Reserve to the pod being bound (the API write)."""
    admit_delay: float = _seconds(0.5)
    """From the bind to the kubelet's admission."""
    tae_backoff: float = _seconds(1.0)
    """From a TopologyAffinityError to the controller's replacement pod."""
    preemption: str = field(default=PREEMPTION_OFF, metadata=setting(CHOICE, choices=PREEMPTIONS))
    """off: an unschedulable pod waits; blind: kube-scheduler's default preemption (node-level
    fit only); numa: the same with rte's preempt verb, which keeps only victim sets after which
    the kubelet admits the pod (see rte.sim.preemption)."""
    # --- workload ---
    rate: float | None = field(default=None, metadata=setting(FLOAT, optional=True, minimum=0.0))
    """Poisson arrivals per second; empty derives it from load."""
    load: float = field(default=0.7, metadata=setting(FLOAT, above=0.0))
    """Offered CPU load (fraction of allocatable CPUs) used to derive the arrival rate."""
    burst: str | None = field(
        default=None, metadata=setting(STR, optional=True, check=parse_burst, metavar="N/T")
    )
    """N/T: N pods at once every T, e.g. 200/60s (on top of the Poisson stream)."""
    priority_mix: str | None = field(
        default=None,
        metadata=setting(STR, optional=True, check=parse_priority_mix, metavar="CLASS=SHARE,..."),
    )
    """Priority classes and their shares, lowest priority first, e.g. 'low=0.7,high=0.3' (a later
    class preempts an earlier one); empty: every pod has priority 0."""
    mean_duration: float = field(default=300.0, metadata=setting(DURATION, above=0.0, flag="duration"))
    """Mean pod run time (exponential)."""
    seed: int = field(default=1, metadata=setting(INT))
    """Seed of every random choice: the same scenario and seed give the same result."""
    max_time: float | None = field(default=None, metadata=setting(DURATION, optional=True))
    """Stop at this simulated time even if pods are still pending; empty: last arrival + 30m."""
    sample_period: float | None = None
    """Seconds between time-series samples; None: about 200 samples."""
    verify: bool = field(default=False, metadata=setting(BOOL, hidden=True))
    """Cross-check every memoised decision against a full recomputation (slow; for tests)."""

    def __post_init__(self) -> None:
        validate(self)
        if self.reserved_memory < 0:
            raise SettingError("reserved_memory", f"must be >= 0, got {self.reserved_memory}")
        if self.align_by_socket and self.policy == "single-numa-node":
            # policy_options.go ValidateStaticPolicyOptions: the kubelet refuses to start so.
            raise SettingError("align_by_socket", "the kubelet refuses align-by-socket with single-numa-node")
        for _, shape in parse_node_shapes(self.shapes):
            if self.reserved_cpus > shape.cpus_per_zone:
                raise SettingError(
                    "reserved_cpus",
                    f"{self.reserved_cpus} exceeds the {shape.cpus_per_zone} CPUs of a zone"
                    f" of node shape {shape.text!r}",
                )

        # A caller's spelling (any case) becomes the member, so the JSON prints one spelling.
        method = FingerprintMethod.parse(self.fingerprint_method, "fingerprint_method")
        object.__setattr__(self, "fingerprint_method", method)
        object.__setattr__(self, "informer_mode", InformerMode.parse(self.informer_mode, "informer_mode"))
        object.__setattr__(self, "compat", Compat.parse(self.compat, "compat"))
        placement = NumaPlacementMode.parse(self.numa_placement, "numa_placement")
        object.__setattr__(self, "numa_placement", placement)

    def priority_classes(self) -> tuple[PriorityClass, ...]:
        """The priority classes, lowest first (one class of priority 0 without a mix)."""
        if self.priority_mix is None:
            return (PriorityClass("default", 1.0, 0),)
        return parse_priority_mix(self.priority_mix)

    def parsed_burst(self) -> Burst | None:
        return parse_burst(self.burst) if self.burst is not None else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
