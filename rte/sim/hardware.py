"""One simulated node kind: the Machine, kubelet config and allocatable the real agent code reads.

Built once per :class:`~rte.sim.specs.NodeShape` and shared by every node of that shape (all
of it is immutable). Each zone holds ``cpus_per_zone / threads_per_core`` cores; a socket holds
``zones_per_socket`` consecutive zones (one by default).
CPUs are numbered as Linux numbers an SMT server: the first thread of every core, zone by zone,
then the second thread of every core in the same order, and so on (2 zones of 4 cores x 2
threads: zone 0 holds 0-3 and 8-11, core 0 is CPUs 0 and 8). Without SMT, zone 0 simply holds
``0..n-1``. The reserved CPUs (whole cores, lowest first) and the reserved memory sit on zone 0,
as on a typical host where the system daemons run on the first socket. Distances are 10 locally
and 21 elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rte.host.kubelet_config import KubeletConfig
from rte.host.machine import CpuInfo, Machine, NumaNode
from rte.podres.types import AllocatableResources, Device, MemoryBlock
from rte.sim.cputopology import CpuTopology
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
    """Device ids per zone, by resource name; a device attached to several zones is in each."""
    node_allocatable: Mapping[str, int]
    """What the Node object's ``status.allocatable`` would say (for the node-level fit)."""
    cpu_topology: CpuTopology
    """Zone and core of every CPU, what the CPU manager allocates by."""
    shared_devices: tuple[tuple[str, tuple[int, ...], tuple[str, ...]], ...] = ()
    """(resource, zones, device ids) of each group of devices attached to several zones."""

    @property
    def device_zones(self) -> Mapping[str, tuple[int, ...]]:
        """The zones of every device attached to several (others are in one zone)."""
        return {d: zones for _, zones, ids in self.shared_devices for d in ids}

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
    align_by_socket: bool = False,
    cpu_manager_options: Mapping[str, str] | None = None,
) -> NodeHardware:
    """The hardware and kubelet settings of ``shape`` (static CPU and Static memory managers;
    ``cpu_manager_options``: the kubelet's ``cpuManagerPolicyOptions``; ``align_by_socket``: the
    CPU manager option of that name)."""
    zones = range(shape.zones)
    per_socket = max(shape.zones_per_socket, 1)
    per = shape.cpus_per_zone
    threads = shape.threads_per_core
    cores = per // threads
    stride = shape.zones * cores  # from one thread of a core to the next

    def core_cpus(z: int, core: int) -> tuple[int, ...]:
        first = z * cores + core
        return tuple(first + t * stride for t in range(threads))

    zone_all = [tuple(sorted(c for core in range(cores) for c in core_cpus(z, core))) for z in zones]
    # Whole cores of zone 0, lowest first: what the kubelet reserves for the system.
    reserved = frozenset(
        sorted((c for core in range(cores) for c in core_cpus(0, core)), key=lambda c: (c % stride, c))[
            : min(reserved_cpus, per)
        ]
    )
    nodes = []
    cpus: dict[int, CpuInfo] = {}
    core_of: dict[int, int] = {}
    hugepage_bytes = shape.hugepages_per_zone * GiB
    for z in zones:
        for core in range(cores):
            siblings = core_cpus(z, core)
            for cpu in siblings:
                core_of[cpu] = siblings[0]
                cpus[cpu] = CpuInfo(
                    id=cpu,
                    numa_node=z,
                    package_id=z // per_socket,
                    core_id=core,
                    thread_siblings=frozenset(siblings),
                    core_siblings=frozenset(
                        c for o in zones if o // per_socket == z // per_socket for c in zone_all[o]
                    ),
                )
        nodes.append(
            NumaNode(
                id=z,
                cpus=frozenset(zone_all[z]),
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
        cpu_manager_policy_options={
            **(cpu_manager_options or {}),
            **({"align-by-socket": "true"} if align_by_socket else {}),
        },
        reserved_system_cpus=reserved,
        memory_manager_policy="Static",
        reserved_memory={0: {"memory": reserved_memory}} if reserved_memory else {},
        source="<simulated>",
    )
    zone_cpus = tuple(tuple(c for c in zone_all[z] if c not in reserved) for z in zones)
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
    # Devices attached to several zones: listed in each of their zones, as the kubelet lists a
    # device once per NUMA node (and as the zones of an NRT count it).
    shared = tuple(
        (
            res,
            tuple(range(first, first + span)),
            tuple(f"{res.rsplit('/', 1)[-1]}-s{first}-{i}" for i in range(n)),
        )
        for res, (n, span) in sorted(shape.shared_devices.items())
        for first in range(0, shape.zones, span)
    )
    if shared:
        merged = [{res: list(ids) for res, ids in row.items()} for row in zone_devices]
        for res, group_zones, ids in shared:
            for z in group_zones:
                merged[z].setdefault(res, []).extend(ids)
        zone_devices = tuple({res: tuple(ids) for res, ids in row.items()} for row in merged)
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
    for res in {res for row in zone_devices for res in row}:  # a shared device counts once
        totals[res] = len({d for row in zone_devices for d in row.get(res, ())})
    return NodeHardware(
        shape=shape,
        machine=machine,
        config=config,
        allocatable=allocatable,
        zone_cpus=zone_cpus,
        zone_memory=tuple(zone_memory),
        zone_devices=zone_devices,
        shared_devices=shared,
        node_allocatable=totals,
        cpu_topology=CpuTopology(
            zone_of={cpu: z for z in zones for cpu in zone_all[z]},
            core_of=core_of,
            zone_size={z: per for z in zones},
            threads_per_core=threads,
            socket_of={z: z // per_socket for z in zones} if per_socket > 1 else None,
            align_by_socket=align_by_socket,
        ),
    )
