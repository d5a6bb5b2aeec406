"""Per-zone capacity, allocatable and available: a pure function of what the agent read.

Inputs: the machine (sysfs), the kubelet configuration, ``GetAllocatableResources``, the ``List``
snapshot and the CPU and memory managers' checkpoints. Output: one
:class:`~rte.model.topology.Zone` per NUMA node (real kernel ids), the node-level facts the NRT
carries for kubelet-exact admission, and a list of :class:`Finding` for anything inconsistent
(each logged and counted by the caller; none of them stops a cycle).

The rules, each chosen so that the consumer's decision equals the kubelet's admission (the
details are in the modules that apply them):

* **Every zone lists** ``cpu``, ``memory`` and every hugepage size the node has, 0 where the zone
  has none (CPU-less and memory-less nodes included): the consumer rejects a pod whose cpu,
  memory or hugepages request is absent from every zone.
* **cpu** (:mod:`rte.agent.compute.cpu_accounting`): with the static CPU manager, capacity = the zone's
  logical CPUs, allocatable = those among ``GetAllocatableResources.cpu_ids`` (all CPUs minus the
  reserved ones; computed from sysfs when the kubelet does not say), available = allocatable
  minus the CPUs held exclusively according to ``List`` or the checkpoint, whichever holds more
  (the checkpoint also holds finished init containers' CPUs). With ``none`` the kubelet pins
  nothing, so every zone advertises the node's whole CPU pool; publishing 0, as the reference
  agents do, makes the reference filter reject every Guaranteed pod.
* **memory and hugepages** (:mod:`rte.agent.compute.memory_accounting`): with the Static memory manager,
  capacity = the zone's ``MemTotal`` (hugepage pool included, like
  ``node.status.capacity.memory``) or ``nr_hugepages x size``, allocatable = the kubelet's
  per-NUMA blocks, available = allocatable minus what ``List`` and the checkpoint hold, merged so
  that neither source is contradicted; a block spanning several NUMA nodes is charged the way
  the memory manager fills them (lowest id first). With ``None``, node-wide values in every zone.
* **devices** (:mod:`rte.agent.compute.device_accounting`): counted in each zone their device is attached
  to (a device local to two zones counts in both); resources without any topology are
  node-level (:attr:`Accounting.non_numa_devices`), devices of aligned resources whose NUMA node
  is unknown match no zone (:attr:`Accounting.unknown_numa_devices`); devices attached to
  several zones are also grouped in :attr:`Accounting.shared_devices`.
* **contradictions in List** (:mod:`rte.agent.compute.listcheck`) and memory blocks that cannot be
  placed are charged the worst case and make the accounting inconsistent
  (:attr:`Accounting.consistent`).
* **without any kubelet data** (``rte dump`` with no kubelet reachable): hardware capacity, with
  allocatable = available = capacity.
* Allocatable above capacity raises capacity (the kubelet knows best); available below zero is
  clamped to zero. Both are findings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rte.agent.compute.cpu_accounting import (
    account_cpu_bound,
    account_cpu_pool,
    listed_cpus,
    numa_sockets,
    threads_per_core,
)
from rte.agent.compute.device_accounting import account_devices, held_devices
from rte.agent.compute.ledger import MEMORY, Finding, Held, Ledger, NeedsDetail, hugepages_resource
from rte.agent.compute.listcheck import check_listing
from rte.agent.compute.memory_accounting import (
    account_memory_bound,
    account_memory_pool,
    held_memory,
    hugepage_sizes,
    memory_groups,
)
from rte.agent.compute.podtally import PodTally
from rte.agent.compute.reading import NO_CHECKPOINTS, Checkpoints
from rte.host.kubelet_config import KubeletConfig
from rte.host.machine import Machine
from rte.model.shared_devices import SharedDevices
from rte.model.topology import Cost, ResourceInfo, Zone, zone_name
from rte.podres.types import AllocatableResources, PodResources

__all__ = ["Accounting", "Finding", "account", "held_by", "hugepages_resource"]


@dataclass(frozen=True)
class Accounting:
    """The result: zones sorted by NUMA id, node-level facts, and what looked wrong."""

    zones: tuple[Zone, ...]
    non_numa_devices: Mapping[str, int] = field(default_factory=dict)
    """Device resources without any topology (no constraint on admission), by name."""
    findings: tuple[Finding, ...] = ()
    cpu_numa_bound: bool = False
    memory_numa_bound: bool = False
    unknown_numa_devices: Mapping[str, int] = field(default_factory=dict)
    """Devices of NUMA-aligned resources whose NUMA node is unknown (they match no zone)."""
    threads_per_core: int | None = None
    """Logical CPUs per physical core (the CPU manager's ``CPUsPerCore()``); None: unknown."""
    available_physical_cpus: int | None = None
    """With the static CPU manager: free CPUs minus the cores of reserved CPUs (its SMT check)."""
    memory_numa_groups: tuple[tuple[int, ...], ...] = ()
    """NUMA nodes the Static memory manager has bound together, two or more each."""
    shared_devices: tuple[SharedDevices, ...] = ()
    """Devices attached to several zones, per resource and zones (also counted in each zone)."""
    numa_sockets: Mapping[int, frozenset[int]] = field(default_factory=dict)
    """NUMA id -> its CPUs' sockets, for NUMA nodes with CPUs; empty when unknown."""

    @property
    def consistent(self) -> bool:
        """False when the kubelet's data contradicted itself (a finding of an inconsistent kind)."""
        return not any(f.inconsistent for f in self.findings)


def _costs(machine: Machine, zone: int) -> tuple[Cost, ...]:
    distances = machine.node(zone).distances
    known = machine.node_ids
    return tuple(Cost(zone_name(j), d) for j, d in sorted(distances.items()) if j in known)


def held_by(pods: Sequence[PodResources]) -> Held:
    """What ``pods`` hold, each entry naming its pod."""
    return Held(listed_cpus(pods), held_memory(pods), held_devices(pods))


def account(
    machine: Machine,
    config: KubeletConfig | None = None,
    allocatable: AllocatableResources | None = None,
    pods: Sequence[PodResources] = (),
    checkpoints: Checkpoints = NO_CHECKPOINTS,
    *,
    tally: PodTally | None = None,
) -> Accounting:
    """Compute every zone of ``machine``. ``config``/``allocatable`` None mean "not known".

    ``checkpoints``: the kubelet's CPU and memory manager checkpoints, when readable, add what
    podresources does not report (CPUs and memory of finished init containers) and settle how
    blocks spanning several NUMA nodes were split.

    Without a config, the policies are inferred from what the kubelet reports: CPU ids in
    allocatable imply a static CPU manager, memory blocks a Static memory manager.

    ``tally``: running sums over the same ``pods`` (:mod:`rte.agent.compute.podtally`, synced by the
    caller); the result is the same, at a cost that does not grow with the pods.
    """
    if tally is not None and tally.clean:
        try:
            return _account(Ledger(machine.node_ids), machine, config, allocatable, tally.held(), checkpoints)
        except NeedsDetail:
            pass  # a finding about one pod: the pods themselves name it
    ledger = Ledger(machine.node_ids)
    pods, listing_findings = check_listing(pods)
    ledger.findings.extend(listing_findings)
    return _account(ledger, machine, config, allocatable, held_by(pods), checkpoints)


def _account(
    ledger: Ledger,
    machine: Machine,
    config: KubeletConfig | None,
    allocatable: AllocatableResources | None,
    held: Held,
    checkpoints: Checkpoints,
) -> Accounting:
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
    memory_resources = {MEMORY} | hugepage_sizes(machine, allocatable)

    physical: int | None = None
    if cpu_bound:
        physical = account_cpu_bound(ledger, machine, config, allocatable, held.cpus, checkpoints.cpu)
    else:
        account_cpu_pool(ledger, machine, config)
    groups: tuple[tuple[int, ...], ...] = ()
    if memory_bound:
        account_memory_bound(
            ledger, machine, config, allocatable, held.memory, memory_resources, checkpoints.memory
        )
        groups = memory_groups(ledger, checkpoints.memory, held.memory)
    else:
        account_memory_pool(ledger, machine, config, memory_resources)
    devices = account_devices(ledger, allocatable, held.devices)

    zones = tuple(
        Zone(name=zone_name(z), costs=_costs(machine, z), resources=ledger.resources(z)) for z in ledger.zones
    )
    if hardware_only:
        zones = tuple(_capacity_everywhere(z) for z in zones)
    bound = not hardware_only
    return Accounting(
        zones,
        devices.non_numa,
        tuple(ledger.findings),
        cpu_numa_bound=cpu_bound and bound,
        memory_numa_bound=memory_bound and bound,
        unknown_numa_devices=devices.unknown_numa,
        threads_per_core=threads_per_core(machine),
        numa_sockets=numa_sockets(machine),
        available_physical_cpus=physical if cpu_bound and bound else None,
        memory_numa_groups=groups if bound else (),
        shared_devices=devices.shared,
    )


def _capacity_everywhere(zone: Zone) -> Zone:
    resources = tuple(ResourceInfo(r.name, r.capacity, r.capacity, r.capacity) for r in zone.resources)
    return Zone(name=zone.name, type=zone.type, costs=zone.costs, resources=resources)
