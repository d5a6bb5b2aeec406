"""What admission reads about a node, and the counts it updates between the units of one pod.

:class:`NodeResources` holds, per NUMA zone (positions aligned on ascending ids): the CPUs of the
zone (the CPU manager's topology, reserved CPUs included: what ``minAffinitySize`` counts) and
the free exclusive ones; each memory type's (``memory``, ``hugepages-<size>``) allocatable and
free bytes; each device resource's allocatable and free devices. :class:`NodeFacts` holds the
node-wide rest: policy, scope and options, distances, the CPU manager's SMT facts, the memory
manager's multi-NUMA groups, devices of unknown NUMA node or attached to several, and the
pod-level-resources gates.

:class:`Working` is the mutable copy one admission walks through: allocating a unit takes from
it, and the next unit is hinted against what is left, as the kubelet does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rte.model.admission.devices import DeviceLayout, Group, device_layouts, free_total, split_free
from rte.model.admission.masks import candidate_masks, is_complete
from rte.model.exclusive import is_native_resource
from rte.model.quantity import Amount
from rte.model.shared_devices import SharedDevices
from rte.model.topology_manager import DEFAULT_MAX_NUMA_NODES, POLICY_NONE, SCOPE_CONTAINER

Row = tuple[int, ...]
"""One value per zone position."""

_MEMORY = "memory"
_HUGEPAGES_PREFIX = "hugepages-"
_CPU = "cpu"


def is_memory_type(resource: str) -> bool:
    """The memory manager's resources: ``memory`` and every ``hugepages-<size>``."""
    return resource == _MEMORY or resource.startswith(_HUGEPAGES_PREFIX)


def is_device(resource: str) -> bool:
    """Device plugin resources are extended (non-native) resources."""
    return not is_native_resource(resource)


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """Node-wide facts admission depends on; the defaults are the kubelet's."""

    policy: str = POLICY_NONE
    scope: str = SCOPE_CONTAINER
    prefer_closest_numa: bool = False
    """Topology Manager option ``prefer-closest-numa-nodes`` (ignored by ``single-numa-node``)."""
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES
    """``max-allowable-numa-nodes``: only decides whether the Topology Manager starts at all."""
    cpu_manager_static: bool = True
    memory_manager_static: bool = True
    full_pcpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    """CPU manager option ``distribute-cpus-across-numa``: a multi-zone allocation is split evenly
    (:mod:`.distribute`)."""
    threads_per_core: int | None = None
    available_physical_cpus: int | None = None
    memory_groups: tuple[frozenset[int], ...] = ()
    """NUMA ids the memory manager has bound together (groups of two or more)."""
    align_by_socket: bool = False
    """CPU manager option ``align-by-socket`` (see :mod:`~.sockets`)."""
    numa_sockets: tuple[tuple[int, frozenset[int]], ...] = ()
    """(NUMA id, its socket ids) for the NUMA nodes with CPUs; empty when the NRT does not say."""
    unknown_numa_devices: Mapping[str, int] = field(default_factory=dict)
    """Free devices whose NUMA node is unknown (-1), per resource."""
    non_topology_devices: Mapping[str, int] = field(default_factory=dict)
    """Devices without topology, per resource: no constraint, but part of the node's total."""
    shared_devices: tuple[SharedDevices, ...] = ()
    """Devices attached to several NUMA nodes (``nodeMultiNUMAResources``): also in each zone's
    counts; see :mod:`.devices`."""
    pod_level_resources: bool = True
    """Feature gate ``PodLevelResources`` (KEP-2837; on by default since 1.34)."""
    pod_level_resource_managers: bool = False
    """Feature gate ``PodLevelResourceManagers`` (KEP-5526; alpha in 1.36, off by default)."""

    @property
    def smt_checkable(self) -> bool:
        """``full-pcpus-only`` is on and the node says enough to apply its check."""
        return self.full_pcpus_only and self.threads_per_core is not None


