"""A simulated kubelet: Topology Manager admission with static CPU and Static memory managers.

Each admitted Guaranteed pod gets exclusive CPUs, memory (and hugepages) and devices, and the
kubelet can list what it assigned exactly as the podresources ``List`` call reports it, which is
what the real agent code (:func:`rte.agent.accounting.account`) consumes.

Admission, per *unit* (each app container in ``container`` scope, the whole pod in ``pod``
scope, where the pod request is :func:`rte.model.pod.kubelet_pod_request`):

* ``single-numa-node``: the unit must fit in one zone; the lowest zone id that fits is used (the
  Topology Manager prefers the narrowest mask, and among equals the lowest bits).
* ``restricted``: the unit must fit in a set of zones no wider than the narrowest set that could
  ever hold it on this node (the width the CPU/memory/device managers call "preferred", taken
  over the node's allocatable, not what is free); the first such set in the kubelet's order
  (narrowest first, then lowest ids) is used. One mask for all resources is a simplification:
  the kubelet merges per-manager hints and may align one resource more loosely than another.
* Otherwise the pod is rejected with a TopologyAffinityError and nothing stays allocated. Init
  containers must fit (as a unit) but keep nothing, as their resources return to the pool
  before the app containers start.

Within the chosen zones, CPUs are taken lowest id first, memory lowest zone first (the memory
manager's fill order, which the agent's accounting assumes for blocks spanning zones), devices
lowest id first. Pods are listed in admission order.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from rte.model.pod import Pod, kubelet_pod_request
from rte.model.quantity import Amount
from rte.model.topology_manager import POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER, SCOPE_POD
from rte.podres.types import ContainerResources, Device, MemoryBlock, PodResources
from rte.sim.hardware import NodeHardware

POLICIES = (POLICY_SINGLE_NUMA_NODE, POLICY_RESTRICTED)
"""The Topology Manager policies the simulated kubelet admits by."""
SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

_CPU = "cpu"
_MEMORY_TYPES = ("memory", "hugepages-")

Unit = tuple[Mapping[str, int], tuple[tuple[str, Mapping[str, int]], ...]]
"""(total request, ((container name, container request), ...)) placed on one set of zones."""


def _is_memory(resource: str) -> bool:
    return resource.startswith(_MEMORY_TYPES)


def _fits(free: Mapping[str, int], request: Mapping[str, int]) -> bool:
    return all(free.get(r, 0) >= q for r, q in request.items() if q > 0)


def _as_ints(request: Mapping[str, Amount]) -> dict[str, int]:
    # The simulator only makes whole-number requests (exclusive CPUs need them anyway).
    return {r: int(q) for r, q in request.items()}


def admission_units(pod: Pod, scope: str) -> tuple[list[Unit], list[Mapping[str, int]]]:
    """The units the Topology Manager aligns, and the init containers' requests (checked only)."""
    inits: list[Mapping[str, int]] = [_as_ints(c.requests) for c in pod.init_containers]
    app = tuple((c.name, _as_ints(c.requests)) for c in pod.containers)
    if scope == SCOPE_POD:
        return [(_as_ints(kubelet_pod_request(pod)), app)], inits
    return [(req, ((name, req),)) for name, req in app], inits


@dataclass
class _Held:
    """What one admitted pod holds, to list it and to give it back."""

    resources: PodResources
    cpus: list[tuple[int, int]] = field(default_factory=list)
    """(zone, cpu id)"""
    amounts: list[tuple[int, str, int]] = field(default_factory=list)
    """(zone, memory type, bytes)"""
    devices: list[tuple[int, str, str]] = field(default_factory=list)
    """(zone, resource, device id)"""


