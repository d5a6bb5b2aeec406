"""The accounting rules, each on a small synthetic machine so the numbers can be checked by hand."""

from fractions import Fraction

from rte.agent.compute.accounting import account, hugepages_resource
from rte.agent.compute.reading import Checkpoints
from rte.host.kubelet_config import KubeletConfig
from rte.host.machine import CpuInfo, Machine, NumaNode
from rte.model.topology import ResourceInfo, Zone
from rte.podres.types import (
    AllocatableResources,
    ContainerResources,
    Device,
    MemoryBlock,
    PodResources,
)

GiB = 2**30
MiB = 2**20
STATIC = KubeletConfig(cpu_manager_policy="static", memory_manager_policy="Static")


def _machine(
    ids: tuple[int, ...] = (0, 2),
    cpus_per_node: int = 4,
    mem: int | None = 16 * GiB,
    hugepages: dict[int, int] | None = None,
) -> Machine:
    nodes = []
    cpus: dict[int, CpuInfo] = {}
    next_cpu = 0
    for nid in ids:
        node_cpus = frozenset(range(next_cpu, next_cpu + cpus_per_node))
        next_cpu += cpus_per_node
        for c in node_cpus:
            cpus[c] = CpuInfo(id=c, numa_node=nid)
        nodes.append(
            NumaNode(
                id=nid,
                cpus=node_cpus,
                memory_total_bytes=mem,
                hugepages=dict(hugepages or {}),
                distances={j: 10 if j == nid else 21 for j in ids},
            )
        )
    return Machine(nodes=tuple(nodes), cpus=cpus, online_nodes=frozenset(ids))


def _res(zone: Zone, name: str) -> ResourceInfo:
    res = zone.resource(name)
    assert res is not None, f"{zone.name} lacks {name}"
    return res


def _pod(name: str, *containers: ContainerResources, **kw: object) -> PodResources:
    return PodResources(namespace="ns", name=name, containers=containers, **kw)  # type: ignore[arg-type]


def test_zones_use_real_sparse_ids_and_costs_include_self() -> None:
    result = account(_machine(ids=(0, 2, 5)))
    assert [z.name for z in result.zones] == ["node-0", "node-2", "node-5"]
    assert [(c.name, c.value) for c in result.zones[1].costs] == [
        ("node-0", 21),
        ("node-2", 10),
        ("node-5", 21),
    ]


def test_hardware_only_reports_capacity_everywhere() -> None:
    result = account(_machine(hugepages={2 * MiB: 512}))
    zone = result.zones[0]
    assert _res(zone, "cpu") == ResourceInfo("cpu", 4, 4, 4)
    assert _res(zone, "memory") == ResourceInfo("memory", 16 * GiB, 16 * GiB, 16 * GiB)
    assert _res(zone, "hugepages-2Mi") == ResourceInfo("hugepages-2Mi", GiB, GiB, GiB)
    assert not result.cpu_numa_bound and not result.memory_numa_bound


def test_static_cpu_manager_subtracts_reserved_and_exclusive_cpus_per_zone() -> None:
    machine = _machine()  # node-0: cpus 0-3, node-2: cpus 4-7
    alloc = AllocatableResources(cpu_ids=frozenset(range(1, 8)))  # cpu 0 reserved
    pods = [
        _pod("a", ContainerResources("c", cpu_ids=frozenset({1, 2}))),
        _pod("b", ContainerResources("c", cpu_ids=frozenset({5}))),
        _pod("shared", ContainerResources("c")),
    ]
    zones = account(machine, STATIC, alloc, pods).zones
    assert _res(zones[0], "cpu") == ResourceInfo("cpu", 4, 3, 1)
    assert _res(zones[1], "cpu") == ResourceInfo("cpu", 4, 4, 3)


def test_a_zone_whose_cpus_are_all_reserved_keeps_a_cpu_entry_at_zero() -> None:
    alloc = AllocatableResources(cpu_ids=frozenset(range(4, 8)))
    zones = account(_machine(), STATIC, alloc).zones
    assert _res(zones[0], "cpu") == ResourceInfo("cpu", 4, 0, 0)


def test_static_without_allocatable_cpu_ids_falls_back_to_sysfs_minus_reserved() -> None:
    config = KubeletConfig(cpu_manager_policy="static", reserved_system_cpus=frozenset({0, 4}))
    zones = account(_machine(), config, AllocatableResources()).zones
    assert _res(zones[0], "cpu").allocatable == 3
    assert _res(zones[1], "cpu").allocatable == 3


