"""Score: rank the nodes that passed Filter, 0 (worst) to 100 (best).

Gating, as the reference (kubernetes-sigs/scheduler-plugins ``pkg/noderesourcetopology/score.go``):
a pod that is not Guaranteed scores 100 everywhere; a node without a (fresh) NRT scores 0;
LeastNUMANodes scores under any policy. The other strategies score 0 unless the policy is
``single-numa-node`` (reference rules) or unless it is ``none`` (kubelet rules: every other policy
chooses NUMA zones, which the score then rates).

MostAllocated, LeastAllocated and BalancedAllocation rate a request against zones. By the
reference rules, every zone is scored and the smallest non-zero zone score is kept (the kubelet
may pick the worst zone that fits); by the kubelet rules, the zones scored are those the
admission model chose: the merged hint each unit was admitted with, its zones' availability
pooled (a unit with nothing to align keeps the reference's rule). Pod scope scores the pod's
request (the reference's effective request, or the kubelet's, without overhead); container scope
averages (truncating) the scores of the init and app containers. Arithmetic uses
``Quantity.Value()`` (rounded up), while "does it fit" compares exactly.

Per resource, for a zone with ``a`` available and a request of ``q``:

* MostAllocated: ``q * 100 // a``; LeastAllocated: ``(a - q) * 100 // a``; both 0 when the zone
  has nothing or too little, combined as a weighted mean (integer division). Weights below 1 and
  unlisted resources weigh 1.
* BalancedAllocation (unweighted): ``int((1 - sample_variance(q / a)) * 100)``, a fraction being 1
  where ``a`` is 0 and any fraction above 1 making the zone score 0.

Fixed reference bugs, each pinned by a test: a request with a single resource gets a variance of
0 (the reference divides by zero and gets NaN); a container with an empty request is left out of
the mean and a pod requesting nothing scores 100 (the reference divides by zero); zones with
sparse or unsorted ids are scored (the reference indexes a slice with the id and can crash);
every score is clamped to 0..100.

For many nodes, build a :class:`Scorer` once per pod; :func:`score_node` is the one-shot form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rte.consumer.kubelet_filter import admitted_on
from rte.consumer.least_numa import kubelet_least_numa_score, least_numa_score
from rte.consumer.nodescore import MAX_SCORE, MIN_SCORE
from rte.consumer.numaview import NumaView
from rte.consumer.requests import PreparedPod, Request, as_prepared
from rte.consumer.strategies import (
    BALANCED_ALLOCATION,
    DEFAULT_STRATEGY_NAME,
    DEFAULT_WEIGHTS,
    LEAST_ALLOCATED,
    LEAST_NUMA_NODES,
    MOST_ALLOCATED,
    STRATEGIES,
)
from rte.errors import ConfigError
from rte.model.admission.masks import positions
from rte.model.pod import Pod
from rte.model.quantity import Amount, ceil_value
from rte.model.topology_manager import POLICY_NONE


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """The plugin's ``scoringStrategy``: a type and per-resource weights."""

    type: str = DEFAULT_STRATEGY_NAME
    weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))

    def __post_init__(self) -> None:
        if self.type not in STRATEGIES:
            raise ConfigError("scoringStrategy.type", f"{self.type!r} is not one of {', '.join(STRATEGIES)}")

    def weight(self, resource: str) -> int:
        """The weight of ``resource``: the configured one if at least 1, else 1."""
        value = self.weights.get(resource, 1)
        return value if value >= 1 else 1


DEFAULT_STRATEGY = ScoringStrategy()


Weighted = tuple[tuple[tuple[str, Amount, int, int], ...], int]
"""(name, amount, rounded-up amount, weight) per requested resource, and the weight sum."""


def _weigh(req: Request, strategy: ScoringStrategy) -> Weighted:
    items = tuple((i.name, i.amount, i.ceil, strategy.weight(i.name)) for i in req.items)
    return items, sum(w for *_, w in items)


