"""Filter by the kubelet's rules over NRTs: the fast path equals the general model, and the cases
where the kubelet's verdict differs from the reference plugin's."""

from __future__ import annotations

import random

import pytest

from rte.consumer.filter import FilterCode, filter_node
from rte.consumer.kubelet_filter import kubelet_filter, node_of, result_of
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.requests import kubelet_units, prepare_pod
from rte.model.admission.admit import admit_pod
from rte.model.pod import Pod, PodLevelResources
from rte.model.quantity import parse_quantity
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from tests.helpers.consumer import GI, container, pod, view
from tests.helpers.consumer import reference_filter as reference

NIC = "vendor.com/nic"


def _random_view(rng: random.Random) -> NumaView:
    zones = []
    for i in range(rng.randint(1, 4)):
        resources = []
        cap = rng.choice([4, 8, 16])
        resources.append(ResourceInfo("cpu", cap, cap - rng.choice([0, 0, 1]), rng.randint(0, cap)))
        mem = rng.choice([4, 8, 16]) * GI
        resources.append(ResourceInfo("memory", mem, mem, rng.choice([mem, mem, rng.randint(0, mem)])))
        if rng.random() < 0.4:
            hp = rng.choice([0, GI, 2 * GI])
            resources.append(ResourceInfo("hugepages-2Mi", hp, hp, rng.choice([hp, hp // 2])))
        if rng.random() < 0.5:
            devices = rng.randint(0, 3)
            resources.append(ResourceInfo(NIC, devices, devices, rng.randint(0, devices)))
        zones.append(Zone(f"node-{i}", resources=tuple(resources)))
    attrs = [
        Attribute("topologyManagerPolicy", rng.choice(["single-numa-node", "restricted"])),
        Attribute("topologyManagerScope", rng.choice(["container", "container", "pod"])),
    ]
    if rng.random() < 0.2:
        attrs.append(Attribute("nodeUnknownNUMAResources", f"{NIC}={rng.randint(0, 2)}"))
    if rng.random() < 0.2:
        attrs += [
            Attribute("cpuManagerOptionFullPcpusOnly", "true"),
            Attribute("cpuManagerThreadsPerCore", "2"),
        ]
        attrs.append(Attribute("cpuManagerAvailablePhysicalCPUs", str(rng.randint(0, 8))))
    if rng.random() < 0.1:
        attrs.append(Attribute("memoryManagerPolicy", "None"))
    if rng.random() < 0.1:
        attrs.append(Attribute("topologyManagerOptionPreferClosestNumaNodes", "true"))
    return build_view(NodeTopology("n", zones=tuple(zones), attributes=tuple(attrs)))


def _random_pod(rng: random.Random) -> Pod:
    requests: dict[str, str | int] = {}
    if rng.random() < 0.9:
        requests["cpu"] = rng.choice([1, 2, 3, 4, 6, 8, "500m", "1500m"])
    if rng.random() < 0.9:
        requests["memory"] = rng.choice([GI, 2 * GI, 6 * GI, 12 * GI])
    if rng.random() < 0.3:
        requests["hugepages-2Mi"] = rng.choice([0, GI // 2, GI])
    if rng.random() < 0.3:
        requests[NIC] = rng.choice([0, 1, 2, 3])
    one = container("c", requests, guaranteed=rng.random() < 0.8)
    if rng.random() < 0.1:
        budget = {"cpu": parse_quantity(4), "memory": parse_quantity(4 * GI)}
        return Pod("ns", "p", containers=(one,), resources=PodLevelResources(budget, budget))
    return pod(one)


def test_the_fast_path_equals_the_general_model_on_random_nodes_and_pods() -> None:
    rng = random.Random(11)
    fast_taken = 0
    for _ in range(3000):
        node_view, p = _random_view(rng), _random_pod(rng)
        prep = prepare_pod(p)
        got = kubelet_filter(prep, node_view, None)
        fast_taken += any(isinstance(k, tuple) and k[0] == "kubelet-fits" for k in prep.memo)
        general = result_of(admit_pod(node_of(node_view), kubelet_units(prep, node_view.facts)), node_view)
        assert (got.fits, got.reason, got.numa_id) == (general.fits, general.reason, general.numa_id), (
            node_view.source,
            p,
        )
        if got.admission is not None and general.admission is not None:
            assert [u.numa_ids for u in got.admission.units] == [u.numa_ids for u in general.admission.units]
    assert fast_taken > 300, "the fast path is exercised"


# --- where the kubelet and the reference plugin disagree -------------------------------------------


def _zones(*cpus: int) -> dict[int | str, dict[str, str | int]]:
    return {i: {"cpu": c, "memory": 64 * GI} for i, c in enumerate(cpus)}


def test_restricted_is_filtered_by_the_kubelet_and_passed_by_the_reference() -> None:
    p = pod(container("c", {"cpu": 24, "memory": GI}))
    v = view(_zones(16, 16), policy="restricted")
    assert reference(p, v).fits
    result = filter_node(p, v)
    assert result.code is FilterCode.UNSCHEDULABLE
    assert (
        result.reason == "restricted: best merged hint {0,1} is not preferred (cpu wants 2 zones, memory 1)"
    )


def test_restricted_with_a_preferred_mask_stays_admitted() -> None:
    p = pod(container("c", {"cpu": 24, "memory": 100 * GI}))
    result = filter_node(p, view(_zones(16, 16), policy="restricted"))
    assert result.fits and result.reason == "fits NUMA zones {0,1}"


def test_a_sidecar_keeps_its_cpus_for_the_kubelet_only() -> None:
    p = pod(
        container("app", {"cpu": 3, "memory": GI}),
        init=[container("proxy", {"cpu": 3, "memory": GI}, sidecar=True)],
    )
    v = view(_zones(4, 2))
    assert reference(p, v).fits
    assert filter_node(p, v).reason == 'single-numa-node: no single NUMA zone holds cpu=3 for container "app"'


def test_overhead_and_fractional_cpus_are_admitted_by_the_kubelet_only() -> None:
    with_overhead = Pod(
        "ns",
        "p",
        containers=(container("c", {"cpu": 4, "memory": GI}),),
        overhead={"cpu": parse_quantity(1)},
    )
    v = view(_zones(4, 4), scope="pod")
    assert not reference(with_overhead, v).fits
    assert filter_node(with_overhead, v).numa_id == 0
    fractional = pod(container("c", {"cpu": "1500m", "memory": GI}))
    tight = view(_zones(1, 1))
    assert not reference(fractional, tight).fits
    assert filter_node(fractional, tight).fits


def test_a_burstable_pod_needs_no_cpu_in_any_zone_for_the_kubelet() -> None:
    p = pod(container("c", {"cpu": 1}, guaranteed=False))
    v = view({0: {"memory": GI}})
    assert not reference(p, v).fits  # the reference's #249
    assert filter_node(p, v).reason == "fits: no request needs NUMA alignment"


@pytest.mark.parametrize(
    ("init_cpus", "fits"),
    [
        # The reference plugin's own test "[28] multi init containers with good allocation,
        # multi-containers with good allocation - fit" (scheduler-plugins filter_test.go,
        # TestNodeResourceTopologyMultiContainerContainerScope): the kubelet pins the second app
        # container to zone 0, where the init containers' CPUs were, and refuses it.
        ((30, 30), False),
        # "[29] ... sum of their cpus requests (together) is over allocatable ... - fit": the same.
        ((30, 30, 30), False),
        # "[11] init container with good allocation, multi-containers spread across NUMAs - fit":
        # the first app container reuses the init container's 4 CPUs on zone 0; the second is free.
        ((4,), True),
    ],
)
def test_the_reference_plugins_own_init_container_cases(init_cpus: tuple[int, ...], fits: bool) -> None:
    host0 = build_view(
        NodeTopology(
            "host0",
            zones=(
                Zone(
                    "node-0",
                    resources=(
                        ResourceInfo("cpu", 32, 32, 30),
                        ResourceInfo("memory", 64 * GI, 64 * GI, 60 * GI),
                    ),
                ),
                Zone(
                    "node-1",
                    resources=(
                        ResourceInfo("cpu", 32, 32, 32),
                        ResourceInfo("memory", 64 * GI, 64 * GI, 64 * GI),
                    ),
                ),
            ),
            attributes=(Attribute("topologyManagerPolicy", "single-numa-node"),),
        )
    )
    inits = [container(f"init-{i}", {"cpu": n, "memory": 10 * 10**9}) for i, n in enumerate(init_cpus)]
    apps = [container(f"cnt-{i}", {"cpu": 20, "memory": 40 * 10**9}) for i in (1, 2)]
    p = pod(*apps, init=inits)
    assert reference(p, host0).fits
    assert filter_node(p, host0).fits is fits
