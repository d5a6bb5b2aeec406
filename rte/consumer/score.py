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
the mean and a pod requesting nothing scores 100 (the reference divides by zero); every score is
clamped to 0..100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rte.consumer.least_numa import least_numa_score
from rte.consumer.numaview import NumaView
from rte.consumer.requests import PreparedPod, Request, as_prepared
from rte.errors import ConfigError
from rte.model.pod import Pod

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


def _allocated_zone_scores(req: Request, view: NumaView, strategy: ScoringStrategy, most: bool) -> list[int]:
    zones = len(view.ids)
    totals = [0] * zones
    weight_sum = 0
    for item in req.items:
        weight = strategy.weight(item.name)
        weight_sum += weight
        row = view.available.get(item.name)
        if row is None:
            continue  # no zone has it: every zone scores 0 for this resource
        ceil_row = view.ceil_available[item.name]
        amount, ceil_amount = item.amount, item.ceil
        for i in range(zones):
            available = row[i]
            if available == 0 or amount > available:
                continue
            ceil_available = ceil_row[i]
            if most:
                totals[i] += ceil_amount * MAX_SCORE // ceil_available * weight
            else:
                totals[i] += (ceil_available - ceil_amount) * MAX_SCORE // ceil_available * weight
    return [total // weight_sum for total in totals]


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


def _balanced_zone_scores(req: Request, view: NumaView) -> list[int]:
    zones = len(view.ids)
    fractions: list[list[float]] = [[] for _ in range(zones)]
    over = [False] * zones
    for item in req.items:
        ceil_row = view.ceil_available.get(item.name)
        requested = float(item.ceil)
        for i in range(zones):
            available = ceil_row[i] if ceil_row is not None else 0
            fraction = 1.0 if available == 0 else requested / float(available)
            if fraction > 1:
                over[i] = True
            fractions[i].append(fraction)
    scores = []
    for i in range(zones):
        if over[i]:
            scores.append(0)
        else:
            scores.append(int((1 - sample_variance(fractions[i])) * MAX_SCORE))
    return scores


def _request_score(req: Request, view: NumaView, strategy: ScoringStrategy) -> int:
    """The smallest non-zero zone score (0 when no zone scores)."""
    if strategy.type == BALANCED_ALLOCATION:
        zone_scores = _balanced_zone_scores(req, view)
    else:
        zone_scores = _allocated_zone_scores(req, view, strategy, strategy.type == MOST_ALLOCATED)
    return min((s for s in zone_scores if s), default=0)


def _clamp(score: int) -> int:
    return max(MIN_SCORE, min(MAX_SCORE, score))


def score_node(
    pod: Pod | PreparedPod,
    view: NumaView | None,
    strategy: ScoringStrategy = DEFAULT_STRATEGY,
    *,
    fresh: bool = True,
) -> int:
    """Score one pod on one node (0..100). ``view`` None: the node has no NRT."""
    prep = as_prepared(pod)
    if not prep.guaranteed:
        return MAX_SCORE
    if not fresh or view is None:
        return MIN_SCORE
    if strategy.type == LEAST_NUMA_NODES:
        return _clamp(least_numa_score(prep, view))
    if not view.tm.single_numa_node:
        return MIN_SCORE
    if view.tm.pod_scope:
        if not prep.pod_request.items:
            return MAX_SCORE
        return _clamp(_request_score(prep.pod_request, view, strategy))
    scores = [_request_score(req, view, strategy) for req in prep.init + prep.app if req.items]
    if not scores:
        return MAX_SCORE
    return _clamp(sum(scores) // len(scores))
