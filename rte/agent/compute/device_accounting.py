"""Device resources: per zone where the device manager can align them, node-level where it cannot.

How the kubelet's device manager hints a device resource (kubernetes/kubernetes
``pkg/kubelet/cm/devicemanager/topology_hints.go``):

* a resource none of whose devices reports a topology has no preference: it never constrains
  admission. Its devices are counted in :attr:`DeviceAccounting.non_numa` (published as
  ``nodeNonTopologyResources``);
* a resource with at least one device that reports NUMA nodes is aligned: each device counts
  toward the masks that contain one of its nodes. A device whose node is unknown (``-1``, or an
  id this machine does not have) or that reports no topology counts toward no mask at all, so a
  request that needs it gets no hint. The *free* ones of those devices (the device manager's
  ``getAvailableDevices`` less the ones pods hold, what its hint and ``devicesToAllocate`` count)
  are in :attr:`DeviceAccounting.unknown_numa` (published as ``nodeUnknownNUMAResources``), never
  in a zone;
* every other device counts in each zone it is attached to (a device local to two zones counts
  in both, and using it takes it from both); capacity = allocatable (device capacity cannot be
  learned). The devices attached to several zones are also counted per resource and set of
  zones in :attr:`DeviceAccounting.shared` (published as ``nodeMultiNUMAResources``,
  :mod:`rte.model.shared_devices`): the device manager counts such a device once toward a mask
  holding any of its zones, which the zones' counts alone cannot tell from one device per zone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rte.agent.compute.ledger import DeviceHeld, Ledger
from rte.model.shared_devices import SharedDevices
from rte.podres.types import AllocatableResources, PodResources


@dataclass(frozen=True)
class DeviceAccounting:
    """Device counts that belong to no zone, by resource name."""

    non_numa: Mapping[str, int] = field(default_factory=dict)
    """Resources without any topology: no constraint on admission."""
    unknown_numa: Mapping[str, int] = field(default_factory=dict)
    """Free devices of aligned resources that match no NUMA node (held ones left out): no hint
    for a request needing them, and no more of them to give than this."""
    shared: tuple[SharedDevices, ...] = ()
    """Devices attached to two zones or more, grouped by resource and zones."""


def held_devices(pods: Iterable[PodResources]) -> list[DeviceHeld]:
    """Every device id the pods' containers hold, with its pod's label."""
    return [
        (f"pod {pod.namespace}/{pod.name}", dev.resource_name, device_id)
        for pod in pods
        for container in pod.containers
        for dev in container.devices
        for device_id in dev.device_ids
    ]


def account_devices(
    ledger: Ledger, allocatable: AllocatableResources | None, held: Iterable[DeviceHeld]
) -> DeviceAccounting:
    """Charge the zones' devices; return the devices that belong to no zone."""
    if allocatable is None:
        return DeviceAccounting()
    where: dict[tuple[str, str], set[int]] = {}  # (resource, device id) -> zones it is attached to
    nowhere: dict[str, set[str]] = {}  # resource -> devices attached to no zone of this machine
    aligned: set[str] = set()  # resources with at least one device reporting NUMA nodes
    for dev in allocatable.devices:
        if dev.numa_ids or dev.numa_unknown:
            aligned.add(dev.resource_name)
        zones = ledger.known(dev.numa_ids, f"device {dev.resource_name}")
        for device_id in dev.device_ids:
            if zones:
                where.setdefault((dev.resource_name, device_id), set()).update(zones)
            else:
                nowhere.setdefault(dev.resource_name, set()).add(device_id)
    for (resource, device_id), attached in where.items():
        nowhere.get(resource, set()).discard(device_id)  # local somewhere after all
        for zone in attached:
            ledger.at(zone, resource).allocatable += 1
    used: set[tuple[str, str]] = set()
    held_nowhere: dict[str, set[str]] = {}
    for who, resource, device_id in held:
        key = (resource, device_id)
        if key in where:
            used.add(key)
        elif device_id in nowhere.get(resource, set()):
            held_nowhere.setdefault(resource, set()).add(device_id)
        else:
            detail = f"{who} holds {resource} {device_id}, which is not allocatable"
            ledger.note_about(who, "unknown_device", detail)
    for key in used:
        for zone in where[key]:
            ledger.at(zone, key[0]).used += 1
    for resource in {resource for resource, _ in where}:  # once per resource, not per device
        for amounts_of in ledger.zones.values():
            amounts = amounts_of.get(resource)
            if amounts is not None:
                amounts.capacity = amounts.allocatable
    groups: dict[tuple[str, tuple[int, ...]], list[int]] = {}  # -> [free, allocatable]
    for key, attached in where.items():
        if len(attached) > 1:
            counts_of = groups.setdefault((key[0], tuple(sorted(attached))), [0, 0])
            counts_of[0] += key not in used
            counts_of[1] += 1
    counts = {res: len(ids) for res, ids in sorted(nowhere.items()) if ids}
    free = {res: len(ids - held_nowhere.get(res, set())) for res, ids in sorted(nowhere.items()) if ids}
    return DeviceAccounting(
        non_numa={r: n for r, n in counts.items() if r not in aligned},
        unknown_numa={r: n for r, n in free.items() if r in aligned},
        shared=tuple(sorted(SharedDevices(r, ids, f, a) for (r, ids), (f, a) in groups.items())),
    )
