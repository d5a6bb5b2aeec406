"""Filter by the kubelet's rules: the admission model (:mod:`rte.model.admission`) over an NRT.

The node the model reads is built once per view from the NRT's zones (capacity, allocatable,
available) and node attributes (:attr:`~rte.consumer.numaview.NumaView.facts`); the pod's units
come from the prepared pod (:func:`~rte.consumer.requests.kubelet_units`).

**The fast path.** Most pods are one unit (one container and no init container, or pod scope with
one container) and most nodes run ``single-numa-node`` or ``restricted``. There the general model
reduces to a single-zone fit test, answered by the view's bisection tables:

* ``single-numa-node`` keeps only single-zone preferred hints. Every zone whose *available*
  amount holds a resource's request is hinted for it (free >= request), and preferred, because
  its capacity or allocatable holds the request too (the node is read with capacity >=
  allocatable >= available), so ``minAffinitySize`` is 1. A preferred merged hint needs one mask
  shared by every hinted resource: a zone that holds all of them. The narrowest and lowest such
  mask is the lowest such zone. No zone: no permutation survives, the pod is refused.
* ``restricted`` admits only a preferred merged hint. If some zone holds every hinted resource,
  every resource has ``minAffinitySize`` 1 and that zone is a preferred merged hint; the best one
  is again the lowest such zone (without ``prefer-closest-numa-nodes``, whose distance order the
  fast path does not apply). If no zone does, the general model decides (a wider preferred mask
  may exist).
* After the merge the single unit is allocated: the only check left that can fail is
  ``full-pcpus-only``'s SMT check, applied here as well; a zone that holds the request leaves
  the memory manager no reason to extend the mask, and no earlier unit left reusable resources.
* A ``single-numa-node`` refusal names what the general model names: the hinted resources no
  single zone holds, or all of them when each fits somewhere but never together. When memory
  fits no single zone, the memory manager may still have wider masks (or none at all, which the
  Topology Manager reads as "no preference"): the general model decides that case.

The memory manager's groups forbid some single-zone masks, so a node that publishes groups takes
the general path, as do refusals under ``restricted`` (for the best merged hint they name). The
property test ``tests/consumer/test_kubelet_filter.py`` checks the fast path against the general
model.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection
from typing import cast

from rte.consumer.lowerbound import admitted_on_any_larger, is_lower_bound
from rte.consumer.numaview import NumaView, Thresholds
from rte.consumer.requests import PreparedPod, kubelet_units, units_key
from rte.consumer.verdict import FilterCode, FilterResult
from rte.model.admission.admit import Admission, UnitAdmission, admit_pod
from rte.model.admission.masks import popcount, to_ids
from rte.model.admission.node import NodeResources, node_resources
from rte.model.admission.reasons import TOPOLOGY_AFFINITY_ERROR, listing, request_text, smt_reason
from rte.model.admission.units import AdmissionUnit
from rte.model.topology_manager import POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE

_NODE_KEY = "admission-node"


def node_of(view: NumaView) -> NodeResources:
    """The admission model's node for ``view``, built on first use."""
    node = view.local.get(_NODE_KEY)
    if node is None:
        zones = []
        for i, numa_id in enumerate(view.ids):
            available = view.zone_available[i]
            capacity = view.zone_capacity[i] if view.zone_capacity else available
            allocatable = view.zone_allocatable[i] if view.zone_allocatable else available
            zones.append(
                (
                    numa_id,
                    {r: (capacity.get(r, a), allocatable.get(r, a), a) for r, a in available.items()},
                )
            )
        distances = {
            view.ids[i]: {view.ids[j]: d for j, d in enumerate(row)} for i, row in enumerate(view.distances)
        }
        node = view.local[_NODE_KEY] = node_resources(zones, view.facts, distances)
    return node  # type: ignore[return-value]


