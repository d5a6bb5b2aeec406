"""Admission of one pod on one node, unit after unit, as the kubelet's Topology Manager runs it.

For each unit (:mod:`.units`): the providers' hints against what earlier units left (:mod:`.hints`),
the merge and the policy (:mod:`.merge`); a refused merge is a ``TopologyAffinityError``. Then,
for the unit (or, in pod scope, for each of its containers within the pod's mask), what the
managers' ``Allocate`` checks before allocating (kubernetes/kubernetes
``pkg/kubelet/cm/topologymanager/scope.go`` ``allocateAlignedResources``):

* the CPU manager's ``full-pcpus-only`` SMT check (cpumanager ``policy_static.go``
  ``enforceSMTAlignment``), when the node publishes its threads per core;
* enough free CPUs at all (``takeByTopology`` fails otherwise);
* a memory block mask: the merged mask if its free memory holds the request, else the best of the
  memory manager's own hints containing it, never one breaking its groups (memorymanager
  ``policy_static.go`` ``Allocate``, ``extendTopologyManagerHint``,
  ``isAffinityViolatingNUMAAllocations``);
* enough devices at all (devicemanager ``manager.go`` ``devicesToAllocate``);

and the allocation itself (:mod:`.allocate`). Policy ``none`` runs only the allocation steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rte.model.admission.allocate import Allocator, CountAllocator
from rte.model.admission.hints import ANY, ResourceHints, cpu_hints, device_hints, memory_hints
from rte.model.admission.masks import enumerated_width, is_narrower, popcount, positions, to_ids
from rte.model.admission.merge import merge_hints
from rte.model.admission.node import NodeResources, Working, sum_over
from rte.model.admission.reasons import (
    POLICY_NONE_ADMITTED,
    TOPOLOGY_AFFINITY_ERROR,
    UNEXPECTED_ADMISSION_ERROR,
    listing,
    policy_reason,
    request_text,
    smt_reason,
    success_reason,
    unit_label,
)
from rte.model.admission.units import KIND_POD, AdmissionUnit
from rte.model.topology_manager import POLICY_NONE, POLICY_SINGLE_NUMA_NODE


@dataclass(frozen=True, slots=True)
class UnitAdmission:
    """How one unit was admitted."""

    name: str
    kind: str
    mask: int | None
    """The merged hint over zone positions, what the managers allocate within; None: no affinity."""
    numa_ids: tuple[int, ...] | None
    """The same as NUMA ids."""
    preferred: bool
    aligned: bool
    """Some resource of the unit was hinted (not everything "no preference")."""


@dataclass(frozen=True, slots=True)
class Admission:
    """The kubelet's verdict on one pod."""

    admitted: bool
    reason: str
    error: str = ""
    """The kubelet's rejection reason class (``TopologyAffinityError``, ...); empty when admitted."""
    units: tuple[UnitAdmission, ...] = ()
    """The units admitted, in order (all of them when the pod is admitted)."""

    def unit_masks(self, every: int) -> list[int | None]:
        """Each unit's zones: its merged mask, ``every`` (all zones) where the merge ended with no
        affinity (single-numa-node on a one-zone node), None where the unit aligned nothing."""
        return [(every if u.mask is None else u.mask) if u.aligned else None for u in self.units]


_COUNT_ALLOCATOR = CountAllocator()


def unit_hints(working: Working, unit: AdmissionUnit, *, single_only: bool = False) -> list[ResourceHints]:
    """Every provider's hints for ``unit``; resources without preference are left out.
    ``single_only``: only the single-zone hints, all ``single-numa-node`` keeps of them."""
    out: list[ResourceHints] = []
    if unit.cpus:
        out.append(cpu_hints(working, unit.cpus, single_only=single_only))
    memory = memory_hints(working, unit.memory, single_only=single_only)
    if memory:
        out.extend(memory)
    out.extend(device_hints(working, r, q, single_only=single_only) for r, q in sorted(unit.devices.items()))
    return [h for h in out if h.kind != ANY]


