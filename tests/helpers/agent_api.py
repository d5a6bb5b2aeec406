"""Shared pieces of the agent's apiserver tests: topologies to publish and small waiting helpers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rte.model import attributes as names
from rte.model.topology import Attribute, Cost, NodeTopology, ResourceInfo, Zone
from tests.helpers.waiting import wait_for

NODE = "worker-1"
GiB = 1 << 30


def fingerprint(n: int) -> str:
    return f"pfp0v001{n:016x}"


def topology(node: str = NODE, *, cpu_available: int = 30, pods: int = 1) -> NodeTopology:
    """A two-zone node shaped like the wire contract's example, canonical."""

    def zone(numa_id: int, cpus: int, available: int) -> Zone:
        return Zone(
            name=f"node-{numa_id}",
            costs=(Cost("node-0", 10 if numa_id == 0 else 21), Cost("node-1", 21 if numa_id == 0 else 10)),
            resources=(
                ResourceInfo("cpu", cpus, cpus, available),
                ResourceInfo("hugepages-2Mi", 0, 0, 0),
                ResourceInfo("memory", 96 * GiB, 94 * GiB, 94 * GiB),
            ),
        )

    sign = fingerprint(pods)
    return NodeTopology(
        name=node,
        zones=(zone(0, 32, 32), zone(1, 32, cpu_available)),
        attributes=(
            Attribute(names.FINGERPRINT, sign),
            Attribute(names.FINGERPRINT_METHOD, "with-exclusive-resources"),
            Attribute(names.TOPOLOGY_MANAGER_POLICY, "single-numa-node"),
            Attribute(names.TOPOLOGY_MANAGER_SCOPE, "container"),
        ),
        topology_policies=("SingleNUMANodeContainerLevel",),
        annotations={names.FINGERPRINT_ANNOTATION: sign},
    ).canonical()


def with_pods(topo: NodeTopology, pods: int) -> NodeTopology:
    """The same node after pod churn that changed only the fingerprint."""
    sign = fingerprint(pods)
    return replace(
        topo.with_attributes([Attribute(names.FINGERPRINT, sign)]),
        annotations={**topo.annotations, names.FINGERPRINT_ANNOTATION: sign},
    ).canonical()


def wait_until(check: Callable[[], object], timeout: float = 5.0, what: str = "condition") -> None:
    wait_for(check, timeout, what)
