"""The three hint providers: which NUMA masks could hold what one unit asks each manager for.

A provider answers, per resource, one of three things (kubernetes/kubernetes
``pkg/kubelet/cm/topologymanager/policy.go`` ``filterProvidersHints`` reads them):

* :data:`ANY`: no preference (``nil``): the resource is not aligned at all;
* :data:`NONE`: an empty list: no mask can hold it, which no policy but ``best-effort`` admits;
* a list of masks, each preferred when it is as narrow as the narrowest mask whose *total*
  (not free) amount could ever hold the request (``minAffinitySize``).

Every function reads a :class:`~.node.Working`, so a unit sees what earlier units of its pod left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rte.model.admission.masks import every_mask, popcount
from rte.model.admission.node import Working, mask_sums

HINTS = "hints"
ANY = "any"
NONE = "none"


@dataclass(frozen=True, slots=True)
class ResourceHints:
    """One resource's hints from its provider."""

    resource: str
    kind: str
    """:data:`HINTS`, :data:`ANY` or :data:`NONE`."""
    masks: tuple[int, ...] = ()
    """Every mask hinted, in the kubelet's order."""
    preferred: frozenset[int] = frozenset()
    min_affinity: int = 0
    """The narrowest total-amount width (``minAffinitySize``), 0 when not computed."""


def no_preference(resource: str) -> ResourceHints:
    return ResourceHints(resource, ANY)


def _hints(resource: str, masks: list[int], min_affinity: int) -> ResourceHints:
    if not masks:
        return ResourceHints(resource, NONE, min_affinity=min_affinity)
    preferred = frozenset(m for m in masks if popcount(m) == min_affinity)
    return ResourceHints(resource, HINTS, tuple(masks), preferred, min_affinity)


def cpu_hints(working: Working, request: int) -> ResourceHints:
    """The CPU manager's static policy (cpumanager ``policy_static.go``
    ``generateCPUTopologyHints``) for ``request`` exclusive CPUs.

    Masks range over the NUMA nodes that have CPUs. ``minAffinitySize`` counts every CPU of a
    mask's zones (reserved ones included); a mask is hinted when its free CPUs plus the pod's
    reusable ones reach the request, and only if it holds every zone of the reusable CPUs.
    """
    if request <= 0:
        return no_preference("cpu")
    node = working.node
    zones = node.cpu_zones
    capacity = mask_sums(node.cpu_capacity, zones)
    free = mask_sums(working.cpu_free, zones)
    reuse_zones, reuse_count = working.cpu_reuse
    min_affinity = popcount(zones)
    masks = []
    for mask in every_mask(zones):
        if capacity[mask] >= request and popcount(mask) < min_affinity:
            min_affinity = popcount(mask)
        if mask & reuse_zones == reuse_zones and reuse_count + free[mask] >= request:
            masks.append(mask)
    return _hints("cpu", masks, min_affinity)


def memory_hints(working: Working, request: Mapping[str, int]) -> list[ResourceHints] | None:
    """The memory manager's Static policy (memorymanager ``policy_static.go`` ``calculateHints``):
    one mask list shared by every requested memory type, None when no mask qualifies.

    A mask qualifies when its *allocatable* amount of every type reaches the request (this alone
    sets ``minAffinitySize``), when it respects the memory manager's groups (a zone grouped with
    others is never used alone; a zone holding a single-zone allocation never joins a group; a
    grouped zone is used only with exactly its group), and when its free amount plus the pod's
    reusable memory *for that exact mask* reaches the request. None is what the kubelet answers
    with an empty hint map: the Topology Manager then sees no preference, and the memory
    manager's ``Allocate`` fails afterwards.
    """
    if not request:
        return []
    node = working.node
    zones = node.all_zones
    count = len(node.ids)
    zero = (0,) * count
    types = sorted(request)
    allocatable = {t: mask_sums(node.memory[t][0] if t in node.memory else zero, zones) for t in types}
    free = {t: mask_sums(working.mem_free.get(t, zero), zones) for t in types}
    cells, used, reuse = working.mem_cells, working.mem_used, working.mem_reuse
    min_affinity = count
    masks = []
    for mask in every_mask(zones):
        if any(allocatable[t][mask] < request[t] for t in types):
            continue
        size = popcount(mask)
        min_affinity = min(min_affinity, size)
        if not _respects_groups(mask, size, cells, used):
            continue
        if any(free[t][mask] + reuse.get((mask, t), 0) < request[t] for t in types):
            continue
        masks.append(mask)
    if not masks:
        return None
    return [_hints(t, masks, min_affinity) for t in types]


def _respects_groups(mask: int, size: int, cells: Sequence[int], used: Sequence[bool]) -> bool:
    if size == 1:
        z = mask.bit_length() - 1
        return popcount(cells[z]) == 1
    z = 0
    rest = mask
    while rest:
        if rest & 1 and used[z] and (popcount(cells[z]) == 1 or cells[z] != mask):
            return False
        rest >>= 1
        z += 1
    return True


def device_hints(working: Working, resource: str, request: int) -> ResourceHints:
    """The device manager (devicemanager ``topology_hints.go`` ``GetTopologyHints``,
    ``generateDeviceTopologyHints``) for ``request`` devices of ``resource``.

    A resource none of whose devices has a NUMA node gives no preference. Devices of unknown
    NUMA node (-1) and devices without topology count toward the node's total (fewer in total
    than requested: an empty list) but toward no mask. ``minAffinitySize`` counts every device
    of a mask's zones; reusable devices (from init containers) must lie in the mask.
    """
    node = working.node
    rows = node.devices.get(resource)
    unknown = working.dev_unknown.get(resource, 0)
    if rows is None and resource not in node.facts.unknown_numa_devices:
        return no_preference(resource)
    zones = node.all_zones
    count = len(node.ids)
    allocatable = mask_sums(rows[0] if rows else (0,) * count, zones)
    free_row = working.dev_free.get(resource, [0] * count)
    reuse_zones, reuse_count = working.dev_reuse.get(resource, (0, 0))
    outside = unknown + (node.facts.non_topology_devices.get(resource, 0) if rows else 0)
    if sum(free_row) + outside + reuse_count < request:
        return ResourceHints(resource, NONE)
    free = mask_sums(free_row, zones)
    min_affinity = count
    masks = []
    for mask in every_mask(zones):
        if allocatable[mask] >= request and popcount(mask) < min_affinity:
            min_affinity = popcount(mask)
        if mask & reuse_zones == reuse_zones and reuse_count + free[mask] >= request:
            masks.append(mask)
    return _hints(resource, masks, min_affinity)
