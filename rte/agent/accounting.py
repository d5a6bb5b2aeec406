"""Per-zone capacity, allocatable and available: a pure function of what the agent read.

Inputs: the machine (sysfs), the kubelet configuration, ``GetAllocatableResources`` and the
``List`` snapshot. Output: one :class:`~rte.model.topology.Zone` per NUMA node (real kernel ids),
plus devices that have no NUMA locality and a list of :class:`Finding` for anything inconsistent
(each logged and counted by the caller; none of them stops a cycle).

The rules, each chosen so that the reference consumer's decision equals the kubelet's admission:

* **Every zone lists** ``cpu``, ``memory`` and every hugepage size the node has, 0 where the zone
  has none (CPU-less and memory-less nodes included): the consumer rejects a pod whose cpu,
  memory or hugepages request is absent from every zone.
* **cpu, NUMA-bound** (cpuManagerPolicy ``static``): capacity = the zone's logical CPUs;
  allocatable = the zone's CPUs among ``GetAllocatableResources.cpu_ids`` (all CPUs minus
  ``reservedSystemCPUs``; computed from sysfs when the kubelet does not say); available =
  allocatable minus the exclusively assigned CPUs (each counted once). A zone whose CPUs are all
  reserved keeps its ``cpu`` entry at 0.
* **cpu, not NUMA-bound** (``none``): the kubelet pins nothing, so a CPU request can never cause
  a TopologyAffinityError. Every zone advertises the node's whole CPU pool (capacity = all
  logical CPUs, allocatable = available = node allocatable). Publishing 0, as the reference
  agents do, makes the reference filter reject every Guaranteed pod.
* **memory, NUMA-bound** (memoryManagerPolicy ``Static``): capacity = the zone's ``MemTotal``,
  which includes its hugepage pool, exactly like ``node.status.capacity.memory``; allocatable =
  the kubelet's per-NUMA allocatable blocks (MemTotal - hugepages - reservedMemory, the per-zone
  analogue of ``node.status.allocatable.memory``); available = allocatable minus assigned
  blocks. A block spanning several NUMA nodes is split the way the kubelet's memory manager
  fills it: lowest id first, each node up to what it has free.
* **hugepages, NUMA-bound**: capacity = ``nr_hugepages x size`` of the zone; allocatable and
  available from the kubelet's blocks like memory. Sizes are named like the kubelet names them
  (``hugepages-2Mi``, ``hugepages-1Gi``, ``hugepages-64Ki``).
* **memory and hugepages, not NUMA-bound** (``None``): no alignment, hence node-wide values in
  every zone, as for cpu.
* **devices**: counted in each zone their device is attached to (a device local to two nodes
  counts in both, and using it takes it from both); capacity = allocatable. Devices without
  NUMA locality (no topology, id -1, or an id that is not a NUMA node of this machine) are kept
  out of zones and reported in :attr:`Accounting.non_numa_devices`.
* **without any kubelet data** (``rte dump`` with no kubelet reachable): hardware capacity, with
  allocatable = available = capacity.
* Allocatable above capacity raises capacity (the kubelet knows best); available below zero is
  clamped to zero. Both are findings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from rte.agent.reading import NO_CHECKPOINTS, Checkpoints
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_state import MemoryManagerState
from rte.host.machine import Machine
from rte.model.quantity import Amount, QuantityFormat, format_quantity
from rte.model.topology import Cost, ResourceInfo, Zone, zone_name
from rte.podres.types import AllocatableResources, MemoryBlock, PodResources

CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"


def hugepages_resource(page_size_bytes: int) -> str:
    """The kubelet's resource name for a hugepage size (2 MiB -> ``hugepages-2Mi``)."""
    return HUGEPAGES_PREFIX + format_quantity(page_size_bytes, QuantityFormat.BINARY_SI)


@dataclass(frozen=True, slots=True)
class Finding:
    """Something inconsistent in the inputs, handled by a documented rule. ``kind`` is a metric label."""

    kind: str
    detail: str


