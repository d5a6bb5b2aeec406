"""The CPU manager option ``distribute-cpus-across-numa``: how many CPUs each zone gives.

With the option, the static policy takes CPUs by ``takeByTopologyNUMADistributed``
(kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager/cpu_assignment.go``; chosen in
``policy_static.go`` ``takeByTopology``) instead of the packed order. Counts are all it reads,
so an NRT decides the split, except for one fact it does not carry (below):

* a request that is not a multiple of the group size (1, or the threads per core when
  ``full-pcpus-only`` is on) is packed (:func:`distributed_takes` returns None);
* the search tries combinations of ``k`` NUMA nodes, ``k`` from ``rangeNUMANodesNeededToSatisfy``
  (at least the request's groups over the machine's groups per NUMA node, at most the nodes with
  free CPUs); a combination qualifies if its nodes hold the request in whole groups and each node
  holds the even share ``numCPUs / k`` rounded down to whole groups;
* the share left over (fewer groups than nodes) goes round-robin, one group at a time, to some
  subset of the combination's nodes that still have a group free, subsets tried largest first;
* every candidate is scored by the standard deviation of what stays free on every NUMA node with
  free CPUs (mean and result rounded to 3 decimals, as ``standardDeviation`` does); the first
  candidate with the strictly lowest score wins, the smallest ``k`` with any candidate is used,
  and when none qualifies the request is packed.

"First" follows the kubelet's NUMA order (``sortAvailableNUMANodes``): by free CPUs, then id,
when sockets >= NUMA nodes, but grouped by socket first when a socket holds several NUMA nodes.
An NRT does not say which zones share a socket, so :func:`distributed_takes` runs the search in
every order of the zones and returns every split it can end with: one split is exact; several
(a tie broken by order) are charged per zone at the most any of them takes, and the allocation is
no longer exact from there on (the safe side: every zone keeps at most what the kubelet leaves).
Given each zone's socket (``sockets``, a fact NRTs do not carry yet), :func:`kubelet_numa_order`
is the kubelet's order and the split is always exact. Beyond :data:`MAX_ORDERED_ZONES` zones
with free CPUs in the mask and no sockets, or with ``full-pcpus-only`` on and no threads per
core published, rte does not search: the whole amount is charged to every zone of the mask, as
for any unknown split (:mod:`.allocate`).

Where the allocation happens (``policy_static.go`` ``allocateCPUs``): first within the merged
hint's NUMA nodes, as many as they have; the rest, if any, from every other NUMA node, each step
a separate search.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Sequence

from rte.model.admission.masks import positions
from rte.model.admission.node import Working, sum_over

MAX_ORDERED_ZONES = 5
"""Zones (with free CPUs, within one allocation step) up to which every order is searched."""


def _go_round3(value: float) -> float:
    """``math.Round(value*1000) / 1000``: half away from zero (Python's ``round`` is half-even)."""
    return math.floor(value * 1000 + 0.5) / 1000 if value >= 0 else -math.floor(-value * 1000 + 0.5) / 1000


def balance_score(values: Sequence[int]) -> float:
    """``standardDeviation`` of ``cpu_assignment.go``: over a mean rounded to 3 decimals."""
    mean = _go_round3(sum(values) / len(values))
    return _go_round3(math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)))


