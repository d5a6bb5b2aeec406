"""Filter on a view that only bounds the kubelet from below: admit only what every larger state admits.

The reserve cache serves a view ``V`` that never shows more than the kubelet has free (``V <= T``
zone by zone, :mod:`rte.consumer.cache.reconcile`): pods that ended since the agent read the
kubelet, and pods charged on every zone while the kubelet gives them one, leave ``T`` larger.
For a pod made of one unit, more room never turns an admission into a refusal, so admitting on
``V`` is safe. For several units (container scope: init containers, sidecars, app containers) it
is not: the kubelet places each unit on the *first* mask, in its fixed order, that fits what the
earlier units left (kubernetes/kubernetes ``pkg/kubelet/cm/topologymanager/policy.go``), and a
regular init container's CPUs and devices must lie in every later container's mask
(cpumanager ``policy_static.go`` ``generateCPUTopologyHints``). With more room a unit may land
on an earlier zone, and the units after it must follow it there: the init container takes zone 0
because zone 0 has more free than ``V`` showed, and the app container, bound to zone 0, finds too
little. Admitting on ``V`` alone then makes a TopologyAffinityError.

:func:`admitted_on_any_larger` admits only when the kubelet admits on *every* state ``T >= V``.
Which masks each unit takes depends on ``T`` only through a *choice sequence* ``(c_1..c_k)``, and
for each unit the fit of a given mask is monotone in room. A sequence happens on some ``T`` only
if, for every unit ``i``, ``c_i`` fits what the earlier units left on ``T``; for a single-zone
``c_i`` that bounds ``T`` on that zone from below, so every ``T`` producing the sequence is at
least ``R``: ``V`` raised, zone by zone, just enough for each ``c_i`` to fit. ``R`` is the worst
case of every such ``T`` for the later units (least room, and every "an earlier mask did not fit"
condition holds on ``R`` if it holds on any such ``T``). So the search is:

* admit on ``V`` (a refusal is a refusal); for each unit ``j`` and each mask ``m`` the kubelet
  prefers to the one chosen (as wide, earlier in its order: only such a mask can be a preferred
  merged hint in its place) and that holds the pod's reusable zones, raise the state to the
  ``R`` of "the same choices before ``j``, then ``m``", capped at what the zone's capacity or
  allocatable allows (beyond it, no kubelet makes that choice), and admit again;
* if the admission on the raised state follows the same choices before ``j`` and takes ``m`` at
  ``j``, it is what the kubelet does on that ``R``: a refusal there refuses the node, an admission
  is searched further from unit ``j + 1``;
* if an earlier unit takes an earlier mask, or unit ``j`` a mask before ``m``, no ``T`` makes that
  sequence (each ``T`` of the sequence has at least the room of ``R``): the branch is skipped;
* anything else (unit ``j`` not taking ``m`` although raised for it, which count-only admission
  can cause when an earlier split was inexact, a multi-zone ``m``, or more than
  :data:`MAX_SCENARIOS` states) refuses the node: the search only ever errs toward refusing.

Only ``single-numa-node`` and ``restricted`` are searched (they refuse a pod whose units find no
preferred hint: the TopologyAffinityError the reserve cache exists to avoid); views that are not
lower bounds (a fresh NRT in ``rte fit``, the simulator's oracle) keep the plain verdict.
``tests/consumer/test_lowerbound.py`` admits pods on random larger states and checks that none
refuses what this module admits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rte.consumer.numaview import NumaView
from rte.model.admission.admit import Admission, admit_pod
from rte.model.admission.allocate import CountAllocator
from rte.model.admission.masks import candidate_masks, format_mask, popcount
from rte.model.admission.merge import MaskOrder, mask_order
from rte.model.admission.node import NodeResources, Working
from rte.model.admission.reasons import TOPOLOGY_AFFINITY_ERROR, unit_label
from rte.model.admission.units import AdmissionUnit
from rte.model.topology_manager import POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE

LOWER_BOUND = "lower-bound"
"""Key of :attr:`NumaView.local` set on views that only bound the kubelet's free resources."""
MAX_SCENARIOS = 64
"""The most raised states searched per pod and node; beyond it the node is refused."""


def mark_lower_bound(view: NumaView) -> NumaView:
    """Say that ``view`` never shows more than the kubelet has, and may show less."""
    view.local[LOWER_BOUND] = True
    return view


def is_lower_bound(view: NumaView) -> bool:
    return bool(view.local.get(LOWER_BOUND))


def needs_search(node: NodeResources, units: Sequence[AdmissionUnit]) -> bool:
    """Whether the verdict on a lower bound may differ from the verdict on more room: several
    units (each of one container) under a policy that refuses unaligned units."""
    policy = node.facts.policy
    return (
        len(units) > 1
        and policy in (POLICY_SINGLE_NUMA_NODE, POLICY_RESTRICTED)
        and not any(u.parts for u in units)
    )


class _Trace(CountAllocator):
    """The count allocator, keeping the working state each unit was hinted against."""

    # Splits charged on every zone they may touch: the packed order's split on this state is not
    # the kubelet's on a larger one (CountAllocator), and the search needs charges that stay below
    # the kubelet's whatever its room.
    exact_splits = False

    def __init__(self, node: NodeResources) -> None:
        self.states: list[Working] = [Working(node)]

    def take(self, working: Working, unit: AdmissionUnit, mask: int | None, memory_mask: int | None) -> None:
        super().take(working, unit, mask, memory_mask)
        self.states.append(working.copy())