@dataclass(frozen=True)
class Accounting:
    """The result: zones sorted by NUMA id, devices without locality, and what looked wrong."""

    zones: tuple[Zone, ...]
    non_numa_devices: Mapping[str, int] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    cpu_numa_bound: bool = False
    memory_numa_bound: bool = False


@dataclass
class _Amounts:
    capacity: Amount = 0
    allocatable: Amount = 0
    used: Amount = 0


class _Ledger:
    """Mutable per-(zone, resource) amounts while one accounting runs."""

    def __init__(self, zone_ids: Iterable[int]) -> None:
        self.zones: dict[int, dict[str, _Amounts]] = {z: {} for z in zone_ids}
        self.findings: list[Finding] = []

    def at(self, zone: int, resource: str) -> _Amounts:
        return self.zones[zone].setdefault(resource, _Amounts())

    def note(self, kind: str, detail: str) -> None:
        self.findings.append(Finding(kind, detail))

    def resources(self, zone: int) -> tuple[ResourceInfo, ...]:
        out = []
        where = zone_name(zone)
        for name, amounts in sorted(self.zones[zone].items()):
            capacity, allocatable = amounts.capacity, amounts.allocatable
            if allocatable > capacity:
                self.note("allocatable_above_capacity", f"{where} {name}: {allocatable} > {capacity}")
                capacity = allocatable
            available = allocatable - amounts.used
            if available < 0:
                self.note("negative_available", f"{where} {name}: {allocatable} - {amounts.used} < 0")
                available = 0
            out.append(ResourceInfo(name, capacity, allocatable, available))
        return tuple(out)


def _costs(machine: Machine, zone: int) -> tuple[Cost, ...]:
    distances = machine.node(zone).distances
    return tuple(Cost(zone_name(j), d) for j, d in sorted(distances.items()) if j in machine.node_ids)


def _hugepage_sizes(machine: Machine, allocatable: AllocatableResources | None) -> set[str]:
    names = {hugepages_resource(size) for node in machine.nodes for size in node.hugepages}
    if allocatable is not None:
        names |= {b.memory_type for b in allocatable.memory if b.memory_type.startswith(HUGEPAGES_PREFIX)}
    return names


# --- cpu -----------------------------------------------------------------------------------


def _node_cpu_allocatable(machine: Machine, config: KubeletConfig | None) -> Amount:
    total = len(machine.cpus)
    if config is None:
        return total
    if config.reserved_system_cpus:
        return total - len(config.reserved_system_cpus & frozenset(machine.cpus))
    reserved_milli = config.kube_reserved.get(CPU, 0) + config.system_reserved.get(CPU, 0)
    value = Fraction(total * 1000 - reserved_milli, 1000)
    return max(0, value.numerator if value.denominator == 1 else value)


def _account_cpu_bound(
    ledger: _Ledger,
    machine: Machine,
    config: KubeletConfig | None,
    allocatable: AllocatableResources | None,
    pods: Sequence[PodResources],
) -> None:
    cpu_node = machine.cpu_to_node()
    if allocatable is not None and allocatable.cpu_ids:
        alloc_cpus = allocatable.cpu_ids
    else:
        reserved = config.reserved_system_cpus if config else frozenset()
        alloc_cpus = frozenset(cpu_node) - reserved
    for cpu in sorted(alloc_cpus - frozenset(cpu_node)):
        ledger.note("unknown_cpu", f"allocatable CPU {cpu} is not on any NUMA node of this machine")
    assigned: set[int] = set()
    for pod in pods:
        assigned |= pod.cpu_ids  # pod-level ids include container-level ones: a union, never a sum
        for container in pod.containers:
            assigned |= container.cpu_ids
    for cpu in sorted(assigned - alloc_cpus):
        ledger.note("unknown_cpu", f"assigned CPU {cpu} is not allocatable")
    for zone in ledger.zones:
        zone_cpus = machine.node(zone).cpus
        amounts = ledger.at(zone, CPU)
        amounts.capacity = len(zone_cpus)
        amounts.allocatable = len(zone_cpus & alloc_cpus)
        amounts.used = len(zone_cpus & alloc_cpus & assigned)