def test_pod_level_cpu_ids_are_not_added_to_container_ones() -> None:
    alloc = AllocatableResources(cpu_ids=frozenset(range(8)))
    pod = _pod("p", ContainerResources("c", cpu_ids=frozenset({1})), cpu_ids=frozenset({1, 2}))
    zones = account(_machine(), STATIC, alloc, [pod]).zones
    assert _res(zones[0], "cpu").available == 2  # 4 - |{1, 2}|


def test_cpu_manager_none_advertises_the_node_pool_in_every_zone() -> None:
    config = KubeletConfig(reserved_system_cpus=frozenset({0, 1}))
    result = account(_machine(), config, AllocatableResources())
    for zone in result.zones:
        assert _res(zone, "cpu") == ResourceInfo("cpu", 8, 6, 6)
    assert not result.cpu_numa_bound


def test_cpu_manager_none_with_millicore_reservations() -> None:
    config = KubeletConfig(kube_reserved={"cpu": 500}, system_reserved={"cpu": 250})
    zones = account(_machine(), config, AllocatableResources()).zones
    assert _res(zones[0], "cpu").available == Fraction(29, 4)  # 8 - 0.75


def test_static_memory_uses_kubelet_blocks_and_subtracts_assignments() -> None:
    machine = _machine(hugepages={2 * MiB: 512})
    alloc = AllocatableResources(
        memory=(
            MemoryBlock("memory", 14 * GiB, (0,)),
            MemoryBlock("memory", 15 * GiB, (2,)),
            MemoryBlock("hugepages-2Mi", GiB, (0,)),
            MemoryBlock("hugepages-2Mi", GiB, (2,)),
        )
    )
    pod = _pod(
        "p",
        ContainerResources(
            "c", memory=(MemoryBlock("memory", 2 * GiB, (2,)), MemoryBlock("hugepages-2Mi", 4 * MiB, (0,)))
        ),
    )
    zones = account(machine, STATIC, alloc, [pod]).zones
    # capacity is MemTotal, hugepage pool included, like node.status.capacity.memory
    assert _res(zones[0], "memory") == ResourceInfo("memory", 16 * GiB, 14 * GiB, 14 * GiB)
    assert _res(zones[1], "memory") == ResourceInfo("memory", 16 * GiB, 15 * GiB, 13 * GiB)
    assert _res(zones[0], "hugepages-2Mi") == ResourceInfo("hugepages-2Mi", GiB, GiB, GiB - 4 * MiB)


def test_multi_numa_memory_blocks_fill_the_lowest_node_first_like_the_kubelet() -> None:
    alloc = AllocatableResources(
        memory=(MemoryBlock("memory", 10 * GiB, (0,)), MemoryBlock("memory", 10 * GiB, (2,)))
    )
    pods = [
        _pod("a", ContainerResources("c", memory=(MemoryBlock("memory", 6 * GiB, (0,)),))),
        _pod("b", ContainerResources("c", memory=(MemoryBlock("memory", 12 * GiB, (0, 2)),))),
    ]
    zones = account(_machine(), STATIC, alloc, pods).zones
    assert _res(zones[0], "memory").available == 0  # 10 - 6 - 4
    assert _res(zones[1], "memory").available == 2 * GiB  # 10 - 8
    # the reference agent would subtract 12 GiB from each node; NFD splits ignoring what is free


def test_memory_manager_none_advertises_node_allocatable_memory_everywhere() -> None:
    machine = _machine(hugepages={2 * MiB: 512})
    config = KubeletConfig(system_reserved={"memory": GiB})  # default eviction 100Mi
    zones = account(machine, config, AllocatableResources()).zones
    node_allocatable = 32 * GiB - 2 * GiB - GiB - 100 * MiB
    for zone in zones:
        assert _res(zone, "memory") == ResourceInfo("memory", 32 * GiB, node_allocatable, node_allocatable)
        assert _res(zone, "hugepages-2Mi") == ResourceInfo("hugepages-2Mi", 2 * GiB, 2 * GiB, 2 * GiB)


def test_every_zone_lists_cpu_memory_and_every_hugepage_size() -> None:
    machine = _machine(ids=(0, 1), hugepages={2 * MiB: 4})
    cpuless = NumaNode(id=3, memory_total_bytes=64 * GiB, distances={0: 17, 1: 28, 3: 10})
    machine = Machine(nodes=(*machine.nodes, cpuless), cpus=machine.cpus)
    alloc = AllocatableResources(
        cpu_ids=frozenset(range(8)),
        memory=(MemoryBlock("memory", GiB, (0,)), MemoryBlock("hugepages-1Gi", GiB, (1,))),
    )
    zones = account(machine, STATIC, alloc).zones
    for zone in zones:
        assert {r.name for r in zone.resources} == {"cpu", "memory", "hugepages-2Mi", "hugepages-1Gi"}
    assert _res(zones[2], "cpu") == ResourceInfo("cpu", 0, 0, 0)


