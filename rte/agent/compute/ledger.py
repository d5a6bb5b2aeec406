"""The working state of one accounting run: per (zone, resource) amounts, and the findings.

Shared by the CPU, memory and device rules (:mod:`rte.agent.compute.cpu_accounting`,
:mod:`rte.agent.compute.memory_accounting`, :mod:`rte.agent.compute.device_accounting`); the entry
point and the rules' overview are in :mod:`rte.agent.compute.accounting`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from rte.model.quantity import Amount, QuantityFormat, format_quantity
from rte.model.topology import ResourceInfo, zone_name

CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"

INCONSISTENT_KINDS = frozenset(
    {
        "memory_on_unknown_numa",
        "memory_without_topology",
        "duplicate_pod",
        "cpu_assigned_twice",
        "device_assigned_twice",
        "empty_name",
    }
)
"""Finding kinds that mean the kubelet's data contradicts itself or the machine (not merely that
it is unusual). A computation with one of them is *inconsistent*: it charges the worst case, its
numbers are kept at or below the last consistent computation's (:mod:`rte.agent.compute.topology`), and
the agent reports it through :attr:`rte.agent.compute.topology.Computed.consistent`."""

IMPLAUSIBLE_KINDS = frozenset({"held_above_capacity", "allocatable_above_capacity"})
"""Finding kinds that mean a kubelet value is absurd for this machine: pods holding more of a
zone's resource than its hardware has (a 2^64-1-byte memory block), or allocatable above it.
Accounting publishes the safe number (0 available; the kubelet's allocatable), but the number
no longer describes the node, so the daemon makes them a readiness reason (``kubelet-values``)
until the value goes away. Plain ``negative_available`` is not one: it also happens when
allocatable is only derived (a kubelet without GetAllocatableResources), which is no bad value."""


@cache  # a node has one or two page sizes, named for every zone on every cycle
def hugepages_resource(page_size_bytes: int) -> str:
    """The kubelet's resource name for a hugepage size (2 MiB -> ``hugepages-2Mi``)."""
    return HUGEPAGES_PREFIX + format_quantity(page_size_bytes, QuantityFormat.BINARY_SI)


@dataclass(frozen=True, slots=True)
class Finding:
    """Something inconsistent in the inputs, handled by a documented rule. ``kind`` is a metric label."""

    kind: str
    detail: str

    @property
    def inconsistent(self) -> bool:
        """The kubelet's data contradicts itself (see :data:`INCONSISTENT_KINDS`)."""
        return self.kind in INCONSISTENT_KINDS

    @property
    def implausible(self) -> bool:
        """A kubelet value is absurd for this machine (see :data:`IMPLAUSIBLE_KINDS`)."""
        return self.kind in IMPLAUSIBLE_KINDS


MemoryHeld = tuple[str, tuple[int, ...], str, int]
"""A memory block some pod holds: (who, for messages; its NUMA ids, sorted; memory type; bytes)."""
DeviceHeld = tuple[str, str, str]
"""A device some pod holds: (who, for messages; resource name; device id)."""


class NeedsDetail(Exception):
    """A rule was about to note a finding about one pod while working from sums over the pods
    (:mod:`rte.agent.compute.podtally`), which no longer say which pod. The caller starts again from the
    pods themselves, so every finding names its pod exactly as a full computation does."""


@dataclass(frozen=True)
class Held:
    """What ``List`` says the pods hold, in the form the accounting rules read.

    Built from the pods (:func:`rte.agent.compute.accounting.held_by`, every entry naming its pod), or from
    a tally's sums (``who`` empty: one entry per distinct block key or device). The rules only
    sum, unite and test membership, so both give the same numbers; a rule that would note a
    finding about an entry with an empty ``who`` raises :class:`NeedsDetail` instead.
    """

    cpus: frozenset[int]
    memory: Collection[MemoryHeld]
    devices: Collection[DeviceHeld]


@dataclass
class Amounts:
    """One resource of one zone while an accounting runs."""

    capacity: Amount = 0
    allocatable: Amount = 0
    used: Amount = 0


class Ledger:
    """Mutable per-(zone, resource) amounts while one accounting runs."""

    def __init__(self, zone_ids: Iterable[int]) -> None:
        self.zones: dict[int, dict[str, Amounts]] = {z: {} for z in zone_ids}
        self.findings: list[Finding] = []

    def at(self, zone: int, resource: str) -> Amounts:
        return self.zones[zone].setdefault(resource, Amounts())

    def note(self, kind: str, detail: str) -> None:
        self.findings.append(Finding(kind, detail))

    def note_about(self, who: str, kind: str, detail: str) -> None:
        """A finding about what ``who`` (a pod, named in ``detail``) holds; :class:`NeedsDetail`
        when ``who`` is empty (an entry summed over pods)."""
        if not who:
            raise NeedsDetail(kind)
        self.note(kind, detail)

    def known(self, numa_ids: Sequence[int], what: str) -> list[int]:
        """The ids among ``numa_ids`` that are zones of this machine; each other id is a finding."""
        known = [n for n in numa_ids if n in self.zones]
        for n in numa_ids:
            if n not in self.zones:
                self.note("unknown_numa_id", f"{what} names NUMA node {n}, which this machine does not have")
        return known

    def resources(self, zone: int) -> tuple[ResourceInfo, ...]:
        """The zone's resources; allocatable above capacity raises capacity, available stops at 0."""
        out = []
        where = zone_name(zone)
        for name, amounts in sorted(self.zones[zone].items()):
            capacity, allocatable = amounts.capacity, amounts.allocatable
            if allocatable > capacity:
                self.note("allocatable_above_capacity", f"{where} {name}: {allocatable} > {capacity}")
                capacity = allocatable
            available = allocatable - amounts.used
            if 0 < capacity < amounts.used:  # capacity 0: sysfs did not say, nothing to compare
                held = f"pods hold {amounts.used} > capacity {capacity}"
                self.note("held_above_capacity", f"{where} {name}: {held}")
            if available < 0:
                self.note("negative_available", f"{where} {name}: {allocatable} - {amounts.used} < 0")
                available = 0
            out.append(ResourceInfo(name, capacity, allocatable, available))
        return tuple(out)
