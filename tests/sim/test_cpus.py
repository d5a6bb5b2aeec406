"""The simulated CPU manager hands out CPU ids in the kubelet's packed order, on SMT hardware.

Node used throughout: ``2x8c2t``: two zones of 4 cores x 2 threads, numbered as Linux numbers
them (zone 0: cores 0-3 are CPUs 0/8, 1/9, 2/10, 3/11; zone 1: 4/12, 5/13, 6/14, 7/15).
"""

from collections.abc import Mapping

from rte.model.admission.distribute import distributed_takes
from rte.model.pod import QOS_GUARANTEED, Container, Pod
from rte.sim.cluster import build_nodes
from rte.sim.config import SimConfig
from rte.sim.cpus import allocate_cpus, take_distributed, take_packed
from rte.sim.cputopology import CpuTopology
from rte.sim.hardware import build_hardware
from rte.sim.kubelet import SimKubelet
from rte.sim.specs import GiB, parse_node_shapes


def kubelet(policy: str = "single-numa-node", shape: str = "2x8c2t-16Gi", reserved: int = 0) -> SimKubelet:
    ((_, node_shape),) = parse_node_shapes(shape)
    hw = build_hardware(
        node_shape, policy=policy, scope="container", reserved_cpus=reserved, reserved_memory=0
    )
    return SimKubelet(hw)


def pod(name: str, *cpus: int, init: Mapping[str, int] | None = None) -> Pod:
    def c(cname: str, count: int) -> Container:
        req = {"cpu": count, "memory": GiB}
        return Container(cname, requests=req, limits=req)

    return Pod(
        "ns",
        name,
        containers=tuple(c(f"c{i}", n) for i, n in enumerate(cpus)),
        init_containers=tuple(c(n, q) for n, q in (init or {}).items()),
        status_qos_class=QOS_GUARANTEED,
    )


def ids(k: SimKubelet, name: str, *counts: int) -> list[list[int]]:
    placed = k.admit(pod(name, *counts))
    assert placed is not None
    return [sorted(c.cpu_ids) for c in placed.containers]


def test_the_hardware_numbers_smt_siblings_like_linux_and_keeps_cores_in_one_zone() -> None:
    hw = kubelet().hardware
    assert hw.zone_cpus == ((0, 1, 2, 3, 8, 9, 10, 11), (4, 5, 6, 7, 12, 13, 14, 15))
    assert hw.machine.cpus[0].thread_siblings == frozenset({0, 8})
    assert hw.cpu_topology.core_of[13] == 5


def test_reserved_cpus_are_whole_cores_of_zone_zero() -> None:
    hw = kubelet(reserved=2).hardware
    assert hw.zone_cpus[0] == (1, 2, 3, 9, 10, 11)


def test_whole_cores_come_before_single_threads() -> None:
    k = kubelet()
    assert ids(k, "a", 2) == [[0, 8]]
    assert ids(k, "b", 3) == [[1, 2, 9]]  # one whole core, then a thread of the next free core


def test_a_single_thread_fills_a_half_used_core_first() -> None:
    k = kubelet()
    assert ids(k, "a", 1) == [[0]]
    assert ids(k, "b", 1) == [[8]]  # core 0 has the fewest free threads
    assert ids(k, "c", 1) == [[1]]


def test_a_request_of_a_whole_numa_node_or_more_takes_whole_nodes_first() -> None:
    k = kubelet(policy="restricted")
    placed = k.admit(
        Pod(
            "ns",
            "big",
            containers=(Container("c", {"cpu": 10, "memory": 9 * GiB}, {"cpu": 10, "memory": 9 * GiB}),),
            status_qos_class=QOS_GUARANTEED,
        )
    )
    assert placed is not None
    assert sorted(placed.containers[0].cpu_ids) == [0, 1, 2, 3, 4, 8, 9, 10, 11, 12]


def test_the_numa_node_with_fewest_free_cpus_that_still_fits_goes_first() -> None:
    topology = kubelet().hardware.cpu_topology
    # Zone 0 has 3 free CPUs (one whole core), zone 1 all 8: the packed order starts in zone 0.
    free = {3, 11, 2, *range(4, 8), *range(12, 16)}
    assert take_packed(topology, free, 2) == [3, 11]
    assert take_packed(topology, free, 3) == [3, 11, 2]
    assert take_packed(topology, free, 20) is None


def test_aligned_cpus_come_first_then_the_rest_from_anywhere() -> None:
    topology = kubelet().hardware.cpu_topology
    free = {0, 8, *range(4, 8), *range(12, 16)}
    assert allocate_cpus(topology, free, (), 3, [0]) == [0, 8, 4]
    assert allocate_cpus(topology, free, (), 2, None) == [0, 8]