def checked_allocatable(prep: PreparedPod) -> tuple[str, ...]:
    """The resources the pod requests that a node's allocatable must name (in the order checked),
    memoised on the pod; ``cpu``, ``memory``, ``pods`` and ``ephemeral-storage`` always count as
    named."""
    names = prep.memo.get("checked-allocatable")
    if names is None:
        names = prep.memo["checked-allocatable"] = tuple(
            dict.fromkeys(i.name for r in prep.init + prep.app for i in r.nonzero if not i.always_allocatable)
        )
    return names  # type: ignore[return-value]


def not_allocatable(prep: PreparedPod, allocatable: Collection[str]) -> str | None:
    """Why the node cannot take the pod at all (a requested resource it does not name), or None."""
    for name in checked_allocatable(prep):
        if name not in allocatable:
            return f"{name} is not allocatable on the node"
    return None


def kubelet_filter(prep: PreparedPod, view: NumaView, allocatable: Collection[str] | None) -> FilterResult:
    """Filter ``prep`` on ``view`` by the kubelet's admission rules."""
    if allocatable is not None:
        missing = not_allocatable(prep, allocatable)
        if missing:
            return FilterResult(FilterCode.UNSCHEDULABLE, missing)
    return admitted_on(prep, view)


def admitted_on(prep: PreparedPod, view: NumaView) -> FilterResult:
    """The kubelet's verdict on ``view`` (the node-allocatable check aside), memoised per view on
    the pod so that Score reads what Filter found."""
    cached = prep.memo.get(view)  # views hash by identity
    if cached is not None:
        return cached  # type: ignore[return-value]
    facts = view.facts
    key = view.local.get("units-key")
    if key is None:
        key = view.local["units-key"] = units_key(facts)
    units = cast("tuple[AdmissionUnit, ...] | None", prep.memo.get(key))
    if units is None:
        units = kubelet_units(prep, facts, cast("tuple[object, ...]", key))
    result = None
    if len(units) == 1 and (facts.policy == POLICY_SINGLE_NUMA_NODE or facts.policy == POLICY_RESTRICTED):
        result = fast_verdict(prep, view, units[0])
    if result is None:
        node = node_of(view)
        # A reserve cache's view only bounds the kubelet from below (rte.consumer.lowerbound).
        result = result_of(
            admitted_on_any_larger(node, units) if is_lower_bound(view) else admit_pod(node, units), view
        )
    prep.memo[view] = result
    return result


def result_of(admission: Admission, view: NumaView) -> FilterResult:
    """The FilterResult of a model verdict."""
    if not admission.admitted:
        return FilterResult(FilterCode.UNSCHEDULABLE, admission.reason, admission=admission)
    masks = admission.unit_masks((1 << len(view.ids)) - 1)
    placements = tuple(
        (u.name, view.ids[m.bit_length() - 1] if m is not None and popcount(m) == 1 else None)
        for u, m in zip(admission.units, masks, strict=True)
    )
    zones = {m for m in masks if m is not None}
    numa_id = None
    if len(zones) == 1:
        (mask,) = zones
        if popcount(mask) == 1:
            numa_id = view.ids[mask.bit_length() - 1]
    return FilterResult(FilterCode.SUCCESS, admission.reason, numa_id, placements, admission)


