"""A simulated kubelet: the kubelet's admission model over exact state, and the kubelet's allocation.

Admission is the shared model (:func:`rte.model.admission.admit_pod`), the same one the
consumer's Filter decides by, run over what this kubelet knows exactly: which CPU ids, how much
of each memory type per zone and which device ids are free, the memory manager's multi-NUMA
groups, and the CPUs and devices a pod's init containers still hold. The model decides the
Topology Manager's verdict and each unit's merged mask (its tie-breaks included); the step
between units is :class:`_Allocation`, which allocates as the kubelet's managers do and tells the
model exactly what is left:

* CPUs: the static CPU manager's ``allocateCPUs`` and packed order, or the even split of
  ``distribute-cpus-across-numa`` when the node's config sets it (:mod:`rte.sim.cpus`), over
  the free CPUs plus the pod's reusable ones; a regular init container's CPUs become reusable by
  the containers after it and stay assigned until the pod goes (kubernetes/kubernetes
  ``pkg/kubelet/cm/cpumanager/policy_static.go``, ``updateCPUsToReuse``; ``removeStaleState``);
  a sidecar's are never reusable;
* memory and hugepages: the model's own exact step (the memory manager fills a mask's zones
  lowest id first, using the pod's reusable init-container memory for the same mask first);
* devices: the pod's reusable devices first, then free ones of the mask's zones, lowest zone and
  id first, then any other (devicemanager ``manager.go``, ``devicesToAllocate``); a device
  attached to several zones is aligned with a mask holding any of them (``filterByAffinity``)
  and taking it takes it from each of its zones.

Only Guaranteed containers with whole CPUs get exclusive CPUs and memory; fractional and
Burstable ones run on the shared pool. No NUMA alignment applies to ``ephemeral-storage`` (no
hint provider knows it). A rejected pod keeps nothing.

``List`` (:meth:`SimKubelet.listing`) reports what the real kubelet's podresources server does:
app containers and sidecars, not regular init containers. What only the checkpoints know (the
CPUs and memory of finished init containers) is in :meth:`SimKubelet.checkpoints`, which the
simulated agent reads as the real one reads ``cpu_manager_state`` and ``memory_manager_state``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rte.agent.compute.reading import Checkpoints
from rte.host.kubelet_config import DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION, go_bool
from rte.host.kubelet_state import CpuManagerState, MemoryManagerState, MemoryTable, NumaMemoryState
from rte.model.admission.admit import Admission, admit_pod
from rte.model.admission.allocate import CountAllocator
from rte.model.admission.masks import popcount, positions
from rte.model.admission.node import NodeFacts, NodeResources, Working
from rte.model.admission.reasons import UNEXPECTED_ADMISSION_ERROR
from rte.model.admission.units import KIND_INIT, KIND_SIDECAR, AdmissionUnit, pod_admission_units
from rte.model.pod import Pod
from rte.model.shared_devices import SharedDevices
from rte.model.topology_manager import POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER, SCOPE_POD
from rte.podres.types import ContainerResources, Device, MemoryBlock, PodResources
from rte.sim.cpus import allocate_cpus
from rte.sim.hardware import LOCAL_DISTANCE, REMOTE_DISTANCE, NodeHardware

POLICIES = (POLICY_SINGLE_NUMA_NODE, POLICY_RESTRICTED)
"""The Topology Manager policies the simulated kubelet admits by."""
SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

_STATIC = "static"


@dataclass
class _Part:
    """What one container got."""

    name: str
    kind: str
    cpus: frozenset[int] = frozenset()
    devices: tuple[Device, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()


@dataclass
class _Held:
    """Everything one admitted pod holds, to list it, checkpoint it and give it back."""

    resources: PodResources
    cpus: frozenset[int]
    memory: dict[tuple[int, str], int]
    """(zone, memory type) -> bytes taken from the zone."""
    memory_zones: list[int]
    """One entry per container block per zone: the memory manager's assignment counts."""
    devices: list[tuple[int, str, str]]
    """(zone, resource, device id)"""
    containers: dict[str, frozenset[int]]
    """Exclusive CPUs per container, init containers included (the CPU checkpoint's entries)."""


