"""Filter by the kubelet's rules over NRTs: the fast path equals the general model, and the cases
where the kubelet's verdict differs from the reference plugin's."""

from __future__ import annotations

import random

import pytest

from rte.consumer.filter import FilterCode, filter_node
from rte.consumer.kubelet_filter import fast_verdict, kubelet_filter, node_of, result_of
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
    if rng.random() < 0.2:  # align-by-socket, two zones per socket
        sockets = ";".join(f"{i}={i // 2}" for i in range(len(zones)))
        attrs += [
            Attribute("cpuManagerOptionAlignBySocket", "true"),
            Attribute("cpuManagerNUMASockets", sockets),
        ]
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
        units = kubelet_units(prep, node_view.facts)
        general = result_of(admit_pod(node_of(node_view), units), node_view)
        fast = fast_verdict(prep, node_view, units[0]) if len(units) == 1 else None
        for got in (fast, kubelet_filter(prep, node_view, None)):
            if got is None:
                continue
            assert (got.fits, got.reason, got.numa_id) == (general.fits, general.reason, general.numa_id), (
                node_view.source,
                p,
            )
            if got.admission is not None and general.admission is not None:
                assert [u.numa_ids for u in got.admission.units] == [
                    u.numa_ids for u in general.admission.units
                ]
        fast_taken += fast is not None
    assert fast_taken > 1000, "the fast path is exercised"


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


def _host0() -> NumaView:
    """host0 of the reference plugin's TestNodeResourceTopologyMultiContainerContainerScope
    (kubernetes-sigs/scheduler-plugins pkg/noderesourcetopology/filter_test.go)."""
    hp, nic = "hugepages-2Mi", "vendor/nic1"
    zone0 = (
        ResourceInfo("cpu", 32, 32, 30),
        ResourceInfo("memory", 64 * GI, 64 * GI, 60 * GI),
        ResourceInfo(hp, 384 * 2**20, 384 * 2**20, 384 * 2**20),
        ResourceInfo(nic, 16, 16, 16),
    )
    zone1 = (
        ResourceInfo("cpu", 32, 32, 32),
        ResourceInfo("memory", 64 * GI, 64 * GI, 64 * GI),
        ResourceInfo(hp, 512 * 2**20, 512 * 2**20, 512 * 2**20),
        ResourceInfo(nic, 32, 32, 32),
    )
    return build_view(
        NodeTopology(
            "host0",
            zones=(Zone("node-0", resources=zone0), Zone("node-1", resources=zone1)),
            attributes=(Attribute("topologyManagerPolicy", "single-numa-node"),),
        )
    )


def _requests(spec: str) -> dict[str, str | int]:
    """``"cpu=20 memory=40G"`` as a request."""
    out: dict[str, str | int] = {}
    for item in spec.split():
        name, _, value = item.partition("=")
        out[{"nic": "vendor/nic1", "hp": "hugepages-2Mi"}.get(name, name)] = value
    return out


# (case of the reference's table, init containers, app containers, reference verdict, kubelet's)
REFERENCE_CASES = [
    ("[1] single container with good allocation", [], ["cpu=2 memory=4G"], True, True),
    ("[2] cpu over allocation", [], ["cpu=40 memory=4G"], False, False),
    ("[2] memory over allocation", [], ["cpu=2 memory=100G"], False, False),
    ("[2] cpu and memory over allocation", [], ["cpu=40 memory=100G"], False, False),
    ("[4] spread across NUMAs", [], ["cpu=20 memory=40G", "cpu=20 memory=40G"], True, True),
    (
        "[4] devices and hugepages, spread across NUMAs",
        [],
        ["cpu=2 memory=6G hp=500Mi nic=16", "cpu=2 memory=6G hp=50Mi nic=8"],
        True,
        True,
    ),
    ("[7] init container cpu over allocation", ["cpu=40 memory=40G"], ["cpu=1 memory=4G"] * 2, False, False),
    (
        "[7] init container memory over allocation",
        ["cpu=4 memory=70G"],
        ["cpu=1 memory=4G"] * 2,
        False,
        False,
    ),
    ("[11] init container, spread across NUMAs", ["cpu=4 memory=10G"], ["cpu=20 memory=40G"] * 2, True, True),
    (
        "[17] multi init containers, spread across NUMAs",
        ["cpu=4 memory=10G"] * 3,
        ["cpu=20 memory=40G", "cpu=20 memory=40G", "cpu=6 memory=10G"],
        True,
        True,
    ),
    (
        "[24] multi init containers, app containers over cpu",
        ["cpu=30 memory=10G"] * 2,
        ["cpu=20 memory=40G", "cpu=20 memory=40G", "cpu=20 memory=6G"],
        False,
        False,
    ),
    ("[27] container cpu over allocation", ["cpu=30 memory=10G"] * 2, ["cpu=35 memory=40G"], False, False),
    # The kubelet pins cnt-2 to zone 0, where init-containers' reusable CPUs are: refused.
    (
        "[28] multi init containers, good allocation",
        ["cpu=30 memory=10G"] * 2,
        ["cpu=20 memory=40G"] * 2,
        True,
        False,
    ),
    (
        "[29] init cpus over allocatable together",
        ["cpu=30 memory=10G"] * 3,
        ["cpu=20 memory=40G", "cpu=20 memory=40G", "cpu=2 memory=6G"],
        True,
        False,
    ),
    (
        "[29] init memory over allocatable together",
        ["cpu=3 memory=50G"] * 3,
        ["cpu=20 memory=40G", "cpu=20 memory=40G", "cpu=2 memory=6G"],
        True,
        True,
    ),
    (
        "[32] init containers over cpu",
        ["cpu=40 memory=50G", "cpu=3 memory=50G", "cpu=3 memory=50G"],
        ["cpu=20 memory=40G", "cpu=2 memory=6G"],
        False,
        False,
    ),
    (
        "[32] init containers over memory",
        ["cpu=20 memory=50G", "cpu=40 memory=50G", "cpu=3 memory=50G"],
        ["cpu=20 memory=40G", "cpu=2 memory=6G"],
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("inits", "apps", "reference_fits", "kubelet_fits"),
    [case[1:] for case in REFERENCE_CASES],
    ids=[case[0] for case in REFERENCE_CASES],
)
def test_the_reference_plugins_own_multi_container_cases(
    inits: list[str], apps: list[str], reference_fits: bool, kubelet_fits: bool
) -> None:
    p = pod(
        *(container(f"cnt-{i + 1}", _requests(a)) for i, a in enumerate(apps)),
        init=[container(f"init-{i + 1}", _requests(a)) for i, a in enumerate(inits)],
    )
    host0 = _host0()
    assert reference(p, host0).fits is reference_fits
    assert filter_node(p, host0).fits is kubelet_fits
