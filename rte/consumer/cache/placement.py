"""Where the kubelet put a pod, learnt from two NRTs; and what the pod gives back when it ends.

Between two agent updates, an NRT keeps charging a pod that ended: the reserve cache then refuses
the room its deletion freed until the agent publishes again, and a pod requeued by that deletion
fails once more and backs off (the ``waiting-for-agent`` diagnosis). The cache cannot give the
room back without knowing the zones the pod held. It can learn them from the NRTs themselves.

**Learning** (:func:`learn`). The reserve cache adopts NRTs in the order of their pod sets
(:mod:`rte.consumer.cache.podlog`). When the set of a newly adopted NRT adds exactly one pod
``p`` to the previous one's, and every pod it drops has a known hold, then (zone by zone, resource
by resource) ``old available - new available + holds of the dropped pods`` is what ``p`` holds,
provided nothing else changed on the kubelet between the two reads. The hold is recorded only when
it can be nothing else: ``p`` is one container without init containers (what it holds never
changes while it runs), every other pod of both sets is still live (none ended and gave back
resources in between), and the difference is ``p``'s whole request on a single zone and nothing
anywhere else. A pod placed in a burst (several added between two NRTs) stays unknown.

**Giving back** (:func:`released`). When a pod whose hold is known and that the adopted NRT
charges is deleted or ends, the cache credits its hold back to its zone until an adopted NRT no
longer charges it (:func:`kept_credits`). That keeps the cache's view at most the kubelet's free
room (:mod:`rte.consumer.cache.reconcile`): the NRT charged ``p`` exactly that on that zone, and
the kubelet gives a pod's resources back when it ends (the same assumption that releases a
reservation). It relies, beyond the fingerprint, on an NRT charging exactly the pods of its set,
which holds for agents that compute both from one read of the kubelet (rte's, the reference's,
the simulator's). Credits are applied before the reservations are subtracted, so the clamp at 0
never hides a reservation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from rte.consumer.cache.predict import ZoneCharge
from rte.model.pod import Pod, PodKey, effective_request
from rte.model.quantity import Amount
from rte.model.topology import NodeTopology


def _available(topology: NodeTopology) -> dict[int, dict[str, Amount]]:
    return {
        z.numa_id: {r.name: r.available for r in z.resources} for z in topology.zones if z.numa_id is not None
    }


def learn(
    holds: dict[PodKey, ZoneCharge],
    old: NodeTopology,
    old_set: Collection[PodKey],
    new: NodeTopology,
    new_set: Collection[PodKey],
    live: Mapping[PodKey, Pod],
) -> None:
    """Record in ``holds`` what the one pod ``new_set`` adds to ``old_set`` holds, when the two
    NRTs tell it for sure (module docstring)."""
    added = [k for k in new_set if k not in old_set]
    if len(added) != 1:
        return
    (key,) = added
    pod = live.get(key)
    if pod is None or len(pod.containers) != 1 or pod.init_containers:
        return
    dropped = [k for k in old_set if k not in new_set]
    if any(k not in holds for k in dropped):
        return
    if any(k not in live for k in old_set if k in new_set):
        return  # a pod of both sets ended: it may have given resources back in between
    before, after = _available(old), _available(new)
    if before.keys() != after.keys():
        return
    diff = {
        z: {r: before[z].get(r, 0) - after[z].get(r, 0) for r in before[z].keys() | after[z].keys()}
        for z in before
    }
    for k in dropped:
        for z, charge in holds[k].items():
            for r, q in charge.items():
                if z in diff:
                    diff[z][r] = diff[z].get(r, 0) + q
    names = {r for zone in diff.values() for r in zone}
    request = {r: q for r, q in effective_request(pod).items() if q > 0 and r in names}
    nonzero = {z: {r: q for r, q in zone.items() if q} for z, zone in diff.items()}
    zones = [z for z, zone in nonzero.items() if zone]
    if len(zones) == 1 and request and nonzero[zones[0]] == request:
        holds[key] = {zones[0]: request}


def released(
    credits: dict[PodKey, ZoneCharge], holds: Mapping[PodKey, ZoneCharge], key: PodKey, charged: bool
) -> bool:
    """Pod ``key`` ended: credit its hold back when it is known and the adopted NRT still
    ``charged`` it; True when a credit was added."""
    hold = holds.get(key)
    if hold is None or not charged or key in credits:
        return False
    credits[key] = hold
    return True


def kept_credits(
    credits: Mapping[PodKey, ZoneCharge], accounted: Collection[PodKey]
) -> dict[PodKey, ZoneCharge]:
    """The credits still needed once an NRT charging ``accounted`` is adopted: the pods it charges."""
    return {k: c for k, c in credits.items() if k in accounted}


def kept_holds(
    holds: Mapping[PodKey, ZoneCharge], accounted: Collection[PodKey], live: Collection[PodKey]
) -> dict[PodKey, ZoneCharge]:
    """The holds worth keeping: pods an adopted NRT charges or that still run."""
    return {k: c for k, c in holds.items() if k in accounted or k in live}


def negated(credits: Mapping[PodKey, ZoneCharge]) -> list[ZoneCharge]:
    """The credits as negative charges (what :func:`~.reservations.subtract_placed` adds back)."""
    return [{z: {r: -q for r, q in amounts.items()} for z, amounts in c.items()} for c in credits.values()]
