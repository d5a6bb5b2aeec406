"""A simulated node agent: the real accounting, pod-set and builder code over a simulated kubelet.

Each publish reads the kubelet's ``List`` and allocatable, runs
:func:`rte.agent.accounting.account`, picks the fingerprinted pods with
:func:`rte.agent.podset.fingerprint_pods` (the pods bound to the node, as the daemon's pod watch
sees them, and what the kubelet lists) and assembles the object with
:func:`rte.agent.builder.build_topology`. Like the real agent it skips the write when the object
is identical to the last one it wrote.
"""

from __future__ import annotations

from collections.abc import Mapping

from rte.agent.accounting import account
from rte.agent.builder import build_topology
from rte.agent.podset import fingerprint_pods
from rte.model.pod import Pod
from rte.model.topology import NodeTopology
from rte.model.vocabulary import FingerprintMethod, InformerMode
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
    ) -> None:
        self.node_name = node_name
        self.hardware = hardware
        self.kubelet = kubelet
        self.method = method
        self.informer_mode = informer_mode
        self.last: NodeTopology | None = None
        self.findings = 0
        """Accounting findings seen (each is an inconsistency between kubelet and hardware)."""

    def snapshot(self, specs: Mapping[tuple[str, str], Pod]) -> tuple[NodeTopology, list[tuple[str, str]]]:
        """The object for the current kubelet state and the pods its fingerprint covers."""
        hw = self.hardware
        listed = self.kubelet.listing()
        accounting = account(hw.machine, hw.config, hw.allocatable, listed)
        self.findings += len(accounting.findings)
        names = {res.name for zone in accounting.zones for res in zone.resources}
        keys = fingerprint_pods(
            listed, self.method, specs=specs, published_resources=names, informer_mode=self.informer_mode
        )
        topology = build_topology(
            self.node_name,
            accounting,
            config=hw.config,
            fingerprint_pods=keys,
            fingerprint_method=self.method,
        )
        return topology, keys

    def publish(
        self, specs: Mapping[tuple[str, str], Pod]
    ) -> tuple[NodeTopology, list[tuple[str, str]]] | None:
        """One cycle: the new object and its pod set, or None when nothing changed (no write)."""
        topology, keys = self.snapshot(specs)
        if topology == self.last:
            return None
        self.last = topology
        return topology, keys
