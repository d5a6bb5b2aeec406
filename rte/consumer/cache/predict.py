"""Which zones a pod placed by the scheduler can take resources from, when that is knowable.

The kubelet admits a pod made of one unit (one container, or the whole pod in pod scope) on the
*first* NUMA mask, in its fixed preference order, that fits the unit (narrowest masks first,
then lowest ids: kubernetes/kubernetes ``pkg/kubelet/cm/topologymanager/policy.go``; the
admission model, :mod:`rte.model.admission`, computes it). Suppose the reserve cache's view ``V``
of a node never shows more than the kubelet will have (``V <= T``, zone by zone), and the model
admits the pod on ``V`` on the single zone ``j``. That zone fits in ``T`` too, so the kubelet
picks ``j`` or a single zone it prefers (a lower id), never one after ``j``, however much room
pods that ended have freed meanwhile. Taking the pod's request from ``j`` and every zone before
it therefore keeps ``V <= T``, and spares the zones after ``j``, which the every-zone rule of the
reference charges for nothing.

The kubelet must also admit the pod before any pod placed after it, and no pod may still be on
its way to the node when it is placed (the kubelet may admit pods in any order, and each may take
a zone that fits). So the cache predicts only for a pod placed while no other is in flight on
the node, forgets the prediction as soon as another pod is placed or bound there before this one
is admitted (:func:`rte.consumer.cache.reconcile.spread_in_flight`), and charges the pod on
its zones only once it knows the kubelet admitted it (no longer Pending); until then, on every
zone.

:func:`predicted_charge` answers None (every zone) for anything else: several units, a mask of
several zones, a split the counts cannot tell (``Working.exact``), a request the model does
not charge to zones in full (the shared CPU pool), or a zone that shares its socket with others
under ``align-by-socket`` (the kubelet's CPUs may then come from any zone of the socket).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from operator import itemgetter

from rte.consumer.kubelet_filter import node_of
from rte.consumer.numaview import NumaView
from rte.consumer.requests import kubelet_units, prepare_pod, shape_key, units_key
from rte.model.admission.admit import admit_pod
from rte.model.admission.allocate import CountAllocator
from rte.model.admission.masks import popcount
from rte.model.admission.node import NodeResources, Working
from rte.model.admission.sockets import aligned_zones, socket_layout
from rte.model.admission.units import AdmissionUnit
from rte.model.pod import Pod, effective_request
from rte.model.quantity import Amount
from rte.model.vocabulary import Compat

ZoneCharge = Mapping[int, Mapping[str, Amount]]
"""NUMA id -> resource -> amount taken from that zone."""

ADMISSION_MEMO_LIMIT = 4096
"""Admissions :func:`_admitted_zone` remembers before starting over (issue #13: the reserve cache
runs the model for every pod it reserves, about a millisecond on 8 zones, mostly on node states it
has seen before: pods of a few shapes landing on nodes of a few kinds)."""

_memo: dict[tuple[object, ...], tuple[int, dict[str, Amount]] | None] = {}


class _Recording(CountAllocator):
    """The count allocator, keeping the working counts it was handed (the admission's last state)."""

    def __init__(self) -> None:
        self.working: Working | None = None

    def take(self, working: Working, unit: AdmissionUnit, mask: int | None, memory_mask: int | None) -> None:
        self.working = working
        super().take(working, unit, mask, memory_mask)


def zones_the_kubelet_may_choose(view: NumaView, chosen: int) -> tuple[int, ...]:
    """The zone positions the kubelet may use instead of position ``chosen`` if it has more room:
    that one and every one it prefers (lower ids)."""
    return tuple(range(chosen + 1))


def predicted_charge(view: NumaView, pod: Pod) -> ZoneCharge | None:
    """The pod's request on each zone the kubelet may give it (see the module docstring), or None.

    The zone the model chose comes last (:func:`chosen_zone`)."""
    admitted = _admitted_zone(view, pod)
    if admitted is None:
        return None
    chosen, taken = admitted
    return {view.ids[i]: dict(taken) for i in zones_the_kubelet_may_choose(view, chosen)}


def estimated_charge(view: NumaView, pod: Pod) -> ZoneCharge | None:
    """The pod's request on the one zone the kubelet picks if ``view`` is its exact state: a best
    estimate for Score (:mod:`rte.consumer.cache.estimate`), never for Filter; None as
    :func:`predicted_charge`."""
    admitted = _admitted_zone(view, pod)
    if admitted is None:
        return None
    chosen, taken = admitted
    return {view.ids[chosen]: taken}


def chosen_zone(charge: ZoneCharge) -> int:
    """The NUMA id the admission model chose, of a charge made by :func:`predicted_charge`."""
    return list(charge)[-1]


def _admitted_zone(view: NumaView, pod: Pod) -> tuple[int, dict[str, Amount]] | None:
    """(position of the single zone the model admits the pod on, what it takes there), or None;
    remembered per pod shape and view content (:func:`_memo_key`)."""
    key = _memo_key(view, pod)
    if key in _memo:
        answer = _memo[key]
    else:
        if len(_memo) >= ADMISSION_MEMO_LIMIT:
            _memo.clear()
        answer = _memo[key] = _admit(view, pod)
    return None if answer is None else (answer[0], dict(answer[1]))  # callers own their dict


def _pairs(amounts: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(amounts.items(), key=itemgetter(0)))


def _memo_key(view: NumaView, pod: Pod) -> tuple[object, ...]:
    """Everything :func:`_admit` reads, hashable: the pod's shape (:func:`shape_key`, what the
    kubelet's admission of it reads, its name and uid left out) and the view's content (the
    model's node is built from its ids, distances, facts and per-zone available, capacity and
    allocatable amounts)."""
    return (shape_key(pod, Compat.KUBELET), _view_key(view))


def _view_key(view: NumaView) -> tuple[object, ...]:
    """What the model's node is built from (:func:`~rte.consumer.kubelet_filter.node_of`), once
    per view (a pod-independent table of the view alone)."""
    key = view.local.get(_VIEW_KEY)
    if key is None:
        facts = tuple(
            _pairs(v) if isinstance(v, Mapping) else v
            for v in (getattr(view.facts, f.name) for f in fields(view.facts))
        )
        key = view.local[_VIEW_KEY] = (
            view.ids,
            view.distances,
            facts,
            _pairs(view.available),  # every zone's amounts per resource, and which zones list it:
            _pairs(view.present),  # zone_available in two sorts rather than one per zone
            tuple(_pairs(z) for z in view.zone_capacity),
            tuple(_pairs(z) for z in view.zone_allocatable),
        )
    return key  # type: ignore[return-value]


_VIEW_KEY = "predict-admission-key"


def _shares_a_socket(node: NodeResources, mask: int) -> bool:
    """Whether, with ``align-by-socket``, the kubelet may take the unit's CPUs from another zone
    than ``mask``'s (``getAlignedCPUs`` widens it to its socket, and which zone of the socket has
    the fewest free CPUs on the node may differ from the view's): unknown sockets count as shared."""
    layout = socket_layout(node)
    return layout is None or aligned_zones(layout, mask & node.cpu_zones) != mask & node.cpu_zones


def _admit(view: NumaView, pod: Pod) -> tuple[int, dict[str, Amount]] | None:
    """:func:`_admitted_zone` computed by the admission model."""
    prep = prepare_pod(pod)
    units = kubelet_units(prep, view.facts, units_key(view.facts))
    if len(units) != 1:
        return None
    recorder = _Recording()
    node = node_of(view)
    admission = admit_pod(node, units, recorder)
    working = recorder.working
    if not admission.admitted or working is None or not working.exact:
        return None
    mask = admission.units[0].mask
    if mask is None or popcount(mask) != 1:
        return None
    if any(r in working.dev_groups for r in units[0].devices):
        # A device shared by several zones leaves each of them, and the groups' free counts
        # (nodeMultiNUMAResources) are not the view's to change: the pessimistic subtraction
        # from every zone decides instead (rte.model.admission.devices.split_free).
        return None
    chosen = mask.bit_length() - 1
    if view.facts.align_by_socket and _shares_a_socket(node, mask):
        return None
    taken: dict[str, Amount] = {}
    for resource, amount in (
        ("cpu", node.cpu_available[chosen] - working.cpu_free[chosen]),
        *((r, avail[chosen] - working.mem_free[r][chosen]) for r, (_, avail) in node.memory.items()),
        *((r, avail[chosen] - working.dev_free[r][chosen]) for r, (_, avail) in node.devices.items()),
    ):
        if amount:
            taken[resource] = amount
    request = {r: q for r, q in effective_request(pod).items() if q > 0 and r in view.resource_names}
    if taken != request:
        return None  # part of the request is not charged to the zone (shared pool, reuse): unknown
    return chosen, taken
