"""The simulated CPU manager on NUMA zones nested in sockets, by kubernetes/kubernetes
``pkg/kubelet/cm/cpumanager/cpu_assignment.go`` (``newCPUAccumulator``: ``socketsFirst`` when
NUMA nodes outnumber sockets; ``takeFullSockets``, ``takeFullNUMANodes``, ``takeFullCores``,
``takeRemainingCPUs``) and ``policy_static.go`` ``getAlignedCPUs`` (``align-by-socket``)."""

from __future__ import annotations

from dataclasses import replace

from rte.sim.cpus import allocate_cpus, take_packed
from rte.sim.cputopology import CpuTopology
from rte.sim.hardware import build_hardware
from rte.sim.specs import parse_node_shapes


def _topology(socket_of: dict[int, int], *, align: bool = False) -> CpuTopology:
    """Four zones of 4 single-thread cores; zone z holds CPUs 4z..4z+3."""
    zone_of = {cpu: cpu // 4 for cpu in range(16)}
    return CpuTopology(
        zone_of=zone_of,
        core_of={cpu: cpu for cpu in range(16)},
        zone_size={z: 4 for z in range(4)},
        threads_per_core=1,
        socket_of=socket_of,
        align_by_socket=align,
    )


INTERLEAVED = {0: 0, 1: 1, 2: 0, 3: 1}
"""Sockets 0 (zones 0, 2) and 1 (zones 1, 3), as on the intel-2s-snc2-pmem fixture."""


def _zones(topology: CpuTopology, cpus: list[int] | None) -> list[int]:
    assert cpus is not None
    return sorted(topology.zone_of[c] for c in cpus)


def test_a_whole_free_socket_is_taken_before_whole_numa_nodes() -> None:
    """Zone 2 keeps 1 of 4 free: socket 1 (zones 1, 3) is the free one and is taken whole for 8
    CPUs; NUMA nodes first would have taken zones 0 and 1."""
    topology = _topology(INTERLEAVED)
    available = [c for c in range(16) if c not in (9, 10, 11)]
    assert _zones(topology, take_packed(topology, available, 8)) == [1] * 4 + [3] * 4


def test_the_rest_comes_from_the_socket_with_fewest_free_then_its_fullest_numa_node() -> None:
    """Socket 0 (zones 0, 1 consecutive) has 7 free, socket 1 has 8: 2 CPUs come from socket 0,
    and within it from zone 1 (3 free) before zone 0 (4 free)."""
    topology = _topology({0: 0, 1: 0, 2: 1, 3: 1})
    available = [c for c in range(16) if c != 4]
    assert _zones(topology, take_packed(topology, available, 2)) == [1, 1]


def test_align_by_socket_allocates_from_the_hints_socket() -> None:
    """The hint {0} stands for socket 0 (zones 0 and 1): the packed order takes zone 1's CPUs
    (fewer free) before zone 0's. Without the option the hint keeps the CPUs on zone 0."""
    free = [c for c in range(16) if c != 4]
    aligned = _topology({0: 0, 1: 0, 2: 1, 3: 1}, align=True)
    assert _zones(aligned, allocate_cpus(aligned, free, (), 2, [0])) == [1, 1]
    plain = _topology({0: 0, 1: 0, 2: 1, 3: 1})
    assert _zones(plain, allocate_cpus(plain, free, (), 2, [0])) == [0, 0]


def test_hardware_with_two_zones_per_socket_publishes_packages_and_the_option() -> None:
    ((_, shape),) = parse_node_shapes("4x4c-16Gi")
    hw = build_hardware(
        replace(shape, zones_per_socket=2),
        policy="restricted",
        scope="container",
        reserved_cpus=0,
        reserved_memory=0,
        align_by_socket=True,
    )
    assert hw.machine.numa_sockets == {0: {0}, 1: {0}, 2: {1}, 3: {1}}
    assert hw.config.cpu_manager_policy_options == {"align-by-socket": "true"}
    assert hw.cpu_topology.socket_of == {0: 0, 1: 0, 2: 1, 3: 1}