def numa_range(amount: int, group: int, machine_cpus: int, machine_numa_nodes: int, available: int) -> range:
    """``rangeNUMANodesNeededToSatisfy``: the combination sizes tried, smallest first."""
    machine_groups = (machine_cpus - 1) // group + 1
    groups_per_node = (machine_groups - 1) // machine_numa_nodes + 1
    needed = (amount - 1) // group + 1
    return range((needed - 1) // groups_per_node + 1, min(needed, available) + 1)


def _round_robin(after: dict[int, int], subset: Sequence[int], remainder: int, group: int) -> dict[int, int]:
    """Hand out ``remainder`` CPUs a group at a time over ``subset``, in its order."""
    left = dict(after)
    while remainder > 0:
        for numa in subset:
            if remainder == 0:
                break
            if left[numa] >= group:
                left[numa] -= group
                remainder -= group
    return left


def _best_for_combo(
    free: dict[int, int], combo: Sequence[int], amount: int, group: int
) -> tuple[float, dict[int, int]] | None:
    """The combination's lowest score and what stays free after it; None if it cannot serve."""
    if sum(free[n] for n in combo) < amount or sum(free[n] // group for n in combo) * group < amount:
        return None
    share = amount // len(combo) // group * group
    if any(free[n] < share for n in combo):
        return None
    after = dict(free)
    for numa in combo:
        after[numa] -= share
    remainder = amount - share * len(combo)
    if remainder == 0:
        return balance_score(list(after.values())), after
    candidates = [n for n in combo if after[n] >= group]
    best: tuple[float, dict[int, int]] | None = None
    for size in range(len(candidates), 0, -1):
        for subset in itertools.combinations(candidates, size):
            if sum(after[n] // group for n in subset) * group < remainder:
                continue  # the subset cannot take the remainder in whole groups
            left = _round_robin(after, subset, remainder, group)
            score = balance_score(list(left.values()))
            if best is None or score < best[0]:
                best = (score, left)
    return best


def distributed_in_order(
    free: dict[int, int],
    order: Sequence[int],
    amount: int,
    group: int,
    machine_cpus: int,
    machine_numa_nodes: int,
) -> dict[int, int] | None:
    """What ``takeByTopologyNUMADistributed`` takes from each NUMA node of ``free`` (node ->
    free CPUs of the allocation's pool), trying nodes in ``order``; None when it packs instead."""
    if amount <= 0 or amount % group:
        return None
    nodes = [n for n in order if free.get(n, 0) > 0]
    pool = {n: free[n] for n in nodes}
    if amount > sum(pool.values()):
        return None  # the kubelet fails the allocation; admission checked the total before
    for size in numa_range(amount, group, machine_cpus, machine_numa_nodes, len(nodes)):
        best: tuple[float, dict[int, int]] | None = None
        for combo in itertools.combinations(nodes, size):
            if best is not None and best[0] == 0:
                break
            found = _best_for_combo(pool, combo, amount, group)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        if best is not None:
            return {n: pool[n] - best[1][n] for n in nodes if pool[n] != best[1][n]}
    return None


def kubelet_numa_order(
    free: Sequence[int], nodes: Sequence[int], sockets: Sequence[int], numa_first: bool
) -> list[int]:
    """``sortAvailableNUMANodes`` over ``nodes`` (positions with free CPUs in the pool), given
    every position's socket. ``numaFirst`` (the machine has at least as many sockets as NUMA
    nodes with CPUs): by free CPUs, then id. ``socketsFirst``: sockets by their free CPUs in the
    pool, then id; within one, its NUMA nodes by free CPUs, then id. Positions ascend with NUMA
    ids, so they break ties alike."""
    if numa_first:
        return sorted(nodes, key=lambda z: (free[z], z))
    socket_free: dict[int, int] = {}
    for z in nodes:
        socket_free[sockets[z]] = socket_free.get(sockets[z], 0) + free[z]
    return sorted(nodes, key=lambda z: (socket_free[sockets[z]], sockets[z], free[z], z))


def distributed_takes(
    free: Sequence[int],
    capacity: Sequence[int],
    zones: int,
    amount: int,
    group: int,
    sockets: Sequence[int] | None = None,
) -> list[tuple[int, ...]] | None:
    """Every per-position split the option may give ``amount`` CPUs from ``zones`` (a mask over
    positions of the ``free`` row; ``capacity``: every zone's CPUs, what the machine-wide counts
    come from); empty when there are too many zones to search; None when the kubelet packs
    instead. ``sockets``: the socket of every position with CPUs, when the node says it; then the
    kubelet's own NUMA order decides ties and there is one split, else every order is tried."""
    nodes = [z for z in positions(zones) if free[z] > 0]
    if sockets is None and len(nodes) > MAX_ORDERED_ZONES:
        return [] if amount % group == 0 else None
    machine_cpus = sum(capacity)
    machine_nodes = sum(1 for c in capacity if c > 0)
    splits: set[tuple[int, ...]] = set()
    if sockets is not None:
        # cpu_assignment.go newCPUAccumulator: topo.NumSockets >= topo.NumNUMANodes.
        numa_first = len({sockets[z] for z, c in enumerate(capacity) if c > 0}) >= machine_nodes
        orders: Iterable[Sequence[int]] = [kubelet_numa_order(free, nodes, sockets, numa_first)]
    else:
        orders = itertools.permutations(nodes)
    for order in orders:
        in_order = _split_in_order(tuple(free[z] for z in order), amount, group, machine_cpus, machine_nodes)
        if in_order is None:
            # Whether a combination qualifies does not depend on the order: all orders pack or none.
            return None
        split = [0] * len(free)
        for z, take in zip(order, in_order, strict=True):
            split[z] = take
        splits.add(tuple(split))
    return sorted(splits)


@functools.lru_cache(maxsize=4096)
def _split_in_order(
    free: tuple[int, ...], amount: int, group: int, machine_cpus: int, machine_nodes: int
) -> tuple[int, ...] | None:
    """:func:`distributed_in_order` over nodes listed in order, by their free CPUs alone: zones
    with the same free counts in the same order split alike, on every node of a cluster."""
    takes = distributed_in_order(
        dict(enumerate(free)), range(len(free)), amount, group, machine_cpus, machine_nodes
    )
    return None if takes is None else tuple(takes.get(i, 0) for i in range(len(free)))


def charge_distributed(
    working: Working, amount: int, zones: int, sockets: Sequence[int] | None = None
) -> int | None:
    """Take ``amount`` free CPUs from ``working`` as the option does within the merged mask
    ``zones`` (``allocateCPUs``: the mask first, then the rest from anywhere); the zones charged,
    or None when the kubelet packs this allocation (the caller's packed rules apply). ``sockets``:
    each position's socket when the NRT says it (``cpuManagerNUMASockets``): the kubelet's NUMA
    order then breaks ties and the split is exact."""
    node = working.node
    facts = node.facts
    group = 1
    if facts.full_pcpus_only:
        group = facts.threads_per_core or 0
    row = working.cpu_free
    inside = sum_over(row, zones)
    step_zones, step_amount = zones, min(amount, inside)
    charged = 0
    if amount > inside:
        # The mask gives everything it has (whatever the order), the rest comes from the others.
        for z in positions(zones):
            if row[z]:
                charged |= 1 << z
                row[z] = 0
        step_zones, step_amount = node.cpu_zones & ~zones, amount - inside
    if group == 0:
        splits: list[tuple[int, ...]] | None = []
    else:
        splits = distributed_takes(row, node.cpu_capacity, step_zones, step_amount, group, sockets)
    if splits is None:
        if amount <= inside:
            return None
        splits = []  # a packed rest outside the mask: an unknown split (allocate.py's rule)
    if len(splits) == 1:
        for z, take in enumerate(splits[0]):
            if take:
                row[z] -= take
                charged |= 1 << z
        return charged
    working.exact = False
    for z in positions(step_zones):
        most = max((s[z] for s in splits), default=step_amount)
        take = min(most, row[z])
        if take:
            row[z] -= take
            charged |= 1 << z
    return charged
