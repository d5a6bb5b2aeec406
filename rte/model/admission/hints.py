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

from rte.model.admission.devices import free_total, hinted_masks
from rte.model.admission.devices import min_affinity as grouped_min_affinity
from rte.model.admission.masks import candidate_masks, narrowest_width, popcount, positions, unlisted
from rte.model.admission.node import NodeResources, Working, mask_sums
from rte.model.admission.sockets import aligned_width, socket_aligned, socket_layout

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
    beyond: bool = False
    """On a node of many zones, the preferred masks are wider than the model lists
    (:func:`~.masks.unlisted`): :attr:`masks` lacks them, and no verdict can rest on it."""


def no_preference(resource: str) -> ResourceHints:
    return ResourceHints(resource, ANY)


def _hints(
    resource: str,
    masks: list[int],
    min_affinity: int,
    *,
    narrowed: bool = False,
    beyond: bool = False,
    also_preferred: frozenset[int] = frozenset(),
) -> ResourceHints:
    """The hints of one resource; ``narrowed``: only single-zone masks were looked for (what
    ``single-numa-node`` keeps), so an empty list still means "hinted", just not on one zone.
    ``beyond``: see :attr:`ResourceHints.beyond` (never with ``narrowed``: one zone is listed).
    ``also_preferred``: masks preferred whatever their width (``align-by-socket``)."""
    if not masks and not narrowed and not beyond:
        return ResourceHints(resource, NONE, min_affinity=min_affinity)
    preferred = frozenset(m for m in masks if popcount(m) == min_affinity) | also_preferred
    return ResourceHints(resource, HINTS, tuple(masks), preferred, min_affinity, beyond and not narrowed)


def cpu_hints(working: Working, request: int, *, single_only: bool = False) -> ResourceHints:
    """The CPU manager's static policy (cpumanager ``policy_static.go``
    ``generateCPUTopologyHints``) for ``request`` exclusive CPUs.

    Masks range over the NUMA nodes that have CPUs. ``minAffinitySize`` counts every CPU of a
    mask's zones (reserved ones included); a mask is hinted when its free CPUs plus the pod's
    reusable ones reach the request, and only if it holds every zone of the reusable CPUs. With
    ``align-by-socket``, a mask whose zones span the fewest sockets is preferred too
    (``isHintSocketAligned``, :mod:`~.sockets`; ``single-numa-node`` refuses the option, so the
    ``single_only`` path never applies it). ``single_only`` looks at single-zone masks only (all
    ``single-numa-node`` keeps).
    """
    if request <= 0:
        return no_preference("cpu")
    node = working.node
    zones = node.cpu_zones
    min_affinity = narrowest_width(node.cpu_capacity, zones, request)
    reuse_zones, reuse_count = working.cpu_reuse
    need = request - reuse_count
    if single_only:
        free_row = working.cpu_free
        singles = [1 << z for z in positions(zones) if free_row[z] >= need and reuse_zones & ~(1 << z) == 0]
        return _hints("cpu", singles, min_affinity, narrowed=True)
    free = mask_sums(working.cpu_free, zones)
    masks = [m for m, _ in candidate_masks(zones) if free[m] >= need and m & reuse_zones == reuse_zones]
    layout = socket_layout(node) if node.facts.align_by_socket else None
    if layout is None:
        # Without the zones' sockets (an NRT from another agent), only the width rule is applied:
        # the kubelet may prefer more masks, so rte can only refuse more, never admit a TAE.
        return _hints("cpu", masks, min_affinity, beyond=unlisted(zones, min_affinity))
    aligned = frozenset(m for m in masks if socket_aligned(layout, m, min_affinity))
    widest = aligned_width(layout, min_affinity)
    return _hints("cpu", masks, min_affinity, beyond=unlisted(zones, widest), also_preferred=aligned)


