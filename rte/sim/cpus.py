"""Which CPU ids the simulated kubelet's static CPU manager hands out, in the kubelet's order.

The static policy (kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager/policy_static.go``,
``allocateCPUs``) allocates a container's exclusive CPUs from the free CPUs plus the pod's
reusable ones (CPUs of its finished init containers): first as many as it can from the NUMA nodes
of the merged Topology Manager hint, then the rest from anywhere. Each of those two takes runs the
default "packed" algorithm (``cpu_assignment.go``, ``takeByTopologyNUMAPacked``):

1. whole NUMA nodes (and whole sockets), while the request needs at least a whole one, the
   NUMA nodes with the fewest free CPUs first;
2. whole physical cores, while the request needs at least a core, in the order below;
3. single threads, one at a time, in the same order.

The order: NUMA nodes by ascending free CPUs (ties: lower id), within one the cores by ascending
free threads (ties: lower core id, which the kubelet takes as the core's lowest CPU id), within a
core its CPUs by id. A NUMA node counts as free only when every CPU of it is, reserved CPUs
included, so a node holding reserved CPUs is never taken whole.

With one socket per NUMA node the socket step of (1) never takes anything the NUMA step left
(every free NUMA node left over is larger than what is still needed), and the kubelet's
NUMA-first ordering applies (``numaFirst``: sockets >= NUMA nodes). Hardware with several NUMA
nodes per socket takes whole sockets first (:mod:`rte.sim.sockets`), and with ``align-by-socket``
the hint's CPUs are those of its sockets (``getAlignedCPUs``).

With the CPU manager option ``distribute-cpus-across-numa`` each of the two takes runs
``takeByTopologyNUMADistributed`` instead (:func:`take_distributed`): how many CPUs each NUMA node
gives is the admission model's own search (:func:`rte.model.admission.distribute.distributed_in_order`)
in the kubelet's NUMA order (free CPUs, then id; socket by socket when sockets hold several NUMA
nodes, ``socketsFirst``); each node's even share is then taken packed from that
node, and each group of the remainder packed from it again, as the kubelet does.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from rte.model.admission.distribute import distributed_in_order, kubelet_numa_order
from rte.sim.cputopology import CpuTopology
from rte.sim.sockets import sockets_first, zones_of_sockets


def _cores_in_order(topology: CpuTopology, available: Iterable[int]) -> list[list[int]]:
    """The available CPUs grouped by core, cores in the packed order (module docstring)."""
    by_zone: dict[int, dict[int, list[int]]] = {}
    zone_of, core_of = topology.zone_of, topology.core_of
    for cpu in available:
        by_zone.setdefault(zone_of[cpu], {}).setdefault(core_of[cpu], []).append(cpu)
    out: list[list[int]] = []
    for _, cores in sorted(by_zone.items(), key=lambda z: (sum(len(c) for c in z[1].values()), z[0])):
        for _, cpus in sorted(cores.items(), key=lambda c: (len(c[1]), c[0])):
            out.append(sorted(cpus))
    return out


def take_packed(topology: CpuTopology, available: Collection[int], count: int) -> list[int] | None:
    """``count`` CPUs of ``available`` as ``takeByTopologyNUMAPacked`` picks them; None when
    fewer are available."""
    if count <= 0:
        return []
    if count > len(available):
        return None
    if topology.socket_of is not None:
        return sockets_first(topology, available, count)
    if topology.threads_per_core == 1 and len({topology.zone_of[cpu] for cpu in available}) == 1:
        # One zone of single-thread cores: every step below takes CPUs in id order.
        return sorted(available)[:count]
    taken: list[int] = []
    left = set(available)
    need = count
    # 1. Whole NUMA nodes: the free ones, in the order computed once before the loop.
    zone_free: dict[int, list[int]] = {}
    for cpu in left:
        zone_free.setdefault(topology.zone_of[cpu], []).append(cpu)
    for zone, cpus in sorted(zone_free.items(), key=lambda z: (len(z[1]), z[0])):
        if len(cpus) == topology.zone_size[zone] and need >= len(cpus):
            taken.extend(sorted(cpus))
            left.difference_update(cpus)
            need -= len(cpus)
    if need == 0:
        return taken
    # 2. Whole cores, in the order of the CPUs still free.
    threads = topology.threads_per_core
    for cpus in _cores_in_order(topology, left):
        if len(cpus) == threads and need >= threads:
            taken.extend(cpus)
            left.difference_update(cpus)
            need -= threads
    if need == 0:
        return taken
    # 3. Single threads, in the order of what is left after the whole cores.
    for cpus in _cores_in_order(topology, left):
        for cpu in cpus:
            taken.append(cpu)
            need -= 1
            if need == 0:
                return taken
    return None  # unreachable: enough CPUs were available


def _numa_order(topology: CpuTopology, free: Mapping[int, int]) -> list[int]:
    """``sortAvailableNUMANodes`` over the zones with free CPUs: by free CPUs then id when every
    zone has its own socket (``numaFirst``), else socket by socket (``socketsFirst``), with the
    admission model's own ordering so that the two cannot drift apart."""
    if topology.socket_of is None:
        return sorted(free, key=lambda zone: (free[zone], zone))
    positions = range(max(topology.zone_size) + 1)
    free_row = [free.get(z, 0) for z in positions]
    sockets = [topology.socket_of.get(z, z) for z in positions]
    numa_first = len(set(topology.socket_of.values())) >= len(topology.zone_size)
    return kubelet_numa_order(free_row, sorted(free), sockets, numa_first)


