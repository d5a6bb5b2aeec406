"""Sockets in the CPU manager's rules: ``align-by-socket`` and the packed allocator's socket order.

What the static CPU manager (kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager``) does with
sockets, read from the NRT's ``cpuManagerNUMASockets``
(:data:`~rte.model.attributes.CPU_MANAGER_NUMA_SOCKETS`):

* ``policy_static.go`` ``generateCPUTopologyHints``: with ``align-by-socket`` a hint is also
  preferred when ``isHintSocketAligned``: the sockets its NUMA nodes sit on number exactly
  ``ceil(minAffinitySize / (NumNUMANodes / NumSockets))`` (never when NUMA nodes per socket is 0,
  i.e. sockets nest in NUMA nodes). Under ``restricted`` that admits masks wider than the
  narrowest, which the width rule alone refuses;
* ``getAlignedCPUs``: with ``align-by-socket`` the CPUs taken "within the hint" are those of every
  socket the hint touches, so an allocation can leave the hint's NUMA nodes (:func:`aligned_zones`);
* ``cpu_assignment.go`` ``takeByTopologyNUMAPacked`` over the aligned CPUs: ``newCPUAccumulator``
  takes whole NUMA nodes then whole sockets when sockets >= NUMA nodes (``numaFirst``), else whole
  sockets then whole NUMA nodes (``socketsFirst``); free means every CPU of the NUMA node
  (``isNUMANodeFree``) or ``CPUsPerSocket()`` CPUs of the socket (``isSocketFree``) are available;
  each level in ``sortAvailableNUMANodes`` / ``sortAvailableSockets`` order (fewest available
  first, ties by id; with ``socketsFirst`` NUMA nodes are ordered within their socket's order);
  then whole cores, then single threads, in the same zone order (:func:`packed_takes`).

NUMA ids here are positions (:mod:`~.masks`: a monotone relabelling, so every "lower id first"
tie-break is unchanged); socket ids are the published ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rte.model.admission.masks import positions
from rte.model.admission.node import NodeResources

_TABLE_KEY = "socket-layout"


@dataclass(frozen=True, slots=True)
class SocketLayout:
    """How a node's CPU zones sit in sockets (positions of zones with CPUs only)."""

    sockets: Mapping[int, frozenset[int]]
    """Zone position -> its socket ids."""
    zones_of: Mapping[int, int]
    """Socket id -> the mask of the zones it has CPUs in."""
    numa_per_socket: int
    """``NumNUMANodes / NumSockets`` in integers (0: sockets nest in NUMA nodes)."""
    cpus_per_socket: int
    """``CPUsPerSocket()``: every CPU of the node over the sockets, in integers."""
    numa_first: bool
    """``NumSockets >= NumNUMANodes``: the packed allocator takes NUMA nodes before sockets."""


def socket_layout(node: NodeResources) -> SocketLayout | None:
    """The node's layout; None when the NRT does not give the socket of every zone with CPUs."""
    if _TABLE_KEY in node.tables:
        return node.tables[_TABLE_KEY]  # type: ignore[return-value]
    layout = _build(node)
    node.tables[_TABLE_KEY] = layout
    return layout


def _build(node: NodeResources) -> SocketLayout | None:
    published = dict(node.facts.numa_sockets)
    sockets: dict[int, frozenset[int]] = {}
    for position, numa_id in enumerate(node.ids):
        if node.cpu_capacity[position] <= 0:
            continue
        ids = published.get(numa_id)
        if not ids:
            return None
        sockets[position] = ids
    if not sockets:
        return None
    zones_of: dict[int, int] = {}
    for position, ids in sockets.items():
        for socket in ids:
            zones_of[socket] = zones_of.get(socket, 0) | 1 << position
    count = len(zones_of)
    return SocketLayout(
        sockets=sockets,
        zones_of=zones_of,
        numa_per_socket=len(sockets) // count,
        cpus_per_socket=sum(node.cpu_capacity) // count,
        numa_first=count >= len(sockets),
    )


