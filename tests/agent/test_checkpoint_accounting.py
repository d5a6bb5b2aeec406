"""What the CPU and memory managers' checkpoints add to podresources: the merge rules, by hand.

The machine: two NUMA nodes (0 and 2), four cores of two threads each per node; CPU 0 and its
sibling 8 are reserved, so 14 CPUs are allocatable.
"""

from __future__ import annotations

from rte.agent.compute.accounting import Accounting, account
from rte.agent.compute.reading import Checkpoints
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_state import (
    CheckpointMemoryBlock,
    CpuManagerState,
    MemoryManagerState,
    MemoryTable,
    NumaMemoryState,
)
from rte.host.machine import CpuInfo, Machine, NumaNode
from rte.model.topology import ResourceInfo
from rte.podres.types import AllocatableResources, ContainerResources, MemoryBlock, PodResources

GiB = 2**30
STATIC = KubeletConfig(cpu_manager_policy="static", memory_manager_policy="Static")
NODE0, NODE2 = frozenset({0, 1, 2, 3, 8, 9, 10, 11}), frozenset({4, 5, 6, 7, 12, 13, 14, 15})
ALLOCATABLE = AllocatableResources(
    cpu_ids=frozenset(range(16)) - {0, 8},
    memory=(MemoryBlock("memory", 10 * GiB, (0,)), MemoryBlock("memory", 10 * GiB, (2,))),
)


def machine() -> Machine:
    cpus = {}
    for node, ids in ((0, NODE0), (2, NODE2)):
        for cpu in ids:
            sibling = cpu + 8 if cpu < 8 else cpu - 8
            cpus[cpu] = CpuInfo(id=cpu, numa_node=node, thread_siblings=frozenset({cpu, sibling}))
    nodes = tuple(
        NumaNode(id=n, cpus=ids, memory_total_bytes=12 * GiB, distances={0: 10 if n == 0 else 21, 2: 10})
        for n, ids in ((0, NODE0), (2, NODE2))
    )
    return Machine(nodes=nodes, cpus=dict(sorted(cpus.items())), online_nodes=frozenset({0, 2}))


def pod(
    name: str, cpus: frozenset[int] | set[int] = frozenset(), memory: tuple[MemoryBlock, ...] = ()
) -> PodResources:
    return PodResources("ns", name, (ContainerResources("app", cpu_ids=frozenset(cpus), memory=memory),))


def cpu_state(default: set[int], entries: dict[str, dict[str, set[int]]]) -> CpuManagerState:
    return CpuManagerState(
        policy="static",
        default_cpuset=frozenset(default),
        containers={uid: {c: frozenset(s) for c, s in per.items()} for uid, per in entries.items()},
        pods={},
        legacy_containers={},
    )


def memory_state(
    reserved: dict[int, int], cells: dict[int, tuple[int, ...]] | None = None
) -> MemoryManagerState:
    def numa(zone: int) -> NumaMemoryState:
        table = MemoryTable(10 * GiB, 0, 10 * GiB, reserved[zone], 10 * GiB - reserved[zone])
        return NumaMemoryState(1, {"memory": table}, (cells or {}).get(zone, (zone,)))

    return MemoryManagerState(
        policy="static", machine_state={z: numa(z) for z in reserved}, containers={}, pods={}
    )


def available(result: Accounting, resource: str) -> list[int]:
    out = []
    for zone in result.zones:
        found = zone.resource(resource)
        assert found is not None
        out.append(int(found.available))
    return out


# -- cpu_manager_state ------------------------------------------------------------------------


def test_cpus_a_finished_init_container_still_holds_are_charged_from_the_checkpoint() -> None:
    # List shows the app container's CPUs 1-2; the init container kept 3 and 11 (not reused).
    listed = [pod("p", {1, 2})]
    state = cpu_state(set(range(16)) - {1, 2, 3, 11}, {"uid-p": {"init": {3, 11}, "app": {1, 2}}})
    without = account(machine(), STATIC, ALLOCATABLE, listed)
    with_state = account(machine(), STATIC, ALLOCATABLE, listed, Checkpoints(cpu=state))
    assert available(without, "cpu") == [4, 8]
    assert available(with_state, "cpu") == [2, 8]
    assert with_state.consistent and with_state.findings == ()


def test_a_pod_list_shows_before_the_checkpoint_copy_is_charged_all_the_same() -> None:
    state = cpu_state(set(range(16)), {})  # the copy has not caught up yet
    result = account(machine(), STATIC, ALLOCATABLE, [pod("new", {4, 12})], Checkpoints(cpu=state))
    assert available(result, "cpu") == [6, 6]


def test_a_pod_gone_from_list_but_still_in_the_checkpoint_stays_charged_until_the_kubelet_drops_it() -> None:
    state = cpu_state(set(range(16)) - {5, 13}, {"uid-gone": {"app": {5, 13}}})
    result = account(machine(), STATIC, ALLOCATABLE, [], Checkpoints(cpu=state))
    assert available(result, "cpu") == [6, 6]


def test_cpus_missing_from_the_shared_pool_are_held_even_without_an_entry() -> None:
    state = cpu_state(set(range(16)) - {6}, {})
    result = account(machine(), STATIC, ALLOCATABLE, [], Checkpoints(cpu=state))
    assert available(result, "cpu") == [6, 7]


def test_a_none_policy_checkpoint_or_a_fresh_one_holds_nothing() -> None:
    none = CpuManagerState("none", frozenset(), {}, {}, {})
    fresh = cpu_state(set(), {})
    for state in (none, fresh):
        assert available(account(machine(), STATIC, ALLOCATABLE, [], Checkpoints(cpu=state)), "cpu") == [6, 8]


