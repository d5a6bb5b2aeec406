"""A simulated node agent: the real agent pipeline over a simulated kubelet.

Each publish reads the node into a :class:`~rte.agent.compute.reading.NodeReading` (the kubelet's
``List`` and allocatable, the hardware and kubelet config, the pods bound to the node as the
daemon's pod watch sees them) and computes the object with the daemon's own
:func:`rte.agent.compute.topology.compute_topology`. Like the real agent it skips the write when the
object is identical to the last one it wrote.
"""

from __future__ import annotations

from collections.abc import Mapping

from rte.agent.compute.reading import KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.model.pod import Pod
from rte.model.topology import NodeTopology
from rte.model.vocabulary import FingerprintMethod, InformerMode, NumaPlacementMode
from rte.sim.hardware import NodeHardware
from rte.sim.kubelet import SimKubelet


class SimAgent:
    """One node's agent; :meth:`publish` is one update cycle."""

    def __init__(
        self,
        node_name: str,
        hardware: NodeHardware,
        kubelet: SimKubelet,
        *,
        method: FingerprintMethod,
        informer_mode: InformerMode = InformerMode.DEDICATED,
        numa_placement: NumaPlacementMode = NumaPlacementMode.CONTAINER,
    ) -> None:
        self.node_name = node_name
        self.hardware = hardware
        self.kubelet = kubelet
        self.rules = PublishingRules(method, informer_mode, numa_placement=numa_placement)
        self.last: NodeTopology | None = None
        self.findings = 0
        """Accounting findings seen (each is an inconsistency between kubelet and hardware)."""

    def read(self, specs: Mapping[tuple[str, str], Pod]) -> NodeReading:
        """What the daemon would read: the kubelet's List and allocatable, the pods bound here.

        The simulated kubelet's checkpoints come with its ``List``, as the real agent reads
        ``cpu_manager_state`` and ``memory_manager_state`` beside podresources. The simulation
        excludes no pods and publishes no zone load, so those parts of the reading stay empty.
        """
        hw = self.hardware
        return NodeReading(
            node_name=self.node_name,
            machine=hw.machine,
            config=hw.config,
            kubelet=KubeletReading(hw.allocatable, self.kubelet.listing(), self.kubelet.checkpoints()),
            rules=self.rules,
            specs=specs,
        )

    def snapshot(
        self, specs: Mapping[tuple[str, str], Pod]
    ) -> tuple[NodeTopology, tuple[tuple[str, str], ...]]:
        """The object for the current kubelet state and the pods its fingerprint covers."""
        computed = compute_topology(self.read(specs))
        self.findings += len(computed.accounting.findings)
        assert computed.fingerprinted is not None  # the simulated kubelet always answers
        return computed.topology, computed.fingerprinted

    def publish(
        self, specs: Mapping[tuple[str, str], Pod]
    ) -> tuple[NodeTopology, tuple[tuple[str, str], ...]] | None:
        """One cycle: the new object and its pod set, or None when nothing changed (no write)."""
        topology, keys = self.snapshot(specs)
        if topology == self.last:
            return None
        self.last = topology
        return topology, keys
