"""The step between units: the managers allocate a unit within its merged mask before the next is hinted.

An :class:`Allocator` updates a :class:`~.node.Working` for one admitted unit. The simulator brings
one that knows every CPU id; Filter uses :class:`CountAllocator`, which knows counts only.

What :class:`CountAllocator` does, manager by manager:

* CPUs (cpumanager ``policy_static.go`` ``allocateCPUs``): the pod's reusable CPUs first, then free
  ones of the mask's zones. A regular init container's CPUs become reusable by the containers
  after it (``updateCPUsToReuse``); an app container or sidecar consumes the reusable CPUs it
  took, and a sidecar's own CPUs are never reusable;
* memory (memorymanager ``policy_static.go`` ``Allocate``, ``updateMachineState``): the pod's
  reusable memory for exactly this mask first, the rest from the mask's zones lowest id first;
  the zones become "used", grouped with each other when the mask spans several. A regular init
  container's blocks stay reserved and reusable for the same mask (``updatePodReusableMemory``);
* devices (devicemanager ``manager.go`` ``devicesToAllocate``): reusable devices first, then free
  ones of the mask's zones; reuse works as for CPUs.

**Where counts cannot be exact, and which way they err.** A single-zone mask, and memory in any
mask, are exact. When CPUs or devices come from several zones and the count does not force the
split (not everything free in the mask is taken), which zones gave how many depends on core layout
(``takeByTopologyNUMAPacked`` in ``cpu_assignment.go`` prefers whole cores and the least free NUMA
nodes) or on the device plugin's preference; CPUs that take every wholly free zone of the mask and
the rest from its one other zone are known (:func:`_packed_split`); when the NRT gives the zones'
sockets, the general packed order is followed (:func:`~.sockets.packed_takes`: whole sockets and
NUMA nodes in the kubelet's order, then the rest from the first zone when counts decide it), and
with ``align-by-socket`` the zones the CPUs come from are those of the hint's sockets
(``getAlignedCPUs``), or every zone when the sockets are unknown. Otherwise the allocator
charges the whole amount to *every* zone of the mask, and from then on charges every later unit to
every zone of the node (``Working.exact`` turns False): every zone keeps at most what the kubelet
would leave, and a unit admitted on less room would be admitted on more (more free only adds
hints), so the verdict can only err toward rejection. Memory stays exact in pod scope (every
container is allocated within the pod's one mask, whatever the CPUs' split) and under policy
``none``; in container scope it is charged to every zone too, since later hints, hence masks, may
differ. One gap remains: a later multi-zone memory allocation then records its group from rte's
choice of mask, which may differ from the kubelet's. Reusable CPUs are assumed taken before free
ones; the packed allocator takes whole free cores in core order and an init container's CPUs are
whole cores in that order, so this holds unless the request is not a multiple of the threads per
core. With ``distribute-cpus-across-numa`` the split follows :mod:`.distribute` instead.
"""

from __future__ import annotations

from typing import Protocol

from rte.model.admission.devices import take_grouped
from rte.model.admission.distribute import charge_distributed
from rte.model.admission.masks import popcount, positions
from rte.model.admission.node import Working, sum_over
from rte.model.admission.sockets import SocketLayout, aligned_zones, packed_takes, socket_layout
from rte.model.admission.units import AdmissionUnit
from rte.model.topology_manager import POLICY_NONE, SCOPE_POD


class Allocator(Protocol):
    """Takes one admitted unit's resources out of ``working``."""

    def take(self, working: Working, unit: AdmissionUnit, mask: int | None, memory_mask: int | None) -> None:
        """``mask``: the merged hint (None: no affinity); ``memory_mask``: the memory manager's
        block mask (the merged mask, or the one it extended it to)."""


def _charge(working: Working, row: list[int], amount: int, zones: int, everywhere: int) -> int:
    """Take ``amount`` from ``row``, within ``zones`` as far as they go; return the zones charged.

    Exact when one zone gives it all or the mask gives everything it has; otherwise (see the
    module docstring) every zone of the mask is charged the whole amount (every zone of the node
    when the mask cannot hold it, or once an earlier split was already inexact).
    """
    if amount <= 0:
        return 0
    if working.exact:
        inside = sum_over(row, zones)
        if popcount(zones) == 1 and amount <= inside:
            row[zones.bit_length() - 1] -= amount
            return zones
        if amount == inside:
            for z in positions(zones):
                row[z] = 0
            return zones
        working.exact = False
        charged = zones if amount < inside else everywhere
    else:
        charged = everywhere
    for z in positions(charged):
        row[z] -= min(amount, row[z])
    return charged


