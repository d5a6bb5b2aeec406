"""What a node's NUMA zones lack for a pod, and which nodes come closest to fitting it.

The consumer's Filter answers yes or no, with the first request that failed. A person whose pod
is Pending also wants to know how far off each node is. Here, a zone's **shortfall** is what it
lacks to hold the pod's whole request (the pod-scope effective request: the largest init
container, or the app containers together) by the rules Filter compares with:

* a Guaranteed pod needs ``available >= request`` in the zone for every resource;
* other pods run cpu, memory and hugepages in the shared pool: the zone need only list them;
  devices are compared against ``available`` for every pod;
* a resource no zone lists is fine when it is host-level (storage, devices without NUMA
  locality) and lacking otherwise; one missing from the Node's ``status.allocatable`` (when the
  Node is known) is lacking whole.

A zone with no shortfall can hold the whole pod, so under ``single-numa-node`` any node with
such a zone passes Filter in either scope: a node that fails has a shortfall in every zone.

**Closest** is the zone whose largest shortfall, as a share of what the pod requests of that
resource, is smallest (ties: the smaller sum of shares, then fewer resources lacking). Shares
make cpu, bytes and device counts comparable: "2 of 16 CPUs" is closer than "8 GiB of 16 GiB".
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from rte.consumer.requests import PreparedPod, prepare_pod
from rte.model.pod import Pod
from rte.model.quantity import Amount
from rte.model.topology import NodeTopology


@dataclass(frozen=True)
class Lack:
    """One resource a zone is short of."""

    resource: str
    requested: Amount
    missing: Amount
    why: str = ""
    """Empty for "not enough available"; else ``not listed by the zone`` or ``not on the node``."""

    @property
    def share(self) -> Fraction:
        return Fraction(self.missing) / Fraction(self.requested) if self.requested else Fraction(1)


@dataclass(frozen=True)
class ZoneShortfall:
    node: str
    zone: str
    lacks: tuple[Lack, ...]

    @property
    def fits(self) -> bool:
        return not self.lacks

    def rank(self) -> tuple[Fraction, Fraction, int]:
        """Smaller is closer (see the module docstring)."""
        shares = [lack.share for lack in self.lacks]
        return (max(shares, default=Fraction(0)), sum(shares, Fraction(0)), len(shares))


def zone_shortfalls(
    pod: Pod | PreparedPod, topology: NodeTopology, allocatable: Collection[str] | None = None
) -> list[ZoneShortfall]:
    """The shortfall of every NUMA zone of ``topology`` (published order) for ``pod``."""
    prep = pod if isinstance(pod, PreparedPod) else prepare_pod(pod)
    zones = topology.numa_zones()
    listed = {r.name for z in zones for r in z.resources}
    out = []
    for zone in zones:
        available = {r.name: r.available for r in zone.resources}
        lacks = []
        for item in prep.pod_request.nonzero:
            name, amount = item.name, item.amount
            if allocatable is not None and not item.always_allocatable and name not in allocatable:
                lacks.append(Lack(name, amount, amount, "not on the node"))
            elif name not in available:
                if name in listed or not item.host_level:
                    lacks.append(Lack(name, amount, amount, "not listed by the zone"))
            elif item.affine and not prep.guaranteed:
                continue  # the shared pool: being listed is enough
            elif available[name] < amount:
                lacks.append(Lack(name, amount, amount - max(available[name], 0)))
        out.append(ZoneShortfall(topology.name, zone.name, tuple(lacks)))
    return out


def best_zone(
    pod: Pod | PreparedPod, topology: NodeTopology, allocatable: Collection[str] | None = None
) -> ZoneShortfall | None:
    """The zone of ``topology`` closest to holding ``pod``; None without NUMA zones."""
    shortfalls = zone_shortfalls(pod, topology, allocatable)
    return min(shortfalls, key=lambda s: s.rank()) if shortfalls else None


def closest(
    pod: Pod | PreparedPod,
    topologies: Iterable[NodeTopology],
    count: int,
    allocatable: Mapping[str, Collection[str]] | None = None,
) -> list[ZoneShortfall]:
    """The ``count`` nodes whose best zone lacks least, each with that zone; nodes that fit are
    left out (they lack nothing). Ties keep the order given."""
    prep = pod if isinstance(pod, PreparedPod) else prepare_pod(pod)
    found = []
    for topology in topologies:
        node_allocatable = None if allocatable is None else allocatable.get(topology.name)
        best = best_zone(prep, topology, node_allocatable)
        if best is not None and not best.fits:
            found.append(best)
    found.sort(key=lambda s: s.rank())
    return found[:count]