def _allocated_score(req: Request, weighted: Weighted, view: NumaView, most: bool) -> int:
    """Most/LeastAllocated: the smallest non-zero zone score (0 when no zone scores).

    Takes the Scorer's common argument list; only ``weighted`` and ``view`` matter here.
    """
    items, weight_sum = weighted
    available, ceil_available = view.available, view.ceil_available
    if len(items) == 2 and weight_sum == 2:
        lowest = _two_integral_rows(items, available, ceil_available, most)
        if lowest is not None:
            return lowest
    rows = []
    for name, amount, ceil_amount, weight in items:
        row = available.get(name)
        if row is not None:  # a resource no zone lists scores 0 everywhere: it adds nothing
            rows.append((row, ceil_available[name], amount, ceil_amount, weight))
    # Zone by zone, the weighted total of the per-resource scores; a zone with nothing, or less
    # than requested, scores 0 for the resource. Zone score = total // weight_sum and floor is
    # monotone, so the smallest non-zero zone score is the smallest total reaching weight_sum,
    # divided once.
    lowest = _NO_ZONE
    for zone in range(len(view.ids)):
        total = 0
        for row, ceil_row, amount, ceil_amount, weight in rows:
            a = row[zone]
            if a and amount <= a:
                c = ceil_row[zone]
                score = ceil_amount * MAX_SCORE // c if most else (c - ceil_amount) * MAX_SCORE // c
                total += score * weight
        if weight_sum <= total < lowest:
            lowest = total
    return 0 if lowest == _NO_ZONE else lowest // weight_sum


_NO_ZONE = 1 << 62  # above any zone total: "no zone scored yet"


