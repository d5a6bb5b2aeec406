"""Where the pods of a node hold their resources: the input of NUMA-aware preemption.

A victim gives back what it holds, on the zones that hold it; preemption may count only what it
knows. Two sources tell it:

* the agent's numaplacement attributes, decoded by the consumer into (namespace, pod,
  container) -> NUMA id (``spec/numaplacement.md``; k8stopologyawareschedwg/numaplacement
  ``numaplacement.go``): :func:`charges_from_containers` turns that into what each pod holds
  per zone, from the pods' specs;
* the reserve cache's own knowledge: pods it placed whose zone it predicted exactly, and pods
  whose hold it learnt from two NRTs (:mod:`rte.consumer.cache.placement`):
  :class:`CachePlacements`.

Both are :class:`PlacementSource`\\ s; :class:`FirstKnown` asks several in turn. A pod no source
knows is credited nothing: preemption never counts room it cannot place on a zone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol

from rte.consumer.cache.predict import ZoneCharge
from rte.consumer.placement import Outcome
from rte.model.exclusive import is_native_resource
from rte.model.pod import QOS_GUARANTEED, Container, Pod, PodKey
from rte.model.quantity import Amount, ceil_value, milli_value

ContainerKey = tuple[str, str, str]
"""(namespace, pod name, container name): how numaplacement names a container."""

ContainerZones = Mapping[ContainerKey, int]
"""Container -> the NUMA id holding all its exclusive resources (decoded numaplacement)."""

PodZones = Mapping[PodKey, ZoneCharge]
"""Pod -> NUMA id -> resource -> amount it holds there (what its eviction gives back)."""


class PlacementSource(Protocol):
    """What the pods of one node hold per zone, for those the source knows."""

    def pod_zones(self, node: str, pods: Sequence[Pod]) -> PodZones: ...


def pinned_request(pod: Pod, container: Container) -> dict[str, Amount]:
    """What the kubelet's managers pin to the container's NUMA zone: devices for any pod; for a
    Guaranteed pod also integer CPUs (CPU manager static policy) and memory and hugepages
    (memory manager Static policy). The same split as :mod:`rte.model.exclusive`."""
    guaranteed = pod.qos_class == QOS_GUARANTEED
    out: dict[str, Amount] = {}
    for res, qty in container.requests.items():
        if qty <= 0:
            continue
        if not is_native_resource(res):
            out[res] = qty
        elif not guaranteed:
            continue
        elif res == "cpu":
            if ceil_value(qty) * 1000 == milli_value(qty):
                out[res] = qty
        elif res == "memory" or res.startswith("hugepages-"):
            out[res] = qty
    return out


def charges_from_containers(pods: Collection[Pod], zones: ContainerZones) -> dict[PodKey, ZoneCharge]:
    """What each pod holds per zone, from the zone of each of its containers (app containers and
    sidecars, which run alongside; regular init containers have finished). A pod none of whose
    pinning containers is placed is left out; a container left out is credited nothing."""
    out: dict[PodKey, ZoneCharge] = {}
    for pod in pods:
        charge: dict[int, dict[str, Amount]] = {}
        for container in pod.sidecars + pod.containers:
            numa_id = zones.get((pod.namespace, pod.name, container.name))
            if numa_id is None:
                continue
            into = charge.setdefault(numa_id, {})
            for res, qty in pinned_request(pod, container).items():
                into[res] = into.get(res, 0) + qty
        charge = {z: amounts for z, amounts in charge.items() if amounts}
        if charge:
            out[pod.key] = charge
    return out


class ContainerPlacements:
    """A :class:`PlacementSource` over decoded numaplacement data: ``lookup(node)`` gives the
    node's container zones, or None when they cannot be decoded (the decoder needs the agent's
    exact container set, i.e. a matching fingerprint)."""

    def __init__(self, lookup: Callable[[str], ContainerZones | None]) -> None:
        self._lookup = lookup

    def pod_zones(self, node: str, pods: Sequence[Pod]) -> PodZones:
        zones = self._lookup(node)
        return {} if zones is None else charges_from_containers(pods, zones)


def decoded_container_zones(cache: object) -> Callable[[str], ContainerZones | None]:
    """``lookup(node)`` for :class:`ContainerPlacements` over the reserve cache's decoded
    numaplacement (``cache.placement(node)``, :mod:`rte.consumer.placement`): the container zones
    of the NRT the cache adopted for the pods it knows, None when it did not decode (another pod
    set, no attributes, a malformed vector) or the cache keeps no placements."""
    placement = getattr(cache, "placement", None)

    def lookup(node: str) -> ContainerZones | None:
        found = placement(node) if placement is not None else None
        if found is None or found.outcome is not Outcome.DECODED:
            return None
        return {(c.namespace, c.pod, c.container): zone for c, zone in found.containers.items()}

    return lookup


def default_placements(cache: object) -> PlacementSource:
    """What the extender uses: the decoded numaplacement first (the kubelet's own placement of the
    pods the NRT counts), then the reserve cache's knowledge (pods placed since, or learnt)."""
    return FirstKnown(ContainerPlacements(decoded_container_zones(cache)), CachePlacements(cache))


class CachePlacements:
    """A :class:`PlacementSource` over the reserve cache's knowledge (``known_zones(node)``, see
    :meth:`rte.consumer.cache.overreserve.OverReserveCache.known_zones`); caches without it
    know nothing."""

    def __init__(self, cache: object) -> None:
        self._known: Callable[[str], PodZones] | None = getattr(cache, "known_zones", None)

    def pod_zones(self, node: str, pods: Sequence[Pod]) -> PodZones:
        if self._known is None:
            return {}
        known = self._known(node)
        return {p.key: known[p.key] for p in pods if p.key in known}


class FirstKnown:
    """Several sources; for each pod, the first that knows it."""

    def __init__(self, *sources: PlacementSource) -> None:
        self.sources = sources

    def pod_zones(self, node: str, pods: Sequence[Pod]) -> PodZones:
        out: dict[PodKey, ZoneCharge] = {}
        for source in self.sources:
            missing = [p for p in pods if p.key not in out]
            if not missing:
                break
            out.update(source.pod_zones(node, missing))
        return out
