"""LeastNUMANodes: prefer nodes where the pod needs the fewest NUMA zones (KEP 454).

For each request, try zone sets of growing size k; within one size, sets come in the kubelet's
preference order (lexicographic over ascending NUMA ids). A set fits when the summed
``available`` of its zones covers every non-zero request. Among the fitting sets of the smallest
size, one with the minimum average distance of that size wins at once (and earns a bonus);
otherwise the fitting set with the smallest average distance is used, without bonus.

The average distance of a set S is ``sum(cost(i->j) for i, j in S x S) / |S|^2`` (self distances
included, 255 where a cost is missing), computed in float32 as the reference does, so that
equality with the minimum behaves identically. The score is
``100 - count * step (+ step // 2 with the bonus)``, ``step = 100 // maxNUMANodes``.

Where the reference is wrong we differ, deliberately:

* Container scope subtracts each placed request from the chosen zones by their real ids (the
  reference indexes its zone list with the ids, which mis-subtracts or crashes on sparse ids).
* A resource missing from a zone counts as 0 there instead of disqualifying every set that
  contains the zone, so a pod that also requests ``ephemeral-storage`` (published in no zone,
  satisfied at host level) is scored instead of always getting 0.
* Scores are clamped to 0..100 (the reference goes negative with more zones than maxNUMANodes).
* The search is bounded: sizes whose score could only be 0 are not explored, and a size with more
  than :data:`MAX_COMBINATIONS` sets (only possible beyond 16 zones) ends the search with "no fit".
"""

from __future__ import annotations

import itertools
import math
import struct
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence

from rte.consumer.nodescore import MAX_SCORE
from rte.consumer.numaview import MISSING_DISTANCE, NumaView, Thresholds, make_thresholds
from rte.consumer.requests import Item, PreparedPod, Request
from rte.consumer.verdict import FilterResult
from rte.model.admission.masks import positions
from rte.model.quantity import Amount

MAX_COMBINATIONS = 1 << 16
"""Largest number of zone sets examined for one size (every size of a 16-zone node fits)."""

_F32 = struct.Struct("f")

Combo = tuple[int, ...]


def float32(value: float) -> float:
    """Round a double to the nearest float32 (ties to even), as Go's float32 conversion does."""
    return float(_F32.unpack(_F32.pack(value))[0])


def average_distance(distances: Sequence[Sequence[int]], combo: Combo) -> float:
    """The float32 mean distance over every ordered pair of the set, self pairs included."""
    total = sum(distances[i][j] for i in combo for j in combo)
    # float32(a) / float32(b) rounded to float32: dividing in double first is exact enough
    # (53 >= 2 * 24 + 2 bits), so the result equals Go's float32 division.
    return float32(float32(float(total)) / float32(float(len(combo) ** 2)))


def combination_table(view: NumaView, size: int) -> tuple[float, tuple[tuple[Combo, float], ...]]:
    """(minimum average distance, every set of ``size`` positions with its average), memoised."""
    key = ("least-numa-combinations", size)
    cached = view.memo.get(key)
    if cached is None:
        entries = tuple(
            (combo, average_distance(view.distances, combo))
            for combo in itertools.combinations(range(len(view.ids)), size)
        )
        minimum = min([float(MISSING_DISTANCE), *(d for _, d in entries)])
        cached = (minimum, entries)
        view.memo[key] = cached
    return cached  # type: ignore[return-value]