def _packed_split(working: Working, amount: int, zones: int) -> int | None:
    """The zones ``amount`` free CPUs come from when counts decide it, else None.

    cpumanager ``cpu_assignment.go`` ``takeByTopologyNUMAPacked`` first takes whole free sockets
    and whole free NUMA nodes while the request needs at least their size (``takeFullFirstLevel``,
    ``takeFullSecondLevel``); a NUMA node is free when every CPU of its topology is available
    (``isNUMANodeFree``: reserved CPUs make it "not free"). When the request needs every free
    zone of the mask, all of them are taken whichever comes first (sockets or NUMA nodes, which
    an NRT does not say), and when at most one other zone of the mask has free CPUs, the rest
    comes from it: the split is then known from counts alone."""
    node = working.node
    row = working.cpu_free
    free_zones = [z for z in positions(zones) if row[z] and row[z] == node.cpu_capacity[z]]
    others = [z for z in positions(zones) if row[z] and row[z] != node.cpu_capacity[z]]
    whole = sum(row[z] for z in free_zones)
    rest = amount - whole
    if rest < 0 or len(others) > 1 or (rest and (not others or row[others[0]] < rest)):
        return None
    charged = 0
    for z in free_zones:
        row[z] = 0
        charged |= 1 << z
    if rest:
        row[others[0]] -= rest
        charged |= 1 << others[0]
    return charged


def _single_sockets(layout: SocketLayout | None) -> list[int] | None:
    """Each CPU zone's one socket, by position, for the distributed split's NUMA order
    (:func:`~.distribute.kubelet_numa_order`); None when unknown or when a zone spans sockets."""
    if layout is None or any(len(ids) != 1 for ids in layout.sockets.values()):
        return None
    return [min(layout.sockets.get(z, frozenset({-1}))) for z in range(max(layout.sockets) + 1)]


def _socket_split(working: Working, amount: int, zones: int) -> int | None:
    """:func:`~.sockets.packed_takes` applied to the working counts: the zones charged, or None."""
    node = working.node
    layout = socket_layout(node)
    assert layout is not None
    threads = node.facts.threads_per_core
    takes = packed_takes(working.cpu_free, node.cpu_capacity, zones, amount, layout, threads)
    if takes is None:
        return None
    charged = 0
    for z, taken in takes.items():
        working.cpu_free[z] -= taken
        charged |= 1 << z
    return charged


def _from_reuse(amount: int, reuse: int, reuse_zones: int, zones: int, free: list[int]) -> int:
    """How much of ``amount`` comes from the pod's reusable pool. The managers take what lies in
    the mask first: reusable CPUs or devices in it (all of them, when the hint held them), then
    free ones in it, and only then what lies outside (a ``best-effort`` hint narrower than the
    reusable pool)."""
    if reuse_zones & ~zones == 0:
        return min(amount, reuse)
    outside = max(amount - sum_over(free, zones), 0)
    return min(outside, reuse)


