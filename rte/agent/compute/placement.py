"""The numaplacement attributes the agent publishes: which NUMA node each exclusive container sits on.

The encoding is :mod:`rte.model.numaplacement` (byte-compatible with the upstream Go package).
This module holds the agent's rules of *what* is encoded and *when*, following RTE's
``ComputeNUMAPlacementPayload`` and ``getContainerSingleNUMAPlacement``
(k8stopologyawareschedwg/resource-topology-exporter ``pkg/resourcemonitor/resourcemonitor.go``,
PR #396, vendored by numaresources-operator at d7c4390) and what scheduler-plugins' decoder
expects (``pkg/noderesourcetopology/cache/store.go`` ``getNUMAPlacementInfo``, PR #982).

**When.** Only with the setting ``numa_placement: container`` (the default; ``none`` turns it off,
as RTE PR #402 and the numaresources-operator's ``NUMAPlacementMode: container|none`` do), only
when the kubelet's Topology Manager policy is ``single-numa-node`` (any scope: only then does every
container have one stable node; scheduler-plugins decodes nothing under another policy), and only
when the pod fingerprint is published (the consumer may decode only when its pod set matches
ours, and the fingerprint is how it knows). Otherwise neither attribute is published.

**Which containers.** The containers the kubelet lists (app containers and sidecars; the kubelet
lists no regular init container) of the pods the fingerprint covers, each one that the kubelet
gave exclusive CPUs, NUMA-bound memory blocks, or devices with a NUMA node. A container with none
of these (shared pool only) is not encoded, as in RTE. The fingerprint's pods are a superset of
RTE's "NUMA-eligible" pods for ``rte dump`` and ``with-exclusive-resources``, so the same node
encodes the same containers as RTE there; with pod specs (the daemon) pods the consumer does not
count (not yet Running in the ``Shared`` informer mode, excluded by ``pod_exclude``) are left out
on both sides, and so are pods whose spec says they ended (the fingerprint counts them in the
``Dedicated`` informer mode; they hold nothing and the consumer leaves them out too).

**Which node.** The NUMA node of the container's exclusive CPUs (machine CPU -> node map), devices
and memory blocks. RTE trusts the first CPU alone; we look at all of them, and when a container's
resources span two nodes or more (impossible under ``single-numa-node``, so a sign of inconsistent
data) or a CPU's node is unknown, no placement is published at all: a consumer would otherwise
charge a pod to a zone it does not use. RTE does the same for devices and memory blocks.

**Sparse NUMA ids.** ``nn`` is the highest NUMA id of the machine plus one, and each vector sits on
the zone ``node-<id>`` of its real id. With dense ids (0..n-1, nearly every machine) that is RTE's
``nn`` = number of nodes. With sparse ids (e.g. 0 and 2) RTE numbers its zones by list index and
its encoder refuses id 2 with ``nn=2``; ours passes upstream's decoder, which reads the id from the
zone name and only requires ids below ``nn``. With ``zone_names: dense`` the placement is encoded
again in the dense numbering (``nn`` = number of zones), as RTE would publish it
(:func:`rte.agent.compute.zonenames.renumber_placement`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from rte.host.kubelet_config import KubeletConfig
from rte.model import numaplacement as npl
from rte.model.numaplacement import ContainerId
from rte.model.topology_manager import POLICY_SINGLE_NUMA_NODE
from rte.model.vocabulary import NumaPlacementMode
from rte.podres.types import ContainerResources, PodResources

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Placement:
    """What to publish: the node attribute value and the vector per NUMA id; or why nothing.

    ``skipped`` is empty when attributes are published, else one line saying why not;
    ``refused`` tells the data's fault (a container on two nodes, an unknown CPU) from a choice
    (the setting, the policy), so callers warn about the first only.
    """

    metadata: str | None
    vectors: Mapping[int, str]
    containers: tuple[tuple[ContainerId, int], ...] = ()
    skipped: str = ""
    refused: bool = False

    def zone_attributes(self) -> dict[int, dict[str, str]]:
        """NUMA id -> the vector attribute, for :func:`rte.agent.compute.compute_topology`."""
        return {numa: {npl.VECTOR_ATTRIBUTE: text} for numa, text in self.vectors.items()}


def _skip(reason: str, *, refused: bool = False) -> Placement:
    return Placement(None, {}, skipped=reason, refused=refused)


def container_numa(container: ContainerResources, cpu_to_node: Mapping[int, int]) -> set[int] | None:
    """The NUMA nodes of a container's exclusive resources; None if a CPU's node is unknown.

    Devices count when they have ids and a NUMA node, memory blocks when they have a NUMA node:
    RTE's ``numalocality`` rule for "pinned".
    """
    nodes: set[int] = set()
    for cpu in container.cpu_ids:
        node = cpu_to_node.get(cpu)
        if node is None:
            return None
        nodes.add(node)
    for device in container.devices:
        if device.device_ids:
            nodes.update(device.numa_ids)
    for block in container.memory:
        nodes.update(block.numa_ids)
    return nodes


def compute_placement(
    mode: NumaPlacementMode,
    config: KubeletConfig | None,
    node_ids: Iterable[int],
    cpu_to_node: Mapping[int, int],
    pods: Iterable[PodResources],
    counted: Iterable[tuple[str, str]] | None,
    terminal: Collection[tuple[str, str]] = (),
) -> Placement:
    """The placement of the exclusive containers of the ``counted`` pods among ``pods``.

    ``counted`` None means no fingerprint is published, so nothing is (module docstring).
    ``terminal``: pods whose spec says they ended (the fingerprint may count them); left out.
    """
    if mode is NumaPlacementMode.NONE:
        return _skip("numa_placement is none")
    if config is None or config.topology_manager_policy != POLICY_SINGLE_NUMA_NODE:
        policy = config.topology_manager_policy if config is not None else "unknown"
        return _skip(f"Topology Manager policy {policy} is not single-numa-node")
    if counted is None:
        return _skip("no pod fingerprint is published")
    machine_nodes = set(node_ids)
    if not machine_nodes:
        return _skip("the machine has no NUMA node")
    wanted = set(counted).difference(terminal)
    placements: list[tuple[ContainerId, int]] = []
    for pod in pods:
        if (pod.namespace, pod.name) not in wanted:
            continue
        for container in pod.containers:
            nodes = container_numa(container, cpu_to_node)
            where = f"{pod.namespace}/{pod.name}/{container.name}"
            if nodes is None:
                return _skip(f"{where}: a CPU of an unknown NUMA node", refused=True)
            if not nodes:
                continue  # shared pool only: not encoded, as in RTE
            if len(nodes) > 1:
                return _skip(f"{where}: exclusive resources on NUMA nodes {sorted(nodes)}", refused=True)
            (numa,) = nodes
            if numa not in machine_nodes:
                return _skip(f"{where}: NUMA node {numa} is not one of the machine's", refused=True)
            placements.append((ContainerId(pod.namespace, pod.name, container.name), numa))
    payload = npl.encode(max(machine_nodes) + 1, placements)
    return Placement(payload.pack_metadata(), dict(payload.vectors), tuple(placements))
