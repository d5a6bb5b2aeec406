"""The oracle: a scheduler cache that knows every simulated kubelet's exact state.

It answers ``get`` with the view of the topology the node's agent would publish *right now*
from its kubelet, after the pods already placed on the node but not yet admitted (in flight,
between Reserve and the kubelet's admission) have been admitted, in order, on a copy of that
kubelet. Filter and Score are the real ones, so the oracle decides as well as any scheduler
with these rules can: no agent lag, no fingerprint, no pessimism. It is the lower bound of
pending times that every other cache mode is compared with, and it never causes a
TopologyAffinityError as long as the Filter decides as the kubelet admits and the kubelet
admits pods in the order they were placed (the simulator's bind and admit delays are fixed).

The oracle reads the kubelets only through :class:`ExactState` (the simulator's engine
implements it), so it does not care how the kubelet is modelled.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from rte.consumer import load
from rte.consumer.cache.interface import NO_NRT, Lookup, ResyncReport
from rte.consumer.cache.resync import PodsInput
from rte.consumer.config import CacheConfig
from rte.consumer.numaview import NumaView, build_view
from rte.model.pod import PHASE_RUNNING, Pod, PodKey
from rte.model.topology import NodeTopology
from rte.sim.agent import SimAgent
from rte.sim.config import CACHE_ORACLE, SimConfig
from rte.sim.hardware import NodeHardware
from rte.sim.kubelet import SimKubelet


def with_inflight(
    kubelet: SimKubelet, hardware: NodeHardware, pending: Mapping[PodKey, Pod], node: str
) -> SimKubelet:
    """``kubelet`` once it has admitted ``pending`` in order: a scratch copy sharing the immutable
    hardware, or ``kubelet`` itself when nothing is pending. A pod it refuses is skipped."""
    if not pending:
        return kubelet
    scratch = copy.deepcopy(kubelet, {id(hardware): hardware})
    for pod in pending.values():
        scratch.admit(replace(pod, node_name=node))
    return scratch


def exact_topology(
    node: str,
    kubelet: SimKubelet,
    hardware: NodeHardware,
    pending: Mapping[PodKey, Pod],
    bound: Mapping[PodKey, Pod],
    config: SimConfig,
) -> NodeTopology:
    """What the node's agent would publish once ``kubelet`` has admitted ``pending``, in order."""
    specs = dict(bound)
    for key, pod in pending.items():
        specs[key] = replace(pod, node_name=node, phase=PHASE_RUNNING)
    scratch = with_inflight(kubelet, hardware, pending, node)
    agent = SimAgent(
        node, hardware, scratch, method=config.fingerprint_method, informer_mode=config.informer_mode
    )
    return agent.snapshot(specs)[0]


class ExactState(Protocol):
    """What the oracle needs from the simulation: each node's exact topology on demand."""

    def exact_topology(self, node: str) -> NodeTopology | None:
        """The node's topology as its kubelet will be once every in-flight pod is admitted."""
        ...


class OracleCache:
    """An :class:`~rte.consumer.cache.interface.NRTCache` over the kubelets' exact state.

    Views are memoised per node until :meth:`invalidate` (the engine calls it whenever the
    node's kubelet or its in-flight pods change).
    """

    mode = CACHE_ORACLE

    def __init__(self, state: ExactState, config: CacheConfig | None = None) -> None:
        self._state = state
        self._config = config or CacheConfig()
        self._views: dict[str, NumaView | None] = {}
        self._generation = 0

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def config(self) -> CacheConfig:
        return self._config

    def invalidate(self, node: str) -> None:
        self._views.pop(node, None)
        self._generation += 1

    def get(self, node: str, pod: Pod | None = None) -> Lookup:
        del pod
        if node not in self._views:
            topology = self._state.exact_topology(node)
            self._views[node] = (
                None if topology is None else build_view(load.filter_view(topology, self._config.load))
            )
        view = self._views[node]
        return NO_NRT if view is None else Lookup(view, True)

    def reserve(self, node: str, pod: Pod) -> None:
        self.invalidate(node)

    def unreserve(self, node: str, pod: Pod) -> None:
        self.invalidate(node)

    def post_bind(self, node: str, pod: Pod) -> None:
        pass

    def mark_maybe_over_reserved(self, node: str) -> None:
        pass

    def note_filter_success(self, node: str) -> None:
        pass

    def on_pod_event(self, event_type: str, pod: Pod) -> None:
        pass

    def resync(self, pods: PodsInput, now: float | None = None) -> ResyncReport:
        return ResyncReport()

    def unfresh_reason(self, node: str) -> str:
        return ""

    def diagnose(self, node: str) -> str:
        return ""

    def state_dump(self, now: float | None = None) -> dict[str, Any]:
        return {"mode": self.mode, "generation": self._generation, "now": now, "nodes": {}}
