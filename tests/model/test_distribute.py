"""``distribute-cpus-across-numa``: the even split, and the admission it decides (issue #23, item 3).

The split cases follow the kubelet's own ``TestTakeByTopologyNUMADistributed``
(kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager/cpu_assignment_test.go``) on its
``topoDualSocketMultiNumaPerSocketHT`` machine: 2 sockets, 4 NUMA nodes of 20 CPUs (10 cores of 2
threads), NUMA 0 and 1 on socket 0. Its expected CPU sets are counted per NUMA node here, since a
split per zone is all an NRT can be charged with. The kubelet orders NUMA nodes socket first on
that machine (``socketsFirst.sortAvailableNUMANodes``): sockets by free CPUs, then NUMA nodes by
free CPUs, ids breaking ties.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rte.model.admission.admit import admit_pod
from rte.model.admission.distribute import (
    balance_score,
    charge_distributed,
    distributed_in_order,
    distributed_takes,
    kubelet_numa_order,
    numa_range,
)
from rte.model.admission.facts import facts_from_attributes
from rte.model.admission.node import NodeFacts, Working, node_resources
from rte.model.admission.units import pod_admission_units
from rte.model.pod import Container, Pod

MACHINE_CPUS = 80
MACHINE_NODES = 4
SOCKET_OF = {0: 0, 1: 0, 2: 1, 3: 1}
GI = 2**30
NO_MEMORY_MANAGER = {"memory_manager_static": False}


KUBELET_CASES = [
    # (description in the kubelet's test, free CPUs per NUMA node, request, cpuGroupSize, taken per node)
    (
        "allocate 13 full cores distributed across the first 2 NUMA nodes",
        (20, 20, 20, 20),
        26,
        1,
        (13, 13, 0, 0),
    ),
    ("the same with cpuGroupSize 2", (20, 20, 20, 20), 26, 2, (14, 12, 0, 0)),
    ("31 cores, 15 CPUs per node and 1 spilling to NUMA 0, 1", (20, 20, 20, 20), 62, 1, (16, 16, 15, 15)),
    (
        "31 cores, 14 per node and 2 spilling to NUMA 0, 1, 2 (group 2)",
        (20, 20, 20, 20),
        62,
        2,
        (16, 16, 16, 14),
    ),
    ("31 cores, 1 spilling to NUMA 2, 3 to keep balance", (18, 18, 20, 20), 62, 1, (15, 15, 16, 16)),
    (
        "31 cores, 2 spilling to NUMA 0, 2, 3 to keep balance (group 2)",
        (18, 18, 20, 20),
        62,
        2,
        (16, 14, 16, 16),
    ),
    ("bestRemainder chosen among nodes with enough CPUs", (8, 8, 8, 14), 34, 1, (8, 8, 8, 10)),
]


@pytest.mark.parametrize(
    ("name", "free", "amount", "group", "taken"), KUBELET_CASES, ids=[c[0] for c in KUBELET_CASES]
)
def test_the_split_per_numa_node_is_the_kubelets_takeByTopologyNUMADistributed(
    name: str, free: tuple[int, ...], amount: int, group: int, taken: tuple[int, ...]
) -> None:
    """``takeByTopologyNUMADistributed``, in the kubelet's NUMA order for that machine: the same
    number of CPUs from each NUMA node as the kubelet's expected CPU set holds; and the split
    over every order (what rte charges without socket facts) contains it."""
    sockets = tuple(SOCKET_OF[n] for n in range(4))
    order = kubelet_numa_order(free, range(4), sockets, numa_first=False)
    got = distributed_in_order(dict(enumerate(free)), order, amount, group, MACHINE_CPUS, MACHINE_NODES)
    assert got is not None
    assert tuple(got.get(n, 0) for n in range(4)) == taken
    # Knowing the sockets, rte charges exactly that split; without, it is among the candidates.
    assert distributed_takes(list(free), [20] * 4, 0b1111, amount, group, sockets) == [taken]
    splits = distributed_takes(list(free), [20] * 4, 0b1111, amount, group)
    assert splits is not None and taken in splits


def test_a_unique_split_does_not_depend_on_the_numa_order() -> None:
    """Where no tie is broken by order, every order gives the kubelet's split: rte charges it
    exactly (one split)."""
    assert distributed_takes([18, 18, 20, 20], [20] * 4, 0b1111, 62, 1) == [(15, 15, 16, 16)]
    assert distributed_takes([8, 8, 8, 14], [20] * 4, 0b1111, 34, 1) == [(8, 8, 8, 10)]


def test_a_tie_broken_by_the_numa_order_gives_every_candidate() -> None:
    """``takeByTopologyNUMADistributed`` keeps the first combination with the lowest balance: on
    four free nodes, 26 CPUs go to whichever pair comes first, which depends on sockets."""
    splits = distributed_takes([20] * 4, [20] * 4, 0b1111, 26, 1)
    assert splits is not None and len(splits) == 6
    assert all(sorted(s) == [0, 0, 13, 13] for s in splits)


def test_the_numa_order_follows_sockets_when_one_holds_several_nodes() -> None:
    """``sortAvailableNUMANodes``: ``numaFirst`` by free CPUs then id; ``socketsFirst`` (fewer
    sockets than NUMA nodes) by the socket's free CPUs first. With 24 CPUs over nodes 0-3 free
    (20, 20, 8, 20) and sockets {0,1}, {2,3}, socket 1 (28 free) comes before socket 0 (40)."""
    free = (20, 20, 8, 20)
    assert kubelet_numa_order(free, range(4), (0, 0, 1, 1), numa_first=False) == [2, 3, 0, 1]
    assert kubelet_numa_order(free, range(4), (0, 1, 2, 3), numa_first=True) == [2, 0, 1, 3]
    # 26 CPUs on four free nodes: every pair ties, the first in the order wins. Nodes 2 and 3 on
    # socket 0 come first socket by socket; node by node, nodes 0 and 1 do.
    assert distributed_takes([20] * 4, [20] * 4, 0b1111, 26, 1, (1, 1, 0, 0)) == [(0, 0, 13, 13)]
    assert distributed_takes([20] * 4, [20] * 4, 0b1111, 26, 1, (0, 1, 2, 3)) == [(13, 13, 0, 0)]


def test_a_request_not_in_whole_groups_or_without_a_qualifying_combination_is_packed() -> None:
    """``takeByTopologyNUMADistributed``: ``numCPUs % cpuGroupSize != 0`` and "no combination
    found" both call ``takeByTopologyNUMAPacked``."""
    assert distributed_takes([20, 20], [20, 20], 0b11, 7, 2) is None
    # 2 groups of 2 needed, nodes with 1 free CPU each: no node holds a group.
    assert distributed_takes([1, 1, 1, 1], [20] * 4, 0b1111, 4, 2) is None


