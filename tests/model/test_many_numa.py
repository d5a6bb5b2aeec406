"""Admission on nodes of more zones than every mask can be listed for (issue #23, item 1).

The kubelet runs on such nodes with ``max-allowable-numa-nodes`` (topologymanager
``topology_manager.go`` ``NewManager`` refuses more NUMA nodes than it allows) and enumerates
every mask itself (``bitmask.IterateBitMasks`` from ``generateCPUTopologyHints``,
``generateDeviceTopologyHints``, memorymanager ``calculateHints``). The model lists only the masks
the rules can pick (:func:`rte.model.admission.masks.candidate_masks`): a unit with nothing
hinted is admitted whatever the number of zones, ``minAffinitySize`` comes from the largest
totals, preferred masks up to the listed width are exact, and a unit whose preferred masks would
be wider is refused with a reason rather than guessed.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence

import pytest

from rte.model.admission import masks
from rte.model.admission.admit import admit_pod
from rte.model.admission.node import NodeFacts, NodeResources, node_resources
from rte.model.admission.units import pod_admission_units
from rte.model.pod import Container, Pod
from rte.model.quantity import parse_quantity

GI = 2**30


def _node(cpus: list[int], memory: list[int], policy: str, **facts: object) -> NodeResources:
    zones = []
    for i, (c, m) in enumerate(zip(cpus, memory, strict=True)):
        zones.append((i, {"cpu": (c, c, c), "memory": (m, m, m)}))
    return node_resources(zones, NodeFacts(policy=policy, max_numa_nodes=len(cpus), **facts))  # type: ignore[arg-type]


def _pod(*containers: dict[str, str], guaranteed: bool = True) -> Pod:
    built = []
    for i, requests in enumerate(containers):
        parsed = {k: parse_quantity(v) for k, v in requests.items()}
        built.append(Container(f"c{i}", parsed, parsed if guaranteed else {}))
    return Pod("ns", "p", containers=tuple(built))


def _admit(node: NodeResources, pod: Pod) -> tuple[bool, str, list[tuple[int, ...] | None]]:
    verdict = admit_pod(node, pod_admission_units(pod, node.facts))
    return verdict.admitted, verdict.reason, [u.numa_ids for u in verdict.units]


def _grace(count: int = 24) -> tuple[list[int], list[int]]:
    """Two CPU zones, the rest CPU-less: every fourth an HBM zone, the others empty."""
    cpus = [72, 72] + [0] * (count - 2)
    memory = [480 * GI, 480 * GI] + [186 * GI if i % 4 == 2 else 0 for i in range(2, count)]
    return cpus, memory


@pytest.mark.parametrize("policy", ["single-numa-node", "restricted", "best-effort"])
@pytest.mark.parametrize("count", [17, 24, 32, 64])
def test_pods_with_nothing_to_align_are_admitted_on_any_number_of_zones(policy: str, count: int) -> None:
    """Best-effort and Burstable pods ask no manager for anything: every provider answers "no
    preference" (``policy.go`` ``filterProvidersHints``), the merge admits. Refused before #23."""
    node = _node(*_grace(count), policy)
    for pod in (_pod({}, guaranteed=False), _pod({"cpu": "3", "memory": "1Gi"}, guaranteed=False)):
        admitted, reason, _ = _admit(node, pod)
        assert admitted, reason


def test_single_numa_node_takes_the_lowest_cpu_zone_among_many() -> None:
    """``generateCPUTopologyHints`` ranges over NUMA nodes with CPUs; ``policy_single_numa_node.go``
    keeps the single-zone preferred hints and the narrowest lowest wins."""
    node = _node(*_grace(32), "single-numa-node")
    admitted, reason, masks_ = _admit(node, _pod({"cpu": "8", "memory": "8Gi"}))
    assert admitted and masks_ == [(0,)], reason
    admitted, reason, _ = _admit(node, _pod({"cpu": "80", "memory": "8Gi"}))
    assert not admitted and "no single NUMA zone holds cpu=80" in reason