def test_an_app_container_may_reuse_its_init_containers_cpus() -> None:
    k = kubelet()
    placed = k.admit(pod("a", 2, init={"init": 4}))
    assert placed is not None
    (app,) = placed.containers
    assert app.cpu_ids == {0, 8}  # packed order over the free CPUs and the init container's
    assert k.free(0)["cpu"] == 4  # the init container's 4 CPUs stay assigned
    cpu_state = k.checkpoints().cpu
    assert cpu_state is not None and cpu_state.containers["ns/a"]["init"] == frozenset({0, 1, 8, 9})


def test_distribute_cpus_across_numa_takes_an_even_share_of_each_zone_packed_within_it() -> None:
    """``takeByTopologyNUMADistributed`` (cpumanager ``cpu_assignment.go``): 10 CPUs over two
    free zones are 5 and 5, each share taken packed in its zone (two whole cores, then a thread),
    where the packed order takes zone 0 whole and 2 of zone 1."""
    topology = kubelet().hardware.cpu_topology
    assert take_distributed(topology, set(range(16)), 10) == [0, 8, 1, 9, 2, 4, 12, 5, 13, 6]
    assert take_packed(topology, set(range(16)), 10) == [0, 1, 2, 3, 8, 9, 10, 11, 4, 12]


def test_distribute_cpus_across_numa_gives_the_remainder_where_it_keeps_the_balance() -> None:
    """11 CPUs with zone 0 holding 6 free, zone 1 all 8: 5 each, and the odd one from zone 1,
    which leaves (1, 2) free rather than (0, 3); the remainder is packed again within its zone."""
    topology = kubelet().hardware.cpu_topology
    free = set(range(16)) - {0, 8}
    assert take_distributed(topology, free, 11) == [1, 9, 2, 10, 3, 4, 12, 5, 13, 6, 14]


def test_distribute_cpus_across_numa_keeps_a_request_one_zone_holds_in_one_zone() -> None:
    """A request one NUMA node holds is a combination of one node: the lowest score, then the
    first in the NUMA order (free CPUs, then id)."""
    topology = kubelet().hardware.cpu_topology
    assert take_distributed(topology, set(range(16)), 5) == [0, 8, 1, 9, 2]
    assert allocate_cpus(topology, set(range(16)), (), 10, [0, 1], distribute=True) == [
        0,
        8,
        1,
        9,
        2,
        4,
        12,
        5,
        13,
        6,
    ]


def test_the_simulated_kubelet_and_its_agent_take_the_option_from_the_config() -> None:
    """``rte simulate --distribute-cpus-across-numa`` sets the kubelets' ``cpuManagerPolicyOptions``;
    the simulated kubelet follows it and its agent publishes it."""
    config = SimConfig(nodes=1, pods=0, shapes="2x8c2t-16Gi", distribute_cpus_across_numa=True)
    nodes = build_nodes(config)
    assert nodes.kubelets[0].node_resources().facts.distribute_cpus_across_numa
    topology, _ = nodes.agents[0].snapshot({})
    assert ("cpuManagerOptionDistributeCpusAcrossNuma", "true") in [
        (a.name, a.value) for a in topology.attributes
    ]
    plain = build_nodes(SimConfig(nodes=1, pods=0, shapes="2x8c2t-16Gi"))
    assert not plain.kubelets[0].node_resources().facts.distribute_cpus_across_numa


def test_distribute_cpus_across_numa_orders_numa_nodes_socket_by_socket_when_sockets_hold_several() -> None:
    """Two NUMA nodes per socket (``socketsFirst`` in ``cpu_assignment.go``: NumSockets <
    NumNUMANodes): ``sortAvailableNUMANodes`` takes sockets by their free CPUs, so with zones 0-2
    free (socket 0: 8 CPUs, socket 1: 4) the order is 2, 0, 1 and the remainder of 10 CPUs over
    three zones goes to zone 2, where one socket a zone would give it to zone 0. The admission
    model, reading the same socket map, predicts the same split."""
    zone_of = {cpu: cpu // 4 for cpu in range(16)}
    per_zone = {z: 4 for z in range(4)}
    sockets = {0: 0, 1: 0, 2: 1, 3: 1}

    def split(socket_of: Mapping[int, int] | None) -> list[int]:
        topology = CpuTopology(zone_of, {c: c for c in range(16)}, per_zone, 1, socket_of)
        taken = take_distributed(topology, set(range(12)), 10)
        assert taken is not None
        return [sum(1 for c in taken if zone_of[c] == z) for z in range(4)]

    assert split(None) == [4, 3, 3, 0]
    assert split(sockets) == [3, 3, 4, 0]
    model = distributed_takes([4, 4, 4, 0], [4, 4, 4, 4], 0b0111, 10, 1, [0, 0, 1, 1])
    assert model == [(3, 3, 4, 0)]