class _Allocation:
    """The admission model's step between units, as the kubelet's managers allocate (module
    docstring). It works on copies, so a rejected pod changes nothing; :meth:`SimKubelet.admit`
    keeps what it took."""

    def __init__(self, kubelet: SimKubelet) -> None:
        self.kubelet = kubelet
        self.free_cpus = set(kubelet.free_cpus)
        self.reuse_cpus: set[int] = set()
        self.devices = {
            z: {r: list(ids) for r, ids in row.items()} for z, row in enumerate(kubelet.free_devices)
        }
        self.reuse_devices: dict[str, list[tuple[int, str]]] = {}
        """Per resource: (mask of its zones, id) of the devices later containers may reuse."""
        self.cpus: set[int] = set()
        self.memory: dict[tuple[int, str], int] = {}
        self.memory_zones: list[int] = []
        self.cells: dict[int, int] = {}
        self.taken_devices: list[tuple[int, str, str]] = []
        self.parts: list[_Part] = []

    def take(self, working: Working, unit: AdmissionUnit, mask: int | None, memory_mask: int | None) -> None:
        part = _Part(unit.name, unit.kind)
        if unit.cpus:
            part.cpus = self._take_cpus(working, unit, mask)
        if unit.memory and memory_mask is not None:
            part.memory = self._take_memory(working, unit, memory_mask)
        if unit.devices:
            part.devices = tuple(
                d
                for r, n in sorted(unit.devices.items())
                for d in self._take_devices(working, unit, r, n, mask)
            )
        self.parts.append(part)

    def _take_cpus(self, working: Working, unit: AdmissionUnit, mask: int | None) -> frozenset[int]:
        topology = self.kubelet.hardware.cpu_topology
        zones = None if mask is None else positions(mask)
        distribute = working.node.facts.distribute_cpus_across_numa
        ids = allocate_cpus(
            topology, self.free_cpus, self.reuse_cpus, unit.cpus, zones, distribute=distribute
        )
        assert ids is not None, "the model admitted more CPUs than are free"
        taken = frozenset(ids)
        for cpu in taken - self.reuse_cpus:
            working.cpu_free[topology.zone_of[cpu]] -= 1
            working.cpu_free_total -= 1
        self.free_cpus -= taken
        if unit.kind == KIND_INIT:
            self.reuse_cpus |= taken
        else:
            self.reuse_cpus -= taken
        reuse_zones = 0
        for cpu in self.reuse_cpus:
            reuse_zones |= 1 << topology.zone_of[cpu]
        working.cpu_reuse = (reuse_zones, len(self.reuse_cpus))
        self.cpus |= taken
        return taken

    def _take_memory(self, working: Working, unit: AdmissionUnit, mask: int) -> tuple[MemoryBlock, ...]:
        before = {t: list(row) for t, row in working.mem_free.items()}
        CountAllocator.take_memory(working, unit, mask)  # exact: this allocator never splits blindly
        for memory_type, row in working.mem_free.items():
            old = before.get(memory_type, [0] * len(row))
            for z, (was, now) in enumerate(zip(old, row, strict=True)):
                if was != now:
                    self.memory[(z, memory_type)] = self.memory.get((z, memory_type), 0) + was - now
        zones = positions(mask)
        self.memory_zones.extend(zones)
        if popcount(mask) > 1:
            self.cells.update((z, mask) for z in zones)
        return tuple(MemoryBlock(t, size, tuple(zones)) for t, size in sorted(unit.memory.items()))

    def _take_devices(
        self, working: Working, unit: AdmissionUnit, resource: str, count: int, mask: int | None
    ) -> list[Device]:
        reusable = self.reuse_devices.setdefault(resource, [])
        got = reusable[:count]
        del reusable[: len(got)]
        order = sorted(self.devices, key=lambda z: (mask is not None and not mask >> z & 1, z))
        shared_zones = self.kubelet.hardware.device_zones
        groups = working.dev_groups.get(resource, [])
        for z in order:
            pool = self.devices[z].get(resource, [])
            # devicemanager filterByAffinity: a device meeting the hint (any of its zones) is
            # aligned; the zones of the hint come first, so their devices, shared ones included,
            # are taken before any other.
            for d in list(pool[: count - len(got)]):
                zones = shared_zones.get(d, (z,))
                device_mask = sum(1 << y for y in zones)
                for y in zones:
                    self.devices[y][resource].remove(d)
                    working.dev_free[resource][y] -= 1
                    self.taken_devices.append((y, resource, d))
                for group in groups:
                    if group[0] == device_mask:
                        group[1] -= 1
                working.dev_free_total[resource] -= 1
                got.append((device_mask, d))
        assert len(got) == count, "the model admitted more devices than are free"
        if unit.kind == KIND_INIT:
            reusable.extend(got)
        reuse_zones = 0
        for device_mask, _ in reusable:
            reuse_zones |= device_mask
        working.dev_reuse[resource] = (reuse_zones, len(reusable))
        return [Device(resource, (d,), (z,)) for device_mask, d in got for z in positions(device_mask)]


