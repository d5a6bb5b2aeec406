"""Which NUMA node each container of a node sits on, decoded from the NRT's numaplacement attributes.

The agent encodes (:mod:`rte.agent.compute.placement`, RTE's rules) every container the kubelet gave
exclusive CPUs, NUMA-bound memory or NUMA-local devices, among the pods its fingerprint covers.
The codec (:mod:`rte.model.numaplacement`) can only be decoded with *exactly* that container set:
a set of another size is refused, but a different set of the same size would decode to a wrong
answer without any error. So this module decodes only when the consumer can name that set:

* **The pods** are those of the pod set the NRT's fingerprint names (the caller passes them: the
  reserve cache passes the set it adopted the NRT for, which equals the agent's by the
  fingerprint). Terminal pods hold nothing and the kubelet lists them without assignments, so
  they are left out on both sides.
* **The containers** of each pod (sidecars and app containers: the kubelet lists no other init
  container) are the ones the spec says the kubelet pins, given the facts the NRT publishes: in a
  Guaranteed pod, a whole number of CPUs under the static CPU manager (assumed when the NRT does
  not say, as RTE's NRTs do not: ``single-numa-node`` is only ever used with it), memory or
  hugepages under the Static memory manager; in any pod, a device resource the NRT lists in a
  zone (a device resource without NUMA locality is listed in no zone). When the spec cannot tell
  (pod-level resources, whose pinning is per pod; memory pinning on an NRT that does not publish
  ``memoryManagerPolicy``), nothing is decoded.
* **When**: only under the ``single-numa-node`` policy, as scheduler-plugins' decoder
  (``pkg/noderesourcetopology/cache/store.go`` ``getNUMAPlacementInfo``), and only with the
  metadata attribute present.

Anything else (a count that differs from the metadata's, an attribute the codec refuses) is an
outcome, never an exception: the caller counts it and carries on without placement.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from rte.model import attributes as names
from rte.model import numaplacement as npl
from rte.model.exclusive import is_native_resource
from rte.model.numaplacement import ContainerId
from rte.model.pod import QOS_GUARANTEED, Container, Pod, PodKey
from rte.model.quantity import ceil_value, milli_value
from rte.model.topology import NodeTopology
from rte.model.topology_manager import POLICY_SINGLE_NUMA_NODE


class Outcome(StrEnum):
    """What decoding a node's placement gave (the extender counts each)."""

    DECODED = "decoded"
    ABSENT = "absent"
    """No metadata attribute, or a policy other than single-numa-node: nothing to decode."""
    MISMATCH = "mismatch"
    """The consumer's container set is not the encoder's (another size, or the spec cannot tell)."""
    ERROR = "error"
    """The attributes are malformed or inconsistent (the codec refused them)."""


@dataclass(frozen=True)
class NodePlacement:
    """The decoded placement of one NRT: container -> NUMA id, or why there is none.

    ``containers`` is empty unless ``outcome`` is DECODED. Keys are
    :class:`~rte.model.numaplacement.ContainerId` (namespace, pod, container).
    """

    outcome: Outcome
    containers: Mapping[ContainerId, int] = field(default_factory=dict)
    detail: str = ""

    def pod_zones(self, key: PodKey) -> dict[str, int]:
        """Container name -> NUMA id of one pod's placed containers (empty if none)."""
        namespace, pod = key
        return {
            c.container: n for c, n in self.containers.items() if c.namespace == namespace and c.pod == pod
        }

    def zone_pods(self) -> dict[int, list[ContainerId]]:
        """NUMA id -> the containers placed there, sorted."""
        out: dict[int, list[ContainerId]] = {}
        for cid, numa in sorted(self.containers.items()):
            out.setdefault(numa, []).append(cid)
        return out


NO_PLACEMENT = NodePlacement(Outcome.ABSENT)


def _pins_cpus(container: Container, cpu_policy: str | None) -> bool:
    if cpu_policy is not None and cpu_policy.casefold() != "static":
        return False
    qty = container.requests.get("cpu")
    if qty is None:
        return False
    value = ceil_value(qty)
    return value > 0 and value * 1000 == milli_value(qty)


def _requests_memory(container: Container) -> bool:
    return any(
        (r == "memory" or r.startswith("hugepages-")) and ceil_value(q) > 0
        for r, q in container.requests.items()
    )