def test_threads_per_core_and_free_physical_cpus_follow_the_cpu_manager() -> None:
    state = cpu_state(set(range(16)) - {3, 11, 4}, {"uid": {"init": {3, 11}, "app": {4}}})
    result = account(machine(), STATIC, ALLOCATABLE, [pod("p", {4})], Checkpoints(cpu=state))
    assert result.threads_per_core == 2
    # 16 CPUs - held {3, 11, 4} - reserved 0 with its sibling 8 = 11
    assert result.available_physical_cpus == 11


def test_without_a_static_cpu_manager_there_is_no_physical_cpu_count() -> None:
    result = account(machine(), KubeletConfig(), AllocatableResources())
    assert result.available_physical_cpus is None
    assert result.threads_per_core == 2


# -- memory_manager_state ---------------------------------------------------------------------


def test_memory_a_finished_init_container_still_holds_is_charged_from_the_checkpoint() -> None:
    listed = [pod("p", memory=(MemoryBlock("memory", 2 * GiB, (0,)),))]
    state = memory_state({0: 3 * GiB, 2: 0})  # the init container kept 1 GiB more on node 0
    result = account(machine(), STATIC, ALLOCATABLE, listed, Checkpoints(memory=state))
    assert available(result, "memory") == [7 * GiB, 10 * GiB]


def test_a_memory_checkpoint_behind_list_is_topped_up_to_what_list_holds() -> None:
    listed = [pod("p", memory=(MemoryBlock("memory", 2 * GiB, (2,)),))]
    state = memory_state({0: GiB, 2: 0})  # knows an init container on 0, not yet the new pod on 2
    result = account(machine(), STATIC, ALLOCATABLE, listed, Checkpoints(memory=state))
    assert available(result, "memory") == [9 * GiB, 8 * GiB]


def test_a_multi_numa_block_is_topped_up_over_its_group_only_by_what_the_checkpoint_lacks() -> None:
    wide = pod("wide", memory=(MemoryBlock("memory", 12 * GiB, (0, 2)),))
    split = memory_state({0: 6 * GiB, 2: 6 * GiB}, cells={0: (0, 2), 2: (0, 2)})
    assert available(
        account(machine(), STATIC, ALLOCATABLE, [wide], Checkpoints(memory=split)), "memory"
    ) == [
        4 * GiB,
        4 * GiB,
    ]
    # The checkpoint only knows 4 GiB of it so far: the other 8 GiB fill node 0 first.
    behind = memory_state({0: 2 * GiB, 2: 2 * GiB}, cells={0: (0, 2), 2: (0, 2)})
    result = account(machine(), STATIC, ALLOCATABLE, [wide], Checkpoints(memory=behind))
    assert available(result, "memory") == [0, 8 * GiB]
    assert sum(available(result, "memory")) == 20 * GiB - 12 * GiB  # never less held than List says


def test_memory_groups_come_from_the_checkpoint_cells_and_from_multi_numa_blocks() -> None:
    machine4 = Machine(
        nodes=tuple(NumaNode(id=n, memory_total_bytes=12 * GiB, distances={n: 10}) for n in (0, 1, 2, 3)),
        cpus={},
        online_nodes=frozenset({0, 1, 2, 3}),
    )
    alloc = AllocatableResources(memory=tuple(MemoryBlock("memory", 10 * GiB, (n,)) for n in range(4)))
    state = MemoryManagerState(
        policy="static",
        machine_state={
            n: NumaMemoryState(0, {}, cells) for n, cells in ((0, (0, 1)), (1, (0, 1)), (2, (2,)), (3, (3,)))
        },
        containers={"uid": {"c": (CheckpointMemoryBlock((0, 1), "memory", GiB),)}},
        pods={},
    )
    assert account(machine4, STATIC, alloc, [], Checkpoints(memory=state)).memory_numa_groups == ((0, 1),)
    wide = pod("wide", memory=(MemoryBlock("memory", 12 * GiB, (2, 3)),))
    result = account(machine4, STATIC, alloc, [wide], Checkpoints(memory=state))
    assert result.memory_numa_groups == ((0, 1), (2, 3))
    assert account(machine4, STATIC, alloc, [wide]).memory_numa_groups == ((2, 3),)


def test_pod_level_memory_is_the_larger_of_the_pod_and_its_containers_never_their_sum() -> None:
    p = PodResources(
        "ns",
        "p",
        (ContainerResources("app", memory=(MemoryBlock("memory", 2 * GiB, (0,)),)),),
        memory=(MemoryBlock("memory", 3 * GiB, (0,)),),
    )
    result = account(machine(), STATIC, ALLOCATABLE, [p])
    assert available(result, "memory") == [7 * GiB, 10 * GiB]


def test_a_memory_block_on_a_numa_node_the_machine_lacks_is_charged_everywhere_and_reported() -> None:
    stray = pod("stray", memory=(MemoryBlock("memory", 3 * GiB, (7,)),))
    result = account(machine(), STATIC, ALLOCATABLE, [stray])
    assert available(result, "memory") == [7 * GiB, 7 * GiB]  # it could be anywhere: the worst case
    assert [f.kind for f in result.findings] == ["memory_on_unknown_numa"]
    assert not result.consistent
    zone = result.zones[0]
    assert zone.resource("memory") == ResourceInfo("memory", 12 * GiB, 10 * GiB, 7 * GiB)
