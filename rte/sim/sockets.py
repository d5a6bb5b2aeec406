"""The simulated CPU manager on hardware whose NUMA nodes nest in sockets (SNC2, NPS2).

kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager/cpu_assignment.go``: ``newCPUAccumulator``
picks ``socketsFirst`` when there are more NUMA nodes than sockets. ``takeByTopologyNUMAPacked``
then takes, while the request needs at least that much:

1. whole free sockets (``takeFullSockets``; free: ``CPUsPerSocket()`` CPUs available), sockets by
   ascending available CPUs, ties by id (``sortAvailableSockets``);
2. whole free NUMA nodes (``takeFullNUMANodes``; free: every CPU of the node available, reserved
   ones included), in ``sortAvailableNUMANodes`` order: the sockets' order, and within a socket
   its NUMA nodes by ascending available CPUs, ties by id;
3. whole free cores (``takeFullCores``), the NUMA nodes in that order, within one its cores by
   ascending available CPUs, ties by core id;
4. single CPUs (``takeRemainingCPUs``) in the same order, by id within a core.

Each list is ordered once when its step starts, as the kubelet does. With ``align-by-socket``,
``policy_static.go`` ``getAlignedCPUs`` turns a hint into every CPU of the sockets it touches
(:func:`zones_of_sockets`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from rte.sim.cputopology import CpuTopology


def zones_of_sockets(socket_of: Mapping[int, int], zones: Iterable[int]) -> list[int]:
    """Every zone on a socket one of ``zones`` is on, ascending."""
    sockets = {socket_of[z] for z in zones}
    return sorted(z for z, s in socket_of.items() if s in sockets)


def _by_zone(topology: CpuTopology, cpus: Iterable[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for cpu in cpus:
        out.setdefault(topology.zone_of[cpu], []).append(cpu)
    return out


def _socket_order(topology: CpuTopology, by_zone: Mapping[int, list[int]]) -> list[int]:
    counts: dict[int, int] = {}
    socket_of = topology.sockets()
    for zone, cpus in by_zone.items():
        socket = socket_of[zone]
        counts[socket] = counts.get(socket, 0) + len(cpus)
    return sorted(counts, key=lambda s: (counts[s], s))


def _zone_order(topology: CpuTopology, by_zone: Mapping[int, list[int]]) -> list[int]:
    order = []
    socket_of = topology.sockets()
    for socket in _socket_order(topology, by_zone):
        mine = [z for z in by_zone if socket_of[z] == socket]
        order += sorted(mine, key=lambda z: (len(by_zone[z]), z))
    return order


def _cores(topology: CpuTopology, left: Collection[int]) -> list[list[int]]:
    """The available CPUs grouped by core, in the order of steps 3 and 4."""
    by_zone = _by_zone(topology, left)
    out = []
    for zone in _zone_order(topology, by_zone):
        cores: dict[int, list[int]] = {}
        for cpu in by_zone[zone]:
            cores.setdefault(topology.core_of[cpu], []).append(cpu)
        out += [sorted(cpus) for _, cpus in sorted(cores.items(), key=lambda c: (len(c[1]), c[0]))]
    return out


def sockets_first(topology: CpuTopology, available: Collection[int], count: int) -> list[int]:
    """``count`` CPUs of ``available`` (at least that many) in the ``socketsFirst`` packed order."""
    left = set(available)
    taken: list[int] = []
    need = count
    socket_of = topology.sockets()
    sockets = len(set(socket_of.values()))
    per_socket = sum(topology.zone_size.values()) // sockets
    by_zone = _by_zone(topology, left)
    # 1. Whole sockets.
    for socket in _socket_order(topology, by_zone):
        cpus = [c for z, row in by_zone.items() if socket_of[z] == socket for c in row]
        if len(cpus) == per_socket and need >= per_socket:
            taken += sorted(cpus)
            left.difference_update(cpus)
            need -= per_socket
    if need == 0:
        return taken
    # 2. Whole NUMA nodes.
    by_zone = _by_zone(topology, left)
    for zone in _zone_order(topology, by_zone):
        cpus = by_zone[zone]
        if len(cpus) == topology.zone_size[zone] and need >= len(cpus):
            taken += sorted(cpus)
            left.difference_update(cpus)
            need -= len(cpus)
    if need == 0:
        return taken
    # 3. Whole cores.
    threads = topology.threads_per_core
    for cpus in _cores(topology, left):
        if len(cpus) == threads and need >= threads:
            taken += cpus
            left.difference_update(cpus)
            need -= threads
    # 4. Single CPUs.
    for cpus in _cores(topology, left):
        for cpu in cpus:
            if need == 0:
                return taken
            taken.append(cpu)
            need -= 1
    return taken