def test_numa_range_and_balance_score_follow_the_kubelet_helpers() -> None:
    """``rangeNUMANodesNeededToSatisfy`` and ``standardDeviation`` (mean and result rounded to
    3 decimals)."""
    assert list(numa_range(26, 1, 80, 4, 4)) == [2, 3, 4]
    assert list(numa_range(34, 1, 80, 4, 4)) == [2, 3, 4]
    assert list(numa_range(4, 1, 80, 4, 4)) == [1, 2, 3, 4]
    # 31 groups of 2 need at least 4 nodes of 10 groups; only 3 have free CPUs: nothing to try.
    assert list(numa_range(62, 2, 80, 4, 3)) == []
    assert balance_score([7, 7, 20, 20]) == 6.5
    assert balance_score([1, 2]) == 0.5
    assert balance_score([0, 1, 1]) == 0.471


def _two_zone_node(distribute: bool, policy: str = "restricted") -> object:
    zones = [(0, {"cpu": (16, 16, 14)}), (1, {"cpu": (16, 16, 16)})]
    facts = NodeFacts(
        policy=policy, scope="container", distribute_cpus_across_numa=distribute, **NO_MEMORY_MANAGER
    )
    return node_resources(zones, facts)


def _pod(*cpus: int) -> Pod:
    return Pod(
        "ns",
        "p",
        containers=tuple(
            Container(f"c{i}", {"cpu": n, "memory": GI}, {"cpu": n, "memory": GI})
            for i, n in enumerate(cpus, 1)
        ),
    )