@dataclass(frozen=True, slots=True)
class NodeResources:
    """The per-zone counts admission reads, with the node's facts."""

    ids: tuple[int, ...]
    """NUMA ids, ascending; position ``i`` of every row is zone ``ids[i]``."""
    cpu_capacity: Row
    cpu_available: Row
    memory: Mapping[str, tuple[Row, Row]]
    """Memory type -> (allocatable, available) rows."""
    devices: Mapping[str, tuple[Row, Row]]
    """Device resource -> (allocatable, available) rows."""
    facts: NodeFacts = field(default_factory=NodeFacts)
    distances: tuple[Row, ...] = ()
    """``distances[i][j]``: distance from zone ``i`` to zone ``j`` (positions)."""
    tables: dict[object, object] = field(default_factory=dict, compare=False, repr=False)
    """Sums over every mask of the rows that never change (capacity, allocatable), on first use."""

    def static_sums(self, key: str, row: Sequence[int], zones: int) -> Sums:
        """:func:`mask_sums` of a row that does not change during admission, memoised."""
        sums = self.tables.get((key, zones))
        if sums is None:
            sums = self.tables[(key, zones)] = mask_sums(row, zones)
        return sums  # type: ignore[return-value]

    @property
    def all_zones(self) -> int:
        return (1 << len(self.ids)) - 1

    @property
    def cpu_zones(self) -> int:
        """Zones with CPUs: the CPU manager only hints over NUMA nodes that have CPUs."""
        return sum(1 << i for i, c in enumerate(self.cpu_capacity) if c > 0)

    def device_layouts(self) -> Mapping[str, DeviceLayout]:
        """The resources with devices shared by several zones (:func:`.devices.device_layouts`)."""
        if not self.facts.shared_devices:
            return {}
        shared = self.facts.shared_devices
        key = ("device-layouts", shared)  # the free counts change; tables may outlive them
        got = self.tables.get(key)
        if got is None:
            got = self.tables[key] = device_layouts(self.ids, self.devices, shared)
        return got  # type: ignore[return-value]

    def group_masks(self) -> list[int]:
        """The memory groups as masks over positions (ids the node lacks are dropped)."""
        where = {numa_id: i for i, numa_id in enumerate(self.ids)}
        out = []
        for group in self.facts.memory_groups:
            mask = sum(1 << where[i] for i in group if i in where)
            if mask.bit_count() > 1:
                out.append(mask)
        return out


def _whole(value: Amount) -> int:
    return value if isinstance(value, int) else math.floor(value)


ZoneCounts = Mapping[str, tuple[Amount, Amount, Amount]]
"""Resource -> (capacity, allocatable, available) of one zone."""


def node_resources(
    zones: Sequence[tuple[int, ZoneCounts]],
    facts: NodeFacts,
    distances: Mapping[int, Mapping[int, int]] | None = None,
    missing_distance: int = 255,
) -> NodeResources:
    """Build :class:`NodeResources` from ``(NUMA id, resource counts)`` per zone.

    Counts are made consistent (capacity >= allocatable >= available >= 0, whole numbers rounded
    down) so that a zone's free amount never exceeds what ``minAffinitySize`` counts, as on a
    real node. Only ``cpu``, memory types and extended (device) resources are kept.
    """
    ordered = sorted(zones, key=lambda z: z[0])
    ids = tuple(i for i, _ in ordered)
    names = sorted({r for _, counts in ordered for r in counts} - {_CPU})
    cpu_cap: list[int] = []
    cpu_avail: list[int] = []
    rows: dict[str, tuple[list[int], list[int]]] = {}
    for _, counts in ordered:
        for name in (_CPU, *names):
            if name != _CPU and not (is_memory_type(name) or is_device(name)):
                continue
            capacity, allocatable, available = (max(_whole(v), 0) for v in counts.get(name, (0, 0, 0)))
            allocatable = max(allocatable, available)
            capacity = max(capacity, allocatable)
            if name == _CPU:
                cpu_cap.append(capacity)
                cpu_avail.append(available)
            else:
                alloc_row, avail_row = rows.setdefault(name, ([], []))
                alloc_row.append(allocatable)
                avail_row.append(available)
    table = distances or {}
    return NodeResources(
        ids=ids,
        cpu_capacity=tuple(cpu_cap),
        cpu_available=tuple(cpu_avail),
        memory={r: (tuple(a), tuple(v)) for r, (a, v) in rows.items() if is_memory_type(r)},
        devices={r: (tuple(a), tuple(v)) for r, (a, v) in rows.items() if is_device(r)},
        facts=facts,
        distances=tuple(tuple(table.get(i, {}).get(j, missing_distance) for j in ids) for i in ids),
    )


