"""Pessimistic accounting of pods the scheduler placed but no NRT reflects yet.

The scheduler cannot know which NUMA zone the kubelet will pick, so a reserved pod's request is
taken from *every* zone that lists the resource, whatever the pod's QoS, and amounts stop at 0:
the reference's OverReserve semantics (kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/cache/overreserve.go``), the "pessimistic overallocation" of its design
document (``pkg/noderesourcetopology/cache/docs/NUMA-aware-scheduler-side-reserve-plugin.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from rte.model.pod import Pod, kubelet_pod_request
from rte.model.quantity import Amount, quantity_text
from rte.model.topology import NodeTopology

SOURCE_RESERVE = "reserve"
"""Made by the Reserve extension point for a pod this scheduler placed."""
SOURCE_IN_FLIGHT = "in-flight"
"""Made by a flush for a pod bound to the node but not started (possibly by someone else)."""


@dataclass(frozen=True)
class Reservation:
    namespace: str
    name: str
    uid: str
    request: Mapping[str, Amount]
    reserved_at: float
    source: str = SOURCE_RESERVE

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @classmethod
    def for_pod(cls, pod: Pod, now: float, source: str = SOURCE_RESERVE) -> Reservation:
        # What the kubelet will hold: sidecars add to the app containers. The reference's sum
        # (sidecars as plain init containers) under-reserves a pod with sidecars.
        return cls(pod.namespace, pod.name, pod.uid, kubelet_pod_request(pod), now, source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": f"{self.namespace}/{self.name}",
            "uid": self.uid,
            "source": self.source,
            "reservedAt": self.reserved_at,
            "request": {res: quantity_text(qty) for res, qty in sorted(self.request.items())},
        }


def total_request(requests: Iterable[Mapping[str, Amount]]) -> dict[str, Amount]:
    """Per-resource sum of positive requests (a zero or negative request reserves nothing)."""
    total: dict[str, Amount] = {}
    for request in requests:
        for res, qty in request.items():
            if qty > 0:
                total[res] = total.get(res, 0) + qty
    return total


def subtract_from_every_zone(topology: NodeTopology, total: Mapping[str, Amount]) -> NodeTopology:
    """``topology`` with ``total`` taken from the ``available`` of every zone listing each resource.

    Clamped at 0. Capacity and allocatable are untouched: only ``available`` is ever compared.
    """
    if not total:
        return topology
    zones = []
    for zone in topology.zones:
        resources = tuple(
            replace(res, available=max(0, res.available - total[res.name])) if res.name in total else res
            for res in zone.resources
        )
        zones.append(replace(zone, resources=resources))
    return replace(topology, zones=tuple(zones))