def _account_cpu_pool(ledger: _Ledger, machine: Machine, config: KubeletConfig | None) -> None:
    pool = _node_cpu_allocatable(machine, config)
    for zone in ledger.zones:
        amounts = ledger.at(zone, CPU)
        amounts.capacity = len(machine.cpus)
        amounts.allocatable = pool


# --- memory and hugepages ----------------------------------------------------------------------


def _capacity_of(machine: Machine, zone: int, resource: str) -> int | None:
    node = machine.node(zone)
    if resource == MEMORY:
        return node.memory_total_bytes
    for size, count in node.hugepages.items():
        if hugepages_resource(size) == resource:
            return size * count
    return 0 if node.hugepages or node.memory_total_bytes is not None else None


def _usable_ids(ledger: _Ledger, numa_ids: Sequence[int], what: str) -> list[int]:
    known = [n for n in numa_ids if n in ledger.zones]
    for n in numa_ids:
        if n not in ledger.zones:
            ledger.note("unknown_numa_id", f"{what} names NUMA node {n}, which this machine does not have")
    return known


def _allocatable_memory(
    ledger: _Ledger, machine: Machine, config: KubeletConfig | None, resources: Iterable[str]
) -> dict[tuple[int, str], int]:
    """Per-zone allocatable computed like the kubelet's memory manager, for kubelets that do not say."""
    out: dict[tuple[int, str], int] = {}
    reserved = config.reserved_memory if config else {}
    for zone in ledger.zones:
        node = machine.node(zone)
        for res in resources:
            capacity = _capacity_of(machine, zone, res) or 0
            if res == MEMORY:
                capacity -= node.hugepages_total_bytes
            out[(zone, res)] = max(0, capacity - reserved.get(zone, {}).get(res, 0))
    return out


def _spread(ledger: _Ledger, free: dict[tuple[int, str], Amount], block: MemoryBlock, what: str) -> None:
    """Charge a block to its NUMA nodes the way the kubelet's memory manager fills them."""
    zones = _usable_ids(ledger, sorted(block.numa_ids), what)
    if not zones:
        if not block.numa_ids:
            ledger.note("memory_without_topology", f"{what}: {block.memory_type} block has no NUMA node")
        return
    remaining: Amount = block.size
    for zone in zones:
        take = min(remaining, max(0, free.get((zone, block.memory_type), 0)))
        if zone == zones[-1]:
            take = remaining  # whatever is left lands on the last node; overflow shows as a finding
        ledger.at(zone, block.memory_type).used += take
        free[(zone, block.memory_type)] = free.get((zone, block.memory_type), 0) - take
        remaining -= take
        if remaining <= 0:
            break


def _pod_memory_blocks(pod: PodResources) -> Iterable[tuple[str, MemoryBlock]]:
    if pod.memory:  # pod-level blocks already include the containers' ones
        for block in pod.memory:
            yield f"pod {pod.namespace}/{pod.name}", block
        return
    for container in pod.containers:
        for block in container.memory:
            yield f"pod {pod.namespace}/{pod.name} container {container.name}", block


