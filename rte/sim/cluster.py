"""Building the simulated cluster from a :class:`~rte.sim.config.SimConfig`.

The nodes (named ``node-0000``, ... in shape order), each with its hardware, kubelet and agent,
and the scheduler's NRT cache. The event loop (:mod:`rte.sim.engine`) only drives them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from rte.consumer.cache.interface import NRTCache
from rte.consumer.cache.selection import make_cache
from rte.consumer.config import CacheConfig, CacheMode, CacheSettings, Reconcile
from rte.consumer.store import NRTStore
from rte.host.kubelet_config import DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION
from rte.model.exclusive import is_exclusive
from rte.model.pod import PHASE_RUNNING, Pod
from rte.model.vocabulary import InformerMode
from rte.sim.agent import SimAgent
from rte.sim.config import CACHE_DISCARD, CACHE_REFERENCE, CACHE_RESERVE, SimConfig
from rte.sim.hardware import NodeHardware, build_hardware
from rte.sim.kubelet import SimKubelet
from rte.sim.specs import parse_node_shapes, split_counts


@dataclass
class Nodes:
    """One entry per node, index-aligned."""

    names: list[str]
    hardware: list[NodeHardware]
    kubelets: list[SimKubelet]
    agents: list[SimAgent]
    agent_informer_mode: InformerMode
    """``dedicated`` or ``shared``: which pods the agents' fingerprints count."""


def cpu_manager_options(config: SimConfig) -> dict[str, str]:
    """The kubelets' ``cpuManagerPolicyOptions``."""
    if config.distribute_cpus_across_numa:
        return {DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION: "true"}
    return {}


def build_nodes(config: SimConfig) -> Nodes:
    shapes = parse_node_shapes(config.shapes)
    kinds = [
        build_hardware(
            shape,
            policy=config.policy,
            scope=config.scope,
            reserved_cpus=config.reserved_cpus,
            reserved_memory=config.reserved_memory,
            align_by_socket=config.align_by_socket,
            cpu_manager_options=cpu_manager_options(config),
        )
        for _, shape in shapes
    ]
    names: list[str] = []
    hardware: list[NodeHardware] = []
    for kind, count in zip(kinds, split_counts(config.nodes, tuple(p for p, _ in shapes)), strict=True):
        for _ in range(count):
            names.append(f"node-{len(names):04d}")
            hardware.append(kind)
    mode = config.informer_mode
    kubelets = [SimKubelet(hw) for hw in hardware]
    agents = [
        SimAgent(
            name,
            hw,
            kubelet,
            method=config.fingerprint_method,
            informer_mode=mode,
            numa_placement=config.numa_placement,
        )
        for name, hw, kubelet in zip(names, hardware, kubelets, strict=True)
    ]
    return Nodes(names, hardware, kubelets, agents, mode)


def build_cache(config: SimConfig, store: NRTStore, clock: Callable[[], float]) -> tuple[NRTCache, CacheMode]:
    """The scheduler's cache in the configured mode (none and oracle = Passthrough: the engine
    puts the oracle in place, as it reads the engine's kubelets)."""
    modes = {
        CACHE_RESERVE: CacheMode.OVER_RESERVE,
        CACHE_REFERENCE: CacheMode.OVER_RESERVE,
        CACHE_DISCARD: CacheMode.DISCARD_RESERVED,
    }
    mode = modes.get(config.cache, CacheMode.PASSTHROUGH)
    cache_config = CacheConfig(
        dirty_after_failures=config.dirty_after_failures,
        follow_clean_nodes=config.follow_clean_nodes,
        informer_mode=config.informer_mode,
        reconcile=Reconcile.EXACT if config.cache == CACHE_REFERENCE else Reconcile.HISTORY,
    )
    return make_cache(CacheSettings(mode, config.cache_resync_period, cache_config), store, clock), mode


PHASE_FAILED = "Failed"


def counted_phases(agent_mode: InformerMode) -> frozenset[str]:
    """Which phases the scheduler's fingerprint counts (:func:`rte.model.pod.counts_for_fingerprint`):
    the ground truth of the agreement check uses the same rule, from the simulator's own
    bookkeeping."""
    if agent_mode is InformerMode.SHARED:
        return frozenset({PHASE_RUNNING})
    return frozenset({PHASE_RUNNING, PHASE_FAILED})


def counted_pods(
    bound: Mapping[tuple[str, str], Pod], phases: Collection[str], exclusive: Callable[[Pod], bool] | None
) -> frozenset[tuple[str, str]]:
    """The bound pods a node's fingerprint must cover: those in ``phases`` and, with method
    ``with-exclusive-resources``, only those ``exclusive`` says hold exclusive resources on the
    node (the agent and the scheduler both leave the others out)."""
    return frozenset(
        key for key, pod in bound.items() if pod.phase in phases and (exclusive is None or exclusive(pod))
    )


def exclusivity(names: Collection[str]) -> Callable[[Pod], bool]:
    """:func:`~rte.model.exclusive.is_exclusive` on a node publishing ``names``, memoised per pod
    template: the simulator's pods share their template's container tuples."""
    memo: dict[int, bool] = {}

    def exclusive(pod: Pod) -> bool:
        key = id(pod.containers)
        known = memo.get(key)
        if known is None:
            known = memo[key] = is_exclusive(pod, names)
        return known

    return exclusive
