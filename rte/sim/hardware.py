"""One simulated node kind: the Machine, kubelet config and allocatable the real agent code reads.

Built once per :class:`~rte.sim.specs.NodeShape` and shared by every node of that shape (all
three are immutable). CPUs are numbered zone by zone (zone 0 holds CPUs ``0..n-1``); the
reserved CPUs and the reserved memory sit on zone 0, as on a typical host where the system
daemons run on the first socket. Distances are 10 locally and 21 elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rte.host.kubelet_config import KubeletConfig
from rte.host.machine import CpuInfo, Machine, NumaNode
from rte.podres.types import AllocatableResources, Device, MemoryBlock
from rte.sim.specs import HUGEPAGES_1G, GiB, NodeShape

LOCAL_DISTANCE = 10
REMOTE_DISTANCE = 21


@dataclass(frozen=True)
class NodeHardware:
    """Everything about a node kind that does not change while it runs pods."""

    shape: NodeShape
    machine: Machine
    config: KubeletConfig
    allocatable: AllocatableResources
    zone_cpus: tuple[tuple[int, ...], ...]
    """Allocatable CPU ids per zone (reserved ones removed), ascending."""
    zone_memory: tuple[Mapping[str, int], ...]
    """Allocatable bytes per zone for ``memory`` and (if any) ``hugepages-1Gi``."""
    zone_devices: tuple[Mapping[str, tuple[str, ...]], ...]
    """Device ids per zone, by resource name."""
    node_allocatable: Mapping[str, int]
    """What the Node object's ``status.allocatable`` would say (for the node-level fit)."""

    @property
    def zones(self) -> int:
        return len(self.zone_cpus)

    def zone_allocatable(self, zone: int) -> dict[str, int]:
        """Allocatable amount per resource of one zone."""
        out: dict[str, int] = {"cpu": len(self.zone_cpus[zone])}
        out.update(self.zone_memory[zone])
        out.update({res: len(ids) for res, ids in self.zone_devices[zone].items()})
        return out


def build_hardware(
    shape: NodeShape,
    *,
    policy: str,
    scope: str,
    reserved_cpus: int,
    reserved_memory: int,
) -> NodeHardware:
    """The hardware and kubelet settings of ``shape`` (static CPU and Static memory managers)."""
    zones = range(shape.zones)
    per = shape.cpus_per_zone
    reserved = frozenset(range(min(reserved_cpus, per)))
    nodes = []
    cpus: dict[int, CpuInfo] = {}
    hugepage_bytes = shape.hugepages_per_zone * GiB
    for z in zones:
        ids = range(z * per, (z + 1) * per)
        for cpu in ids:
            cpus[cpu] = CpuInfo(id=cpu, numa_node=z, package_id=z)
        nodes.append(
            NumaNode(
                id=z,
                cpus=frozenset(ids),
                # MemTotal includes the zone's hugepage pool, as in sysfs.
                memory_total_bytes=shape.memory_per_zone + hugepage_bytes,
                hugepages={GiB: shape.hugepages_per_zone} if shape.hugepages_per_zone else {},
                free_hugepages={GiB: shape.hugepages_per_zone} if shape.hugepages_per_zone else {},
                distances={o: LOCAL_DISTANCE if o == z else REMOTE_DISTANCE for o in zones},
            )
        )
    ids_all = frozenset(zones)
    machine = Machine(nodes=tuple(nodes), cpus=cpus, online_nodes=ids_all, possible_nodes=ids_all)
    config = KubeletConfig(
        topology_manager_policy=policy,
        topology_manager_scope=scope,
        cpu_manager_policy="static",
        reserved_system_cpus=reserved,
        memory_manager_policy="Static",
        reserved_memory={0: {"memory": reserved_memory}} if reserved_memory else {},
        source="<simulated>",
    )
    zone_cpus = tuple(tuple(c for c in range(z * per, (z + 1) * per) if c not in reserved) for z in zones)
    zone_memory: list[dict[str, int]] = []
    for z in zones:
        memory = {"memory": max(0, shape.memory_per_zone - (reserved_memory if z == 0 else 0))}
        if hugepage_bytes:
            memory[HUGEPAGES_1G] = hugepage_bytes
        zone_memory.append(memory)
    zone_devices = tuple(
        {
            res: tuple(f"{res.rsplit('/', 1)[-1]}-{z}-{i}" for i in range(n))
            for res, n in shape.devices_per_zone.items()
        }
        for z in zones
    )
    allocatable = AllocatableResources(
        cpu_ids=frozenset(c for row in zone_cpus for c in row),
        devices=tuple(
            Device(res, (dev,), (z,))
            for z in zones
            for res, ids in sorted(zone_devices[z].items())
            for dev in ids
        ),
        memory=tuple(MemoryBlock(t, size, (z,)) for z in zones for t, size in sorted(zone_memory[z].items())),
    )
    totals: dict[str, int] = {"cpu": sum(len(row) for row in zone_cpus)}
    for z in zones:
        for res, amount in zone_memory[z].items():
            totals[res] = totals.get(res, 0) + amount
        for res, dev_ids in zone_devices[z].items():
            totals[res] = totals.get(res, 0) + len(dev_ids)
    return NodeHardware(
        shape=shape,
        machine=machine,
        config=config,
        allocatable=allocatable,
        zone_cpus=zone_cpus,
        zone_memory=tuple(zone_memory),
        zone_devices=zone_devices,
        node_allocatable=totals,
    )
