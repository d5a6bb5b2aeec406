"""Devices attached to several NUMA zones: counted once per mask, taken from the right pool.

The zones of an NRT count a device attached to zones 0 and 1 in both (a row per resource, one
count per zone), and ``nodeMultiNUMAResources`` (:mod:`rte.model.shared_devices`) says how many
of those counts are such shared devices. Here a resource's devices are *pools*: each zone's own
devices (its count less the groups it belongs to) and each group of shared devices, with its
mask of zones. The device manager (kubernetes/kubernetes ``pkg/kubelet/cm/devicemanager``):

* ``topology_hints.go`` ``generateDeviceTopologyHints``: a device counts toward a mask when the
  mask holds *any* of its NUMA nodes (``mask.AnySet``), once; ``minAffinitySize`` is the width of
  the first mask (``IterateBitMasks`` order) whose devices, free or not, reach the request, and a
  mask is hinted when its free devices (plus the reusable ones) do;
* ``manager.go`` ``devicesToAllocate`` and ``filterByAffinity``: a device is *aligned* with the
  hint when one of its nodes is in it; aligned devices are taken first, which of them the device
  plugin's preference (or map order) decides, then the others.

Every function here is pure over rows indexed by zone position; :mod:`.node` keeps the pools of
one admission in :attr:`~.node.Working.dev_groups`, and :mod:`.hints` and :mod:`.allocate` call
these functions for a resource that has groups. A resource without groups keeps the per-zone
rows alone, exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rte.model.admission.masks import candidate_masks, enumerated_width, narrowest_width, popcount, positions
from rte.model.shared_devices import SharedDevices

Group = list[int]
"""``[mask over zone positions, free devices]`` of one group of shared devices, during admission."""


@dataclass(frozen=True, slots=True)
class DeviceLayout:
    """How one resource's devices are attached: what never changes during admission."""

    own_allocatable: tuple[int, ...]
    """Per zone: its allocatable devices that no other zone shares."""
    groups: tuple[tuple[int, int], ...]
    """(mask, allocatable) of each group of shared devices."""
    published_free: tuple[int, ...]
    """The free count of each group, as published (before reservations are taken into account)."""


def device_layouts(
    ids: Sequence[int],
    devices: Mapping[str, tuple[Sequence[int], Sequence[int]]],
    shared: Sequence[SharedDevices],
) -> dict[str, DeviceLayout]:
    """The layout of every resource the groups speak of, when they agree with the zones: every id
    is a zone of the node and no zone's own count is negative. A resource whose groups disagree
    keeps the per-zone rows alone (what a consumer without the attribute reads)."""
    where = {numa_id: position for position, numa_id in enumerate(ids)}
    by_resource: dict[str, list[SharedDevices]] = {}
    for group in shared:
        by_resource.setdefault(group.resource, []).append(group)
    out = {}
    for resource, groups in by_resource.items():
        rows = devices.get(resource)
        if rows is None or any(i not in where for g in groups for i in g.numa_ids):
            continue
        allocatable = list(rows[0])
        masks = [sum(1 << where[i] for i in g.numa_ids) for g in groups]
        for mask, group in zip(masks, groups, strict=True):
            for z in positions(mask):
                allocatable[z] -= group.allocatable
        if min(allocatable) < 0:
            continue
        out[resource] = DeviceLayout(
            tuple(allocatable),
            tuple((m, g.allocatable) for m, g in zip(masks, groups, strict=True)),
            tuple(g.free for g in groups),
        )
    return out


def split_free(row: Sequence[int], layout: DeviceLayout) -> list[Group]:
    """The groups' free devices over a zone row of free devices. The published counts are taken
    as far as the row allows them: after the reserve cache has subtracted reservations from the
    zones, no zone may hold more shared devices than it has free ones, so a group is cut down to
    its least free zone, and then groups are cut further where a zone would go negative."""
    groups = [
        [mask, min(free, *(row[z] for z in positions(mask)))]
        for (mask, _), free in zip(layout.groups, layout.published_free, strict=True)
    ]
    for z, value in enumerate(row):
        excess = sum(g[1] for g in groups if g[0] >> z & 1) - value
        for group in groups:
            if excess <= 0:
                break
            if group[0] >> z & 1:
                cut = min(excess, group[1])
                group[1] -= cut
                excess -= cut
    return groups