def socket_aligned(layout: SocketLayout, mask: int, min_affinity: int) -> bool:
    """``isHintSocketAligned``: the mask's zones span exactly the fewest sockets that could hold
    ``min_affinity`` NUMA nodes."""
    if layout.numa_per_socket == 0:
        return False
    least = -(-min_affinity // layout.numa_per_socket)
    spanned: set[int] = set()
    for position in positions(mask):
        spanned |= layout.sockets.get(position, frozenset())
    return len(spanned) == least


def aligned_width(layout: SocketLayout, min_affinity: int) -> int:
    """The widest mask :func:`socket_aligned` can accept: every zone of the fewest sockets."""
    if layout.numa_per_socket == 0:
        return min_affinity
    least = -(-min_affinity // layout.numa_per_socket)
    widest = max(mask.bit_count() for mask in layout.zones_of.values())
    return max(min_affinity, least * widest)


def aligned_zones(layout: SocketLayout, zones: int) -> int:
    """``getAlignedCPUs`` with ``align-by-socket``: every zone of every socket ``zones`` touches."""
    out = 0
    for position in positions(zones):
        for socket in layout.sockets.get(position, frozenset()):
            out |= layout.zones_of[socket]
    return out


def packed_takes(
    free: Sequence[int],
    capacity: Sequence[int],
    zones: int,
    amount: int,
    layout: SocketLayout,
    threads_per_core: int | None,
) -> dict[int, int] | None:
    """How many CPUs ``takeByTopologyNUMAPacked`` takes from each zone of ``zones`` for
    ``amount``, when per-zone counts decide it; None when the core layout (which an NRT does not
    carry) does.

    Whole NUMA nodes and whole sockets are decided by counts. With single-thread cores, what is
    left fills the zones in the allocator's order (every free CPU is a free core). Otherwise it
    goes to the first zone of that order when that zone holds it and it is less than one core's
    worth (the threads step walks that zone's CPUs first), or when that zone is the only one left.
    Otherwise how many whole free cores each zone has decides, and the answer is None.
    """
    avail = {z: free[z] for z in positions(zones) if free[z] > 0}
    if amount <= 0 or amount > sum(avail.values()):
        return None
    takes: dict[int, int] = {}
    need = amount
    steps = ("numa", "sockets") if layout.numa_first else ("sockets", "numa")
    for step in steps:
        if step == "numa":
            wholes: list[int] | None = [
                1 << z for z in _zone_order(avail, layout) if avail[z] == capacity[z] and need >= capacity[z]
            ]
        else:
            wholes = _free_sockets(avail, layout, need)
        if wholes is None:
            return None
        for mask in wholes:
            size = sum(avail.get(z, 0) for z in positions(mask))
            if need < size:
                continue  # the kubelet checks the size again as it walks
            for z in positions(mask):
                takes[z] = takes.get(z, 0) + avail.pop(z, 0)
            need -= size
    if need == 0:
        return takes
    order = _zone_order(avail, layout)
    if threads_per_core == 1:
        # Every available CPU is a whole free core: takeFullCores walks the zones in this order
        # and takes each one's CPUs until the request is met.
        for z in order:
            taken = min(avail[z], need)
            takes[z] = takes.get(z, 0) + taken
            need -= taken
            if need == 0:
                break
        return takes
    first = order[0]
    less_than_a_core = threads_per_core is not None and need < threads_per_core
    if avail[first] >= need and (len(order) == 1 or less_than_a_core):
        takes[first] = takes.get(first, 0) + need
        return takes
    return None


def _zone_order(avail: Mapping[int, int], layout: SocketLayout) -> list[int]:
    """Zones with available CPUs in ``sortAvailableNUMANodes`` order."""
    by_count = sorted(avail, key=lambda z: (avail[z], z))
    if layout.numa_first:
        return by_count
    order = []
    for socket in _socket_order(avail, layout):
        order += [z for z in by_count if socket in layout.sockets[z] and z not in order]
    return order


def _socket_avail(avail: Mapping[int, int], layout: SocketLayout, socket: int) -> int:
    return sum(avail.get(z, 0) for z in positions(layout.zones_of[socket]))


def _socket_order(avail: Mapping[int, int], layout: SocketLayout) -> list[int]:
    """Sockets with available CPUs, fewest first, ties by id (``socketsFirst.sortAvailableSockets``)."""
    present = {s for z in avail for s in layout.sockets[z]}
    return sorted(present, key=lambda s: (_socket_avail(avail, layout, s), s))


def _free_sockets(avail: Mapping[int, int], layout: SocketLayout, need: int) -> list[int] | None:
    """The zone masks of the free sockets ``takeFullSockets`` walks, in its order (each taken if
    still needed); None when a socket's free CPUs are not known from per-zone counts (a zone
    spanning several sockets, or a socket spanning several zones while NUMA nodes come first)."""
    if need < layout.cpus_per_socket:
        return []  # no socket is ever needed whole
    for z in avail:
        if len(layout.sockets[z]) != 1:
            return None
    if layout.numa_first:
        if any(mask.bit_count() > 1 for mask in layout.zones_of.values()):
            return None
        sockets = [s for z in _zone_order(avail, layout) for s in layout.sockets[z]]
    else:
        sockets = _socket_order(avail, layout)
    return [layout.zones_of[s] for s in sockets if _socket_avail(avail, layout, s) == layout.cpus_per_socket]
