"""Contradictions in the kubelet's List: each a finding, each charged the worst case."""

from __future__ import annotations

from rte.agent.compute.accounting import Accounting, account
from rte.agent.compute.listcheck import check_listing
from rte.host.kubelet_config import KubeletConfig
from rte.host.machine import CpuInfo, Machine, NumaNode
from rte.podres.types import AllocatableResources, ContainerResources, Device, MemoryBlock, PodResources

GiB = 2**30
NIC = "vendor.com/nic"
STATIC = KubeletConfig(cpu_manager_policy="static", memory_manager_policy="Static")
ALLOCATABLE = AllocatableResources(
    cpu_ids=frozenset(range(8)),
    devices=(Device(NIC, ("a",), (0,)), Device(NIC, ("b",), (0,)), Device(NIC, ("c",), (1,))),
    memory=(MemoryBlock("memory", 8 * GiB, (0,)), MemoryBlock("memory", 8 * GiB, (1,))),
)


def machine() -> Machine:
    nodes = tuple(
        NumaNode(
            id=n, cpus=frozenset(range(4 * n, 4 * n + 4)), memory_total_bytes=10 * GiB, distances={n: 10}
        )
        for n in (0, 1)
    )
    cpus = {c: CpuInfo(id=c, numa_node=c // 4) for c in range(8)}
    return Machine(nodes=nodes, cpus=cpus, online_nodes=frozenset({0, 1}))


def pod(name: str, *containers: ContainerResources, namespace: str = "ns") -> PodResources:
    return PodResources(namespace, name, containers)


def app(
    cpus: frozenset[int] | set[int] = frozenset(),
    gib: int = 0,
    devices: tuple[str, ...] = (),
    name: str = "app",
) -> ContainerResources:
    memory = (MemoryBlock("memory", gib * GiB, (0,)),) if gib else ()
    return ContainerResources(name, frozenset(cpus), tuple(Device(NIC, (d,), (0,)) for d in devices), memory)


def zone0(result: Accounting, resource: str) -> int:
    found = result.zones[0].resource(resource)
    assert found is not None
    return int(found.available)


def kinds(result: Accounting) -> list[str]:
    return sorted(f.kind for f in result.findings)


def test_a_clean_listing_has_no_findings_and_is_consistent() -> None:
    result = account(machine(), STATIC, ALLOCATABLE, [pod("a", app({1}, 1, ("a",))), pod("b", app({2}))])
    assert result.findings == () and result.consistent


def test_a_pod_listed_twice_identically_is_charged_once_for_everything() -> None:
    twice = pod("p", app({1, 2}, 2, ("a",)))
    result = account(machine(), STATIC, ALLOCATABLE, [twice, twice])
    assert (zone0(result, "cpu"), zone0(result, "memory"), zone0(result, NIC)) == (2, 6 * GiB, 1)
    assert kinds(result) == ["duplicate_pod"]
    assert not result.consistent


def test_two_different_entries_with_one_name_are_both_charged() -> None:
    old, new = pod("p", app({1}, 2)), pod("p", app({2}, 3))
    result = account(machine(), STATIC, ALLOCATABLE, [old, new])
    assert (zone0(result, "cpu"), zone0(result, "memory")) == (2, 3 * GiB)
    assert kinds(result) == ["duplicate_pod"]


def test_a_cpu_assigned_to_two_pods_is_one_cpu_held_and_a_finding() -> None:
    result = account(machine(), STATIC, ALLOCATABLE, [pod("a", app({1, 2})), pod("b", app({2, 3}))])
    assert zone0(result, "cpu") == 1
    (finding,) = result.findings
    assert (
        finding.kind == "cpu_assigned_twice" and "pod ns/a" in finding.detail and "pod ns/b" in finding.detail
    )
    assert not result.consistent


def test_a_cpu_in_two_containers_of_one_pod_is_assigned_twice_but_pod_level_ids_are_not() -> None:
    both = pod("p", app({1}), app({1}, name="side"))
    assert kinds(account(machine(), STATIC, ALLOCATABLE, [both])) == ["cpu_assigned_twice"]
    pod_level = PodResources("ns", "q", (app({1}),), cpu_ids=frozenset({1, 2}))
    assert account(machine(), STATIC, ALLOCATABLE, [pod_level]).findings == ()


def test_a_device_assigned_to_two_pods_is_one_device_held_and_a_finding() -> None:
    result = account(
        machine(), STATIC, ALLOCATABLE, [pod("a", app(devices=("a",))), pod("b", app(devices=("a",)))]
    )
    assert zone0(result, NIC) == 1
    assert kinds(result) == ["device_assigned_twice"]


def test_a_device_listed_once_per_numa_node_is_one_device() -> None:
    wide = ContainerResources("app", devices=(Device(NIC, ("a",), (0,)), Device(NIC, ("a",), (1,))))
    assert check_listing([pod("p", wide)])[1] == ()


def test_empty_pod_container_and_resource_names_are_findings_and_still_charged() -> None:
    nameless = PodResources("ns", "", (ContainerResources("", frozenset({3})),))
    odd = pod("odd", ContainerResources("c", devices=(Device("", ("z",), (0,)),)))
    result = account(machine(), STATIC, ALLOCATABLE, [nameless, odd])
    assert [f.kind for f in result.findings if f.kind == "empty_name"] == ["empty_name"] * 3
    assert zone0(result, "cpu") == 3  # CPU 3 is held all the same
    assert not result.consistent


def test_the_quick_clash_check_agrees_with_the_findings_on_random_listings() -> None:
    """``_any_assigned_twice`` (set operations, no texts) says yes exactly where the findings
    are not empty: CPUs shared by containers of one pod or by two pods, pod-level CPUs that are
    the pod's own containers' (no clash), devices in two containers (one container listing a
    device twice is no clash)."""
    import random

    from rte.agent.compute.listcheck import _any_assigned_twice, _assigned_twice_findings

    rng = random.Random(27)
    seen = {True: 0, False: 0}
    for _ in range(2000):
        pods = []
        for p in range(rng.randrange(0, 4)):
            containers = []
            for c in range(rng.randrange(0, 3)):
                cpus = frozenset(rng.sample(range(16), rng.randrange(0, 3)))
                devices = tuple(
                    Device(NIC, tuple(rng.sample("abcdefgh", rng.randrange(1, 3))), (0,))
                    for _ in range(rng.randrange(0, 2))
                )
                containers.append(ContainerResources(f"c{c}", cpus, devices, ()))
            own = [cpu for c in containers for cpu in c.cpu_ids]
            pod_cpus = frozenset(rng.sample(own, min(len(own), 1))) | frozenset(rng.sample(range(16), 1))
            pods.append(
                PodResources(
                    "ns", f"p{p}", tuple(containers), pod_cpus if rng.random() < 0.3 else frozenset()
                )
            )
        quick = _any_assigned_twice(pods)
        assert quick == bool(_assigned_twice_findings(pods)), pods
        seen[quick] += 1
    assert min(seen.values()) > 100  # both answers were exercised
