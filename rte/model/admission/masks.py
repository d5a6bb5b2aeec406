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
from collections.abc import Sequence

MAX_ENUMERATED_ZONES = 16
"""The most zones whose every combination the model enumerates (65535 masks). The kubelet refuses
to start its Topology Manager above ``max-allowable-numa-nodes`` (8 by default) NUMA nodes."""


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


def to_ids(mask: int, ids: Sequence[int]) -> tuple[int, ...]:
    """The NUMA ids of the positions in ``mask``."""
    return tuple(ids[p] for p in positions(mask))


def format_mask(mask: int, ids: Sequence[int]) -> str:
    """``{0,1}``: the NUMA ids of ``mask`` as the reasons print them."""
    return "{" + ",".join(str(i) for i in to_ids(mask, ids)) + "}"
