"""Score: rank the nodes that passed Filter, 0 (worst) to 100 (best).

Gating, as the reference (reference-consumer.md §4.1): a pod that is not Guaranteed scores 100
everywhere; a node without a (fresh) NRT scores 0; LeastNUMANodes scores under any policy, the
other strategies score 0 unless the policy is ``single-numa-node``.

MostAllocated, LeastAllocated and BalancedAllocation score each zone against a request and keep
the smallest non-zero zone score (the kubelet may pick the worst zone that fits). Pod scope
scores the pod's effective request; container scope averages (truncating) the scores of the
init and app containers, with nothing subtracted in between. Arithmetic uses
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

from collections.abc import Mapping
from dataclasses import dataclass, field

from rte.consumer.least_numa import least_numa_score
from rte.consumer.numaview import NumaView
from rte.consumer.requests import PreparedPod, Request, as_prepared
from rte.errors import ConfigError
from rte.model.pod import Pod
from rte.model.quantity import Amount

MAX_SCORE = 100
MIN_SCORE = 0

MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
BALANCED_ALLOCATION = "BalancedAllocation"
LEAST_NUMA_NODES = "LeastNUMANodes"
STRATEGIES = (MOST_ALLOCATED, LEAST_ALLOCATED, BALANCED_ALLOCATION, LEAST_NUMA_NODES)
DEFAULT_WEIGHTS: Mapping[str, int] = {"cpu": 1, "memory": 1}


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """The plugin's ``scoringStrategy``: a type and per-resource weights."""

    type: str = LEAST_ALLOCATED
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