def _account_memory_bound(
    ledger: _Ledger,
    machine: Machine,
    config: KubeletConfig | None,
    allocatable: AllocatableResources | None,
    pods: Sequence[PodResources],
    resources: set[str],
    checkpoints: Checkpoints,
) -> None:
    alloc: dict[tuple[int, str], int] = {}
    if allocatable is not None and allocatable.memory:
        for block in allocatable.memory:
            resources.add(block.memory_type)
            zones = _usable_ids(ledger, block.numa_ids, f"allocatable {block.memory_type}")
            for i, zone in enumerate(zones):
                # One block per (NUMA node, type) is the norm; split evenly if a kubelet ever groups them.
                share = block.size // len(zones) + (1 if i < block.size % len(zones) else 0)
                alloc[(zone, block.memory_type)] = alloc.get((zone, block.memory_type), 0) + share
    else:
        alloc = _allocatable_memory(ledger, machine, config, resources)
    free: dict[tuple[int, str], Amount] = dict(alloc)
    for zone in ledger.zones:
        for res in resources:
            amounts = ledger.at(zone, res)
            amounts.allocatable = alloc.get((zone, res), 0)
            capacity = _capacity_of(machine, zone, res)
            amounts.capacity = amounts.allocatable if capacity is None else capacity
    for pod in pods:
        for what, block in _pod_memory_blocks(pod):
            if block.memory_type not in resources:
                ledger.note("unknown_memory_type", f"{what}: {block.memory_type} is not allocatable")
                continue
            _spread(ledger, free, block, what)
    if checkpoints.memory is not None:
        _adopt_memory_state(ledger, checkpoints.memory, resources)


def _adopt_memory_state(ledger: _Ledger, state: MemoryManagerState, resources: set[str]) -> None:
    """Take the memory manager's own per-node ledger where it has one.

    podresources cannot say how a block spanning several NUMA nodes was split; the kubelet's
    checkpoint can. Its ``free`` is what the memory manager will hand out next, so it is the
    available amount. A disagreement with what we derived from podresources is a finding.
    """
    if state.policy != "static":
        return
    for zone, numa in state.machine_state.items():
        if zone not in ledger.zones:
            ledger.note("unknown_numa_id", f"memory_manager_state names NUMA node {zone}")
            continue
        for res, table in numa.memory_map.items():
            if res not in resources:
                continue
            amounts = ledger.at(zone, res)
            derived = amounts.allocatable - amounts.used
            if derived != table.free:
                ledger.note(
                    "memory_state_differs",
                    f"{zone_name(zone)} {res}: podresources gives {derived} free,"
                    f" the checkpoint {table.free}",
                )
            amounts.used = amounts.allocatable - table.free


def _account_memory_pool(
    ledger: _Ledger, machine: Machine, config: KubeletConfig | None, resources: set[str]
) -> None:
    totals: dict[str, int] = {}
    unknown_memory = False
    for zone in ledger.zones:
        for res in resources:
            capacity = _capacity_of(machine, zone, res)
            unknown_memory |= res == MEMORY and capacity is None
            totals[res] = totals.get(res, 0) + (capacity or 0)
    if unknown_memory:
        ledger.note("memory_capacity_unknown", "some NUMA nodes have no meminfo; memory capacity is partial")
    hugepages = sum(v for k, v in totals.items() if k.startswith(HUGEPAGES_PREFIX))
    for res in resources:
        capacity = totals.get(res, 0)
        if config is None:
            pool = capacity
        elif res == MEMORY:
            reserved = config.kube_reserved.get(MEMORY, 0) + config.system_reserved.get(MEMORY, 0)
            pool = capacity - hugepages - reserved - config.hard_eviction_memory(capacity)
        else:
            pool = capacity - config.kube_reserved.get(res, 0) - config.system_reserved.get(res, 0)
        for zone in ledger.zones:
            amounts = ledger.at(zone, res)
            amounts.capacity = capacity
            amounts.allocatable = max(0, pool)


# --- devices -----------------------------------------------------------------------------------