def take_distributed(topology: CpuTopology, available: Collection[int], count: int) -> list[int] | None:
    """``count`` CPUs of ``available`` as ``takeByTopologyNUMADistributed`` (group size 1: the
    simulated kubelet runs without ``full-pcpus-only``) picks them; None when fewer are available."""
    if count <= 0:
        return []
    if count > len(available):
        return None
    by_zone: dict[int, list[int]] = {}
    for cpu in available:
        by_zone.setdefault(topology.zone_of[cpu], []).append(cpu)
    free = {zone: len(cpus) for zone, cpus in by_zone.items()}
    order = _numa_order(topology, free)
    machine_cpus = sum(topology.zone_size.values())
    takes = distributed_in_order(free, order, count, 1, machine_cpus, len(topology.zone_size))
    if takes is None:
        return take_packed(topology, available, count)
    share = count // len(takes)
    taken: list[int] = []
    for zone, total in sorted(takes.items()):
        left = set(by_zone[zone])
        for step in [share] + [1] * (total - share):  # the even share, then each remainder group
            got = take_packed(topology, left, step) or []
            taken.extend(got)
            left.difference_update(got)
    return taken


def allocate_cpus(
    topology: CpuTopology,
    free: Collection[int],
    reusable: Collection[int],
    count: int,
    zones: Collection[int] | None,
    *,
    distribute: bool = False,
) -> list[int] | None:
    """``allocateCPUs``: ``count`` CPUs of ``free`` and ``reusable``, first from ``zones`` (the
    merged hint; None: no affinity), then from anywhere. None when there are too few.
    ``distribute``: the option ``distribute-cpus-across-numa`` is on."""
    take = take_distributed if distribute else take_packed
    pool = set(free) | set(reusable)
    taken: list[int] = []
    if zones is not None and topology.align_by_socket and topology.socket_of is not None:
        zones = zones_of_sockets(topology.socket_of, zones)  # getAlignedCPUs: the hint's sockets
    if zones is not None:
        aligned = [cpu for cpu in pool if topology.zone_of[cpu] in zones]
        taken = take(topology, aligned, min(count, len(aligned))) or []
        pool.difference_update(taken)
    rest = take(topology, pool, count - len(taken))
    return None if rest is None else taken + rest