def _allocated_score(weighted: Weighted, view: NumaView, most: bool) -> int:
    """Most/LeastAllocated: the smallest non-zero zone score (0 when no zone scores)."""
    items, weight_sum = weighted
    available, ceil_available = view.available, view.ceil_available
    if len(items) == 2 and weight_sum == 2:
        totals = _two_integral_rows(items, available, ceil_available, most)
        if totals is not None:
            return _lowest_zone_score(totals, weight_sum)
    columns = []
    # Per resource, one flat comprehension over the zones (this is the hot loop): a zone with
    # nothing, or less than requested, scores 0 for the resource. Scores add up per zone.
    for name, amount, ceil_amount, weight in items:
        row = available.get(name)
        if row is None:
            continue  # no zone lists it: every zone scores 0 for this resource
        crow = ceil_available[name]
        if crow is row:  # integral row: available is its own rounded-up value
            if most:
                top = ceil_amount * MAX_SCORE
                column = [top // a if a and amount <= a else 0 for a in row]
            else:
                column = [(a - ceil_amount) * MAX_SCORE // a if a and amount <= a else 0 for a in row]
        elif most:
            top = ceil_amount * MAX_SCORE
            column = [top // c if a and amount <= a else 0 for a, c in zip(row, crow, strict=True)]
        else:
            column = [
                (c - ceil_amount) * MAX_SCORE // c if a and amount <= a else 0
                for a, c in zip(row, crow, strict=True)
            ]
        if weight != 1:
            column = [x * weight for x in column]
        columns.append(column)
    if not columns:
        return 0
    totals = columns[0]
    for column in columns[1:]:  # pairwise sums: cheaper than zip(*columns) for the usual 2-3 rows
        totals = [t + x for t, x in zip(totals, column, strict=True)]
    return _lowest_zone_score(totals, weight_sum)


def _lowest_zone_score(totals: list[int], weight_sum: int) -> int:
    # Zone score = total // weight_sum; floor is monotone, so the smallest non-zero zone score
    # is the smallest total that reaches weight_sum, divided once.
    lowest = min(totals)
    if lowest < weight_sum:
        lowest = min([t for t in totals if t >= weight_sum], default=0)
    return lowest // weight_sum


def _two_integral_rows(
    items: tuple[tuple[str, Amount, int, int], ...],
    available: Mapping[str, tuple[Amount, ...]],
    ceil_available: Mapping[str, tuple[int, ...]],
    most: bool,
) -> list[int] | None:
    """Zone totals for the common request (cpu and memory, weight 1 each) in one pass.

    Same arithmetic as the general loop, fused into a single comprehension over both rows; None
    when the shortcut does not apply (a missing or fractional row), so the caller falls back.
    """
    (name0, amount0, ceil0, _), (name1, amount1, ceil1, _) = items
    row0, row1 = available.get(name0), available.get(name1)
    if row0 is None or row1 is None or ceil_available[name0] is not row0 or ceil_available[name1] is not row1:
        return None
    if most:
        top0, top1 = ceil0 * MAX_SCORE, ceil1 * MAX_SCORE
        return [
            (top0 // a if a and amount0 <= a else 0) + (top1 // b if b and amount1 <= b else 0)
            for a, b in zip(row0, row1, strict=True)
        ]
    return [
        ((a - ceil0) * MAX_SCORE // a if a and amount0 <= a else 0)
        + ((b - ceil1) * MAX_SCORE // b if b and amount1 <= b else 0)
        for a, b in zip(row0, row1, strict=True)
    ]


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


def _balanced_score(req: Request, view: NumaView) -> int:
    """BalancedAllocation: the smallest non-zero zone score (0 when no zone scores)."""
    zones = len(view.ids)
    columns = []
    for item in req.items:
        ceil_row = view.ceil_available.get(item.name)
        requested = float(item.ceil)
        if ceil_row is None:
            columns.append([1.0] * zones)  # available 0 counts as fully used
        else:
            columns.append([requested / float(c) if c else 1.0 for c in ceil_row])
    best = 0
    if len(columns) == 2:
        # The common cpu+memory request: sample_variance's exact operation sequence, inlined.
        for x, y in zip(columns[0], columns[1], strict=True):
            if x > 1 or y > 1:
                continue  # the zone cannot hold the request: score 0
            mean = (x + y) / 2
            dx, dy = x - mean, y - mean
            compensation = dx + dy
            score = int((1 - ((dx * dx + dy * dy) - compensation * compensation / 2)) * MAX_SCORE)
            if score and (not best or score < best):
                best = score
        return best
    for fractions in zip(*columns, strict=True):
        if max(fractions) > 1:
            continue
        score = int((1 - sample_variance(list(fractions))) * MAX_SCORE)
        if score and (not best or score < best):
            best = score
    return best


def _clamp(score: int) -> int:
    return max(MIN_SCORE, min(MAX_SCORE, score))


class Scorer:
    """Scores one prepared pod on many nodes with one strategy; build it once per pod.

    Everything that depends on the pod and the strategy only (QoS gating, weights, which
    containers count) is settled here, so a call does per-node work only.
    """

    __slots__ = ("_containers", "_kind", "_most", "_pod", "_prep", "strategy")

    def __init__(self, pod: Pod | PreparedPod, strategy: ScoringStrategy = DEFAULT_STRATEGY) -> None:
        prep = as_prepared(pod)
        self._prep = prep
        self.strategy = strategy
        self._kind = strategy.type
        self._most = strategy.type == MOST_ALLOCATED
        self._pod = (prep.pod_request, _weigh(prep.pod_request, strategy)) if prep.pod_request.items else None
        # Empty requests are left out of the container mean (the reference divides by zero).
        self._containers = tuple((req, _weigh(req, strategy)) for req in prep.init + prep.app if req.items)

    def __call__(self, view: NumaView | None, *, fresh: bool = True) -> int:
        """The score (0..100) on the node with ``view`` (None: the node has no NRT)."""
        prep = self._prep
        if not prep.guaranteed:
            return MAX_SCORE
        if not fresh or view is None:
            return MIN_SCORE
        kind = self._kind
        if kind == LEAST_NUMA_NODES:
            return _clamp(least_numa_score(prep, view))
        tm = view.tm
        if not tm.single_numa_node:
            return MIN_SCORE
        if tm.pod_scope:
            if self._pod is None:
                return MAX_SCORE
            req, weighted = self._pod
            if kind == BALANCED_ALLOCATION:
                return _clamp(_balanced_score(req, view))
            return _clamp(_allocated_score(weighted, view, self._most))
        containers = self._containers
        if not containers:
            return MAX_SCORE
        total = 0
        if kind == BALANCED_ALLOCATION:
            for req, _ in containers:
                total += _balanced_score(req, view)
        else:
            most = self._most
            for _, weighted in containers:
                total += _allocated_score(weighted, view, most)
        return _clamp(total // len(containers))


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
