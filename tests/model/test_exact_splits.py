"""Which splits the count allocator keeps exact (issue #23, item 4)."""

from __future__ import annotations

from rte.model.admission.admit import admit_pod
from rte.model.admission.node import NodeFacts, node_resources
from rte.model.admission.units import pod_admission_units
from rte.model.pod import Container, Pod

GI = 2**30


def test_pod_scope_keeps_memory_exact_after_an_inexact_cpu_split() -> None:
    """Pod scope (topologymanager ``scope_pod.go``): the pod's mask is merged once, then every
    container is allocated within it. memorymanager ``policy_static.go`` ``Allocate`` takes each
    container's memory from the mask's NUMA nodes lowest first, whatever the CPU manager's split.
    Two zones of 4 CPUs and 8 GiB; c1 takes 6 CPUs (a split counts cannot place) and 4 GiB (zone 0),
    c2 then 1 CPU and 10 GiB: 4 GiB left on zone 0 and 8 on zone 1 hold it. Charging c1's memory to
    both zones left 8 GiB and refused c2 with an UnexpectedAdmissionError."""
    zones = [(i, {"cpu": (4, 4, 4), "memory": (8 * GI, 8 * GI, 8 * GI)}) for i in range(2)]
    node = node_resources(zones, NodeFacts(policy="restricted", scope="pod"))
    first = {"cpu": 6, "memory": 4 * GI}
    second = {"cpu": 1, "memory": 10 * GI}
    pod = Pod("ns", "p", containers=(Container("c1", first, first), Container("c2", second, second)))
    verdict = admit_pod(node, pod_admission_units(pod, node.facts))
    assert verdict.admitted, verdict.reason
    assert [u.numa_ids for u in verdict.units] == [(0, 1)]


def test_container_scope_still_charges_memory_everywhere_after_an_inexact_cpu_split() -> None:
    """Container scope: c2 is hinted on what c1 left, and which zones c1's CPUs came from is not
    known, so c2's mask may differ from the kubelet's; memory then errs toward rejection."""
    zones = [(i, {"cpu": (4, 4, 4), "memory": (8 * GI, 8 * GI, 8 * GI)}) for i in range(2)]
    node = node_resources(zones, NodeFacts(policy="restricted", scope="container"))
    first = {"cpu": 6, "memory": 4 * GI}
    second = {"cpu": 1, "memory": 10 * GI}
    pod = Pod("ns", "p", containers=(Container("c1", first, first), Container("c2", second, second)))
    assert not admit_pod(node, pod_admission_units(pod, node.facts)).admitted


def _three_zones(cpu_free: tuple[int, int, int], policy: str = "restricted") -> object:
    zones = [
        (i, {"cpu": (4, 4, free), "memory": (8 * GI, 8 * GI, 8 * GI)}) for i, free in enumerate(cpu_free)
    ]
    return node_resources(zones, NodeFacts(policy=policy, scope="container", memory_manager_static=False))


def test_a_split_taking_every_wholly_free_zone_and_the_rest_from_one_zone_is_exact() -> None:
    """cpumanager ``cpu_assignment.go`` ``takeByTopologyNUMAPacked``: whole free NUMA nodes first
    (``takeFullSecondLevel``, ``isNUMANodeFree``), the rest from what is left of the mask. Zones of
    4 CPUs, zone 0 with 2 free (its other 2 taken), zones 1 and 2 free. c1 asks 5 CPUs on the
    mask {0,1}: zone 1 whole, 1 from zone 0, which keeps 1. c2 then asks 1 CPU: the narrowest
    lowest mask holding it is {0}, as on the kubelet. Charging c1 to both zones left zone 0 with
    none and put c2 on {2}."""
    node = _three_zones((2, 4, 4))
    first = {"cpu": 5, "memory": 1 * GI}
    second = {"cpu": 1, "memory": 1 * GI}
    pod = Pod("ns", "p", containers=(Container("c1", first, first), Container("c2", second, second)))
    verdict = admit_pod(node, pod_admission_units(pod, node.facts))  # type: ignore[arg-type]
    assert verdict.admitted, verdict.reason
    assert [u.numa_ids for u in verdict.units] == [(0, 1), (0,)]


def test_a_split_counts_cannot_place_still_errs_toward_rejection() -> None:
    """Zones 0 and 1 each with 3 of 4 free (neither wholly free): 4 CPUs on {0,1} come 2+2, 3+1 or
    1+3 depending on cores; every zone is charged, and c2 (3 CPUs on one zone) is refused."""
    node = _three_zones((3, 3, 0))
    first = {"cpu": 4, "memory": 1 * GI}
    second = {"cpu": 2, "memory": 1 * GI}
    pod = Pod("ns", "p", containers=(Container("c1", first, first), Container("c2", second, second)))
    assert not admit_pod(node, pod_admission_units(pod, node.facts)).admitted  # type: ignore[arg-type]