def own_free(row: Sequence[int], groups: Sequence[Group]) -> list[int]:
    """Per zone: its free devices that no other zone shares."""
    own = list(row)
    for mask, free in groups:
        for z in positions(mask):
            own[z] -= free
    return own


def free_total(row: Sequence[int], groups: Sequence[Group]) -> int:
    """Every free device, each shared one counted once."""
    return sum(own_free(row, groups)) + sum(free for _, free in groups)


def _count(own: Sequence[int], groups: Sequence[tuple[int, int]] | Sequence[Group], mask: int) -> int:
    return sum(own[z] for z in positions(mask)) + sum(g[1] for g in groups if g[0] & mask)


def min_affinity(layout: DeviceLayout, zones: int, request: int) -> tuple[int, bool]:
    """``minAffinitySize`` counting each shared device once per mask, and whether the true width
    may be one the model does not list (many zones). The first listed mask whose devices reach
    the request is the narrowest, unless only the mask of all zones does while narrower widths
    are unlisted: the per-zone rows (each shared device counted in every zone) give a lower
    bound, and if it is below the count the width is unknown."""
    count = popcount(zones)
    for mask, size in candidate_masks(zones):
        if _count(layout.own_allocatable, layout.groups, mask) >= request:
            if size < count or enumerated_width(count) >= count - 1:
                return size, False
            zone_rows = list(layout.own_allocatable)
            for group_mask, allocatable in layout.groups:
                for z in positions(group_mask):
                    zone_rows[z] += allocatable
            least = max(narrowest_width(zone_rows, zones, request), enumerated_width(count) + 1)
            return size, least < count
    return count, False


def hinted_masks(
    row: Sequence[int], groups: Sequence[Group], zones: int, need: int, reuse_zones: int
) -> list[int]:
    """The listed masks whose free devices reach ``need`` and that hold every zone of the reusable
    devices, in the kubelet's order."""
    own = own_free(row, groups)
    return [
        m
        for m, _ in candidate_masks(zones)
        if m & reuse_zones == reuse_zones and _count(own, groups, m) >= need
    ]


def take_grouped(
    row: list[int], groups: list[Group], amount: int, mask: int, exact: bool
) -> tuple[int, bool]:
    """Take ``amount`` free devices for a unit whose hint is ``mask``; return the zones charged
    and whether the counts are still exact.

    Aligned pools (a zone of the mask, or a group meeting it) give first. When one aligned pool
    gives it all, or the aligned pools give all they have, the counts stay exact; otherwise which
    devices the plugin picks is unknown, and each aligned pool is charged the whole amount (every
    pool of the node when the aligned ones cannot hold it, or once counts are inexact), so no
    mask is left with more than the kubelet leaves it. ``row`` (zone counts, each shared device
    in each of its zones) and ``groups`` are updated together."""
    if amount <= 0:
        return 0, exact
    own = own_free(row, groups)
    pools: list[tuple[int, int, int]] = [(1 << z, z, own[z]) for z in range(len(row)) if own[z] > 0]
    pools += [(g[0], -1 - i, g[1]) for i, g in enumerate(groups) if g[1] > 0]
    aligned = [p for p in pools if p[0] & mask]
    inside = sum(p[2] for p in aligned)
    if exact and amount <= inside and (len(aligned) == 1 or amount == inside):
        takes = [(p, min(amount, p[2])) for p in aligned]
    else:
        targets = aligned if exact and amount < inside else pools
        exact = False
        takes = [(p, min(amount, p[2])) for p in targets]
    charged = 0
    for (pool_mask, key, _), taken in takes:
        if key >= 0:
            own[key] -= taken
        else:
            groups[-1 - key][1] -= taken
        charged |= pool_mask
    for z in range(len(row)):
        row[z] = own[z] + sum(g[1] for g in groups if g[0] >> z & 1)
    return charged, exact
