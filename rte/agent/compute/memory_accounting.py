"""``memory`` and hugepages of every zone, and the memory manager's multi-NUMA groups.

NUMA-bound (memory manager ``Static``): allocatable = the kubelet's per-NUMA blocks; available =
allocatable minus what is held. Two sources say what is held, and the result is never more
optimistic than what either of them knows:

* podresources ``List`` knows each block exactly for single-NUMA blocks, and only the total of a
  block spanning several NUMA nodes (a *group*), not how the memory manager split it;
* the memory manager's checkpoint (``memory_manager_state``, when readable and ``Static``) knows
  every node's ``reserved``/``free``, including blocks ``List`` never reports: those of finished
  init containers, kept for the pod's life (kubernetes/kubernetes
  ``pkg/kubelet/cm/memorymanager/policy_static.go``).

The merge: each zone is charged the larger of the checkpoint's amount and ``List``'s single-NUMA
blocks on it; then, for each group of NUMA nodes that ``List``'s multi-NUMA blocks span, whatever
``List`` holds on the group beyond what the zones were charged is charged as the memory manager
fills a group: lowest node id first, each up to what it has free, the rest on the last node.
Without a checkpoint this is exactly that fill. A checkpoint that holds more than ``List`` is
expected (init containers, pods being removed), one that holds less is behind (the copy lags the
kubelet by up to a second); neither is a finding.

A block that names a NUMA node this machine lacks, or none at all, cannot be placed: it is
charged in full to every zone (the worst case) and reported as an inconsistency.

Not NUMA-bound (``None``): node-wide values in every zone, as for cpu.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rte.agent.compute.ledger import HUGEPAGES_PREFIX, MEMORY, Ledger, MemoryHeld, hugepages_resource
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_state import MemoryManagerState
from rte.host.machine import Machine
from rte.podres.types import AllocatableResources, MemoryBlock, PodResources

_Key = tuple[int, str]
"""(NUMA id, resource name)."""


def hugepage_sizes(machine: Machine, allocatable: AllocatableResources | None) -> set[str]:
    """Every hugepage resource the node has (sysfs pools, or blocks the kubelet reports)."""
    names = {hugepages_resource(size) for node in machine.nodes for size in node.hugepages}
    if allocatable is not None:
        names |= {b.memory_type for b in allocatable.memory if b.memory_type.startswith(HUGEPAGES_PREFIX)}
    return names


def capacity_of(machine: Machine, zone: int, resource: str) -> int | None:
    """The zone's hardware amount of ``resource``; None when sysfs has no meminfo for it."""
    node = machine.node(zone)
    if resource == MEMORY:
        return node.memory_total_bytes
    for size, count in node.hugepages.items():
        if hugepages_resource(size) == resource:
            return size * count
    return 0 if node.hugepages or node.memory_total_bytes is not None else None


def pod_memory(pod: PodResources) -> Iterator[tuple[str, MemoryBlock]]:
    """The blocks a pod holds, each with a label for messages.

    Pod-level blocks (KEP-5526) include the container-level ones, so per memory type and NUMA
    node set the larger of the two totals is held, never their sum.
    """
    who = f"pod {pod.namespace}/{pod.name}"
    if not pod.memory:
        for container in pod.containers:
            for block in container.memory:
                yield f"{who} container {container.name}", block
        return
    pod_level: dict[tuple[str, tuple[int, ...]], int] = {}
    container_level: dict[tuple[str, tuple[int, ...]], int] = {}
    for block in pod.memory:
        key = (block.memory_type, block.numa_ids)
        pod_level[key] = pod_level.get(key, 0) + block.size
    for container in pod.containers:
        for block in container.memory:
            key = (block.memory_type, block.numa_ids)
            container_level[key] = container_level.get(key, 0) + block.size
    for key in sorted(pod_level.keys() | container_level.keys()):
        size = max(pod_level.get(key, 0), container_level.get(key, 0))
        yield who, MemoryBlock(key[0], size, key[1])