class CountAllocator:
    """Allocation over per-zone counts (see the module docstring). An allocator that knows more
    (the simulator's, which picks CPU ids) can reuse a step: memory's is exact over counts.

    ``exact_splits`` False charges every multi-zone CPU split the counts do not force (the
    packed order's splits included) to every zone it may touch. A split the packed order decides
    on a state is not the one it decides on a state with more room (another zone may then be
    wholly free, or hold fewer free CPUs first), so a caller that admits on a lower bound of the
    kubelet's state (:mod:`rte.consumer.lowerbound`) needs charges that stay below the kubelet's
    whatever its room."""

    exact_splits = True

    def take(self, working: Working, unit: AdmissionUnit, mask: int | None, memory_mask: int | None) -> None:
        if unit.cpus:
            self.take_cpus(working, unit, mask)
        if unit.memory and memory_mask is not None:
            self.take_memory(working, unit, memory_mask)
        for resource, count in unit.devices.items():
            self.take_devices(working, unit, resource, count, mask)

    def take_cpus(self, working: Working, unit: AdmissionUnit, mask: int | None) -> None:
        cpu_zones = working.node.cpu_zones
        reuse_zones, reuse = working.cpu_reuse
        zones = cpu_zones if mask is None else mask & cpu_zones
        layout = socket_layout(working.node)
        if mask is not None and working.node.facts.align_by_socket:
            # getAlignedCPUs widens the hint to its sockets; not knowing them, every zone may give.
            zones = cpu_zones if layout is None else aligned_zones(layout, zones)
        from_reuse = _from_reuse(unit.cpus, reuse, reuse_zones, zones, working.cpu_free)
        from_free = charge = unit.cpus - from_reuse
        distribute = working.node.facts.distribute_cpus_across_numa
        if distribute and from_reuse and popcount(zones) > 1:
            # The even split may take free CPUs of a zone where reusable ones were (distribute.py):
            # charge free CPUs as if none were reused.
            charge, working.exact = unit.cpus, False
        charged = None
        if self.exact_splits and working.exact and not reuse and popcount(zones) > 1 and from_free > 0:
            if distribute:
                charged = charge_distributed(working, from_free, zones, _single_sockets(layout))
            if charged is None:
                split = _socket_split if layout else _packed_split
                charged = split(working, from_free, zones)
        if charged is None:
            charged = _charge(working, working.cpu_free, charge, zones, cpu_zones)
        working.cpu_free_total = max(working.cpu_free_total - charge, 0)
        if working.physical_free is not None:
            working.physical_free = max(working.physical_free - charge, 0)
        if unit.holds_for_pod:
            working.cpu_reuse = (reuse_zones | charged, reuse + from_free)
        else:
            left = reuse - from_reuse
            working.cpu_reuse = (reuse_zones if left else 0, left)

    @staticmethod
    def take_memory(working: Working, unit: AdmissionUnit, mask: int) -> None:
        every = working.node.all_zones
        for memory_type, request in unit.memory.items():
            key = (mask, memory_type)
            reusable = working.mem_reuse.get(key, 0)
            need = max(request - reusable, 0)
            row = working.mem_free.setdefault(memory_type, [0] * len(working.node.ids))
            facts = working.node.facts
            exact = working.exact or facts.policy == POLICY_NONE or facts.scope == SCOPE_POD
            if exact and working.memory_exact:
                # Memory follows its own mask, lowest id first: what an inexact CPU split changes
                # is the hints of later units. Without a Topology Manager hint nothing couples the
                # two, and in pod scope the mask is fixed once for every container before any
                # allocation (scope_pod.go), so memory stays exact either way.
                for z in positions(mask):  # lowest id first, each zone as far as it goes
                    take = min(row[z], need)
                    row[z] -= take
                    need -= take
            else:
                for z in positions(every):
                    row[z] -= min(need, row[z])
            if unit.holds_for_pod:
                working.mem_reuse[key] = max(reusable, request)
            elif reusable:
                working.mem_reuse[key] = max(reusable - request, 0)
        for z in positions(mask):
            working.mem_used[z] = True
            working.mem_cells[z] = mask if popcount(mask) > 1 else working.mem_cells[z]

    @staticmethod
    def take_devices(
        working: Working, unit: AdmissionUnit, resource: str, count: int, mask: int | None
    ) -> None:
        every = working.node.all_zones
        reuse_zones, reuse = working.dev_reuse.get(resource, (0, 0))
        row = working.dev_free.get(resource)
        zones = every if mask is None else mask
        from_reuse = _from_reuse(count, reuse, reuse_zones, zones, row or [0] * len(working.node.ids))
        from_free = count - from_reuse
        charged = 0
        if row is not None:
            in_zones = working.dev_free_total[resource]
            taken = min(from_free, in_zones)
            working.dev_free_total[resource] = in_zones - taken
            groups = working.dev_groups.get(resource)
            if groups is None:
                charged = _charge(working, row, taken, every if mask is None else mask, every)
            else:  # devices shared by several zones (rte.model.admission.devices)
                charged, working.exact = take_grouped(row, groups, taken, zones, working.exact)
            from_free -= taken
        if from_free:  # devices of unknown NUMA node (or without topology) make up the rest
            unknown = working.dev_unknown.get(resource, 0)
            working.dev_unknown[resource] = max(unknown - from_free, 0)
        if unit.holds_for_pod:
            working.dev_reuse[resource] = (reuse_zones | charged, reuse + count - from_reuse)
        else:
            left = reuse - from_reuse
            working.dev_reuse[resource] = (reuse_zones if left else 0, left)
