"""NUMA masks as the Topology Manager handles them.

A mask is an ``int`` whose bit ``i`` is set when NUMA zone ``i`` belongs to it. The model works on
*positions* (the node's zones sorted by NUMA id, position 0 the lowest id): a monotone relabelling
of the ids, so comparing two masks by value gives the same answer over positions as over ids, and
every tie-break of kubernetes/kubernetes ``pkg/kubelet/cm/topologymanager/bitmask/bitmask.go``
holds unchanged. Masks are turned back into ids only to be shown or returned.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

MAX_ENUMERATED_ZONES = 16
"""The most zones whose every combination the model enumerates (65535 masks). The kubelet refuses
to start its Topology Manager above ``max-allowable-numa-nodes`` (8 by default) NUMA nodes, and
enumerates every mask itself (``bitmask.IterateBitMasks``, exponential); past 16 zones the model
enumerates only the masks the rules can pick (:func:`candidate_masks`)."""

WIDE_MASK_BUDGET = 1 << 14
"""On a node of more than :data:`MAX_ENUMERATED_ZONES` zones: how many narrow masks the model
lists at most (all masks up to the widest width that fits, see :func:`enumerated_width`)."""


def popcount(mask: int) -> int:
    return mask.bit_count()


def positions(mask: int) -> list[int]:
    """The positions set in ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def lowest(mask: int) -> int:
    """The lowest position set in a non-empty ``mask``."""
    return (mask & -mask).bit_length() - 1


@functools.lru_cache(maxsize=1024)
def every_mask(zones: int) -> tuple[tuple[int, int], ...]:
    """(mask, size) of every non-empty mask over the positions set in ``zones``, in the kubelet's
    order (``bitmask.IterateBitMasks``: by size, then lexicographically by position)."""
    bits = positions(zones)
    return tuple(
        (sum(1 << b for b in combo), size)
        for size in range(1, len(bits) + 1)
        for combo in itertools.combinations(bits, size)
    )


def is_complete(zones: int) -> bool:
    """Whether :func:`candidate_masks` lists every mask over ``zones``."""
    return zones.bit_count() <= MAX_ENUMERATED_ZONES


@functools.lru_cache(maxsize=256)
def enumerated_width(count: int) -> int:
    """The widest width :func:`candidate_masks` lists every mask of, over ``count`` zones."""
    if count <= MAX_ENUMERATED_ZONES:
        return count
    total, width = 0, 0
    while width < count and total + math.comb(count, width + 1) <= WIDE_MASK_BUDGET:
        width += 1
        total += math.comb(count, width)
    return width


@functools.lru_cache(maxsize=256)
def candidate_masks(zones: int) -> tuple[tuple[int, int], ...]:
    """(mask, size) of the masks the model considers over ``zones``, in the kubelet's order: every
    mask (:func:`every_mask`) up to :data:`MAX_ENUMERATED_ZONES` zones; beyond, every mask up to
    :func:`enumerated_width` zones, then the mask of all the zones (the widest, which every
    hint provider lists whenever it lists anything: its totals are the node's)."""
    if is_complete(zones):
        return every_mask(zones)
    bits = positions(zones)
    width = enumerated_width(len(bits))
    narrow = tuple(
        (sum(1 << b for b in combo), size)
        for size in range(1, width + 1)
        for combo in itertools.combinations(bits, size)
    )
    return (*narrow, (zones, len(bits)))


def unlisted(zones: int, width: int) -> bool:
    """Whether :func:`candidate_masks` over ``zones`` leaves out masks of ``width`` zones."""
    count = zones.bit_count()
    return enumerated_width(count) < width < count


def narrowest_width(row: Sequence[int], zones: int, request: int) -> int:
    """``minAffinitySize``: the fewest zones of ``zones`` whose total reaches ``request`` (the
    first such mask in the kubelet's order is the narrowest), all of them when none does. The
    largest totals first reach it soonest, so no mask needs listing."""
    values = sorted((row[z] for z in positions(zones)), reverse=True)
    total = 0
    for width, value in enumerate(values, 1):
        total += value
        if total >= request:
            return width
    return len(values)


def is_narrower(a: int, b: int) -> bool:
    """``BitMask.IsNarrowerThan``: fewer zones, or as many with a smaller value (lower zones)."""
    ca, cb = a.bit_count(), b.bit_count()
    return ca < cb or (ca == cb and a < b)


def mean_distance(mask: int, distances: Sequence[Sequence[int]]) -> float:
    """``NUMADistances.CalculateAverageFor`` (topologymanager ``numa_info.go``): the mean distance
    over every ordered pair of the mask's zones, self pairs included, in float64."""
    bits = positions(mask)
    if not bits:
        return 0.0
    total = 0.0
    for i in bits:
        row = distances[i]
        for j in bits:
            total += float(row[j])
    return total / float(len(bits) * len(bits))


def sum_over_positions(row: Sequence[int], mask: int) -> int:
    """The sum of ``row`` over the positions in ``mask``."""
    return sum(row[p] for p in positions(mask))


def to_ids(mask: int, ids: Sequence[int]) -> tuple[int, ...]:
    """The NUMA ids of the positions in ``mask``."""
    return tuple(ids[p] for p in positions(mask))


def format_mask(mask: int, ids: Sequence[int]) -> str:
    """``{0,1}``: the NUMA ids of ``mask`` as the reasons print them."""
    return "{" + ",".join(str(i) for i in to_ids(mask, ids)) + "}"
