"""Where the kubelet will put a pod, on a node whose state the cache knows exactly.

When the reserve cache's view of a node is exact (see :mod:`rte.consumer.cache.reconcile`), the
kubelet's admission is a deterministic function of that view: the admission model
(:mod:`rte.model.admission`) gives each unit's merged mask and the count allocator the amounts
taken from each zone. :func:`predicted_charge` returns those amounts, so the cache can reserve a
pod on the zones the kubelet will use instead of on every zone. It answers None whenever the
model cannot be exact: the pod would be refused, an allocation splits across zones in a way
counts cannot tell (``Working.exact``), or the model does not charge the whole request to zones
(pods using the shared CPU pool, resources no zone lists).
"""

from __future__ import annotations

from collections.abc import Mapping

from rte.consumer.kubelet_filter import node_of
from rte.consumer.numaview import NumaView
from rte.consumer.requests import kubelet_units, prepare_pod, units_key
from rte.model.admission.admit import admit_pod
from rte.model.admission.allocate import CountAllocator
from rte.model.admission.node import Working
from rte.model.admission.units import AdmissionUnit
from rte.model.pod import Pod, effective_request
from rte.model.quantity import Amount

ZoneCharge = Mapping[int, Mapping[str, Amount]]
"""NUMA id -> resource -> amount the kubelet takes from that zone."""

_CPU = "cpu"


class _Recording(CountAllocator):
    """The count allocator, keeping the working counts it was handed (the admission's last state)."""

    def __init__(self) -> None:
        self.working: Working | None = None

    def take(self, working: Working, unit: AdmissionUnit, mask: int | None, memory_mask: int | None) -> None:
        self.working = working
        super().take(working, unit, mask, memory_mask)


def predicted_charge(view: NumaView, pod: Pod) -> ZoneCharge | None:
    """What the kubelet takes from each zone of ``view`` when it admits ``pod``; None: not exactly known."""
    prep = prepare_pod(pod)
    units = kubelet_units(prep, view.facts, units_key(view.facts))
    recorder = _Recording()
    node = node_of(view)
    admission = admit_pod(node, units, recorder)
    working = recorder.working
    if not admission.admitted or working is None or not working.exact:
        return None
    charge: dict[int, dict[str, Amount]] = {}
    totals: dict[str, Amount] = {}

    def add(position: int, resource: str, amount: Amount) -> None:
        if amount:
            charge.setdefault(view.ids[position], {})[resource] = amount
            totals[resource] = totals.get(resource, 0) + amount

    for i in range(len(view.ids)):
        add(i, _CPU, node.cpu_available[i] - working.cpu_free[i])
        for resource, (_, available) in node.memory.items():
            add(i, resource, available[i] - working.mem_free[resource][i])
        for resource, (_, available) in node.devices.items():
            add(i, resource, available[i] - working.dev_free[resource][i])
    request = {r: q for r, q in effective_request(pod).items() if q > 0}
    if any(totals.get(r, 0) != q for r, q in request.items() if r in view.resource_names):
        return None  # part of the request is not charged to zones (shared pool, reuse): unknown
    return charge
