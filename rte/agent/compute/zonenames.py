"""Dense zone names: publish ``node-0..node-<k-1>`` for consumers that cannot take sparse NUMA ids.

rte names each zone ``node-<kernel NUMA id>`` (:func:`rte.model.topology.zone_name`). On a node
whose NUMA ids are sparse (a node offline or absent: ids 0, 2, 3) that is the truth, and it is
what crashes scheduler-plugins' ``NodeResourceTopologyMatch`` Score: ``scoreForEachNUMANode``
(``pkg/noderesourcetopology/score.go``) sizes ``numaScores`` by the number of zones and indexes
it by the id read from the zone name, so ``node-3`` among three zones panics under
MostAllocated, LeastAllocated and BalancedAllocation; ``createNUMANodeList``
(``pluginhelpers.go``) indexes a 64-entry table by the id, so ``node-64`` panics too. The
reference agents (RTE, NFD) name zones by their position in ghw's node list, so they never
publish sparse ids.

With the setting ``zone_names: dense`` the agent renumbers every NUMA id it publishes by the
id's position among the node's ids in ascending order (the order the kubelet's bitmasks use, so
every "lowest id first" rule of the kubelet and of the consumers picks the same node under
either naming). Everything that names a NUMA node follows, so the object stays consistent:

* zone names, and the name of every zone ``costs`` points to (distances keep their values);
* ``memoryManagerNUMAGroups`` (a list of NUMA ids), and the NUMA ids of ``cpuManagerNUMASockets``
  (socket ids are not NUMA ids and keep their values);
* the numaplacement attributes: ``nn`` becomes the number of zones and ``bn`` and each vector's
  zone the dense index, which is what RTE itself publishes (it numbers zones by list position).

The accounting itself, the zone load attributes and the ceiling of an inconsistent cycle stay in
kernel ids; only the published object is renumbered, last, so the two namings never mix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from rte.agent.compute.accounting import Accounting
from rte.agent.compute.placement import Placement
from rte.model import numaplacement as npl
from rte.model.cpuset import format_cpuset
from rte.model.topology import Attribute, Cost, Zone, numa_id_of, zone_name
from rte.model.vocabulary import ZoneNames

__all__ = [
    "dense_numbering",
    "renumber_accounting",
    "renumber_placement",
    "sparse_ids_warning",
]


def dense_numbering(node_ids: Iterable[int]) -> dict[int, int]:
    """Kernel NUMA id -> its position among ``node_ids`` in ascending order (0, 2, 3 -> 0, 1, 2)."""
    return {numa: i for i, numa in enumerate(sorted(set(node_ids)))}


def is_sparse(node_ids: Iterable[int]) -> bool:
    """Whether the ids are not exactly 0..k-1."""
    ids = sorted(set(node_ids))
    return ids != list(range(len(ids)))


def sparse_ids_warning(node_ids: Iterable[int], mode: ZoneNames) -> str | None:
    """The one-line warning for a node with sparse NUMA ids published as they are; else None."""
    ids = sorted(set(node_ids))
    if mode is not ZoneNames.NUMA_ID or not is_sparse(ids):
        return None
    return (
        f"this node's NUMA ids are sparse ({format_cpuset(ids)}): zones are published as "
        f"{', '.join(zone_name(i) for i in ids)}, which crashes scheduler-plugins'"
        " NodeResourceTopologyMatch Score (MostAllocated, LeastAllocated, BalancedAllocation);"
        " set zone_names: dense (--zone-names dense, RTE_ZONE_NAMES=dense) if the cluster runs it"
        " (docs/compatibility.md)"
    )


def _renamed(name: str, numbering: Mapping[int, int]) -> str:
    numa = numa_id_of(name)
    if numa is None or numa not in numbering:
        return name  # not a NUMA zone of this machine: left as it is
    return zone_name(numbering[numa])


def _renumber_zone(zone: Zone, numbering: Mapping[int, int]) -> Zone:
    if zone.numa_id is None:
        return zone
    costs = tuple(Cost(_renamed(c.name, numbering), c.value) for c in zone.costs)
    return replace(zone, name=_renamed(zone.name, numbering), costs=costs)


def renumber_accounting(
    accounting: Accounting, numbering: Mapping[int, int], vectors: Mapping[int, str] | None = None
) -> Accounting:
    """The accounting with zones, their costs, the memory groups and the NUMA ids of the socket
    map in the new numbering.

    ``vectors`` (new zone id -> text) are the numaplacement vectors of the placement encoded in
    the new numbering (:func:`renumber_placement`); they replace the zones' old ones.
    """
    groups = tuple(
        tuple(sorted(numbering.get(numa, numa) for numa in group)) for group in accounting.memory_numa_groups
    )
    zones = []
    for zone in accounting.zones:
        zone = _renumber_zone(zone, numbering)
        kept = tuple(a for a in zone.attributes if a.name != npl.VECTOR_ATTRIBUTE)
        text = (vectors or {}).get(zone.numa_id) if zone.numa_id is not None else None
        zones.append(
            replace(zone, attributes=kept if text is None else (*kept, Attribute(npl.VECTOR_ATTRIBUTE, text)))
        )
    sockets = {numbering.get(numa, numa): ids for numa, ids in accounting.numa_sockets.items()}
    return replace(accounting, zones=tuple(zones), memory_numa_groups=groups, numa_sockets=sockets)


def renumber_placement(placement: Placement, numbering: Mapping[int, int]) -> Placement:
    """The placement encoded again in the new numbering, ``nn`` the number of ids numbered.

    Encoding again (rather than renaming vectors) keeps the payload exactly what
    :func:`rte.model.numaplacement.encode` gives for these placements on a machine of
    ``len(numbering)`` nodes, which is what RTE's ``ComputeNUMAPlacementPayload`` would publish.
    """
    if placement.metadata is None:
        return placement
    containers = tuple((cid, numbering[numa]) for cid, numa in placement.containers)
    payload = npl.encode(len(numbering), containers)
    return Placement(payload.pack_metadata(), dict(payload.vectors), containers)