def normalize(count: int, is_min: bool, max_numa_nodes: int) -> int:
    """The reference's normalisation, clamped to 0..100."""
    step = MAX_SCORE // max_numa_nodes
    score = MAX_SCORE - count * step + (step // 2 if is_min else 0)
    return max(0, min(MAX_SCORE, score))


def _widest_useful(max_numa_nodes: int, zones: int) -> int:
    """The largest set size that can still score above 0."""
    step = MAX_SCORE // max_numa_nodes
    if step == 0:
        return zones
    return min(zones, (MAX_SCORE + step // 2 - 1) // step)


def _constraints(req: Request, guaranteed: bool, view: NumaView) -> list[Item] | None:
    """The items that must be covered by a set's sums; None when no set can ever fit."""
    out = []
    for item in req.nonzero:
        if item.affine and not guaranteed:
            continue  # shared pool: always suitable
        if item.name not in view.resource_names:
            if item.host_level:
                continue  # satisfied at host level, no NUMA affinity
            return None
        out.append(item)
    return out


class _Zones:
    """Working availability for one pod: the view's rows, copied on the first subtraction."""

    def __init__(self, view: NumaView) -> None:
        self.view = view
        self.rows: Mapping[str, Sequence[Amount]] = view.available
        self.thresholds: Mapping[str, Thresholds] = view.thresholds
        self._rows: dict[str, list[Amount]] | None = None
        self._thresholds: dict[str, Thresholds] = {}

    def subtract(self, req: Request, combo: Combo) -> None:
        """Greedily consume each request from the chosen zones, lowest id first, clamping at 0."""
        if self._rows is None:
            self._rows = {name: list(row) for name, row in self.view.available.items()}
            self.rows = self._rows
            self.thresholds = self._thresholds = dict(self.view.thresholds)
        for item in req.nonzero:
            row = self._rows.get(item.name)
            if row is None:
                continue
            remaining: Amount = item.amount
            for position in combo:
                available = row[position]
                if remaining >= available:
                    remaining = remaining - available
                    row[position] = 0
                else:
                    row[position] = available - remaining
                    remaining = 0
                if remaining == 0:
                    break
            self._thresholds[item.name] = make_thresholds(row, self.view.present[item.name])


def _narrowest_possible(items: list[Item], rows: Mapping[str, Sequence[Amount]]) -> int | None:
    """A lower bound on the set size: for each item, the fewest largest zones that cover it."""
    lower = 1
    for item in items:
        covered: Amount = 0
        for used, available in enumerate(sorted(rows[item.name], reverse=True), start=1):
            covered = covered + available
            if covered >= item.amount:
                lower = max(lower, used)
                break
        else:
            return None
    return lower


def _fits(items: list[Item], rows: Mapping[str, Sequence[Amount]], combo: Combo) -> bool:
    for item in items:
        row = rows[item.name]
        total = row[combo[0]]
        for position in combo[1:]:
            total = total + row[position]
        if total < item.amount:
            return False
    return True


def _pick(
    entries: tuple[tuple[Combo, float], ...], minimum: float, fits: Callable[[Combo], bool]
) -> tuple[Combo | None, bool]:
    """The first fitting set at minimum distance, else the fitting set with the smallest distance."""
    best: Combo | None = None
    best_distance = 256.0  # the reference's starting point: sets averaging more are never picked
    for combo, distance in entries:
        if not fits(combo):
            continue
        if distance == minimum:
            return combo, True
        if distance < best_distance:
            best, best_distance = combo, distance
    return best, False


def _single_zone_table(view: NumaView) -> tuple[int, tuple[tuple[float, int], ...]]:
    """Size-1 sets, memoised: (mask of zones at minimum distance, (distance, position) in pick order).

    A lone zone's average distance is its self cost, so picking among single zones needs no
    combination walk: the minimum-distance zones are a mask, the rest an ordered list.
    """
    key = "least-numa-single"
    cached = view.memo.get(key)
    if cached is None:
        minimum, entries = combination_table(view, 1)
        at_minimum = sum(1 << combo[0] for combo, d in entries if d == minimum)
        # Sorted by distance then position: the first fitting entry is what _pick would keep.
        ordered = tuple(sorted((d, combo[0]) for combo, d in entries))
        cached = (at_minimum, ordered)
        view.memo[key] = cached
    return cached  # type: ignore[return-value]


def _pick_single(view: NumaView, fitting: int) -> tuple[Combo | None, bool]:
    at_minimum, ordered = _single_zone_table(view)
    hit = fitting & at_minimum
    if hit:
        return ((hit & -hit).bit_length() - 1,), True
    for distance, position in ordered:
        if distance >= 256.0:
            break  # the reference never picks a set averaging 256 or more
        if fitting >> position & 1:
            return (position,), False
    return None, False


def numa_nodes_required(
    view: NumaView,
    items: list[Item],
    thresholds: Mapping[str, Thresholds],
    rows: Mapping[str, Sequence[Amount]],
    widest: int,
) -> tuple[Combo | None, bool]:
    """The set the kubelet would pick for ``items`` and whether it has minimum distance."""
    fitting = -1  # zones that hold every item on their own
    for item in items:
        values, masks = thresholds[item.name]
        fitting &= masks[bisect_left(values, item.amount)]
    if fitting:
        combo, is_min = _pick_single(view, fitting)
        if combo is not None:
            return combo, is_min
    narrowest = _narrowest_possible(items, rows)
    if narrowest is None:
        return None, False
    count = len(view.ids)
    for size in range(max(narrowest, 2), widest + 1):
        if math.comb(count, size) > MAX_COMBINATIONS:
            return None, False
        minimum, entries = combination_table(view, size)
        combo, is_min = _pick(entries, minimum, lambda combo: _fits(items, rows, combo))
        if combo is not None:
            return combo, is_min
    return None, False


def least_numa_score(prep: PreparedPod, view: NumaView) -> int:
    """LeastNUMANodes score of a (Guaranteed) pod on a node, 0..100."""
    tm = view.tm
    names = view.resource_names
    guaranteed = prep.guaranteed
    widest = _widest_useful(tm.max_numa_nodes, len(view.ids))
    if tm.pod_scope:
        requests: tuple[Request, ...] = (prep.pod_request,)
    else:
        requests = prep.init + prep.app  # the order the Topology Manager asks for hints
    zones: _Zones | None = None  # working copy, made on the first subtraction
    widest_seen = 0
    all_min = True
    last = requests[-1] if requests else None
    for req in requests:
        if names.isdisjoint(req.names):
            continue  # nothing NUMA-bound requested: needs no zone
        items = _constraints(req, guaranteed, view)
        if items is None:
            return 0
        combo, is_min = numa_nodes_required(
            view,
            items,
            zones.thresholds if zones else view.thresholds,
            zones.rows if zones else view.available,
            widest,
        )
        if combo is None:
            return 0
        widest_seen = max(widest_seen, len(combo))
        all_min = all_min and is_min
        if req is not last:  # nothing reads the zones after the last container
            zones = zones or _Zones(view)
            zones.subtract(req, combo)
    if widest_seen == 0:
        return MAX_SCORE
    return normalize(widest_seen, all_min, tm.max_numa_nodes)


def kubelet_least_numa_score(result: FilterResult, view: NumaView) -> int:
    """LeastNUMANodes by the kubelet's rules: the zones counted are those of the merged hint each
    unit was admitted with (the widest counts), and the bonus goes to a pod whose every mask has
    the minimum average distance among the masks of its width."""
    admission = result.admission
    every = (1 << len(view.ids)) - 1
    masks = [m for m in admission.unit_masks(every) if m is not None] if admission else []
    if not masks:
        return MAX_SCORE
    if len(masks) == 1 and masks[0].bit_count() == 1:  # the usual pod: one zone
        at_minimum, _ = _single_zone_table(view)
        return normalize(1, bool(masks[0] & at_minimum), view.tm.max_numa_nodes)
    widest = max(m.bit_count() for m in masks)
    count = len(view.ids)
    all_min = True
    for mask in masks:
        size = mask.bit_count()
        if math.comb(count, size) > MAX_COMBINATIONS:
            all_min = False
            continue
        minimum, _ = combination_table(view, size)
        all_min = all_min and average_distance(view.distances, tuple(positions(mask))) == minimum
    return normalize(widest, all_min, view.tm.max_numa_nodes)