def memory_hints(
    working: Working, request: Mapping[str, int], *, single_only: bool = False
) -> list[ResourceHints] | None:
    """The memory manager's Static policy (memorymanager ``policy_static.go`` ``calculateHints``):
    one mask list shared by every requested memory type, None when no mask qualifies.

    A mask qualifies when its *allocatable* amount of every type reaches the request (this alone
    sets ``minAffinitySize``), when it respects the memory manager's groups (a zone grouped with
    others is never used alone; a zone holding a single-zone allocation never joins a group; a
    grouped zone is used only with exactly its group), and when its free amount plus the pod's
    reusable memory *for that exact mask* reaches the request. None is what the kubelet answers
    with an empty hint map: the Topology Manager then sees no preference, and the memory
    manager's ``Allocate`` fails afterwards. ``single_only``: only single-zone masks are listed
    (the others are only looked for to tell "none at all" apart).
    """
    if not request:
        return []
    node = working.node
    zones = node.all_zones
    types = sorted(request)
    candidates = _allocatable_masks(node, types, tuple(request[t] for t in types))
    if not candidates:
        return None
    min_affinity = candidates[0][1]  # the first in the kubelet's order is the narrowest
    barred = _Groups(working)
    reuse = working.mem_reuse
    zero = [0] * len(node.ids)
    free_rows = [(t, request[t], working.mem_free.get(t, zero)) for t in types]
    if single_only:
        singles = [
            m
            for m, size in candidates
            if size == 1
            and all(row[m.bit_length() - 1] + reuse.get((m, t), 0) >= q for t, q, row in free_rows)
            and not barred.forbids(m, size)
        ]
        if singles or _any_free(candidates, free_rows, zones, reuse, barred, multi_only=True):
            return [_hints(t, singles, min_affinity, narrowed=True) for t in types]
        return None
    beyond = _memory_beyond(node, request, zones, min_affinity)
    masks = _free_masks(candidates, free_rows, zones, reuse, barred)
    if not masks and not beyond:
        return None
    return [_hints(t, masks, min_affinity, beyond=beyond) for t in types]


def _memory_beyond(node: NodeResources, request: Mapping[str, int], zones: int, min_affinity: int) -> bool:
    """Whether the memory manager's narrowest mask may be one the model does not list: the
    first listed mask is all the zones, and no type alone needs them all."""
    count = popcount(zones)
    if min_affinity < count or not unlisted(zones, count - 1):
        return False
    zero = (0,) * count
    least = max(
        narrowest_width(node.memory[t][0] if t in node.memory else zero, zones, q) for t, q in request.items()
    )
    return least < count


def _allocatable_masks(
    node: NodeResources, types: Sequence[str], amounts: tuple[int, ...]
) -> list[tuple[int, int]]:
    """(mask, size) of the masks whose allocatable memory of every type reaches the request, in the
    kubelet's order: they never change on a node, so they are memoised per request."""
    key = ("memory-masks", tuple(types), amounts)
    cached = node.tables.get(key)
    if cached is None:
        zones = node.all_zones
        zero = (0,) * len(node.ids)
        sums = [node.static_sums(t, node.memory[t][0] if t in node.memory else zero, zones) for t in types]
        cached = node.tables[key] = [
            (m, size)
            for m, size in candidate_masks(zones)
            if all(s[m] >= q for s, q in zip(sums, amounts, strict=True))
        ]
    return cached  # type: ignore[return-value]


FreeRow = tuple[str, int, Sequence[int]]
"""(memory type, request, free amount per zone)."""


def _free_masks(
    candidates: Sequence[tuple[int, int]],
    free_rows: Sequence[FreeRow],
    zones: int,
    reuse: Mapping[tuple[int, str], int],
    barred: _Groups,
    *,
    first_only: bool = False,
) -> list[int]:
    """The candidates whose free memory (plus the pod's reusable memory for that very mask) holds
    the request and that the groups allow (only the first one with ``first_only``)."""
    sums = [(t, q, mask_sums(row, zones)) for t, q, row in free_rows]
    out = []
    for mask, size in candidates:
        for t, q, free in sums:
            if free[mask] < q and free[mask] + reuse.get((mask, t), 0) < q:
                break
        else:
            if not barred.forbids(mask, size):
                out.append(mask)
                if first_only:
                    break
    return out


