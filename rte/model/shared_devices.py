"""Devices attached to several NUMA nodes: the node attribute both halves read and write.

A device plugin may report a device with several NUMA nodes (``TopologyInfo.Nodes``; podresources
``GetAllocatableResources`` passes them on). The kubelet's device manager counts such a device
once toward every mask that holds *any* of its nodes (kubernetes/kubernetes
``pkg/kubelet/cm/devicemanager/topology_hints.go`` ``generateDeviceTopologyHints``:
``mask.AnySet(getNUMANodeIds(device.Topology))``), and ``filterByAffinity`` (``manager.go``) calls
it aligned with a hint that holds any of them. The NRT's zones count it in each of its zones (what
every consumer has always read), so from zones alone one device shared by zones 0 and 1 looks
like one device in each: a mask of both would seem to hold two.

:data:`~rte.model.attributes.MULTI_NUMA_DEVICES` adds what tells them apart: per resource and per
set of NUMA nodes, how many such devices there are (allocatable) and how many no pod holds
(free). Format: ``;``-separated items ``<resource>:<NUMA ids, cpuset list>=<free>/<allocatable>``,
sorted, e.g. ``nvidia.com/gpu:0-1=1/2;example.com/nic:0,2=0/1``. A zone's own devices are its
counts less those of the groups it belongs to.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rte.model.cpuset import format_cpuset, parse_cpuset

MAX_GROUPS = 64
"""At most this many items: a machine with more distinct (resource, NUMA set) pairs of shared
devices does not publish the attribute (consumers then read the zones as before)."""


@dataclass(frozen=True, order=True, slots=True)
class SharedDevices:
    """The devices of one resource attached to exactly the NUMA nodes :attr:`numa_ids`."""

    resource: str
    numa_ids: tuple[int, ...]
    """Two or more NUMA ids, ascending."""
    free: int
    allocatable: int


def format_shared_devices(groups: Iterable[SharedDevices]) -> str:
    """The attribute value, items sorted."""
    return ";".join(
        f"{g.resource}:{format_cpuset(g.numa_ids)}={g.free}/{g.allocatable}" for g in sorted(groups)
    )


def _count(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def parse_shared_devices(value: str | None) -> tuple[SharedDevices, ...] | None:
    """The groups of an attribute value; None when any item is malformed (the whole attribute is
    then ignored: a partial reading would treat the missing devices as a zone's own)."""
    if value is None or not value.strip():
        return None
    out = []
    for item in value.split(";"):
        resource, colon, rest = item.partition(":")
        nodes, equal, counts = rest.partition("=")
        free_text, slash, allocatable_text = counts.partition("/")
        if not (colon and equal and slash and resource.strip()):
            return None
        try:
            ids = tuple(sorted(parse_cpuset(nodes)))
        except ValueError:
            return None
        free, allocatable = _count(free_text), _count(allocatable_text)
        if len(ids) < 2 or free is None or allocatable is None or free > allocatable:
            return None
        out.append(SharedDevices(resource.strip(), ids, free, allocatable))
    if len(out) > MAX_GROUPS or len({(g.resource, g.numa_ids) for g in out}) != len(out):
        return None
    return tuple(sorted(out))
