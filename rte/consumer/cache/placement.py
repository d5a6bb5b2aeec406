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
anywhere else. A pod placed in a burst (several added between two NRTs) stays unknown, unless the new NRT
publishes numaplacement:

**Learning with numaplacement** (:func:`learn`, ``placed`` given). When the adopted NRT's
placement decoded (:mod:`rte.consumer.placement`), it says on which zone each added pod's pinned
containers sit. Each added pod ``p`` is then expected to hold ``e(p)``, its pinned containers'
requests, on its one zone ``z(p)``, and nothing elsewhere (its other containers are pinned
nowhere, so an agent charges them nothing). The kubelet never pins more than a container requests
(the CPU manager takes the integer count, the memory manager the request, the device manager the
count), so what the NRT charges ``p`` is at most ``e(p)``, all of it on ``z(p)``. When, zone by
zone and resource by resource, the difference between the two NRTs (the dropped pods' known holds
added back) equals the sum of ``e(p)`` over the added pods on that zone, every one of these
inequalities is an equality: each added pod holds exactly ``e(p)`` on ``z(p)``. The same
conditions as above apply otherwise (no init containers, every pod of both sets still live, every
dropped pod's hold known), except that the added pods may be any number and have several
containers, and may have ended since (their last live spec, ``ended``), in which case the caller
credits their hold back at once. This relies on the placement naming the right zones, that is on
the consumer naming exactly the containers the agent encoded (:mod:`rte.consumer.placement`).

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
from rte.consumer.placement import NodePlacement, Outcome
from rte.model.pod import Pod, PodKey, add_requests, effective_request
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
    placed: NodePlacement | None = None,
    ended: Mapping[PodKey, Pod] | None = None,
) -> list[PodKey]:
    """Record in ``holds`` what the pods ``new_set`` adds to ``old_set`` hold, when the two NRTs
    tell it for sure (module docstring); the pods learnt. ``placed``: the new NRT's decoded
    numaplacement, which lets several pods be learnt at once, ``ended`` among them."""
    added = [k for k in new_set if k not in old_set]
    dropped = [k for k in old_set if k not in new_set]
    if not added or any(k not in holds for k in dropped):
        return []
    if any(k not in live for k in old_set if k in new_set):
        return []  # a pod of both sets ended: it may have given resources back in between
    diff = _difference(old, new, [holds[k] for k in dropped])
    if diff is None:
        return []
    names = {r for zone in diff.values() for r in zone}
    nonzero = {z: {r: q for r, q in zone.items() if q} for z, zone in diff.items()}
    if placed is not None and placed.outcome is Outcome.DECODED:
        return _learn_placed(holds, added, live, ended or {}, placed, names, nonzero)
    if len(added) != 1:
        return []
    (key,) = added
    pod = live.get(key)
    if pod is None or len(pod.containers) != 1 or pod.init_containers:
        return []
    request = {r: q for r, q in effective_request(pod).items() if q > 0 and r in names}
    zones = [z for z, zone in nonzero.items() if zone]
    if len(zones) == 1 and request and nonzero[zones[0]] == request:
        holds[key] = {zones[0]: request}
        return [key]
    return []


def _difference(
    old: NodeTopology, new: NodeTopology, dropped: list[ZoneCharge]
) -> dict[int, dict[str, Amount]] | None:
    """Zone -> resource -> what the new NRT has less than the old one, the dropped holds added."""
    before, after = _available(old), _available(new)
    if before.keys() != after.keys():
        return None
    diff = {
        z: {r: before[z].get(r, 0) - after[z].get(r, 0) for r in before[z].keys() | after[z].keys()}
        for z in before
    }
    for hold in dropped:
        for z, charge in hold.items():
            for r, q in charge.items():
                if z in diff:
                    diff[z][r] = diff[z].get(r, 0) + q
    return diff


def _learn_placed(
    holds: dict[PodKey, ZoneCharge],
    added: list[PodKey],
    live: Mapping[PodKey, Pod],
    ended: Mapping[PodKey, Pod],
    placed: NodePlacement,
    names: Collection[str],
    nonzero: Mapping[int, Mapping[str, Amount]],
) -> list[PodKey]:
    """The numaplacement case of :func:`learn` (module docstring, "Learning with numaplacement")."""
    expected: dict[PodKey, tuple[int, dict[str, Amount]]] = {}
    sums: dict[int, dict[str, Amount]] = {}
    for key in added:
        pod = live.get(key) or ended.get(key)
        if pod is None or pod.init_containers:
            return []
        on = placed.pod_zones(key)
        if not on:
            continue  # pinned nowhere: charged nothing
        zones = set(on.values())
        if len(zones) != 1:
            return []
        (zone,) = zones
        charge: dict[str, Amount] = {}
        for container in pod.containers:
            if container.name in on:
                add_requests(charge, {r: q for r, q in container.requests.items() if q > 0 and r in names})
        charge = {r: q for r, q in charge.items() if q}
        if charge:
            expected[key] = (zone, charge)
            add_requests(sums.setdefault(zone, {}), charge)
    if not expected or not _agrees(nonzero, sums):
        return []
    for key, (zone, charge) in expected.items():
        holds[key] = {zone: charge}
    return list(expected)


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


def _agrees(difference: Mapping[int, Mapping[str, Amount]], sums: Mapping[int, Mapping[str, Amount]]) -> bool:
    """Whether the NRTs' difference is, zone by zone, exactly what the placed pods are expected to
    hold (zero amounts left out on both sides)."""
    for z in difference.keys() | sums.keys():
        if {r: q for r, q in difference.get(z, {}).items() if q} != {
            r: q for r, q in sums.get(z, {}).items() if q
        }:
            return False
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