def test_restricted_cpu_on_two_zones_and_memory_on_one_is_refused_as_the_kubelet_does() -> None:
    """cpu=100 needs both Grace zones (``minAffinitySize`` 2), memory=8Gi one: no mask is preferred
    by both (``mergePermutation``), so ``policy_restricted.go`` refuses."""
    node = _node(*_grace(24), "restricted")
    admitted, reason, _ = _admit(node, _pod({"cpu": "100", "memory": "8Gi"}))
    assert not admitted
    assert reason.startswith("restricted: best merged hint")
    admitted, reason, masks_ = _admit(node, _pod({"cpu": "100", "memory": "600Gi"}))
    assert admitted, reason
    assert masks_ == [(0, 1)]


def test_a_unit_whose_preferred_masks_are_wider_than_listed_is_refused_with_the_reason() -> None:
    """64 zones of 16 GiB: 200 GiB needs 13 zones, wider than the model lists on 64 zones."""
    node = _node([4] * 64, [16 * GI] * 64, "restricted")
    admitted, reason, _ = _admit(node, _pod({"cpu": "2", "memory": "200Gi"}))
    assert not admitted
    width = masks.enumerated_width(64)
    assert reason == (
        f"TopologyAffinityError: memory would span more than {width} of 64 NUMA zones,"
        " more than rte enumerates"
    )


def test_min_affinity_size_from_the_largest_totals_equals_the_kubelets_first_fitting_mask() -> None:
    """``minAffinitySize`` is the width of the first mask in ``IterateBitMasks`` order whose total
    reaches the request: the fewest largest zones."""
    rng = random.Random(23)
    for _ in range(300):
        count = rng.randint(1, 8)
        row = [rng.choice([0, 1, 2, 4, 8]) for _ in range(count)]
        request = rng.randint(1, 24)
        zones = (1 << count) - 1
        listed = [
            size for mask, size in masks.every_mask(zones) if masks.sum_over_positions(row, mask) >= request
        ]
        assert masks.narrowest_width(row, zones, request) == (listed[0] if listed else count)


def _listing_few(max_zones: int, budget: int) -> None:
    masks.MAX_ENUMERATED_ZONES = max_zones
    masks.WIDE_MASK_BUDGET = budget
    masks.candidate_masks.cache_clear()
    masks.enumerated_width.cache_clear()


def _wide_against_complete(cases: Sequence[tuple[Callable[[], NodeResources], Pod]]) -> tuple[int, int]:
    """(compared, refused): each pod admitted on its node by the listed-masks model made to list
    few masks (every mask up to 6 zones; beyond, 60 masks: widths 1-2 of 10 zones, and all
    zones) and by the model listing every mask; equal wherever the first does not say "more than
    rte enumerates", ``best-effort`` where the kubelet's winner is preferred (otherwise the wide
    model takes all the zones and charges every zone after)."""
    saved = masks.MAX_ENUMERATED_ZONES, masks.WIDE_MASK_BUDGET
    _listing_few(6, 60)
    try:
        wide = [_admit(make(), pod) for make, pod in cases]
    finally:
        _listing_few(*saved)
    compared = refused = 0
    for (make, pod), (admitted, reason, ids) in zip(cases, wide, strict=True):
        node = make()
        verdict = admit_pod(node, pod_admission_units(pod, node.facts))
        if "more than rte enumerates" in reason:
            refused += 1
            continue
        if node.facts.policy == "best-effort" and not all(u.preferred for u in verdict.units):
            continue
        assert (admitted, ids) == (verdict.admitted, [u.numa_ids for u in verdict.units]), (
            reason,
            verdict.reason,
        )
        compared += 1
    return compared, refused


