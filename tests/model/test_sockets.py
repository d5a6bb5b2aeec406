"""Sockets in admission: ``align-by-socket`` and the packed allocator's socket order (issue #23,
items 2 and 4).

Each rule is derived from kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager``:
``policy_static.go`` ``generateCPUTopologyHints`` / ``isHintSocketAligned`` (which hints are
preferred), ``getAlignedCPUs`` (the CPUs a hint stands for) and ``cpu_assignment.go``
``takeByTopologyNUMAPacked`` / ``newCPUAccumulator`` (which zones give the CPUs).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from rte.model.admission.admit import admit_pod
from rte.model.admission.facts import facts_from_attributes, parse_numa_sockets
from rte.model.admission.node import NodeResources, node_resources
from rte.model.admission.sockets import aligned_zones, packed_takes, socket_aligned, socket_layout
from rte.model.admission.units import pod_admission_units
from rte.model.pod import Container, Pod

TWO_PER_SOCKET = "0=0;1=0;2=1;3=1"
"""Two sockets of two NUMA nodes each (Intel SNC2, AMD NPS2, Kunpeng 920)."""


def _node(
    free: tuple[int, ...],
    *,
    sockets: str | None = TWO_PER_SOCKET,
    align: bool = True,
    threads: int = 1,
    size: int = 4,
) -> NodeResources:
    attrs: dict[str, str] = {"cpuManagerThreadsPerCore": str(threads), "memoryManagerPolicy": "None"}
    if align:
        attrs["cpuManagerOptionAlignBySocket"] = "true"
    if sockets is not None:
        attrs["cpuManagerNUMASockets"] = sockets
    facts = facts_from_attributes(attrs, policy="restricted", scope="container", max_numa_nodes=8)
    zones = [(i, {"cpu": (size, size, f)}) for i, f in enumerate(free)]
    return node_resources(zones, facts)


def _pod(*cpus: int) -> Pod:
    # Guaranteed (CPU and memory limits equal to requests); the memory manager is off.
    amounts = [{"cpu": n, "memory": 2**30} for n in cpus]
    containers = tuple(Container(f"c{i}", a, a) for i, a in enumerate(amounts))
    return Pod("ns", "p", containers=containers)


def _admit(node: NodeResources, *cpus: int) -> tuple[bool, list[tuple[int, ...] | None]]:
    verdict = admit_pod(node, pod_admission_units(_pod(*cpus), node.facts))
    return verdict.admitted, [u.numa_ids for u in verdict.units]


def test_the_attribute_parses_to_numa_sockets_and_a_malformed_one_to_nothing() -> None:
    assert parse_numa_sockets("0=0;1=0;2=36-37") == (
        (0, frozenset({0})),
        (1, frozenset({0})),
        (2, frozenset({36, 37})),
    )
    for bad in ("", "0=0;1", "0=0;x=1", "0=0;0=1", "0=a"):
        assert parse_numa_sockets(bad) == ()


def test_a_hint_within_the_fewest_sockets_is_preferred_and_restricted_admits_it() -> None:
    """``isHintSocketAligned``: 3 CPUs fit one 4-CPU zone (``minAffinitySize`` 1), so one socket
    is the least; no zone has 3 free, zones 0 and 1 (socket 0) have 2 each. {0,1} is preferred by
    socket alignment and ``restricted`` admits; without the option the width rule alone refuses."""
    assert _admit(_node((2, 2, 0, 0)), 3) == (True, [(0, 1)])
    admitted, _ = _admit(_node((2, 2, 0, 0), align=False), 3)
    assert not admitted


def test_a_hint_across_sockets_is_not_socket_aligned() -> None:
    """Zones 1 and 2 sit on different sockets: two sockets where one is the least."""
    admitted, _ = _admit(_node((0, 2, 2, 0)), 3)
    assert not admitted


def test_without_the_socket_map_align_by_socket_prefers_nothing_more() -> None:
    """An NRT without ``cpuManagerNUMASockets`` (the reference agents'): the width rule only, so
    rte refuses what the kubelet would admit, never the reverse."""
    admitted, _ = _admit(_node((2, 2, 0, 0), sockets=None), 3)
    assert not admitted


def test_socket_alignment_counts_sockets_not_zones() -> None:
    """``minSockets = ceil(minAffinitySize / (NumNUMANodes / NumSockets))``; sockets nested in
    NUMA nodes (NUMA nodes per socket 0) never align."""
    layout = socket_layout(_node((4, 4, 4, 4)))
    assert layout is not None
    assert socket_aligned(layout, 0b0011, 1) and socket_aligned(layout, 0b0001, 1)
    assert not socket_aligned(layout, 0b0110, 1)
    assert socket_aligned(layout, 0b0110, 3)  # 3 zones need 2 sockets; {1,2} spans both
    assert not socket_aligned(layout, 0b0011, 3)
    nested = socket_layout(_node((4, 4), sockets="0=0-1;1=2-3"))
    assert nested is not None and nested.numa_per_socket == 0
    assert not socket_aligned(nested, 0b01, 1)


def test_the_allocation_widens_to_the_hints_socket() -> None:
    """``getAlignedCPUs`` with ``align-by-socket``: the hint {0} stands for every CPU of socket 0,
    and ``takeByTopologyNUMAPacked`` takes the zone with the fewest free CPUs first: c0's 2 CPUs
    come from zone 1 (3 free), not zone 0 (8 free). c1 then wants 7: zone 0 still has 8, so the
    kubelet hints {0}; charging c0 to zone 0 left it 6 and gave c1 {0,1}."""
    node = _node((8, 3, 0, 0), size=8)
    assert _admit(node, 2, 7) == (True, [(0,), (0,)])
    layout = socket_layout(node)
    assert layout is not None and aligned_zones(layout, 0b0001) == 0b0011


def test_without_the_socket_map_the_widened_allocation_is_charged_everywhere() -> None:
    """Not knowing zone 0's socket, c0 may have come from any zone: every zone is charged, and c1
    (7 CPUs, zone 0 down to 6) is refused rather than risk a TopologyAffinityError."""
    admitted, _ = _admit(_node((8, 3, 0, 0), size=8, sockets=None), 2, 7)
    assert not admitted


def test_single_thread_cores_fill_the_zones_in_the_packed_order() -> None:
    """4 CPUs on the socket-aligned hint {0,1} (3 and 2 free): ``takeFullCores`` walks zone 1
    (fewer free) then zone 0, so zone 0 keeps 1 and c1's 1 CPU fits there. Charging c0 to both
    zones left none and refused c1."""
    assert _admit(_node((3, 2, 0, 0)), 4, 1) == (True, [(0, 1), (0,)])


@pytest.mark.parametrize(
    ("sockets", "expected"),
    [
        # Sockets 0 (zones 0, 2) and 1 (zones 1, 3): NUMA nodes nest in sockets, so whole sockets
        # come first (``socketsFirst``), and socket 1 is the free one.
        ("0=0;1=1;2=0;3=1", {1: 4, 3: 4}),
        # One socket per zone (``numaFirst``): whole NUMA nodes, fewest free first, ties by id.
        ("0=0;1=1;2=2;3=3", {0: 4, 1: 4}),
    ],
)
def test_whole_sockets_before_whole_numa_nodes_when_numa_nodes_nest_in_sockets(
    sockets: str, expected: Mapping[int, int]
) -> None:
    """``newCPUAccumulator``: ``socketsFirst`` when NumNUMANodes > NumSockets, and
    ``isSocketFree`` counts ``CPUsPerSocket()``. Zone 2 has 1 of 4 free; 8 CPUs are asked."""
    node = _node((4, 4, 1, 4), sockets=sockets)
    layout = socket_layout(node)
    assert layout is not None
    assert packed_takes(list(node.cpu_available), node.cpu_capacity, 0b1111, 8, layout, 2) == expected


def test_what_cores_decide_stays_unknown() -> None:
    """Two threads per core, 4 CPUs left after the whole levels, spread over zones of 3 and 2
    free: how many whole free cores each has decides."""
    node = _node((3, 2, 0, 0), threads=2)
    layout = socket_layout(node)
    assert layout is not None
    assert packed_takes(list(node.cpu_available), node.cpu_capacity, 0b0011, 4, layout, 2) is None
    # Less than a core's worth goes to the first zone of the order: zone 1 (fewest free).
    assert packed_takes(list(node.cpu_available), node.cpu_capacity, 0b0011, 1, layout, 2) == {1: 1}


def _wide_node(free: tuple[int, ...]) -> NodeResources:
    """24 NUMA zones of 4 CPUs on two sockets (12 a socket, as AMD's L3-as-NUMA gives), with
    ``align-by-socket``: a 3-CPU hint is socket-aligned at any width up to 12 zones, beyond the
    4 zones the model lists every mask of on 24 zones."""
    sockets = ";".join(f"{z}={z // 12}" for z in range(24))
    attrs = {
        "cpuManagerThreadsPerCore": "1",
        "memoryManagerPolicy": "None",
        "cpuManagerOptionAlignBySocket": "true",
        "cpuManagerNUMASockets": sockets,
    }
    facts = facts_from_attributes(attrs, policy="restricted", scope="container", max_numa_nodes=24)
    return node_resources([(i, {"cpu": (4, 4, f)}) for i, f in enumerate(free)], facts)


def test_many_zones_a_socket_admit_where_a_listed_preferred_mask_wins() -> None:
    """The merge takes the narrowest preferred mask, and a merged mask is preferred only where
    every resource prefers it: the unlisted aligned masks (5 to 12 zones) can only be wider than
    a listed winner of at most 4 zones, so the kubelet picks that winner too. Before, every
    exclusive-CPU pod on such a node was refused as "would span more than 4 of 24 NUMA zones"."""
    assert _admit(_wide_node((4,) * 24), 3) == (True, [(0,)])
    assert _admit(_wide_node((2, 2) + (0,) * 22), 3) == (True, [(0, 1)])
    assert _admit(_wide_node((0,) * 12 + (1, 1, 1) + (0,) * 9), 3) == (True, [(12, 13, 14)])


def test_many_zones_a_socket_still_refuse_where_only_an_unlisted_mask_could_win() -> None:
    """6 CPUs from six zones of socket 0 with one free each: the kubelet would prefer the
    6-zone mask (one socket), which the model does not list on 24 zones; it refuses rather than
    guess (never admitting what the kubelet refuses)."""
    admitted, _ = _admit(_wide_node((1,) * 6 + (0,) * 18), 6)
    assert not admitted