def _account_devices(
    ledger: _Ledger, allocatable: AllocatableResources | None, pods: Sequence[PodResources]
) -> dict[str, int]:
    if allocatable is None:
        return {}
    where: dict[tuple[str, str], set[int]] = {}  # (resource, device id) -> zones it is attached to
    non_numa: dict[str, set[str]] = {}
    for dev in allocatable.devices:
        zones = _usable_ids(ledger, dev.numa_ids, f"device {dev.resource_name}")
        for device_id in dev.device_ids:
            if zones:
                where.setdefault((dev.resource_name, device_id), set()).update(zones)
            else:
                non_numa.setdefault(dev.resource_name, set()).add(device_id)
    for (resource, device_id), attached in where.items():
        non_numa.get(resource, set()).discard(device_id)  # local somewhere after all
        for zone in attached:
            ledger.at(zone, resource).allocatable += 1
    used: set[tuple[str, str]] = set()
    for pod in pods:
        for container in pod.containers:
            for dev in container.devices:
                for device_id in dev.device_ids:
                    key = (dev.resource_name, device_id)
                    if key in where:
                        used.add(key)
                    elif device_id not in non_numa.get(dev.resource_name, set()):
                        ledger.note(
                            "unknown_device",
                            f"pod {pod.namespace}/{pod.name} holds {dev.resource_name} {device_id},"
                            " which is not allocatable",
                        )
    for key in used:
        for zone in where[key]:
            ledger.at(zone, key[0]).used += 1
    for resource, _ in where:
        for zone in ledger.zones:
            if resource in ledger.zones[zone]:
                amounts = ledger.at(zone, resource)
                amounts.capacity = amounts.allocatable  # device capacity cannot be learned
    return {res: len(ids) for res, ids in sorted(non_numa.items()) if ids}


# --- entry point -------------------------------------------------------------------------------


def account(
    machine: Machine,
    config: KubeletConfig | None = None,
    allocatable: AllocatableResources | None = None,
    pods: Sequence[PodResources] = (),
    checkpoints: Checkpoints = NO_CHECKPOINTS,
) -> Accounting:
    """Compute every zone of ``machine``. ``config``/``allocatable`` None mean "not known".

    ``checkpoints``: the kubelet's memory manager checkpoint, when readable, settles how blocks
    that span several NUMA nodes were split (podresources cannot say).

    Without a config, the policies are inferred from what the kubelet reports: CPU ids in
    allocatable imply a static CPU manager, memory blocks a Static memory manager.
    """
    ledger = _Ledger(machine.node_ids)
    hardware_only = config is None and allocatable is None
    if hardware_only:
        # Per-zone hardware figures; allocatable and available are set to capacity below.
        cpu_bound = memory_bound = True
    elif config is not None:
        cpu_bound = config.cpu_manager_policy == "static"
        memory_bound = config.memory_manager_policy.lower() == "static"
    else:
        cpu_bound = allocatable is not None and bool(allocatable.cpu_ids)
        memory_bound = allocatable is not None and bool(allocatable.memory)
    memory_resources = {MEMORY} | _hugepage_sizes(machine, allocatable)

    if cpu_bound:
        _account_cpu_bound(ledger, machine, config, allocatable, pods)
    else:
        _account_cpu_pool(ledger, machine, config)
    if memory_bound:
        _account_memory_bound(ledger, machine, config, allocatable, pods, memory_resources, checkpoints)
    else:
        _account_memory_pool(ledger, machine, config, memory_resources)
    non_numa = _account_devices(ledger, allocatable, pods)

    zones = tuple(
        Zone(name=zone_name(z), costs=_costs(machine, z), resources=ledger.resources(z)) for z in ledger.zones
    )
    if hardware_only:
        zones = tuple(_capacity_everywhere(z) for z in zones)
    return Accounting(
        zones,
        non_numa,
        tuple(ledger.findings),
        cpu_numa_bound=cpu_bound and not hardware_only,
        memory_numa_bound=memory_bound and not hardware_only,
    )


def _capacity_everywhere(zone: Zone) -> Zone:
    resources = tuple(ResourceInfo(r.name, r.capacity, r.capacity, r.capacity) for r in zone.resources)
    return Zone(name=zone.name, type=zone.type, costs=zone.costs, resources=resources)