def test_devices_count_per_zone_and_multi_numa_devices_count_in_both() -> None:
    alloc = AllocatableResources(
        devices=(
            Device("vendor.com/nic", ("a",), (0,)),
            Device("vendor.com/nic", ("b",), (0,)),
            Device("vendor.com/nic", ("c",), (2,)),
            Device("vendor.com/gpu", ("g0",), (0,)),
            Device("vendor.com/gpu", ("g0",), (2,)),  # one device, local to both nodes
            Device("vendor.com/dsp", ("d0",), ()),  # no topology at all: no constraint
            Device("vendor.com/fpga", ("f0",), ()),  # no topology, but its resource is aligned
            Device("vendor.com/fpga", ("f1",), (7,)),  # a NUMA node this machine lacks
        )
    )
    pod = _pod(
        "p",
        ContainerResources(
            "c", devices=(Device("vendor.com/nic", ("a",), (0,)), Device("vendor.com/gpu", ("g0",), (0,)))
        ),
    )
    result = account(_machine(), STATIC, alloc, [pod])
    z0, z2 = result.zones
    assert _res(z0, "vendor.com/nic") == ResourceInfo("vendor.com/nic", 2, 2, 1)
    assert _res(z2, "vendor.com/nic") == ResourceInfo("vendor.com/nic", 1, 1, 1)
    assert _res(z0, "vendor.com/gpu").available == 0
    assert _res(z2, "vendor.com/gpu").available == 0
    assert z0.resource("vendor.com/fpga") is None
    assert result.non_numa_devices == {"vendor.com/dsp": 1}
    assert result.unknown_numa_devices == {"vendor.com/fpga": 2}  # they match no NUMA mask
    assert any(f.kind == "unknown_numa_id" and "7" in f.detail for f in result.findings)


def test_unknown_devices_and_cpus_are_findings_not_crashes() -> None:
    alloc = AllocatableResources(
        cpu_ids=frozenset(range(8)), devices=(Device("vendor.com/nic", ("a",), (0,)),)
    )
    pod = _pod(
        "p",
        ContainerResources(
            "c", cpu_ids=frozenset({1, 99}), devices=(Device("vendor.com/nic", ("zzz",), (0,)),)
        ),
    )
    result = account(_machine(), STATIC, alloc, [pod])
    kinds = sorted(f.kind for f in result.findings)
    assert kinds == ["unknown_cpu", "unknown_device"]
    assert _res(result.zones[0], "cpu").available == 3
    assert _res(result.zones[0], "vendor.com/nic").available == 1


def test_available_is_clamped_at_zero_and_allocatable_above_capacity_raises_capacity() -> None:
    machine = _machine(mem=GiB)
    alloc = AllocatableResources(
        memory=(MemoryBlock("memory", 2 * GiB, (0,)), MemoryBlock("memory", GiB, (2,)))
    )
    pod = _pod("p", ContainerResources("c", memory=(MemoryBlock("memory", 3 * GiB, (2,)),)))
    result = account(machine, STATIC, alloc, [pod])
    assert _res(result.zones[0], "memory") == ResourceInfo("memory", 2 * GiB, 2 * GiB, 2 * GiB)
    assert _res(result.zones[1], "memory").available == 0
    assert {f.kind for f in result.findings} == {
        "allocatable_above_capacity",
        "negative_available",
        "held_above_capacity",  # 3 GiB held on a zone of 1 GiB: an absurd value (issue #26 item 6)
    }


def test_policies_are_inferred_from_kubelet_data_without_a_config() -> None:
    alloc = AllocatableResources(cpu_ids=frozenset(range(1, 8)), memory=(MemoryBlock("memory", GiB, (0,)),))
    result = account(_machine(), None, alloc)
    assert result.cpu_numa_bound and result.memory_numa_bound
    assert _res(result.zones[0], "cpu").allocatable == 3


def test_hugepage_resource_names_match_the_kubelet() -> None:
    assert hugepages_resource(2 * MiB) == "hugepages-2Mi"
    assert hugepages_resource(GiB) == "hugepages-1Gi"
    assert hugepages_resource(64 * 1024) == "hugepages-64Ki"
    assert hugepages_resource(32 * MiB) == "hugepages-32Mi"