def _any_free(
    candidates: Sequence[tuple[int, int]],
    free_rows: Sequence[FreeRow],
    zones: int,
    reuse: Mapping[tuple[int, str], int],
    barred: _Groups,
    *,
    multi_only: bool,
) -> bool:
    """Whether some candidate (of two or more zones with ``multi_only``) qualifies."""
    wide = [(m, size) for m, size in candidates if size > 1 or not multi_only]
    return bool(_free_masks(wide, free_rows, zones, reuse, barred, first_only=True))


class _Groups:
    """The memory manager's group rules over the working state, as bit masks."""

    __slots__ = ("cells", "grouped", "used_grouped", "used_single")

    def __init__(self, working: Working) -> None:
        self.cells = working.mem_cells
        self.grouped = sum(1 << z for z, cells in enumerate(self.cells) if popcount(cells) > 1)
        used = sum(1 << z for z, u in enumerate(working.mem_used) if u)
        self.used_single = used & ~self.grouped
        self.used_grouped = used & self.grouped

    def forbids(self, mask: int, size: int) -> bool:
        if not (self.grouped or self.used_single):
            return False  # nothing used and nothing grouped: every mask is allowed
        if size == 1:
            return bool(self.grouped & mask)  # a grouped zone is never used alone
        if mask & self.used_single:
            return True  # a zone with a single-zone allocation never joins a group
        rest = mask & self.used_grouped
        while rest:
            low = rest & -rest
            if self.cells[low.bit_length() - 1] != mask:
                return True  # a grouped zone goes only with exactly its group
            rest ^= low
        return False


def device_hints(
    working: Working, resource: str, request: int, *, single_only: bool = False
) -> ResourceHints:
    """The device manager (devicemanager ``topology_hints.go`` ``GetTopologyHints``,
    ``generateDeviceTopologyHints``) for ``request`` devices of ``resource``.

    A resource none of whose devices has a NUMA node gives no preference. Devices of unknown
    NUMA node (-1) and devices without topology count toward the node's total (fewer in total
    than requested: an empty list) but toward no mask. ``minAffinitySize`` counts every device
    of a mask's zones; reusable devices (from init containers) must lie in the mask.
    ``single_only`` looks at single-zone masks only. A device attached to several zones
    (``nodeMultiNUMAResources``) counts once toward a mask holding any of them (:mod:`.devices`).
    """
    node = working.node
    rows = node.devices.get(resource)
    unknown = working.dev_unknown.get(resource, 0)
    if rows is None and resource not in node.facts.unknown_numa_devices:
        return no_preference(resource)
    zones = node.all_zones
    count = len(node.ids)
    free_row = working.dev_free.get(resource, [0] * count)
    reuse_zones, reuse_count = working.dev_reuse.get(resource, (0, 0))
    outside = unknown + (node.facts.non_topology_devices.get(resource, 0) if rows else 0)
    groups = working.dev_groups.get(resource)
    in_zones = sum(free_row) if groups is None else free_total(free_row, groups)
    if in_zones + outside + reuse_count < request:
        return ResourceHints(resource, NONE)
    need = request - reuse_count
    if groups is not None:
        layout = node.device_layouts()[resource]
        min_affinity, beyond = grouped_min_affinity(layout, zones, request)
        if not single_only:
            masks = hinted_masks(free_row, groups, zones, need, reuse_zones)
            return _hints(resource, masks, min_affinity, beyond=beyond)
    else:
        min_affinity = narrowest_width(rows[0] if rows else (0,) * count, zones, request)
    if single_only:  # one zone's count holds its own devices and every shared one: exact either way
        singles = [1 << z for z in range(count) if free_row[z] >= need and reuse_zones & ~(1 << z) == 0]
        return _hints(resource, singles, min_affinity, narrowed=True)
    free = mask_sums(free_row, zones)
    masks = [m for m, _ in candidate_masks(zones) if free[m] >= need and m & reuse_zones == reuse_zones]
    return _hints(resource, masks, min_affinity, beyond=unlisted(zones, min_affinity))