def admit_pod(
    node: NodeResources, units: Sequence[AdmissionUnit], allocator: Allocator | None = None
) -> Admission:
    """Admit the pod made of ``units`` (:func:`~.units.pod_admission_units`) on ``node``.

    ``allocator`` performs the step between units (default: :class:`~.allocate.CountAllocator`).
    """
    facts = node.facts
    take = allocator or _COUNT_ALLOCATOR
    working = Working(node)
    named = len(units) > 1
    done: list[UnitAdmission] = []
    if facts.policy == POLICY_NONE:
        for unit in units:
            failure = _allocate(working, unit, None, False, take, unit_label(unit, named))
            if failure:
                return Admission(False, failure, failure.partition(":")[0], tuple(done))
            done.append(UnitAdmission(unit.name, unit.kind, None, None, False, False))
        return Admission(True, POLICY_NONE_ADMITTED, units=tuple(done))
    for unit in units:
        if unit.shared_pool_error:
            reason = f"{TOPOLOGY_AFFINITY_ERROR}: {unit.shared_pool_error}"
            return Admission(False, reason, TOPOLOGY_AFFINITY_ERROR)
        hints = unit_hints(working, unit, single_only=facts.policy == POLICY_SINGLE_NUMA_NODE)
        merged = merge_hints(
            hints,
            facts.policy,
            node.all_zones,
            prefer_closest=facts.prefer_closest_numa,
            distances=node.distances,
        )
        beyond = [h.resource for h in hints if h.beyond]
        if beyond and not _decided_by_listed_masks(merged.mask, merged.preferred, len(node.ids)):
            # Refused rather than guessed: the kubelet's preferred masks are wider than the model
            # lists on this many zones (masks.candidate_masks), so its verdict is unknown.
            reason = (
                f"{TOPOLOGY_AFFINITY_ERROR}: {listing(beyond)}{unit_label(unit, named)} would span more"
                f" than {enumerated_width(len(node.ids))} of {len(node.ids)} NUMA zones, more than rte"
                " enumerates"
            )
            return Admission(False, reason, TOPOLOGY_AFFINITY_ERROR, tuple(done))
        if not merged.admit:
            best = node.all_zones if merged.mask is None else merged.mask
            reason = policy_reason(facts.policy, unit, hints, best, node.ids, named)
            return Admission(False, reason, TOPOLOGY_AFFINITY_ERROR, tuple(done))
        if not merged.known:
            # The kubelet's mask is unknown: charge every zone from here on, memory included.
            working.exact = working.memory_exact = False
        for part in unit.parts or (unit,):
            label = unit_label(part if unit.kind == KIND_POD else unit, named or unit.kind == KIND_POD)
            failure = _allocate(working, part, merged.mask, merged.preferred, take, label)
            if failure:
                error = failure.partition(":")[0]
                return Admission(False, failure, error, tuple(done))
        ids = None if merged.mask is None else to_ids(merged.mask, node.ids)
        done.append(UnitAdmission(unit.name, unit.kind, merged.mask, ids, merged.preferred, bool(hints)))
    admitted = Admission(True, "", "", tuple(done))
    masks = dict(zip((u.name for u in done), admitted.unit_masks(node.all_zones), strict=True))
    pod_scope = bool(units) and units[0].kind == KIND_POD
    return Admission(True, success_reason(masks, node.ids, pod_scope), "", tuple(done))


def _decided_by_listed_masks(mask: int | None, preferred: bool, zones: int) -> bool:
    """Whether the merge over the listed masks is the kubelet's although some resource's
    preferred masks were not all listed. Every unlisted mask is wider than
    :func:`~.masks.enumerated_width` of the resource's zones (at least that of all ``zones``),
    and a merged hint is preferred only where every resource prefers that very mask
    (``mergePermutation``). So the kubelet's preferred merged masks are the listed ones plus
    masks wider than that width, and the narrowest wins (with ``prefer-closest-numa-nodes``
    too, width comes first): a preferred winner of at most that width wins in the kubelet
    as well. This is what keeps ``align-by-socket`` on nodes of many zones per socket usable:
    a hint within a socket of 12 zones is preferred at any width up to 12."""
    return preferred and mask is not None and popcount(mask) <= enumerated_width(zones)