def pinned_containers(
    pod: Pod, zone_resources: Collection[str], cpu_policy: str | None, memory_policy: str | None
) -> list[str] | None:
    """The names of the containers of ``pod`` the kubelet pins to a NUMA node, or None if the spec
    cannot tell (module docstring)."""
    if pod.resources is not None and pod.resources.is_set:
        return None
    guaranteed = pod.qos_class == QOS_GUARANTEED
    pinned: list[str] = []
    for container in pod.sidecars + pod.containers:
        devices = any(
            not is_native_resource(r) and r in zone_resources and ceil_value(q) > 0
            for r, q in container.requests.items()
        )
        if devices or (guaranteed and _pins_cpus(container, cpu_policy)):
            pinned.append(container.name)
        elif guaranteed and _requests_memory(container):
            if memory_policy is None:
                return None
            if memory_policy.casefold() == "static":
                pinned.append(container.name)
    return pinned


def _zone_resources(topology: NodeTopology) -> frozenset[str]:
    return frozenset(r.name for z in topology.zones for r in z.resources)


PinnedMemo = dict[PodKey, tuple[Pod, frozenset[str], str | None, str | None, list[str] | None]]
"""Per pod: (the pod, the node's zone resources, CPU and memory manager policies) and the
:func:`pinned_containers` answer for exactly those (a node's pods are decoded again at every
NRT adopted; their specs seldom change)."""


def _pinned(
    pod: Pod,
    zone_resources: frozenset[str],
    cpu_policy: str | None,
    memory_policy: str | None,
    memo: PinnedMemo | None,
) -> list[str] | None:
    if memo is None:
        return pinned_containers(pod, zone_resources, cpu_policy, memory_policy)
    key = pod.key
    kept = memo.get(key)
    if kept is not None and kept[0] is pod and kept[1:4] == (zone_resources, cpu_policy, memory_policy):
        return kept[4]
    pinned = pinned_containers(pod, zone_resources, cpu_policy, memory_policy)
    memo[key] = (pod, zone_resources, cpu_policy, memory_policy, pinned)
    return pinned


def expected_containers(
    topology: NodeTopology, pods: Iterable[Pod], memo: PinnedMemo | None = None
) -> list[ContainerId] | None:
    """The container set the agent encoded for ``pods`` on ``topology``; None if unknowable.
    ``memo`` keeps each pod's answer for the next call (the same pod object, the same facts)."""
    zone_resources = _zone_resources(topology)
    cpu_policy = topology.attribute(names.CPU_MANAGER_POLICY)
    memory_policy = topology.attribute(names.MEMORY_MANAGER_POLICY)
    out: list[ContainerId] = []
    for pod in pods:
        if pod.is_terminal:
            continue
        pinned = _pinned(pod, zone_resources, cpu_policy, memory_policy, memo)
        if pinned is None:
            return None
        out.extend(ContainerId(pod.namespace, pod.name, c) for c in pinned)
    return out


def decode_node_placement(
    topology: NodeTopology, pods: Iterable[Pod], memo: PinnedMemo | None = None
) -> NodePlacement:
    """The placement ``topology`` publishes, given the ``pods`` of the set its fingerprint names
    (``memo``: see :func:`expected_containers`)."""
    metadata = topology.attribute(npl.METADATA_ATTRIBUTE)
    if metadata is None:
        return NO_PLACEMENT
    policy = topology.attribute(names.TOPOLOGY_MANAGER_POLICY)
    if policy != POLICY_SINGLE_NUMA_NODE:
        return NodePlacement(Outcome.ABSENT, detail=f"policy {policy}")
    try:
        payload = npl.unpack_metadata(metadata)
        vectors: dict[int, str] = {}
        for zone in topology.zones:
            text = zone.attribute(npl.VECTOR_ATTRIBUTE)
            if text is None:
                continue
            if zone.numa_id is None:
                return NodePlacement(Outcome.ERROR, detail=f"a vector on zone {zone.name}")
            vectors[zone.numa_id] = text
        payload = payload.with_vectors(vectors)
        payload.validate()
    except npl.NumaPlacementError as e:
        return NodePlacement(Outcome.ERROR, detail=str(e))
    expected = expected_containers(topology, pods, memo)
    if expected is None:
        return NodePlacement(
            Outcome.MISMATCH, detail="a pod's pinned containers cannot be told from its spec"
        )
    if len(set(expected)) != payload.containers:
        return NodePlacement(
            Outcome.MISMATCH,
            detail=f"{len(set(expected))} pinned containers, the NRT encodes {payload.containers}",
        )
    try:
        decoded = npl.decode(payload, expected)
    except npl.NumaPlacementError as e:
        return NodePlacement(Outcome.ERROR, detail=str(e))
    return NodePlacement(Outcome.DECODED, decoded)