def _allocatable(
    ledger: Ledger,
    machine: Machine,
    config: KubeletConfig | None,
    allocatable: AllocatableResources | None,
    resources: set[str],
) -> dict[_Key, int]:
    alloc: dict[_Key, int] = {}
    if allocatable is not None and allocatable.memory:
        for block in allocatable.memory:
            resources.add(block.memory_type)
            zones = ledger.known(block.numa_ids, f"allocatable {block.memory_type}")
            for i, zone in enumerate(zones):
                # One block per (NUMA node, type) is the norm; split evenly if a kubelet ever groups them.
                share = block.size // len(zones) + (1 if i < block.size % len(zones) else 0)
                alloc[(zone, block.memory_type)] = alloc.get((zone, block.memory_type), 0) + share
        return alloc
    # A kubelet that does not say: computed like the memory manager does.
    reserved = config.reserved_memory if config else {}
    for zone in ledger.zones:
        node = machine.node(zone)
        for res in resources:
            capacity = capacity_of(machine, zone, res) or 0
            if res == MEMORY:
                capacity -= node.hugepages_total_bytes
            alloc[(zone, res)] = max(0, capacity - reserved.get(zone, {}).get(res, 0))
    return alloc


def _components(groups: Iterable[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Groups that share a node merged into one (the memory manager never lets them overlap)."""
    merged: list[set[int]] = []
    for group in groups:
        joined = set(group)
        for other in [m for m in merged if m & joined]:
            merged.remove(other)
            joined |= other
        merged.append(joined)
    return sorted((tuple(sorted(m)) for m in merged), key=lambda g: g[0])


def _checkpoint_used(
    ledger: Ledger, state: MemoryManagerState, alloc: dict[_Key, int], resources: set[str]
) -> dict[_Key, int]:
    used: dict[_Key, int] = {}
    for zone, numa in state.machine_state.items():
        if zone not in ledger.zones:
            ledger.note("unknown_numa_id", f"memory_manager_state names NUMA node {zone}")
            continue
        for res, table in numa.memory_map.items():
            if res in resources:
                used[(zone, res)] = max(table.reserved, alloc.get((zone, res), 0) - table.free)
    return used


def held_memory(pods: Iterable[PodResources]) -> list[MemoryHeld]:
    """Every block the pods hold (:func:`pod_memory`), with its pod's label and sorted NUMA ids."""
    return [
        (what, tuple(sorted(block.numa_ids)), block.memory_type, block.size)
        for pod in pods
        for what, block in pod_memory(pod)
    ]


def memory_groups(
    ledger: Ledger, state: MemoryManagerState | None, held: Iterable[MemoryHeld]
) -> tuple[tuple[int, ...], ...]:
    """The NUMA node groups the memory manager has bound together, two nodes or more each.

    From the checkpoint's ``machineState[*].cells`` and from the blocks ``List`` reports across
    several nodes (a block's nodes are always one group), so ``rte dump`` without the checkpoint
    still knows the groups that hold memory.
    """
    groups: list[tuple[int, ...]] = []
    if state is not None and state.policy == "static":
        for numa in state.machine_state.values():
            cells = tuple(sorted(set(numa.cells)))
            if len(cells) > 1 and all(c in ledger.zones for c in cells):
                groups.append(cells)
    for _, ids, _, _ in held:
        if len(ids) > 1 and all(n in ledger.zones for n in ids):
            groups.append(ids)
    return tuple(_components(groups))


def account_memory_bound(
    ledger: Ledger,
    machine: Machine,
    config: KubeletConfig | None,
    allocatable: AllocatableResources | None,
    held: Iterable[MemoryHeld],
    resources: set[str],
    state: MemoryManagerState | None,
) -> None:
    """Memory manager ``Static``: per-zone allocatable blocks minus what is held (module docstring)."""
    alloc = _allocatable(ledger, machine, config, allocatable, resources)
    for zone in ledger.zones:
        for res in resources:
            amounts = ledger.at(zone, res)
            amounts.allocatable = alloc.get((zone, res), 0)
            capacity = capacity_of(machine, zone, res)
            amounts.capacity = amounts.allocatable if capacity is None else capacity
    single: dict[_Key, int] = {}
    multi: dict[tuple[tuple[int, ...], str], int] = {}
    everywhere: dict[str, int] = {}
    for what, ids, res, size in held:
        if res not in resources:
            ledger.note_about(what, "unknown_memory_type", f"{what}: {res} is not allocatable")
            continue
        if not ids or any(n not in ledger.zones for n in ids):
            kind = "memory_without_topology" if not ids else "memory_on_unknown_numa"
            where = "no NUMA node" if not ids else f"NUMA nodes {list(ids)}, not all on this machine"
            detail = f"{what}: a {res} block of {size} on {where}: charged to every zone"
            ledger.note_about(what, kind, detail)
            everywhere[res] = everywhere.get(res, 0) + size
        elif len(ids) == 1:
            single[(ids[0], res)] = single.get((ids[0], res), 0) + size
        else:
            multi[(ids, res)] = multi.get((ids, res), 0) + size
    used: dict[_Key, int] = dict(single)
    if state is not None and state.policy == "static":
        for key, amount in _checkpoint_used(ledger, state, alloc, resources).items():
            used[key] = max(used.get(key, 0), amount)
    for res in sorted(resources):
        for group in _components(ids for ids, r in multi if r == res):
            total = sum(single.get((z, res), 0) for z in group)
            total += sum(size for (ids, r), size in multi.items() if r == res and set(ids) <= set(group))
            _fill(used, alloc, group, res, total - sum(used.get((z, res), 0) for z in group))
    for zone in ledger.zones:
        for res in resources:
            ledger.at(zone, res).used = used.get((zone, res), 0) + everywhere.get(res, 0)


def _fill(used: dict[_Key, int], alloc: dict[_Key, int], group: tuple[int, ...], res: str, need: int) -> None:
    """Charge ``need`` to ``group`` as the memory manager fills it: lowest id first, the rest last."""
    for zone in group:
        if need <= 0:
            return
        free = max(0, alloc.get((zone, res), 0) - used.get((zone, res), 0))
        take = need if zone == group[-1] else min(need, free)
        used[(zone, res)] = used.get((zone, res), 0) + take
        need -= take


def account_memory_pool(
    ledger: Ledger, machine: Machine, config: KubeletConfig | None, resources: set[str]
) -> None:
    """Memory manager ``None``: node-wide capacity and allocatable in every zone."""
    totals: dict[str, int] = {}
    unknown_memory = False
    for zone in ledger.zones:
        for res in resources:
            capacity = capacity_of(machine, zone, res)
            unknown_memory |= res == MEMORY and capacity is None
            totals[res] = totals.get(res, 0) + (capacity or 0)
    if unknown_memory:
        ledger.note("memory_capacity_unknown", "some NUMA nodes have no meminfo; memory capacity is partial")
    hugepages = sum(v for k, v in totals.items() if k.startswith(HUGEPAGES_PREFIX))
    for res in resources:
        capacity = totals.get(res, 0)
        if config is None:
            pool = capacity
        elif res == MEMORY:
            reserved = config.kube_reserved.get(MEMORY, 0) + config.system_reserved.get(MEMORY, 0)
            pool = capacity - hugepages - reserved - config.hard_eviction_memory(capacity)
        else:
            pool = capacity - config.kube_reserved.get(res, 0) - config.system_reserved.get(res, 0)
        for zone in ledger.zones:
            amounts = ledger.at(zone, res)
            amounts.capacity = capacity
            amounts.allocatable = max(0, pool)
