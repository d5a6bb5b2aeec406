"""Pessimistic accounting of pods the scheduler placed but no NRT reflects yet.

The scheduler cannot know which NUMA zone the kubelet will pick, so a reserved pod's request is
taken from *every* zone that lists the resource, whatever the pod's QoS, and amounts stop at 0:
the reference's OverReserve semantics (kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/cache/overreserve.go``), the "pessimistic overallocation" of its design
document (``pkg/noderesourcetopology/cache/docs/NUMA-aware-scheduler-side-reserve-plugin.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rte.consumer.numaview import NumaView, clamped, signed_zones
from rte.model.pod import Pod, kubelet_pod_request
from rte.model.quantity import Amount, quantity_text
from rte.model.topology import NodeTopology

SOURCE_RESERVE = "reserve"
"""Made by the Reserve extension point for a pod this scheduler placed."""
SOURCE_IN_FLIGHT = "in-flight"
"""Made by a flush for a pod bound to the node but not started (possibly by someone else)."""
SOURCE_UNACCOUNTED = "unaccounted"
"""Made when an NRT is adopted, for a pod on the node the NRT does not account for."""


@dataclass(frozen=True)
class Reservation:
    namespace: str
    name: str
    uid: str
    request: Mapping[str, Amount]
    reserved_at: float
    source: str = SOURCE_RESERVE
    zones: Mapping[int, Mapping[str, Amount]] | None = None
    """What the kubelet takes from each zone (NUMA id -> resource -> amount), when the cache knew
    it exactly (:mod:`rte.consumer.cache.predict`); None: the request is taken from every zone."""
    unpredictable: bool = field(default=False, compare=False)
    """The admission model could not tell its zone when it was placed alone on its way: Score's
    estimate charges it on every zone without asking the model again."""
    pod: Pod | None = field(default=None, compare=False, repr=False)
    """The pod reserved, for the admission model's best estimate of its zone (Score only,
    :mod:`rte.consumer.cache.estimate`); None when not known."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @classmethod
    def for_pod(
        cls,
        pod: Pod,
        now: float,
        source: str = SOURCE_RESERVE,
        zones: Mapping[int, Mapping[str, Amount]] | None = None,
    ) -> Reservation:
        # What the kubelet will hold: sidecars add to the app containers. The reference's sum
        # (sidecars as plain init containers) under-reserves a pod with sidecars.
        return cls(pod.namespace, pod.name, pod.uid, kubelet_pod_request(pod), now, source, zones, pod=pod)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": f"{self.namespace}/{self.name}",
            "uid": self.uid,
            "source": self.source,
            "reservedAt": self.reserved_at,
            "request": {res: quantity_text(qty) for res, qty in sorted(self.request.items())},
            "zones": None
            if self.zones is None
            else {
                f"node-{numa_id}": {r: quantity_text(q) for r, q in sorted(charge.items())}
                for numa_id, charge in sorted(self.zones.items())
            },
        }


def total_request(requests: Iterable[Mapping[str, Amount]]) -> dict[str, Amount]:
    """Per-resource sum of positive requests (a zero or negative request reserves nothing)."""
    total: dict[str, Amount] = {}
    for request in requests:
        for res, qty in request.items():
            if qty > 0:
                total[res] = total.get(res, 0) + qty
    return total


def per_zone_totals(charges: Iterable[Mapping[int, Mapping[str, Amount]]]) -> dict[int, dict[str, Amount]]:
    """The charges (each NUMA id -> resource -> amount) added up per zone and resource."""
    per_zone: dict[int, dict[str, Amount]] = {}
    for charge in charges:
        for numa_id, amounts in charge.items():
            into = per_zone.setdefault(numa_id, {})
            for res, qty in amounts.items():
                into[res] = into.get(res, 0) + qty
    return per_zone


def subtract_placed(view: NumaView, charges: Iterable[Mapping[int, Mapping[str, Amount]]]) -> NumaView:
    """A new view with each charge taken from the zone it names (clamped at 0, what the clamp
    hid kept as the view's :attr:`~rte.consumer.numaview.NumaView.zone_shortfall`; a negative
    charge, a credit, pays that off first)."""
    per_zone = per_zone_totals(charges)
    if not per_zone:
        return view
    signed = [
        {r: a - per_zone.get(numa_id, {}).get(r, 0) for r, a in zone.items()}
        for numa_id, zone in zip(view.ids, signed_zones(view), strict=True)
    ]
    return view.with_zone_available(*clamped(signed))


def subtract_all(
    view: NumaView,
    charges: Iterable[Mapping[int, Mapping[str, Amount]]],
    requests: Iterable[Mapping[str, Amount]] = (),
) -> NumaView:
    """:func:`subtract_placed` of ``charges`` and
    :func:`~rte.consumer.numaview.subtract_requests` of ``requests`` in one new view.

    The same view as those two in any order, one after the other: amounts are exact (``int`` or
    ``Fraction``) and each view keeps what its clamp hid, so only the final clamp shows. Issue
    #27: one view instead of one per step (a view is the costly part of a reservation change).
    """
    per_zone = per_zone_totals(charges)
    everywhere: dict[str, Amount] = {}
    for request in requests:
        for res, qty in request.items():
            if qty > 0:
                everywhere[res] = everywhere.get(res, 0) + qty
    if not per_zone and not everywhere:
        return view
    signed = []
    for numa_id, zone in zip(view.ids, signed_zones(view), strict=True):
        here = per_zone.get(numa_id, {})
        signed.append({r: a - here.get(r, 0) - everywhere.get(r, 0) for r, a in zone.items()})
    return view.with_zone_available(*clamped(signed))


def subtract_from_every_zone(
    topology: NodeTopology,
    total: Mapping[str, Amount],
    placed: Mapping[int, Mapping[str, Amount]] | None = None,
) -> NodeTopology:
    """``topology`` with ``total`` taken from the ``available`` of every zone listing each resource.

    Clamped at 0. Capacity and allocatable are untouched: only ``available`` is ever compared.
    ``placed`` adds charges known per zone (NUMA id -> resource -> amount).
    """
    placed = placed or {}
    if not total and not placed:
        return topology
    zones = []
    for zone in topology.zones:
        here = placed.get(zone.numa_id, {}) if zone.numa_id is not None else {}
        resources = tuple(
            replace(res, available=max(0, res.available - total.get(res.name, 0) - here.get(res.name, 0)))
            if res.name in total or res.name in here
            else res
            for res in zone.resources
        )
        zones.append(replace(zone, resources=resources))
    return replace(topology, zones=tuple(zones))
