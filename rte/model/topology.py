"""The zone model: what one node's NodeResourceTopology says, independent of its wire form.

A :class:`NodeTopology` holds zones (NUMA nodes, ``type: Node``, named ``node-<kernel id>``, or
``node-<position>`` when the agent publishes dense names: :mod:`rte.agent.compute.zonenames`),
each with costs (NUMA distances), attributes and resources (capacity / allocatable / available),
plus node-level attributes. Everything is immutable; :meth:`NodeTopology.canonical` returns the
deterministic ordering every producer must emit so that two scans of the same state serialise to
identical bytes (the basis of "skip the write when nothing changed"):

* zones by numeric NUMA id (zones with other names after them, by name);
* resources and attributes by name;
* costs by numeric id of the zone they point to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

from rte.model.quantity import Amount

ZONE_TYPE_NUMA = "Node"
ZONE_NAME_PREFIX = "node-"
MAX_CONSUMER_NUMA_ID = 64
"""The reference consumer drops zones whose id is above this (and misbehaves at exactly 64)."""


def zone_name(numa_id: int) -> str:
    """The canonical zone name for a kernel NUMA node id: ``node-<id>`` without sign or zero padding."""
    if numa_id < 0:
        raise ValueError(f"negative NUMA id {numa_id}")
    return f"{ZONE_NAME_PREFIX}{numa_id}"


@lru_cache(maxsize=4096)  # a handful of names, parsed for every zone and cost of every NRT read
def numa_id_of(name: str) -> int | None:
    """The NUMA id a zone or cost name stands for, or None.

    Mirrors the reference consumer's parser: strip ``node-`` and read a decimal integer; a sign
    ``+`` and leading zeros are accepted (Go's integer parsing does), negatives are not.
    """
    if not name.startswith(ZONE_NAME_PREFIX):
        return None
    digits = name[len(ZONE_NAME_PREFIX) :]
    if digits.startswith("+"):
        digits = digits[1:]
    if not digits.isascii() or not digits.isdigit():
        return None
    return int(digits)


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One resource of a zone. Amounts are in base units: CPUs, bytes, device counts."""

    name: str
    capacity: Amount
    allocatable: Amount
    available: Amount


@dataclass(frozen=True, slots=True)
class Cost:
    """Distance from the owning zone to zone ``name`` (SLIT: 10 local, 255 unreachable)."""

    name: str
    value: int


@dataclass(frozen=True, slots=True)
class Attribute:
    """A key/value string pair (values are always strings on the wire)."""

    name: str
    value: str


@lru_cache(maxsize=4096)  # issue #27: sorting every object's zones and costs, 2 % of a simulation
def _zone_sort_key(name: str) -> tuple[int, int, str]:
    numa_id = numa_id_of(name)
    return (0, numa_id, name) if numa_id is not None else (1, 0, name)


@dataclass(frozen=True, slots=True)
class Zone:
    """A topology zone; for NUMA zones ``type`` is ``Node`` and ``name`` is ``node-<id>``."""

    name: str
    type: str = ZONE_TYPE_NUMA
    parent: str | None = None
    costs: tuple[Cost, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()

    @property
    def numa_id(self) -> int | None:
        """The NUMA id of a ``Node`` zone with a valid name, else None."""
        return numa_id_of(self.name) if self.type == ZONE_TYPE_NUMA else None

    def resource(self, name: str) -> ResourceInfo | None:
        for res in self.resources:
            if res.name == name:
                return res
        return None

    def attribute(self, name: str) -> str | None:
        return _first_attribute(self.attributes, name)

    def canonical(self) -> Zone:
        costs = tuple(sorted(self.costs, key=lambda c: _zone_sort_key(c.name)))
        attributes = tuple(sorted(self.attributes, key=lambda a: a.name))
        resources = tuple(sorted(self.resources, key=lambda r: r.name))
        same = _same_items(costs, self.costs) and _same_items(attributes, self.attributes)
        if same and _same_items(resources, self.resources):
            return self  # already in order, as the agent builds its zones: no copy
        return replace(self, costs=costs, attributes=attributes, resources=resources)


def _same_items(left: tuple[object, ...], right: tuple[object, ...]) -> bool:
    """The very same objects in the same order (sorting moved nothing)."""
    return all(a is b for a, b in zip(left, right, strict=True))


def _first_attribute(attributes: Iterable[Attribute], name: str) -> str | None:
    # Like the upstream attribute helper: the first entry with the name wins.
    for attr in attributes:
        if attr.name == name:
            return attr.value
    return None


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """The owner of the NRT object (the agent uses its Node)."""

    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class NodeTopology:
    """Everything one NRT object carries, minus server-managed metadata."""

    name: str
    zones: tuple[Zone, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    topology_policies: tuple[str, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()

    def attribute(self, name: str) -> str | None:
        """The first node-level attribute with this name, or None."""
        return _first_attribute(self.attributes, name)

    def zone(self, name: str) -> Zone | None:
        for zone in self.zones:
            if zone.name == name:
                return zone
        return None

    def numa_zones(self) -> tuple[Zone, ...]:
        """Zones of type ``Node`` with a valid ``node-<id>`` name, in published order."""
        return tuple(z for z in self.zones if z.numa_id is not None)

    def with_attributes(self, updates: Iterable[Attribute]) -> NodeTopology:
        """Return a copy where each given attribute replaces every entry of the same name."""
        new = {a.name: a for a in updates}
        kept = tuple(a for a in self.attributes if a.name not in new)
        return replace(self, attributes=kept + tuple(new.values()))

    def canonical(self) -> NodeTopology:
        """The deterministic form: every list sorted as the module docstring says."""
        return replace(
            self,
            zones=tuple(sorted((z.canonical() for z in self.zones), key=lambda z: _zone_sort_key(z.name))),
            attributes=tuple(sorted(self.attributes, key=lambda a: a.name)),
            annotations=dict(sorted(self.annotations.items())),
            labels=dict(sorted(self.labels.items())),
        )


def duplicate_names(names: Iterable[str]) -> list[str]:
    """Names that occur more than once, in first-seen order (producers must never emit duplicates)."""
    seen: set[str] = set()
    dups: list[str] = []
    for name in names:
        if name in seen and name not in dups:
            dups.append(name)
        seen.add(name)
    return dups