class SimKubelet:
    """One node's kubelet: admission, release and the podresources ``List``."""

    def __init__(self, hardware: NodeHardware) -> None:
        self.hardware = hardware
        self.policy = hardware.config.topology_manager_policy
        self.scope = hardware.config.topology_manager_scope
        if self.policy not in POLICIES:
            raise ValueError(f"unsupported Topology Manager policy {self.policy!r}")
        zones = range(hardware.zones)
        self._cpus: list[list[int]] = [list(hardware.zone_cpus[z]) for z in zones]
        self._devices: list[dict[str, list[str]]] = [
            {res: list(ids) for res, ids in hardware.zone_devices[z].items()} for z in zones
        ]
        # Free amount per zone and resource (cpu count, bytes, device count): what fit checks read.
        self._free: list[dict[str, int]] = [hardware.zone_allocatable(z) for z in zones]
        self._allocatable = [hardware.zone_allocatable(z) for z in zones]
        self._pods: dict[tuple[str, str], _Held] = {}
        self._listing: tuple[PodResources, ...] | None = ()
        self._widths: dict[tuple[tuple[str, int], ...], int | None] = {}

    # --- reading ---------------------------------------------------------------------------

    def listing(self) -> tuple[PodResources, ...]:
        """What ``List`` returns: every admitted pod, in admission order."""
        if self._listing is None:
            self._listing = tuple(h.resources for h in self._pods.values())
        return self._listing

    def free(self, zone: int) -> Mapping[str, int]:
        """Free amounts of one zone (read-only view, for tests and diagnostics)."""
        return self._free[zone]

    def holds(self, key: tuple[str, str]) -> bool:
        return key in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def could_admit(self, pod: Pod) -> bool:
        """Whether :meth:`admit` would succeed right now (no state changes)."""
        units, inits = admission_units(pod, self.scope)
        return self._place(units, inits) is not None

    # --- admission -------------------------------------------------------------------------

    def admit(self, pod: Pod) -> PodResources | None:
        """Admit ``pod`` and return its assignment, or None for a TopologyAffinityError."""
        if pod.key in self._pods:
            raise ValueError(f"pod {pod.namespace}/{pod.name} is already admitted")
        units, inits = admission_units(pod, self.scope)
        masks = self._place(units, inits)
        if masks is None:
            return None
        held = _Held(PodResources(pod.namespace, pod.name))
        containers = [
            self._assign(held, name, req, zones)
            for (_, parts), zones in zip(units, masks, strict=True)
            for name, req in parts
        ]
        held.resources = PodResources(pod.namespace, pod.name, tuple(containers))
        self._pods[pod.key] = held
        self._listing = None
        return held.resources

    def release(self, key: tuple[str, str]) -> bool:
        """Give back everything the pod holds (it ended or was deleted); False if unknown."""
        held = self._pods.pop(key, None)
        if held is None:
            return False
        for zone, cpu in held.cpus:
            insort(self._cpus[zone], cpu)
            self._free[zone][_CPU] += 1
        for zone, kind, size in held.amounts:
            self._free[zone][kind] += size
        for zone, res, dev in held.devices:
            insort(self._devices[zone][res], dev)
            self._free[zone][res] += 1
        self._listing = None
        return True

    def _place(
        self, units: Sequence[Unit], inits: Iterable[Mapping[str, int]]
    ) -> list[tuple[int, ...]] | None:
        """Zones for each unit, placing them one after the other on a scratch copy; None: reject."""
        scratch = [dict(f) for f in self._free]
        for request in inits:
            if self._mask(request, scratch) is None:
                return None
        masks: list[tuple[int, ...]] = []
        for request, _ in units:
            zones = self._mask(request, scratch)
            if zones is None:
                return None
            remaining = dict(request)
            for z in zones:  # lowest zone first, each up to what it has
                for res, q in remaining.items():
                    take = min(q, scratch[z].get(res, 0))
                    if take:
                        scratch[z][res] -= take
                        remaining[res] = q - take
            masks.append(zones)
        return masks

    def _mask(self, request: Mapping[str, int], free: list[dict[str, int]]) -> tuple[int, ...] | None:
        if self.policy == POLICY_SINGLE_NUMA_NODE:
            for z, zone_free in enumerate(free):
                if _fits(zone_free, request):
                    return (z,)
            return None
        width = self._preferred_width(request)
        if width is None:
            return None
        for zones in combinations(range(len(free)), width):
            total: dict[str, int] = {}
            for z in zones:
                for res, q in free[z].items():
                    total[res] = total.get(res, 0) + q
            if _fits(total, request):
                return zones
        return None

    def _preferred_width(self, request: Mapping[str, int]) -> int | None:
        """The fewest zones whose allocatable could ever hold ``request`` (None: no set can)."""
        key = tuple(sorted((r, q) for r, q in request.items() if q > 0))
        if key in self._widths:
            return self._widths[key]
        width = None
        for k in range(1, len(self._allocatable) + 1):
            for zones in combinations(range(len(self._allocatable)), k):
                total: dict[str, int] = {}
                for z in zones:
                    for res, q in self._allocatable[z].items():
                        total[res] = total.get(res, 0) + q
                if _fits(total, request):
                    width = k
                    break
            if width is not None:
                break
        self._widths[key] = width
        return width

    def _assign(
        self, held: _Held, name: str, request: Mapping[str, int], zones: tuple[int, ...]
    ) -> ContainerResources:
        cpu_ids: list[int] = []
        devices: list[Device] = []
        blocks: list[MemoryBlock] = []
        for res, q in sorted(request.items()):
            if q <= 0:
                continue
            if res == _CPU:
                for z in zones:
                    cpus = self._cpus[z][: q - len(cpu_ids)]
                    del self._cpus[z][: len(cpus)]
                    self._free[z][_CPU] -= len(cpus)
                    cpu_ids.extend(cpus)
                    held.cpus.extend((z, c) for c in cpus)
            elif _is_memory(res):
                remaining = q
                for z in zones:
                    take = min(remaining, self._free[z].get(res, 0))
                    if take:
                        self._free[z][res] -= take
                        held.amounts.append((z, res, take))
                        remaining -= take
                blocks.append(MemoryBlock(res, q, zones))
            else:
                remaining = q
                for z in zones:
                    pool = self._devices[z].get(res, [])
                    ids = pool[:remaining]
                    del pool[: len(ids)]
                    if ids:
                        self._free[z][res] -= len(ids)
                        remaining -= len(ids)
                        held.devices.extend((z, res, d) for d in ids)
                        devices.extend(Device(res, (d,), (z,)) for d in ids)
        return ContainerResources(name, frozenset(cpu_ids), tuple(devices), tuple(blocks))