@dataclass
class _MemoryState:
    """The memory manager's per-zone bookkeeping beyond free bytes."""

    assignments: list[int]
    cells: list[int]
    """Per zone: the mask of zones it is grouped with (its own bit alone when not grouped)."""
    groups_cache: tuple[frozenset[int], ...] | None = field(default=None)

    def groups(self) -> tuple[frozenset[int], ...]:
        if self.groups_cache is None:
            self.groups_cache = tuple(
                sorted({frozenset(positions(c)) for c in self.cells if popcount(c) > 1}, key=min)
            )
        return self.groups_cache


class SimKubelet:
    """One node's kubelet: admission, release, the podresources ``List`` and the checkpoints."""

    def __init__(self, hardware: NodeHardware) -> None:
        self.hardware = hardware
        config = hardware.config
        self.policy = config.topology_manager_policy
        self.scope = config.topology_manager_scope
        if self.policy not in POLICIES:
            raise ValueError(f"unsupported Topology Manager policy {self.policy!r}")
        zones = range(hardware.zones)
        self.free_cpus: set[int] = {c for row in hardware.zone_cpus for c in row}
        self.free_devices: list[dict[str, list[str]]] = [
            {res: sorted(ids) for res, ids in hardware.zone_devices[z].items()} for z in zones
        ]
        self._memory_free = [dict(hardware.zone_memory[z]) for z in zones]
        self._mem = _MemoryState([0] * hardware.zones, [1 << z for z in zones])
        topology = hardware.cpu_topology
        socket_of = topology.socket_of or {z: z for z in zones}
        options = config.cpu_manager_policy_options
        distribute = go_bool(options.get(DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION, "false")) is True
        self._facts = NodeFacts(
            policy=self.policy,
            scope=self.scope,
            align_by_socket=topology.align_by_socket,
            numa_sockets=tuple((z, frozenset({socket_of[z]})) for z in zones),
            distribute_cpus_across_numa=distribute,
        )
        self._tables: dict[object, object] = {}
        self._distances = tuple(
            tuple(LOCAL_DISTANCE if i == j else REMOTE_DISTANCE for j in zones) for i in zones
        )
        self._pods: dict[tuple[str, str], _Held] = {}
        self._node: NodeResources | None = None
        self._listing: tuple[PodResources, ...] | None = ()
        self._checkpoints: Checkpoints | None = None

    # --- reading ---------------------------------------------------------------------------

    def listing(self) -> tuple[PodResources, ...]:
        """What ``List`` returns: every admitted pod, in admission order."""
        if self._listing is None:
            self._listing = tuple(h.resources for h in self._pods.values())
        return self._listing

    def free(self, zone: int) -> Mapping[str, int]:
        """Free amounts of one zone (for tests and diagnostics)."""
        zone_of = self.hardware.cpu_topology.zone_of
        out: dict[str, int] = {"cpu": sum(1 for c in self.free_cpus if zone_of[c] == zone)}
        out.update(self._memory_free[zone])
        out.update({res: len(ids) for res, ids in self.free_devices[zone].items()})
        return out

    def holds(self, key: tuple[str, str]) -> bool:
        return key in self._pods

    def held_zones(self, key: tuple[str, str]) -> dict[int, dict[str, int]]:
        """What the admitted pod holds per zone (zone -> resource -> amount): the exact
        placement an agent publishes as numaplacement attributes; empty for an unknown pod."""
        held = self._pods.get(key)
        if held is None:
            return {}
        out: dict[int, dict[str, int]] = {}
        zone_of = self.hardware.cpu_topology.zone_of
        for cpu in held.cpus:
            zone = out.setdefault(zone_of[cpu], {})
            zone["cpu"] = zone.get("cpu", 0) + 1
        for (z, memory_type), size in held.memory.items():
            zone = out.setdefault(z, {})
            zone[memory_type] = zone.get(memory_type, 0) + size
        for z, res, _ in held.devices:
            zone = out.setdefault(z, {})
            zone[res] = zone.get(res, 0) + 1
        return out

    def __len__(self) -> int:
        return len(self._pods)

    def node_resources(self) -> NodeResources:
        """The exact state as the admission model reads it (positions are the zone ids)."""
        if self._node is None:
            hw = self.hardware
            zones = range(hw.zones)
            zone_of = hw.cpu_topology.zone_of
            free = [0] * hw.zones
            for cpu in self.free_cpus:
                free[zone_of[cpu]] += 1
            memory = {
                t: (
                    tuple(hw.zone_memory[z].get(t, 0) for z in zones),
                    tuple(self._memory_free[z].get(t, 0) for z in zones),
                )
                for t in sorted({t for row in hw.zone_memory for t in row})
            }
            devices = {
                r: (
                    tuple(len(hw.zone_devices[z].get(r, ())) for z in zones),
                    tuple(len(self.free_devices[z].get(r, ())) for z in zones),
                )
                for r in sorted({r for row in hw.zone_devices for r in row})
            }
            facts = self._facts
            shared = self._shared_devices()
            if self._mem.groups() != facts.memory_groups or shared != facts.shared_devices:
                facts = self._facts = replace(facts, memory_groups=self._mem.groups(), shared_devices=shared)
            self._node = NodeResources(
                ids=tuple(zones),
                cpu_capacity=tuple(hw.cpu_topology.zone_size[z] for z in zones),
                cpu_available=tuple(free),
                memory=memory,
                devices=devices,
                facts=facts,
                distances=self._distances,
                tables=self._tables,  # only sums of rows that never change are memoised there
            )
        return self._node

    def _shared_devices(self) -> tuple[SharedDevices, ...]:
        """The devices attached to several zones, per group, with how many are free: what the
        device manager knows of each device's NUMA nodes (``nodeMultiNUMAResources`` for an NRT)."""
        out = []
        for res, zones, ids in self.hardware.shared_devices:
            free = set(self.free_devices[zones[0]].get(res, ()))
            out.append(SharedDevices(res, zones, sum(1 for d in ids if d in free), len(ids)))
        return tuple(sorted(out))

    def decide(self, pod: Pod) -> tuple[Admission, _Allocation]:
        """The kubelet's verdict on ``pod`` now, and what it would allocate (nothing changes)."""
        node = self.node_resources()
        allocation = _Allocation(self)
        units = pod_admission_units(pod, node.facts)
        for unit in units:
            for resource in unit.devices:
                if resource not in node.devices:
                    # devicemanager ``manager.go``: a resource no plugin registered gets no hint
                    # and its allocation fails.
                    reason = f"{UNEXPECTED_ADMISSION_ERROR}: cannot allocate unregistered device {resource}"
                    return Admission(False, reason, UNEXPECTED_ADMISSION_ERROR), allocation
        return admit_pod(node, units, allocation), allocation

    def could_admit(self, pod: Pod) -> bool:
        """Whether :meth:`admit` would succeed right now (no state changes)."""
        return self.decide(pod)[0].admitted

    # --- admission -------------------------------------------------------------------------

    def admit(self, pod: Pod) -> PodResources | None:
        """Admit ``pod`` and return its assignment, or None for a TopologyAffinityError."""
        if pod.key in self._pods:
            raise ValueError(f"pod {pod.namespace}/{pod.name} is already admitted")
        verdict, a = self.decide(pod)
        if not verdict.admitted:
            return None
        self.free_cpus = a.free_cpus
        for (z, memory_type), size in a.memory.items():
            self._memory_free[z][memory_type] -= size
        for z in a.memory_zones:
            self._mem.assignments[z] += 1
        for z, cells in a.cells.items():
            self._mem.cells[z] = cells
        self._mem.groups_cache = None
        for z, res, dev in a.taken_devices:
            self.free_devices[z][res].remove(dev)
        listed = [p for p in a.parts if p.kind != KIND_INIT]
        # List: app containers first, then sidecars (the podresources server's order).
        listed.sort(key=lambda p: p.kind == KIND_SIDECAR)
        resources = PodResources(
            pod.namespace,
            pod.name,
            tuple(ContainerResources(p.name, p.cpus, p.devices, p.memory) for p in listed),
        )
        containers = {p.name: p.cpus for p in a.parts if p.cpus}
        self._pods[pod.key] = _Held(
            resources, frozenset(a.cpus), a.memory, a.memory_zones, a.taken_devices, containers
        )
        self._changed()
        return resources

    def release(self, key: tuple[str, str]) -> bool:
        """Give back everything the pod holds (it ended or was deleted); False if unknown."""
        held = self._pods.pop(key, None)
        if held is None:
            return False
        self.free_cpus |= held.cpus
        for (z, memory_type), size in held.memory.items():
            self._memory_free[z][memory_type] += size
        for z in held.memory_zones:
            self._mem.assignments[z] -= 1
            if not self._mem.assignments[z]:
                self._mem.cells[z] = 1 << z  # memorymanager releaseMemory: an unused node is ungrouped
        self._mem.groups_cache = None
        for z, res, dev in held.devices:
            self.free_devices[z][res].append(dev)
            self.free_devices[z][res].sort()
        self._changed()
        return True

    def _changed(self) -> None:
        self._node = None
        self._listing = None
        self._checkpoints = None

    # --- checkpoints -----------------------------------------------------------------------

    def checkpoints(self) -> Checkpoints:
        """``cpu_manager_state`` and ``memory_manager_state`` as the kubelet would write them."""
        if self._checkpoints is None:
            hw = self.hardware
            every = frozenset(hw.cpu_topology.zone_of)
            held = frozenset().union(*(h.cpus for h in self._pods.values()))
            cpu = CpuManagerState(
                policy=_STATIC,
                default_cpuset=every - held,
                containers={f"{k[0]}/{k[1]}": h.containers for k, h in self._pods.items()},
                pods={},
                legacy_containers={},
            )
            machine_state = {}
            for z in range(hw.zones):
                tables = {}
                for memory_type, allocatable in hw.zone_memory[z].items():
                    free = self._memory_free[z][memory_type]
                    tables[memory_type] = MemoryTable(allocatable, 0, allocatable, allocatable - free, free)
                machine_state[z] = NumaMemoryState(
                    self._mem.assignments[z], tables, tuple(positions(self._mem.cells[z]))
                )
            memory = MemoryManagerState(policy=_STATIC, machine_state=machine_state, containers={}, pods={})
            self._checkpoints = Checkpoints(memory=memory, cpu=cpu)
        return self._checkpoints