def test_memory_semantics_match_the_kubelets_node_status_on_the_r740xd() -> None:
    """Capacity includes the hugepage pool and allocatable excludes it, exactly like the kubelet.

    The R740xd's Node object (captured by its cluster's must-gather) reports capacity
    196633676Ki and allocatable 195245132Ki with 256Mi of 2Mi hugepages, 1000Mi system reserved
    and the default 100Mi eviction threshold. Our zones, summed, must differ from both figures by
    the same amount: the 12Ki by which the per-node meminfo and /proc/meminfo totals differ.
    """
    import json

    from rte.host.sysfs import read_machine
    from rte.model.quantity import parse_quantity
    from tests.helpers.paths import R740XD_SYSFS

    base = R740XD_SYSFS.parent
    status = json.loads((base / "node_status.json").read_text())["status"]
    machine = read_machine(base / "sys", pci=False)
    config = KubeletConfig(system_reserved={"memory": 1000 * MiB})
    zones = account(machine, config, AllocatableResources()).zones
    # memory manager None: every zone advertises the node-wide figures
    memory = _res(zones[0], "memory")
    capacity_gap = memory.capacity - parse_quantity(status["capacity"]["memory"])
    allocatable_gap = memory.allocatable - parse_quantity(status["allocatable"]["memory"])
    assert capacity_gap == allocatable_gap == 12 * 1024
    assert _res(zones[0], "hugepages-2Mi").capacity == parse_quantity(status["capacity"]["hugepages-2Mi"])


def test_the_memory_manager_checkpoint_settles_how_a_multi_numa_block_was_split() -> None:
    from rte.host.kubelet_state import MemoryManagerState, MemoryTable, NumaMemoryState

    alloc = AllocatableResources(
        memory=(MemoryBlock("memory", 10 * GiB, (0,)), MemoryBlock("memory", 10 * GiB, (2,)))
    )
    pods = [_pod("wide", ContainerResources("c", memory=(MemoryBlock("memory", 12 * GiB, (0, 2)),)))]

    def table(free: int) -> NumaMemoryState:
        return NumaMemoryState(
            number_of_assignments=1,
            memory_map={"memory": MemoryTable(10 * GiB, 0, 10 * GiB, 10 * GiB - free, free)},
            cells=(0, 2),
        )

    # the kubelet actually took 6 GiB from each node (it was allocated when both were empty,
    # then a pod on node 0 left): podresources alone would guess 10 + 2
    state = MemoryManagerState(
        policy="static", machine_state={0: table(4 * GiB), 2: table(4 * GiB)}, containers={}, pods={}
    )
    guessed = account(_machine(), STATIC, alloc, pods)
    settled = account(_machine(), STATIC, alloc, pods, Checkpoints(memory=state))
    assert [_res(z, "memory").available for z in guessed.zones] == [0, 8 * GiB]
    assert [_res(z, "memory").available for z in settled.zones] == [4 * GiB, 4 * GiB]
    assert settled.findings == ()  # the checkpoint settles what List cannot say: no contradiction


def test_devices_of_unknown_numa_are_published_free_held_ones_left_out() -> None:
    """``nodeUnknownNUMAResources`` has one meaning (issue #23 item 5): the free devices of unknown
    NUMA node, what devicemanager ``topology_hints.go`` ``GetTopologyHints`` compares with the
    request (``getAvailableDevices`` plus reusable ones) and ``devicesToAllocate`` can give; the
    consumer adds them to the zones' free devices."""
    alloc = AllocatableResources(
        devices=(
            Device("vendor.com/fpga", ("f0",), (0,)),
            Device("vendor.com/fpga", ("f1",), (7,)),  # a NUMA node this machine lacks
            Device("vendor.com/fpga", ("f2",), (7,)),
        )
    )
    holder = _pod("p", ContainerResources("c", devices=(Device("vendor.com/fpga", ("f1",), (7,)),)))
    assert account(_machine(), STATIC, alloc, []).unknown_numa_devices == {"vendor.com/fpga": 2}
    assert account(_machine(), STATIC, alloc, [holder]).unknown_numa_devices == {"vendor.com/fpga": 1}
    both = _pod("q", ContainerResources("c", devices=(Device("vendor.com/fpga", ("f1", "f2"), (7,)),)))
    assert account(_machine(), STATIC, alloc, [both]).unknown_numa_devices == {"vendor.com/fpga": 0}