def _traced(node: NodeResources, units: Sequence[AdmissionUnit]) -> tuple[Admission, _Trace]:
    trace = _Trace(node)
    return admit_pod(node, units, trace), trace


def admitted_on_any_larger(node: NodeResources, units: Sequence[AdmissionUnit]) -> Admission:
    """The admission on ``node`` if the kubelet admits the pod on every state with at least as
    much free, else a refusal naming the choice of the kubelet that refuses it (module docstring)."""
    if not needs_search(node, units):
        return admit_pod(node, units)
    first, trace = _traced(node, units)
    if not first.admitted:
        return first
    facts = node.facts
    order = mask_order(facts.prefer_closest_numa and facts.policy != POLICY_SINGLE_NUMA_NODE, node.distances)
    todo = [(node, 0, first, trace)]
    searched = 0
    while todo:
        state, start, admission, trace = todo.pop()
        chosen = [u.mask if u.aligned else None for u in admission.units]
        for j in range(start, len(units)):
            for m in _preferred_before(node, chosen[j], order):
                if popcount(m) > 1:
                    return _refusal(node, units[j], m, "the search does not raise several zones")
                raised = _raised(state, trace.states[j], units[j], m)
                if raised is None:
                    continue  # no kubelet has the room to make this choice
                searched += 1
                if searched > MAX_SCENARIOS:
                    return _refusal(node, units[j], m, f"more than {MAX_SCENARIOS} cases to search")
                outcome, again = _traced(raised, units)
                follows = _follows(outcome, chosen, j, m, order)
                if follows is None:
                    continue  # an earlier choice comes first: no state makes this sequence
                if not follows:
                    return _refusal(node, units[j], m, "count-only admission cannot follow it there")
                if not outcome.admitted:
                    return _refusal(node, units[j], m, outcome.reason)
                todo.append((raised, j + 1, outcome, again))
    return first


def _preferred_before(node: NodeResources, chosen: int | None, order: MaskOrder) -> list[int]:
    """Masks as wide as ``chosen`` that come before it in the merge's order (a preferred merged
    hint has the width every resource's ``minAffinitySize`` fixes)."""
    if chosen is None:
        return []
    key = order(chosen)
    width = popcount(chosen)
    return [m for m, size in candidate_masks(node.all_zones) if size == width and order(m) < key]


def _follows(
    outcome: Admission, chosen: Sequence[int | None], j: int, m: int, order: MaskOrder
) -> bool | None:
    """True when ``outcome`` makes the choices of ``chosen`` before ``j`` and ``m`` at ``j``; None
    when it first makes an earlier choice (then no state makes that sequence); False otherwise."""
    done = [u.mask if u.aligned else None for u in outcome.units]
    for i in range(j + 1):
        if i >= len(done):
            return False  # refused at or before unit j
        want = m if i == j else chosen[i]
        got = done[i]
        if got == want:
            continue
        if (
            got is not None
            and want is not None
            and popcount(got) == popcount(want)
            and order(got) < order(want)
        ):
            return None
        return False
    return True


def _raised(node: NodeResources, working: Working, unit: AdmissionUnit, mask: int) -> NodeResources | None:
    """``node`` with just enough more free on the single zone of ``mask`` for ``unit`` to fit it
    when hinted against ``working``; None when the pod's reusable resources lie outside ``mask``
    or the zone cannot hold that much."""
    z = mask.bit_length() - 1
    cpu = list(node.cpu_available)
    if unit.cpus:
        reuse_zones, reuse = working.cpu_reuse
        if reuse_zones & ~mask:
            return None
        cpu[z] += max(unit.cpus - reuse - working.cpu_free[z], 0)
        if cpu[z] > node.cpu_capacity[z]:
            return None
    memory = dict(node.memory)
    zero = (0,) * len(node.ids)
    for memory_type, request in unit.memory.items():
        allocatable, available = node.memory.get(memory_type, (zero, zero))
        free = working.mem_free.get(memory_type, list(zero))[z]
        short = request - working.mem_reuse.get((mask, memory_type), 0) - free
        if short > 0:
            if available[z] + short > allocatable[z]:
                return None
            memory[memory_type] = (allocatable, _plus(available, z, short))
    devices = dict(node.devices)
    for resource, count in unit.devices.items():
        rows = node.devices.get(resource)
        if rows is None:
            continue  # no topology: no hint, nothing to raise
        reuse_zones, reuse = working.dev_reuse.get(resource, (0, 0))
        if reuse_zones & ~mask:
            return None
        short = count - reuse - working.dev_free[resource][z]
        if short > 0:
            allocatable, available = rows
            if available[z] + short > allocatable[z]:
                return None
            devices[resource] = (allocatable, _plus(available, z, short))
    return replace(node, cpu_available=tuple(cpu), memory=memory, devices=devices)


def _plus(row: tuple[int, ...], z: int, amount: int) -> tuple[int, ...]:
    return (*row[:z], row[z] + amount, *row[z + 1 :])


def _refusal(node: NodeResources, unit: AdmissionUnit, mask: int, why: str) -> Admission:
    reason = (
        f"{TOPOLOGY_AFFINITY_ERROR}: with more free than the NRT and the reservations show, the"
        f" kubelet may place{unit_label(unit, True)} on NUMA {format_mask(mask, node.ids)}; then {why}"
    )
    return Admission(False, reason, TOPOLOGY_AFFINITY_ERROR)