def test_the_wide_model_agrees_with_the_complete_one_where_it_decides() -> None:
    rng = random.Random(1723)
    cases = []
    for _ in range(200):
        policy = rng.choice(["single-numa-node", "restricted", "best-effort"])
        cpus = [rng.choice([0, 2, 4, 8]) for _ in range(10)]
        memory = [rng.choice([0, 2, 4, 8]) * GI for _ in range(10)]
        containers = [
            {"cpu": str(rng.randint(1, 12)), "memory": f"{rng.randint(1, 12)}Gi"}
            for _ in range(rng.randint(1, 2))
        ]
        cases.append((functools.partial(_node, cpus, memory, policy), _pod(*containers)))
    compared, refused = _wide_against_complete(cases)
    assert compared >= 100 and refused >= 5, (compared, refused)


def _socket_node(free: list[int], memory: list[int], static: bool) -> NodeResources:
    """Ten zones of 4 CPUs on two sockets of five, ``align-by-socket`` under ``restricted``."""
    zones = [
        (i, {"cpu": (4, 4, f), "memory": (m, m, m)})
        for i, (f, m) in enumerate(zip(free, memory, strict=True))
    ]
    facts = NodeFacts(
        policy="restricted",
        max_numa_nodes=10,
        align_by_socket=True,
        numa_sockets=tuple((z, frozenset({z // 5})) for z in range(10)),
        memory_manager_static=static,
    )
    return node_resources(zones, facts)


def test_the_wide_model_agrees_with_the_complete_one_under_align_by_socket() -> None:
    """The same comparison with ``align-by-socket`` on two sockets of five zones, where a hint
    within one socket is preferred at any width up to five, wider than the two widths the wide
    model lists: wherever the wide model decides (a preferred winner no wider than what it lists,
    ``admit._decided_by_listed_masks``), it decides as the complete model; with the memory
    manager's hints as a second resource in half the cases."""
    rng = random.Random(2311)
    cases = []
    for _ in range(300):
        free = [rng.choice([0, 1, 2, 4]) for _ in range(10)]
        memory = [rng.choice([2, 4, 8]) * GI for _ in range(10)]
        static = rng.random() < 0.5
        containers = [
            {"cpu": str(rng.randint(1, 10)), "memory": f"{rng.randint(1, 8)}Gi"}
            for _ in range(rng.randint(1, 2))
        ]
        cases.append((functools.partial(_socket_node, free, memory, static), _pod(*containers)))
    compared, refused = _wide_against_complete(cases)
    # Before the listed winner counted as decisive, every case here was refused (0 compared).
    assert compared >= 100 and refused >= 5, (compared, refused)


def test_unhealthy_devices_an_nrt_cannot_carry_make_restricted_admit_what_the_kubelet_refuses() -> None:
    """devicemanager ``topology_hints.go`` ``generateDeviceTopologyHints`` counts every device,
    unhealthy ones included (``m.allDevices``), toward ``minAffinitySize``; podresources lists
    healthy devices only, so the NRT cannot carry them (docs/many-numa.md). Two zones of two
    GPUs, one unhealthy in each, a request for 2: the kubelet wants one zone and refuses under
    ``restricted``; from the NRT (one healthy GPU per zone) rte wants two and admits. This pins
    the consumer's chosen behaviour; ``single-numa-node`` agrees either way."""
    gpu = "vendor.com/gpu"

    def node(allocatable: int, policy: str) -> NodeResources:
        zones = [(i, {gpu: (allocatable, allocatable, 1)}) for i in range(2)]
        return node_resources(zones, NodeFacts(policy=policy))

    pod = Pod("ns", "p", containers=(Container("c", {gpu: 2}, {gpu: 2}),))
    kubelet_view = node(2, "restricted")  # what the kubelet counts: 2 devices per zone
    nrt_view = node(1, "restricted")  # what the NRT says: the healthy one
    assert not admit_pod(kubelet_view, pod_admission_units(pod, kubelet_view.facts)).admitted
    assert admit_pod(nrt_view, pod_admission_units(pod, nrt_view.facts)).admitted
    for allocatable in (1, 2):
        single = node(allocatable, "single-numa-node")
        assert not admit_pod(single, pod_admission_units(pod, single.facts)).admitted
