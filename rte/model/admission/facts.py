"""The node facts admission reads, from an NRT's node attributes.

The agent publishes them (:mod:`rte.model.attributes`); an NRT without one, or with a value that
does not parse, gets the kubelet's default for it (a consumer must act on a half-published node as
safely as it can, never fail on it):

* ``cpuManagerPolicy`` / ``memoryManagerPolicy``: ``static`` / ``Static`` unless the attribute
  says ``none`` / ``None``: the NRT was built for pinned CPUs and memory then;
* ``topologyManagerOptionPreferClosestNumaNodes``: off;
* ``cpuManagerOptionFullPcpusOnly``: off; with it on but no ``cpuManagerThreadsPerCore``, the
  SMT check cannot be applied and is skipped, as the kubelet without the option would;
* ``cpuManagerOptionAlignBySocket``: off; ``cpuManagerNUMASockets``: unknown (then
  ``align-by-socket`` prefers no extra hint and its allocation is charged to every zone, see
  :mod:`~.sockets` and :mod:`~.allocate`);
* ``cpuManagerOptionDistributeCpusAcrossNuma``: off (the packed split); with it and
  ``full-pcpus-only`` on but no threads per core, the group size of the split is unknown and
  multi-zone allocations are charged as an unknown split (:mod:`.distribute`);
* ``memoryManagerNUMAGroups``: no groups; ``nodeUnknownNUMAResources``,
  ``nodeNonTopologyResources``: none; ``nodeMultiNUMAResources`` (or a malformed value): no
  device is shared by several zones, so each zone's count is read as its own devices (a shared
  device then counts once per zone of a mask: what a consumer of the zones alone reads);
* ``kubeletFeatureGatePodLevelResources``: on (its default since 1.34);
  ``kubeletFeatureGatePodLevelResourceManagers``: off (alpha in 1.36).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rte.model.admission.node import NodeFacts
from rte.model.attributes import (
    CPU_MANAGER_AVAILABLE_PHYSICAL_CPUS,
    CPU_MANAGER_NUMA_SOCKETS,
    CPU_MANAGER_OPTION_PREFIX,
    CPU_MANAGER_POLICY,
    CPU_MANAGER_THREADS_PER_CORE,
    KUBELET_FEATURE_GATE_PREFIX,
    MEMORY_MANAGER_NUMA_GROUPS,
    MEMORY_MANAGER_POLICY,
    MULTI_NUMA_DEVICES,
    NON_NUMA_DEVICES,
    TOPOLOGY_MANAGER_OPTION_PREFIX,
    UNKNOWN_NUMA_DEVICES,
)
from rte.model.cpuset import parse_cpuset
from rte.model.shared_devices import parse_shared_devices
from rte.model.topology import Attribute

PREFER_CLOSEST_NUMA = TOPOLOGY_MANAGER_OPTION_PREFIX + "PreferClosestNumaNodes"
FULL_PCPUS_ONLY_ATTRIBUTE = CPU_MANAGER_OPTION_PREFIX + "FullPcpusOnly"
ALIGN_BY_SOCKET_ATTRIBUTE = CPU_MANAGER_OPTION_PREFIX + "AlignBySocket"
DISTRIBUTE_CPUS_ACROSS_NUMA_ATTRIBUTE = CPU_MANAGER_OPTION_PREFIX + "DistributeCpusAcrossNuma"
GATE_POD_LEVEL_RESOURCES = KUBELET_FEATURE_GATE_PREFIX + "PodLevelResources"
GATE_POD_LEVEL_RESOURCE_MANAGERS = KUBELET_FEATURE_GATE_PREFIX + "PodLevelResourceManagers"


def _flag(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    folded = value.strip().casefold()
    if folded == "true":
        return True
    if folded == "false":
        return False
    return default


def _count(value: str | None, minimum: int) -> int | None:
    if value is None:
        return None
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        return None
    number = int(text)
    return number if number >= minimum else None


def parse_counts(value: str | None) -> dict[str, int]:
    """``name=count,...``; malformed items are skipped."""
    out: dict[str, int] = {}
    for item in (value or "").split(","):
        name, sep, count = item.partition("=")
        number = _count(count, 0) if sep else None
        if name.strip() and number is not None:
            out[name.strip()] = number
    return out


def parse_groups(value: str | None) -> tuple[frozenset[int], ...]:
    """``0-1;2-3``: groups of two or more NUMA ids; malformed groups are skipped."""
    groups = []
    for part in (value or "").split(";"):
        try:
            ids = parse_cpuset(part)
        except ValueError:
            continue
        if len(ids) > 1:
            groups.append(ids)
    return tuple(groups)


def parse_numa_sockets(value: str | None) -> tuple[tuple[int, frozenset[int]], ...]:
    """``0=0;1=0;2=1``: (NUMA id, socket ids) by NUMA id; any malformed item voids the whole map
    (a partial map would count sockets wrong)."""
    out: dict[int, frozenset[int]] = {}
    for item in (value or "").split(";"):
        numa, sep, sockets = item.partition("=")
        number = _count(numa, 0) if sep else None
        try:
            ids = parse_cpuset(sockets) if number is not None else frozenset()
        except ValueError:
            ids = frozenset()
        if number is None or not ids or number in out:
            return ()
        out[number] = ids
    return tuple(sorted(out.items()))


def facts_from_attributes(
    attributes: Iterable[Attribute] | Mapping[str, str], *, policy: str, scope: str, max_numa_nodes: int
) -> NodeFacts:
    """:class:`NodeFacts` for a node whose Topology Manager runs ``policy`` and ``scope``."""
    # From a list, the last duplicate wins.
    attrs = dict(attributes) if isinstance(attributes, Mapping) else {a.name: a.value for a in attributes}
    cpu_policy = attrs.get(CPU_MANAGER_POLICY, "static").strip().casefold()
    memory_policy = attrs.get(MEMORY_MANAGER_POLICY, "Static").strip().casefold()
    return NodeFacts(
        policy=policy,
        scope=scope,
        prefer_closest_numa=_flag(attrs.get(PREFER_CLOSEST_NUMA), False),
        max_numa_nodes=max_numa_nodes,
        cpu_manager_static=cpu_policy != "none",
        memory_manager_static=memory_policy == "static",
        full_pcpus_only=_flag(attrs.get(FULL_PCPUS_ONLY_ATTRIBUTE), False),
        distribute_cpus_across_numa=_flag(attrs.get(DISTRIBUTE_CPUS_ACROSS_NUMA_ATTRIBUTE), False),
        threads_per_core=_count(attrs.get(CPU_MANAGER_THREADS_PER_CORE), 1),
        available_physical_cpus=_count(attrs.get(CPU_MANAGER_AVAILABLE_PHYSICAL_CPUS), 0),
        memory_groups=parse_groups(attrs.get(MEMORY_MANAGER_NUMA_GROUPS)),
        align_by_socket=_flag(attrs.get(ALIGN_BY_SOCKET_ATTRIBUTE), False),
        numa_sockets=parse_numa_sockets(attrs.get(CPU_MANAGER_NUMA_SOCKETS)),
        unknown_numa_devices=parse_counts(attrs.get(UNKNOWN_NUMA_DEVICES)),
        non_topology_devices=parse_counts(attrs.get(NON_NUMA_DEVICES)),
        shared_devices=parse_shared_devices(attrs.get(MULTI_NUMA_DEVICES)) or (),
        pod_level_resources=_flag(attrs.get(GATE_POD_LEVEL_RESOURCES), True),
        pod_level_resource_managers=_flag(attrs.get(GATE_POD_LEVEL_RESOURCE_MANAGERS), False),
    )
