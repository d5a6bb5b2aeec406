"""The Topology Manager's merge of the providers' hints, and its four policies.

kubernetes/kubernetes ``pkg/kubelet/cm/topologymanager/policy.go`` takes one hint per resource in
every combination (``iterateAllProviderTopologyHints``), merges each combination
(``mergePermutation``: the AND of the masks, preferred only when every hint is preferred *and*
all their masks are equal) and keeps the best (``HintMerger.compare``):

* a preferred hint beats a non-preferred one;
* between preferred hints, the narrower mask (fewer zones, then the smaller value), or with
  ``prefer-closest-numa-nodes`` (never under ``single-numa-node``) the closer one among equally
  wide masks (``NUMAInfo.Closest`` in ``numa_info.go``);
* between non-preferred hints, the one whose width is closest to ``BestNonPreferredAffinityCount``
  (the widest of the providers' narrowest hints): exactly that width first, then narrower ones
  (wider of them first), then wider ones (narrower first); ties as between preferred hints.

That comparison is a total order on distinct masks, so the best does not depend on the order of
the combinations, and it can be found without walking every combination: the preferred merged
masks are the masks every resource prefers, and the non-preferred ones are the non-empty ANDs of
one mask per resource. ``best-effort`` and ``none`` admit whatever wins (``policy_best_effort.go``,
``policy_none.go``), ``restricted`` only a preferred hint (``policy_restricted.go``),
``single-numa-node`` first keeps only single-zone preferred hints and "no preference", then admits
a preferred winner (``policy_single_numa_node.go``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rte.model.admission.hints import ANY, NONE, ResourceHints
from rte.model.admission.masks import is_complete, mean_distance, popcount
from rte.model.topology_manager import POLICY_BEST_EFFORT, POLICY_NONE, POLICY_SINGLE_NUMA_NODE

Hint = tuple[int | None, bool]
"""(mask or None for "no preference", preferred)."""


@dataclass(frozen=True, slots=True)
class MergedHint:
    """The winner of the merge and the policy's verdict on it."""

    mask: int | None
    """The merged mask over positions; None when the policy drops it (``single-numa-node`` turns
    the all-zones mask into "no affinity")."""
    preferred: bool
    admit: bool
    known: bool = True
    """False when the winner is non-preferred on a node of more zones than the model enumerates
    every mask of: the mask is then all the zones, the kubelet's is some mask within it."""


def hint_list(hints: ResourceHints) -> list[Hint]:
    """``filterProvidersHints``: a resource's hints as the merge iterates them."""
    if hints.kind == ANY:
        return [(None, True)]
    if hints.kind == NONE:
        return [(None, False)]
    return [(m, m in hints.preferred) for m in hints.masks]


def single_numa_only(hints: list[Hint]) -> list[Hint]:
    """``filterSingleNumaHints``: "no preference" and preferred single-zone hints only."""
    return [(m, p) for m, p in hints if p and (m is None or popcount(m) == 1)]


MaskOrder = Callable[[int], tuple[float, ...]]
"""A sort key over masks: the smaller, the better."""


def mask_order(prefer_closest: bool, distances: Sequence[Sequence[int]]) -> MaskOrder:
    """A sort key: smaller is better (``CompareNUMAAffinityMasks``)."""
    if prefer_closest:
        return lambda m: (popcount(m), mean_distance(m, distances), m)
    return lambda m: (popcount(m), m)


def merge_hints(
    resources: Iterable[ResourceHints],
    policy: str,
    all_zones: int,
    *,
    prefer_closest: bool = False,
    distances: Sequence[Sequence[int]] = (),
) -> MergedHint:
    """Merge the hints of one unit's resources and apply ``policy``."""
    lists = [hint_list(h) for h in resources]
    single = policy == POLICY_SINGLE_NUMA_NODE
    if single:
        lists = [single_numa_only(hints) for hints in lists]
    order = mask_order(prefer_closest and not single, distances)
    best = _best_preferred(lists, all_zones, order)
    known = True
    if best is not None:
        mask, preferred = best, True
    elif is_complete(all_zones):
        mask, preferred = _best_non_preferred(lists, all_zones, order), False
    else:
        # The ANDs of one mask per resource, over thousands of masks each, are too many to list;
        # which one wins decides only the allocation (best-effort) or the words of a refusal.
        mask, preferred, known = all_zones, False, False
    admit = preferred or policy in (POLICY_NONE, POLICY_BEST_EFFORT)
    if single and mask == all_zones:
        return MergedHint(None, preferred, admit, known)
    return MergedHint(mask, preferred, admit, known)


def preferred_masks(lists: Sequence[list[Hint]], all_zones: int) -> set[int] | None:
    """The masks a fully preferred combination can merge to; None when there is none."""
    common: set[int] | None = None
    for hints in lists:
        if not hints:
            return None  # no combination at all
        if hints == [(None, True)]:
            continue  # "no preference" pairs with any mask
        masks = {m for m, p in hints if p and m is not None}
        if not masks:
            return None
        common = masks if common is None else common & masks
        if not common:
            return None
    return {all_zones} if common is None else common


def _best_preferred(lists: Sequence[list[Hint]], all_zones: int, order: MaskOrder) -> int | None:
    masks = preferred_masks(lists, all_zones)
    if not masks:
        return None
    return min(masks, key=order)


def _best_non_preferred(lists: Sequence[list[Hint]], all_zones: int, order: MaskOrder) -> int:
    if any(not hints for hints in lists):
        return all_zones  # no combination: the merger's default, {all zones} not preferred
    target = 0  # BestNonPreferredAffinityCount: the widest of the narrowest hints
    merged = {all_zones}
    for hints in lists:
        widths = [popcount(m) for m, _ in hints if m is not None]
        if widths:
            target = max(target, min(widths))
        options = {all_zones if m is None else m for m, _ in hints}
        merged = {a & b for a in merged for b in options if a & b}
    if not merged:
        return all_zones

    def rank(mask: int) -> tuple[int, int, tuple[float, ...]]:
        width = popcount(mask)
        if width == target:
            return (0, 0, order(mask))
        if width < target:
            return (1, -width, order(mask))
        return (2, 0, order(mask))

    return min(merged, key=rank)