def _two_integral_rows(
    items: tuple[tuple[str, Amount, int, int], ...],
    available: Mapping[str, tuple[Amount, ...]],
    ceil_available: Mapping[str, tuple[int, ...]],
    most: bool,
) -> int | None:
    """The node score for the common request (two resources of weight 1, e.g. cpu and memory).

    The general loop's arithmetic in one pass over both rows, keeping only the smallest zone
    total that reaches 2 (a non-zero zone score); None when the shortcut does not apply (a
    missing or fractional row), so the caller falls back to the general loop.
    """
    (name0, amount0, ceil0, _), (name1, amount1, ceil1, _) = items
    row0, row1 = available.get(name0), available.get(name1)
    if row0 is None or row1 is None or ceil_available[name0] is not row0 or ceil_available[name1] is not row1:
        return None
    lowest = _NO_ZONE
    if most:
        top0, top1 = ceil0 * MAX_SCORE, ceil1 * MAX_SCORE
        for a, b in zip(row0, row1, strict=True):
            total = (top0 // a if a and amount0 <= a else 0) + (top1 // b if b and amount1 <= b else 0)
            if 2 <= total < lowest:
                lowest = total
    else:
        for a, b in zip(row0, row1, strict=True):
            total = ((a - ceil0) * MAX_SCORE // a if a and amount0 <= a else 0) + (
                (b - ceil1) * MAX_SCORE // b if b and amount1 <= b else 0
            )
            if 2 <= total < lowest:
                lowest = total
    return 0 if lowest == _NO_ZONE else lowest // 2


def sample_variance(values: list[float]) -> float:
    """gonum's ``stat.Variance`` (corrected two-pass, N-1), but 0 for fewer than two values."""
    count = len(values)
    if count < 2:
        return 0.0  # one value has no spread; the reference divides by zero here
    mean = 0.0
    for v in values:
        mean += v
    mean /= count
    squares = 0.0
    compensation = 0.0
    for v in values:
        d = v - mean
        squares += d * d
        compensation += d
    return (squares - compensation * compensation / count) / (count - 1)


def balanced_zone_score(variance: float) -> int:
    """BalancedAllocation's score of a zone whose request fractions have ``variance``."""
    return int((1 - variance) * MAX_SCORE)


def _balanced_score(req: Request, weighted: Weighted, view: NumaView, most: bool) -> int:
    """BalancedAllocation: the smallest non-zero zone score (0 when no zone can hold the request).

    The zone score ``int((1 - v) * 100)`` is a chain of correctly rounded, monotone operations, so
    it never increases with the variance ``v``: the smallest zone score is the score of the
    largest variance, computed once. It is also never 0 for a zone that holds the request (every
    fraction in [0, 1] keeps a sample variance at most 0.5, a score at least 50), so "smallest
    non-zero" is "smallest over the zones that hold the request". Each variance itself is
    computed with gonum's exact operation sequence (see :func:`sample_variance`).

    Takes the Scorer's common argument list; only ``req`` and ``view`` matter here.
    """
    items = req.items
    ceil_available = view.ceil_available
    if len(items) == 2:
        row0, row1 = ceil_available.get(items[0].name), ceil_available.get(items[1].name)
        if row0 is not None and row1 is not None:
            # The common cpu+memory request: sample_variance's operation sequence, inlined.
            r0, r1 = float(items[0].ceil), float(items[1].ceil)
            worst = -1.0  # below any variance: no zone holds the request yet
            for c0, c1 in zip(row0, row1, strict=True):
                x = r0 / c0 if c0 else 1.0  # available 0 counts as fully used
                if x > 1:
                    continue
                y = r1 / c1 if c1 else 1.0
                if y > 1:
                    continue
                mean = (x + y) / 2
                dx, dy = x - mean, y - mean
                compensation = dx + dy
                variance = (dx * dx + dy * dy) - compensation * compensation / 2
                if variance > worst:
                    worst = variance
            return 0 if worst == -1.0 else balanced_zone_score(worst)
    # Any other request: zone by zone, the fractions, then gonum's variance sequence.
    zones = len(view.ids)
    rows = [(ceil_available.get(item.name) or (0,) * zones, float(item.ceil)) for item in items]
    worst = -1.0
    for zone in range(zones):
        fractions = []
        for row, requested in rows:
            c = row[zone]
            x = requested / c if c else 1.0  # available 0 (or unlisted) counts as fully used
            if x > 1:
                break  # the zone cannot hold the request
            fractions.append(x)
        else:
            variance = sample_variance(fractions)
            if variance > worst:
                worst = variance
    return 0 if worst == -1.0 else balanced_zone_score(worst)


ZoneScore = Callable[[Request, Weighted, NumaView, bool], int]
"""A zone-score function: (request, weighted request, view, most) -> the node's score."""

SCORE_FUNCTIONS: Mapping[str, tuple[ZoneScore, bool] | None] = {
    MOST_ALLOCATED: (_allocated_score, True),
    LEAST_ALLOCATED: (_allocated_score, False),
    BALANCED_ALLOCATION: (_balanced_score, False),
    LEAST_NUMA_NODES: None,  # scored over zone combinations: rte.consumer.least_numa
}
"""Each strategy of :mod:`rte.consumer.strategies` and how it scores a node's zones."""


def pooled_score(weighted: Weighted, view: NumaView, mask: int, most: bool, balanced: bool) -> int:
    """A strategy's score of one set of zones (``mask``, positions) holding a request together:
    their available amounts summed, then the per-zone arithmetic once."""
    if not mask & (mask - 1):
        return zone_score_at(weighted, view, mask.bit_length() - 1, most, balanced)
    items, weight_sum = weighted
    zones = positions(mask)
    available = view.available
    if balanced:
        fractions = []
        for name, _, ceil_amount, _ in items:
            row = available.get(name)
            capacity = ceil_value(sum(row[z] for z in zones)) if row is not None else 0
            fraction = ceil_amount / capacity if capacity else 1.0
            if fraction > 1:
                return MIN_SCORE
            fractions.append(fraction)
        return balanced_zone_score(sample_variance(fractions))
    total = 0
    for name, amount, ceil_amount, weight in items:
        row = available.get(name)
        pooled: Amount = sum(row[z] for z in zones) if row is not None else 0
        if pooled and amount <= pooled:
            c = ceil_value(pooled)
            score = ceil_amount * MAX_SCORE // c if most else (c - ceil_amount) * MAX_SCORE // c
            total += score * weight
    return total // weight_sum


def zone_score_at(weighted: Weighted, view: NumaView, zone: int, most: bool, balanced: bool) -> int:
    """:func:`pooled_score` of the single zone at position ``zone``: the hot path of the kubelet's
    rules, where most pods land on one zone."""
    items, weight_sum = weighted
    available, ceil_available = view.available, view.ceil_available
    if balanced:
        fractions = []
        for name, _, ceil_amount, _ in items:
            ceil_row = ceil_available.get(name)
            capacity = ceil_row[zone] if ceil_row is not None else 0
            fraction = ceil_amount / capacity if capacity else 1.0
            if fraction > 1:
                return MIN_SCORE
            fractions.append(fraction)
        return balanced_zone_score(sample_variance(fractions))
    total = 0
    for name, amount, ceil_amount, weight in items:
        row = available.get(name)
        if row is None:
            continue
        a = row[zone]
        if a and amount <= a:
            c = ceil_available[name][zone]
            total += (ceil_amount * MAX_SCORE // c if most else (c - ceil_amount) * MAX_SCORE // c) * weight
    return total // weight_sum


def _clamp(score: int) -> int:
    return score if MIN_SCORE <= score <= MAX_SCORE else (MIN_SCORE if score < MIN_SCORE else MAX_SCORE)


class Scorer:
    """Scores one prepared pod on many nodes with one strategy; build it once per pod.

    Everything that depends on the pod and the strategy only (QoS gating, weights, which
    containers count, which zone-score function applies) is settled here, so a call does
    per-node work only.
    """

    __slots__ = (
        "_balanced",
        "_constant",
        "_containers",
        "_least_numa",
        "_most",
        "_pod",
        "_prep",
        "_units",
        "_zone_score",
        "strategy",
    )

    def __init__(self, pod: Pod | PreparedPod, strategy: ScoringStrategy = DEFAULT_STRATEGY) -> None:
        prep = as_prepared(pod)
        self._prep = prep
        self.strategy = strategy
        # A pod that is not Guaranteed scores 100 whatever the node: no per-node work at all.
        self._constant: int | None = None if prep.guaranteed else MAX_SCORE
        zone_score = SCORE_FUNCTIONS[strategy.type]
        self._least_numa = zone_score is None
        self._zone_score: ZoneScore
        self._zone_score, self._most = zone_score or (_allocated_score, False)
        self._balanced = self._zone_score is _balanced_score
        self._pod = (prep.pod_request, _weigh(prep.pod_request, strategy)) if prep.pod_request.items else None
        # Empty requests are left out of the container mean (the reference divides by zero).
        self._containers = tuple((req, _weigh(req, strategy)) for req in prep.init + prep.app if req.items)
        # Kubelet rules: every container, in the order of the admission units.
        self._units = tuple((req, _weigh(req, strategy)) for req in prep.init + prep.app)

    def __call__(self, view: NumaView | None, *, fresh: bool = True) -> int:
        """The score (0..100) on the node with ``view`` (None: the node has no NRT)."""
        if self._constant is not None:
            return self._constant
        if view is None or not fresh:
            return MIN_SCORE
        if not self._prep.reference:
            return self._kubelet(view)
        if self._least_numa:
            return _clamp(least_numa_score(self._prep, view))
        tm = view.tm
        if not tm.single_numa_node:
            return MIN_SCORE
        if tm.pod_scope:
            if self._pod is None:
                return MAX_SCORE
            req, weighted = self._pod
            return _clamp(self._zone_score(req, weighted, view, self._most))
        containers = self._containers
        if len(containers) == 1:  # the usual shape: the mean of one score is that score
            req, weighted = containers[0]
            return _clamp(self._zone_score(req, weighted, view, self._most))
        if not containers:
            return MAX_SCORE
        total = 0
        zone_score, most = self._zone_score, self._most
        for req, weighted in containers:
            total += zone_score(req, weighted, view, most)
        return _clamp(total // len(containers))

    def _kubelet(self, view: NumaView) -> int:
        """Score by the kubelet's rules: the zones the admission model chose."""
        prep, tm = self._prep, view.tm
        if self._least_numa:
            if tm.policy == POLICY_NONE:  # no merged hint: KEP 454's own zone search
                return _clamp(least_numa_score(prep, view))
            return _clamp(kubelet_least_numa_score(admitted_on(prep, view), view))
        if tm.policy == POLICY_NONE:
            return MIN_SCORE
        admission = admitted_on(prep, view).admission
        if admission is not None and len(admission.units) == 1 and len(self._units) <= 1:
            # One unit (the usual pod, or pod scope): rate its zones directly.
            mask = admission.units[0].mask if admission.units[0].aligned else None
            if mask is None and admission.units[0].aligned:
                mask = (1 << len(view.ids)) - 1
            unit = self._pod if tm.pod_scope else (self._units[0] if self._units else None)
            if unit is None or not unit[0].items:
                return MAX_SCORE
            return _clamp(self._rate(unit[0], unit[1], view, mask))
        masks = admission.unit_masks((1 << len(view.ids)) - 1) if admission else []
        if tm.pod_scope:
            if self._pod is None:
                return MAX_SCORE
            req, weighted = self._pod
            return _clamp(self._rate(req, weighted, view, masks[0] if masks else None))
        total = count = 0
        for i, (req, weighted) in enumerate(self._units):
            if not req.items:
                continue
            total += self._rate(req, weighted, view, masks[i] if i < len(masks) else None)
            count += 1
        return _clamp(total // count) if count else MAX_SCORE

    def _rate(self, req: Request, weighted: Weighted, view: NumaView, mask: int | None) -> int:
        if mask is None:
            return self._zone_score(req, weighted, view, self._most)
        return pooled_score(weighted, view, mask, self._most, self._balanced)


def score_node(
    pod: Pod | PreparedPod,
    view: NumaView | None,
    strategy: ScoringStrategy = DEFAULT_STRATEGY,
    *,
    fresh: bool = True,
) -> int:
    """Score one pod on one node (0..100). ``view`` None: the node has no NRT.

    Convenience over :class:`Scorer`; with a prepared pod the scorer is cached on it.
    """
    if not isinstance(pod, PreparedPod):
        return Scorer(pod, strategy)(view, fresh=fresh)
    # Keyed by id; the cached scorer holds the strategy, so the id cannot be recycled meanwhile.
    scorer = pod.memo.get(id(strategy))
    if not isinstance(scorer, Scorer) or scorer.strategy is not strategy:
        scorer = pod.memo[id(strategy)] = Scorer(pod, strategy)
    return scorer(view, fresh=fresh)