def test_the_consumer_refuses_more_unknown_numa_devices_than_are_free_under_best_effort() -> None:
    """Agent and consumer read ``nodeUnknownNUMAResources`` alike: with one of two unknown-NUMA
    devices held, a best-effort pod asking 2 is refused (devicemanager ``GetTopologyHints`` gives
    no hint, ``devicesToAllocate`` finds 1 free), 1 is admitted. Before #23 the agent published 2."""
    from rte.agent.compute.builder import accounting_attributes
    from rte.model.admission.admit import admit_pod
    from rte.model.admission.facts import facts_from_attributes
    from rte.model.admission.node import node_resources
    from rte.model.admission.units import pod_admission_units
    from rte.model.pod import Container, Pod

    alloc = AllocatableResources(
        devices=(Device("vendor.com/fpga", ("f0",), (0,)), Device("vendor.com/fpga", ("f1", "f2"), (7,)))
    )
    holder = _pod("p", ContainerResources("c", devices=(Device("vendor.com/fpga", ("f0", "f1"), (0,)),)))
    accounting = account(_machine(), STATIC, alloc, [holder])
    attributes = accounting_attributes(accounting, STATIC)
    assert attributes["nodeUnknownNUMAResources"] == "vendor.com/fpga=1"
    for policy in ("best-effort", "none"):
        facts = facts_from_attributes(attributes, policy=policy, scope="container", max_numa_nodes=8)
        zones = [
            (
                int(z.name.removeprefix("node-")),
                {r.name: (r.capacity, r.allocatable, r.available) for r in z.resources},
            )
            for z in accounting.zones
        ]
        node = node_resources(zones, facts)
        for wanted, admitted in ((2, False), (1, True)):
            pod = Pod(
                "ns",
                "x",
                containers=(Container("c", {"vendor.com/fpga": wanted}, {"vendor.com/fpga": wanted}),),
            )
            verdict = admit_pod(node, pod_admission_units(pod, facts))
            assert verdict.admitted is admitted, (policy, wanted, verdict.reason)


def test_devices_attached_to_several_zones_are_grouped_with_their_free_count() -> None:
    """Issue #23 item 6: the zones count a device attached to nodes 0 and 2 in both; the groups
    say it is one device (``GetAllocatableResources`` lists one entry per device and node), so
    the consumer can count it once per mask as ``generateDeviceTopologyHints`` does."""
    from rte.agent.compute.builder import accounting_attributes
    from rte.model.shared_devices import SharedDevices

    alloc = AllocatableResources(
        devices=(
            Device("vendor.com/gpu", ("g0",), (0,)),
            Device("vendor.com/gpu", ("g1",), (0,)),
            Device("vendor.com/gpu", ("g1",), (2,)),
            Device("vendor.com/gpu", ("g2",), (0,)),
            Device("vendor.com/gpu", ("g2",), (2,)),
            Device("vendor.com/nic", ("n0",), (0,)),
        )
    )
    holder = _pod("p", ContainerResources("c", devices=(Device("vendor.com/gpu", ("g2",), (0,)),)))
    result = account(_machine(), STATIC, alloc, [holder])
    assert result.shared_devices == (SharedDevices("vendor.com/gpu", (0, 2), 1, 2),)
    z0, z2 = result.zones
    assert _res(z0, "vendor.com/gpu") == ResourceInfo("vendor.com/gpu", 3, 3, 2)
    assert _res(z2, "vendor.com/gpu") == ResourceInfo("vendor.com/gpu", 2, 2, 1)
    attributes = accounting_attributes(result, STATIC)
    assert attributes["nodeMultiNUMAResources"] == "vendor.com/gpu:0,2=1/2"
    assert "nodeMultiNUMAResources" not in accounting_attributes(account(_machine(), STATIC, None), STATIC)


def test_more_shared_device_groups_than_the_bound_are_not_published() -> None:
    """The attribute stays bounded: past ``MAX_GROUPS`` items the agent leaves it out and the
    consumer reads the zones alone (documented in docs/many-numa.md)."""
    from rte.agent.compute.accounting import Accounting
    from rte.agent.compute.builder import accounting_attributes
    from rte.model.shared_devices import MAX_GROUPS, SharedDevices

    groups = tuple(SharedDevices(f"vendor.com/d{i}", (0, 2), 1, 1) for i in range(MAX_GROUPS + 1))
    assert "nodeMultiNUMAResources" not in accounting_attributes(
        Accounting((), shared_devices=groups), STATIC
    )
    kept = accounting_attributes(Accounting((), shared_devices=groups[:MAX_GROUPS]), STATIC)
    assert kept["nodeMultiNUMAResources"].count(";") == MAX_GROUPS - 1