def test_the_split_decides_what_the_next_container_gets() -> None:
    """Two zones of 16 CPUs, 14 and 16 free, ``restricted``, container scope. c1 asks 20: the
    packed order (``takeByTopologyNUMAPacked``) takes the free zone 1 whole and 4 of zone 0,
    leaving (10, 0); ``takeByTopologyNUMADistributed`` takes 10 and 10, leaving (4, 6). c2 then
    asks 8: without the option zone 0 holds it (a preferred hint); with it no zone does, the only
    hint is the non-preferred {0,1}, and ``restricted`` refuses: a TopologyAffinityError rte
    predicted as admitted before the option was modelled."""
    pod = _pod(20, 8)
    packed = _two_zone_node(False)
    verdict = admit_pod(packed, pod_admission_units(pod, packed.facts))  # type: ignore[attr-defined, arg-type]
    assert verdict.admitted, verdict.reason
    distributed = _two_zone_node(True)
    verdict = admit_pod(distributed, pod_admission_units(pod, distributed.facts))  # type: ignore[attr-defined, arg-type]
    assert not verdict.admitted
    assert verdict.error == "TopologyAffinityError"
    # 6 CPUs still fit zone 1 of the even split.
    pod = _pod(20, 6)
    verdict = admit_pod(distributed, pod_admission_units(pod, distributed.facts))  # type: ignore[attr-defined, arg-type]
    assert verdict.admitted, verdict.reason
    assert [u.numa_ids for u in verdict.units] == [(0, 1), (1,)]


def test_an_ambiguous_split_charges_each_zone_its_largest_candidate_and_ends_exactness() -> None:
    """Three zones of 16 CPUs with 8 free each, 20 CPUs over the mask {0,1,2} (``best-effort``:
    no pair holds them). ``takeByTopologyNUMADistributed`` gives 6 to each and the 2 left one
    to each of the first two nodes in its order, which an NRT cannot tell: (7,7,6), (7,6,7) or
    (6,7,7). Each zone is charged 7, the most any of them takes, and later units are charged as
    after any unknown split (``Working.exact`` off)."""
    zones = [(i, {"cpu": (16, 16, 8)}) for i in range(3)]
    node = node_resources(zones, NodeFacts(policy="best-effort", distribute_cpus_across_numa=True))
    assert distributed_takes([8, 8, 8], [16] * 3, 0b111, 20, 1) == [(6, 7, 7), (7, 6, 7), (7, 7, 6)]
    working = Working(node)
    assert charge_distributed(working, 20, 0b111) == 0b111
    assert working.cpu_free == [1, 1, 1]
    assert not working.exact
    exact = Working(node)
    assert charge_distributed(exact, 18, 0b111) == 0b111  # 6 each: no remainder, no tie
    assert exact.cpu_free == [2, 2, 2] and exact.exact


def test_the_option_is_read_from_the_nrt_attribute() -> None:
    """The agent publishes every boolean CPU manager option as ``cpuManagerOption<CamelCase>``."""
    on = facts_from_attributes(
        {"cpuManagerOptionDistributeCpusAcrossNuma": "true"},
        policy="restricted",
        scope="container",
        max_numa_nodes=8,
    )
    off = facts_from_attributes({}, policy="restricted", scope="container", max_numa_nodes=8)
    assert on.distribute_cpus_across_numa and not off.distribute_cpus_across_numa