class Working:
    """The counts one admission updates as it allocates unit after unit (positions as rows).

    CPUs and devices that a regular init container holds are *reusable* by the later containers of
    the same pod; they are kept as (zones, count): the zones a later hint must include, and how
    many. The memory manager keeps its reusable init-container memory per exact mask. ``exact``
    turns False once an allocation split across zones in a way counts cannot know; from then on
    every allocation is charged to every zone (see :class:`~.allocate.CountAllocator`). The
    node-wide free totals stay exact whatever the split.
    """

    __slots__ = (
        "cpu_free",
        "cpu_free_total",
        "cpu_reuse",
        "dev_free",
        "dev_free_total",
        "dev_groups",
        "dev_reuse",
        "dev_unknown",
        "exact",
        "mem_cells",
        "mem_free",
        "mem_reuse",
        "mem_used",
        "memory_exact",
        "node",
        "physical_free",
    )

    def __init__(self, node: NodeResources) -> None:
        self.node = node
        self.cpu_free = list(node.cpu_available)
        self.cpu_free_total = sum(node.cpu_available)
        self.cpu_reuse = (0, 0)
        self.physical_free = node.facts.available_physical_cpus
        self.mem_free = {r: list(avail) for r, (_, avail) in node.memory.items()}
        self.mem_reuse: dict[tuple[int, str], int] = {}
        count = len(node.ids)
        self.mem_cells = [1 << z for z in range(count)]
        for group in node.group_masks():
            for z in range(count):
                if group >> z & 1:
                    self.mem_cells[z] = group
        self.mem_used = [
            self.mem_cells[z] != 1 << z or any(avail[z] < alloc[z] for alloc, avail in node.memory.values())
            for z in range(count)
        ]
        self.dev_free = {r: list(avail) for r, (_, avail) in node.devices.items()}
        self.dev_free_total = {r: sum(avail) for r, (_, avail) in node.devices.items()}
        self.dev_groups: dict[str, list[Group]] = {}
        """Per resource with shared devices: its groups' free devices (:mod:`.devices`)."""
        for resource, layout in node.device_layouts().items():
            groups = self.dev_groups[resource] = split_free(self.dev_free[resource], layout)
            self.dev_free_total[resource] = free_total(self.dev_free[resource], groups)
        self.dev_reuse: dict[str, tuple[int, int]] = {}
        self.dev_unknown = dict(node.facts.unknown_numa_devices)
        self.exact = True
        self.memory_exact = True
        """False once a unit's mask is not the kubelet's (many zones, best-effort, nothing
        preferred): memory too is then charged to every zone."""

    def copy(self) -> Working:
        other = Working.__new__(Working)
        other.node = self.node
        other.cpu_free = list(self.cpu_free)
        other.cpu_free_total = self.cpu_free_total
        other.cpu_reuse = self.cpu_reuse
        other.physical_free = self.physical_free
        other.mem_free = {r: list(row) for r, row in self.mem_free.items()}
        other.mem_reuse = dict(self.mem_reuse)
        other.mem_cells = list(self.mem_cells)
        other.mem_used = list(self.mem_used)
        other.dev_free = {r: list(row) for r, row in self.dev_free.items()}
        other.dev_free_total = dict(self.dev_free_total)
        other.dev_groups = {r: [list(g) for g in groups] for r, groups in self.dev_groups.items()}
        other.dev_reuse = dict(self.dev_reuse)
        other.dev_unknown = dict(self.dev_unknown)
        other.exact = self.exact
        other.memory_exact = self.memory_exact
        return other


def sum_over(row: Sequence[int], mask: int) -> int:
    """The sum of ``row`` over the positions in ``mask``."""
    total = 0
    position = 0
    while mask:
        if mask & 1:
            total += row[position]
        mask >>= 1
        position += 1
    return total


Sums = Sequence[int] | Mapping[int, int]
"""A row's sum over masks, indexed by the mask."""


def mask_sums(row: Sequence[int], zones: int) -> Sums:
    """The sum of ``row`` over every mask :func:`~.masks.candidate_masks` lists over ``zones``
    (every sub-mask up to :data:`~.masks.MAX_ENUMERATED_ZONES` zones, as a list), indexed by
    the mask."""
    if is_complete(zones):
        sums = [0] * (zones + 1)
        for mask, rest, position in _subset_steps(zones):
            sums[mask] = sums[rest] + row[position]
        return sums
    wide: dict[int, int] = {0: 0}
    for mask, _ in candidate_masks(zones):  # by width: a mask's narrower part is known already
        low = mask & -mask
        rest = mask ^ low
        base = wide.get(rest)
        wide[mask] = (sum_over(row, rest) if base is None else base) + row[low.bit_length() - 1]
    return wide


@functools.lru_cache(maxsize=1024)
def _subset_steps(zones: int) -> tuple[tuple[int, int, int], ...]:
    """For every non-empty sub-mask of ``zones`` in ascending value: (mask, the mask without its
    lowest zone, that zone), so that each one's sum builds on a sum already known."""
    steps = []
    sub = zones
    while sub:
        low = sub & -sub
        steps.append((sub, sub ^ low, low.bit_length() - 1))
        sub = (sub - 1) & zones
    steps.reverse()
    return tuple(steps)