def _allocate(
    working: Working, unit: AdmissionUnit, mask: int | None, preferred: bool, take: Allocator, where: str
) -> str:
    """Run the managers' pre-allocation checks for ``unit`` and allocate it; the failure, if any."""
    facts = working.node.facts
    if unit.cpus and facts.smt_checkable:
        assert facts.threads_per_core is not None
        failure = smt_reason(unit.cpus, facts.threads_per_core, working.physical_free, unit, False)
        if failure:
            return failure + where
    if unit.cpus:
        free = working.cpu_free_total + working.cpu_reuse[1]
        if unit.cpus > free:
            return f"{UNEXPECTED_ADMISSION_ERROR}: cpu={unit.cpus} but {free} CPUs are free{where}"
    memory_mask, failure = memory_block_mask(working, unit.memory, mask, preferred)
    if failure:
        return f"{UNEXPECTED_ADMISSION_ERROR}: memory manager: {failure}{where}"
    for resource, count in sorted(unit.devices.items()):
        total = device_total(working, resource)
        if total is not None and count > total:
            return f"{UNEXPECTED_ADMISSION_ERROR}: {resource}={count} but {total} are free{where}"
    take.take(working, unit, mask, memory_mask)
    return ""


def device_total(working: Working, resource: str) -> int | None:
    """Every free device of ``resource`` the pod may get, or None when the NRT does not know it."""
    node = working.node
    rows = working.dev_free.get(resource)
    if rows is None and resource not in node.facts.unknown_numa_devices:
        return None
    reuse = working.dev_reuse.get(resource, (0, 0))[1]
    outside = working.dev_unknown.get(resource, 0)
    if rows is not None:
        outside += node.facts.non_topology_devices.get(resource, 0)
    return working.dev_free_total.get(resource, 0) + outside + reuse


def _best_of(masks: Sequence[int], preferred: frozenset[int]) -> int:
    """memorymanager ``findBestHint``: preferred first, then the narrowest."""
    best = masks[0]
    for mask in masks[1:]:
        if (mask in preferred and best not in preferred) or (
            (mask in preferred) == (best in preferred) and is_narrower(mask, best)
        ):
            best = mask
    return best


def memory_block_mask(
    working: Working, request: Mapping[str, int], mask: int | None, preferred: bool
) -> tuple[int | None, str]:
    """The mask the memory manager allocates ``request`` in, given the Topology Manager's hint
    (``mask``, ``preferred``); or the reason it cannot."""
    if not request:
        return None, ""
    if mask is not None and _holds(working, request, mask):
        pass  # the merged mask holds the request: no default or extended hint to look for
    else:
        mask, failure = _wider_memory_mask(working, request, mask, preferred)
        if mask is None:
            return None, failure
    if _violates_groups(working, mask):
        return None, "the mask breaks a multi-NUMA memory group"
    return mask, ""


def _wider_memory_mask(
    working: Working, request: Mapping[str, int], mask: int | None, preferred: bool
) -> tuple[int | None, str]:
    """The memory manager's default hint (``mask`` None) or the extension of a merged mask that
    does not hold the request (``getDefaultHint``, ``extendTopologyManagerHint``)."""
    hints = memory_hints(working, request)
    masks = hints[0].masks if hints else ()
    best_preferred = hints[0].preferred if hints else frozenset()
    what = listing([request_text(r, q) for r, q in sorted(request.items())])
    if mask is None:
        if not masks:
            return None, f"no NUMA zone set has {what} free"
        default = _best_of(masks, best_preferred)
        if preferred and default not in best_preferred:
            return None, f"no preferred NUMA zone set has {what} free"
        mask, preferred = default, default in best_preferred
    if not _holds(working, request, mask):
        wider = [m for m in masks if m & mask == mask]
        if not wider:
            return None, f"no NUMA zone set containing the merged hint has {what} free"
        extended = _best_of(wider, best_preferred)
        if preferred and extended not in best_preferred:
            return None, f"no preferred NUMA zone set containing the merged hint has {what} free"
        mask = extended
    return mask, ""


def _holds(working: Working, request: Mapping[str, int], mask: int) -> bool:
    """``isAffinitySatisfyRequest``: the free memory of ``mask`` (reuse not counted) holds it."""
    count = len(working.node.ids)
    return all(sum_over(working.mem_free.get(t, [0] * count), mask) >= q for t, q in request.items())


def _violates_groups(working: Working, mask: int) -> bool:
    """``isAffinityViolatingNUMAAllocations``."""
    if popcount(mask) == 1:
        return False
    for z in positions(mask):
        if working.mem_used[z] and (popcount(working.mem_cells[z]) == 1 or working.mem_cells[z] != mask):
            return True
    return False