def test_full_pcpus_only_without_threads_per_core_charges_an_unknown_split() -> None:
    """With ``full-pcpus-only`` the split is in whole cores (``cpuGroupSize = CPUsPerCore()``); an
    NRT without ``cpuManagerThreadsPerCore`` does not say the core size: c1's 20 CPUs are charged to
    both zones (4 left each), so c2's 6 find no zone, though the kubelet would leave 6 in each."""
    zones = [(i, {"cpu": (16, 16, 16)}) for i in range(2)]
    facts = NodeFacts(
        policy="restricted",
        scope="container",
        distribute_cpus_across_numa=True,
        full_pcpus_only=True,
        **NO_MEMORY_MANAGER,
    )
    node = node_resources(zones, facts)
    assert not admit_pod(node, pod_admission_units(_pod(20, 6), facts)).admitted
    known = node_resources(zones, replace(facts, threads_per_core=2))
    assert admit_pod(known, pod_admission_units(_pod(20, 6), known.facts)).admitted


def test_reusable_cpus_beside_an_even_split_are_not_assumed_taken_first() -> None:
    """Zones of 8 CPUs, ``restricted``, memory manager None. The init container takes 6 CPUs of
    zone 0, reusable by the app containers (``updateCPUsToReuse``). c1 asks 10 on {0,1}:
    ``takeByTopologyNUMADistributed`` takes 5 from each zone, zone 0's from its 2 free and 6
    reusable CPUs, so zone 1 gives 5 free CPUs and keeps 3. Counting the 6 reusable CPUs first
    charged only 4 free ones, left 4 on zone 1 and admitted c2's 4 CPUs there, which the kubelet
    refuses; the free CPUs are now charged as if none were reused."""
    zones = [(i, {"cpu": (8, 8, 8)}) for i in range(2)]
    facts = NodeFacts(
        policy="restricted", scope="container", distribute_cpus_across_numa=True, **NO_MEMORY_MANAGER
    )
    node = node_resources(zones, facts)
    init = {"cpu": 6, "memory": GI}
    pod = Pod(
        "ns",
        "p",
        init_containers=(Container("init", init, init),),
        containers=_pod(10, 4).containers,
    )
    verdict = admit_pod(node, pod_admission_units(pod, facts))
    assert not verdict.admitted


def test_a_hint_too_narrow_for_the_request_gives_all_it_has_then_the_rest_is_split_outside() -> None:
    """``allocateCPUs`` (cpumanager ``policy_static.go``): first as many CPUs as the merged hint's
    NUMA nodes have, then the rest from the others, each step a ``takeByTopology`` of its own.
    A ``best-effort`` hint {0,1} holding 4 of 20 CPUs: zones 0 and 1 give their 2 each, then 16
    more come from zones 2 and 3 (16 and 12 free) by ``takeByTopologyNUMADistributed``: one NUMA
    node is enough and only zone 2 holds 16."""
    zones = [(i, {"cpu": (16, 16, free)}) for i, free in enumerate((2, 2, 16, 12))]
    node = node_resources(zones, NodeFacts(policy="best-effort", distribute_cpus_across_numa=True))
    working = Working(node)
    assert charge_distributed(working, 20, 0b0011) == 0b0111
    assert working.cpu_free == [0, 0, 0, 12]
    assert working.exact


def test_with_the_published_socket_map_the_kubelets_order_breaks_the_tie() -> None:
    """The case above with ``cpuManagerNUMASockets`` (one socket per zone: ``numaFirst``, so
    ``sortAvailableNUMANodes`` orders by free CPUs then id): the remainder goes to nodes 0 and 1,
    the split (7, 7, 6) is the kubelet's, charged exactly through the allocator."""
    from rte.model.admission.allocate import CountAllocator
    from rte.model.admission.units import AdmissionUnit

    zones = [(i, {"cpu": (16, 16, 8)}) for i in range(3)]
    sockets = tuple((i, frozenset({i})) for i in range(3))
    facts = NodeFacts(policy="best-effort", distribute_cpus_across_numa=True, numa_sockets=sockets)
    working = Working(node_resources(zones, facts))
    CountAllocator().take_cpus(working, AdmissionUnit("c1", "container", cpus=20), 0b111)
    assert working.cpu_free == [1, 1, 2]
    assert working.exact
    unknown = Working(node_resources(zones, replace(facts, numa_sockets=())))
    CountAllocator().take_cpus(unknown, AdmissionUnit("c1", "container", cpus=20), 0b111)
    assert unknown.cpu_free == [1, 1, 1] and not unknown.exact
