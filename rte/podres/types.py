"""Typed, immutable view of what the kubelet podresources API reports.

These are what the rest of rte works with instead of raw protobuf messages, so callers never meet
proto3 quirks: NUMA node 0 travelling as an empty message, -1 meaning "no locality", int64 values
spelled as strings in protojson. This module imports neither grpc nor protobuf: the ``rte dump``
path and the consumer must stay light.

Ordering: device and memory lists keep the kubelet's order; NUMA ids are sorted and unique (their
order carries no meaning); CPU ids are sets.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_CPUS: frozenset[int] = frozenset()
"""The empty CPU set every pod and container without exclusive CPUs shares: CPython makes a new
empty frozenset (216 bytes) each time one is built, and most pods of a node pin no CPU."""


@dataclass(frozen=True, slots=True)
class Device:
    """One ``ContainerDevices`` entry.

    The kubelet emits one entry per (device, NUMA node), each with a single device id, so a device
    local to two nodes appears twice. ``numa_ids`` is empty when the device plugin reported no
    topology, or only the "unknown" id -1; ``numa_unknown`` tells the second case from the first.
    The device manager treats them differently: a device without topology puts no constraint on
    its resource, one whose node is unknown makes its resource NUMA-aligned yet matches no node.
    """

    resource_name: str
    device_ids: tuple[str, ...]
    numa_ids: tuple[int, ...] = ()
    numa_unknown: bool = False
    """The entry has a topology whose NUMA node is negative (-1, "unknown") and no other."""


@dataclass(frozen=True, slots=True)
class MemoryBlock:
    """One ``ContainerMemory`` block: ``memory`` or ``hugepages-<size>``, size in bytes.

    A container block may span several NUMA nodes when the memory manager grouped cells.
    """

    memory_type: str
    size: int
    numa_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimDevice:
    """One device of a DRA claim (``ClaimResource``); kept minimal, rte does not account DRA."""

    driver_name: str
    pool_name: str
    device_name: str
    cdi_devices: tuple[str, ...] = ()
    share_id: str | None = None


@dataclass(frozen=True, slots=True)
class DynamicResource:
    """A DRA resource claim assigned to a container."""

    claim_name: str
    claim_namespace: str
    devices: tuple[ClaimDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class ContainerResources:
    """Resources of one container. ``cpu_ids`` holds exclusively allocated CPUs only."""

    name: str
    cpu_ids: frozenset[int] = NO_CPUS
    devices: tuple[Device, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()
    dynamic_resources: tuple[DynamicResource, ...] = ()


@dataclass(frozen=True, slots=True)
class PodResources:
    """Resources of one pod.

    ``cpu_ids`` and ``memory`` are the pod-level fields of kubelet 1.37-dev (KEP-5526). They
    already include the container-level values, so never add the two levels together.
    """

    namespace: str
    name: str
    containers: tuple[ContainerResources, ...] = ()
    cpu_ids: frozenset[int] = NO_CPUS
    memory: tuple[MemoryBlock, ...] = ()


@dataclass(frozen=True, slots=True)
class AllocatableResources:
    """Node-wide allocatable resources (``GetAllocatableResources``).

    ``cpu_ids`` is empty with cpuManagerPolicy ``none``; ``memory`` is empty unless the memory
    manager policy is ``Static``.
    """

    cpu_ids: frozenset[int] = NO_CPUS
    devices: tuple[Device, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()