def fast_verdict(prep: PreparedPod, view: NumaView, unit: AdmissionUnit) -> FilterResult | None:
    """The fast path (see the module docstring); None where the general model must decide."""
    facts = view.facts
    if unit.shared_pool_error or facts.memory_groups or len(unit.parts) > 1:
        return None
    if facts.policy == POLICY_RESTRICTED and facts.prefer_closest_numa:
        return None
    cpus, memory_items, device_items = unit.cpus, unit.memory_items, unit.device_items
    thresholds = view.thresholds
    every = (1 << len(view.ids)) - 1
    fit = every
    hinted = bool(cpus or memory_items)
    if cpus:
        fit &= _holding(thresholds.get("cpu"), cpus)
    memory = every
    for memory_type, amount in memory_items:
        if amount:
            memory &= _holding(thresholds.get(memory_type), amount)
    fit &= memory
    for resource, amount in device_items:
        if resource not in view.resource_names and resource not in facts.unknown_numa_devices:
            continue  # no topology: no hint
        hinted = True
        if amount:
            fit &= _holding(thresholds.get(resource), amount)
    if not hinted:
        return None
    if not fit:
        if facts.policy == POLICY_SINGLE_NUMA_NODE and (memory or not memory_items):
            return _refused(_zones_per_resource(view, cpus, memory_items, memory, device_items))
        return None  # wider masks to try, or memory no single zone holds: the general model decides
    smt = cpus and facts.full_pcpus_only and facts.threads_per_core is not None
    if smt and smt_reason(cpus, facts.threads_per_core or 1, facts.available_physical_cpus, unit, False):
        return None
    position = (fit & -fit).bit_length() - 1
    return _success(prep, view, unit, position)


def _zones_per_resource(
    view: NumaView,
    cpus: int,
    memory_items: tuple[tuple[str, int], ...],
    memory: int,
    device_items: tuple[tuple[str, int], ...],
) -> list[tuple[str, int, int]]:
    """(resource, amount, zones holding it alone) of every hinted resource, in the order the
    general model lists them (cpu, memory types, devices)."""
    every = (1 << len(view.ids)) - 1
    out = [("cpu", cpus, _holding(view.thresholds.get("cpu"), cpus))] if cpus else []
    out += [(t, q, memory) for t, q in memory_items]  # one mask for all memory types
    for resource, amount in device_items:
        if resource in view.resource_names or resource in view.facts.unknown_numa_devices:
            zones = _holding(view.thresholds.get(resource), amount) if amount else every
            out.append((resource, amount, zones))
    return out


def _refused(hinted: list[tuple[str, int, int]]) -> FilterResult:
    """``single-numa-node`` refusing one unit: the resources no single zone holds are named (all
    of them when each fits somewhere, but never together), as the general model names them."""
    alone = [(r, q) for r, q, zones in hinted if not zones] or [(r, q) for r, q, _ in hinted]
    what = listing([request_text(r, q) for r, q in alone])
    reason = f"{POLICY_SINGLE_NUMA_NODE}: no single NUMA zone holds {what}"
    return FilterResult(
        FilterCode.UNSCHEDULABLE, reason, admission=Admission(False, reason, TOPOLOGY_AFFINITY_ERROR)
    )


def _holding(table: Thresholds | None, amount: int) -> int:
    """The zones (positions) whose available amount is at least ``amount``."""
    if table is None:
        return 0
    values, masks = table
    return masks[bisect_left(values, amount)]


def fits_zone_reason(numa_id: int) -> str:
    """The verdict on a pod admitted to one zone."""
    return f"fits NUMA zone {numa_id}"


def _success(prep: PreparedPod, view: NumaView, unit: AdmissionUnit, position: int) -> FilterResult:
    numa_id = view.ids[position]
    key = (id(unit), numa_id, position, len(view.ids) == 1)  # the unit is memoised: its id is stable
    cached = prep.memo.get(key)
    if isinstance(cached, FilterResult):
        return cached
    mask: int | None = 1 << position
    if len(view.ids) == 1 and view.facts.policy == POLICY_SINGLE_NUMA_NODE:
        mask = None  # the whole machine: single-numa-node drops the mask (policy_single_numa_node.go)
    ids = None if mask is None else to_ids(mask, view.ids)
    admitted = UnitAdmission(unit.name, unit.kind, mask, ids, True, True)
    reason = fits_zone_reason(numa_id)
    placements = ((unit.name, numa_id),)
    result = FilterResult(
        FilterCode.SUCCESS, reason, numa_id, placements, Admission(True, reason, "", (admitted,))
    )
    prep.memo[key] = result
    return result
