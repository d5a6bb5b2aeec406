"""From what was read (machine, kubelet config, allocatable, List) to the object to publish.

One pure function shared by ``rte run`` (every cycle) and ``rte dump`` (once), so both always
produce the same object for the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from rte.agent.accounting import Accounting, account
from rte.agent.builder import build_topology
from rte.agent.podset import PodGlob, fingerprint_pods
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_state import MemoryManagerState
from rte.host.machine import Machine
from rte.model.pod import Pod
from rte.model.topology import Attribute, NodeTopology, Zone
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.podres.types import AllocatableResources, PodResources


@dataclass(frozen=True)
class KubeletInputs:
    """What the kubelet said. ``allocatable`` None: it does not offer GetAllocatableResources."""

    allocatable: AllocatableResources | None
    pods: tuple[PodResources, ...]


def compute_topology(
    machine: Machine,
    node_name: str,
    config: KubeletConfig | None,
    kubelet: KubeletInputs | None,
    method: FingerprintMethod,
    *,
    specs: Mapping[tuple[str, str], Pod] | None = None,
    informer_mode: InformerMode = InformerMode.DEDICATED,
    exclude: Iterable[PodGlob] = (),
    zone_attributes: Mapping[int, Mapping[str, str]] | None = None,
    memory_state: MemoryManagerState | None = None,
) -> tuple[NodeTopology, Accounting]:
    """The canonical NodeTopology and the accounting behind it.

    ``kubelet`` None means no kubelet data at all (hardware capacity, no fingerprint). With a
    kubelet lacking GetAllocatableResources, allocatable is derived from sysfs and the config.
    ``specs`` (pods bound to this node, from the API) switches the fingerprint to the spec rule.
    ``zone_attributes`` (NUMA id -> attributes, e.g. zone load) are added to the zones.
    ``memory_state`` (the memory manager checkpoint) settles multi-NUMA memory blocks.
    """
    allocatable = None
    pods: tuple[PodResources, ...] = ()
    if kubelet is not None:
        allocatable = kubelet.allocatable if kubelet.allocatable is not None else AllocatableResources()
        pods = kubelet.pods
    accounting = account(machine, config, allocatable, pods, memory_state if kubelet is not None else None)
    counted = None
    if kubelet is not None:
        counted = fingerprint_pods(
            pods,
            method,
            specs=specs,
            published_resources={r.name for z in accounting.zones for r in z.resources},
            informer_mode=informer_mode,
            exclude=exclude,
        )
    if zone_attributes:
        accounting = replace(accounting, zones=_with_zone_attributes(accounting.zones, zone_attributes))
    topology = build_topology(
        node_name, accounting, config=config, fingerprint_pods=counted, fingerprint_method=method
    )
    return topology, accounting


def _with_zone_attributes(
    zones: tuple[Zone, ...], extra: Mapping[int, Mapping[str, str]]
) -> tuple[Zone, ...]:
    out = []
    for zone in zones:
        values = extra.get(zone.numa_id) if zone.numa_id is not None else None
        if values:
            kept = [a for a in zone.attributes if a.name not in values]
            zone = replace(zone, attributes=(*kept, *(Attribute(k, v) for k, v in values.items())))
        out.append(zone)
    return tuple(out)
