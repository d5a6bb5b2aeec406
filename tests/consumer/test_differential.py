"""The optimised Filter and Score agree with a slow, literal transcription of the reference rules.

The production code works on precomputed bitmasks, bisection indexes and flat rows; the
transcriptions below follow the reference's filter.go and score.go (kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/``) step by step on plain dicts (with the
documented fixes: real ids, negative available as 0, no NaN, clamping). Random nodes and pods,
from a fixed seed, include sparse and unsorted ids, fractional quantities, negative and missing
resources, devices, init containers and sidecars.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from rte.consumer.least_numa import float32
from rte.consumer.numaview import build_view
from rte.consumer.requests import is_host_level
from rte.consumer.score import (
    ScoringStrategy,
)
from rte.consumer.strategies import BALANCED_ALLOCATION, LEAST_ALLOCATED, LEAST_NUMA_NODES, MOST_ALLOCATED
from rte.model.exclusive import is_native_resource, is_numa_affine
from rte.model.pod import Pod, effective_request
from rte.model.quantity import Amount, ceil_value, parse_quantity
from tests.helpers.consumer import container, pod, topology
from tests.helpers.consumer import reference_filter as filter_node
from tests.helpers.consumer import reference_score as score_node

DEV = "vendor.com/nic"
Zones = dict[int, dict[str, Amount]]


def _random_case(rng: random.Random) -> tuple[dict[int, dict[str, str | int]], Pod, str]:
    ids = rng.sample(range(12), rng.randint(1, 5))  # sparse and in random (published) order
    zones: dict[int, dict[str, str | int]] = {}
    for i in ids:
        res: dict[str, str | int] = {}
        if rng.random() < 0.95:
            res["cpu"] = rng.choice([0, 1, 2, 4, 8, "1500m", "2500m", -1])
        if rng.random() < 0.9:
            res["memory"] = rng.choice([0, 2**30, 4 * 2**30, 8 * 2**30, "3Gi"])
        if rng.random() < 0.4:
            res[DEV] = rng.choice([0, 1, 2, -1])
        zones[i] = res

    def requests() -> dict[str, str | int]:
        req: dict[str, str | int] = {"cpu": rng.choice([1, 2, 3, "500m", "1500m", 0])}
        req["memory"] = rng.choice([2**30, 2 * 2**30, 0])
        if rng.random() < 0.3:
            req[DEV] = rng.choice([1, 2, 0])
        if rng.random() < 0.1:
            req["ephemeral-storage"] = 2**30
        return req

    guaranteed = rng.random() < 0.7
    apps = [container(f"a{i}", requests(), guaranteed=guaranteed) for i in range(rng.randint(1, 3))]
    inits = [
        container(f"i{i}", requests(), guaranteed=guaranteed, sidecar=rng.random() < 0.3)
        for i in range(rng.randint(0, 2))
    ]
    return zones, pod(*apps, init=inits), rng.choice(["container", "pod"])


def _model(zones: dict[int, dict[str, str | int]]) -> Zones:
    """Zones by id with exact available amounts, negatives read as 0."""
    return {i: {r: max(parse_quantity(q), 0) for r, q in z.items()} for i, z in zones.items()}


# --- literal Filter -------------------------------------------------------------------------------


def _suitable(guaranteed: bool, r: str, q: Amount, avail: Amount) -> bool:
    return (not guaranteed and is_numa_affine(r)) or avail >= q


def _check(zones: Zones, req: dict[str, Amount], guaranteed: bool) -> int | bool | None:
    """Lowest fitting id, None when unconstrained, False when nothing fits."""
    candidates = set(zones)
    constrained = False
    for r, q in req.items():
        if q == 0:
            continue
        listed = [i for i in zones if r in zones[i]]
        if not listed and is_host_level(r):
            continue
        constrained = True
        candidates &= {i for i in listed if _suitable(guaranteed, r, q, zones[i][r])}
        if not candidates:
            return False
    return min(candidates) if constrained else None


def _literal_filter(zones: Zones, p: Pod, scope: str) -> bool:
    guaranteed = p.qos_class == "Guaranteed"
    if p.qos_class == "BestEffort" and all(
        is_native_resource(r) for c in p.containers + p.init_containers for r in c.requests
    ):
        return True
    if scope == "pod":
        return _check(zones, effective_request(p), guaranteed) is not False
    for c in p.init_containers:
        if _check(zones, dict(c.requests), guaranteed) is False:
            return False
    work = {i: dict(z) for i, z in zones.items()}
    for c in p.containers:
        where = _check(work, dict(c.requests), guaranteed)
        if where is False:
            return False
        if where is None:
            continue
        for r, q in c.requests.items():
            if q and r in work[where] and not (not guaranteed and is_numa_affine(r)):
                work[where][r] -= q
    return True


# --- literal Score ----------------------------------------------------------------------------


def _gonum_variance(values: list[float]) -> float:
    """gonum's stat.Variance (unweighted): sequential sums, corrected two-pass, N-1."""
    mean = 0.0
    for v in values:
        mean += v
    mean /= len(values)
    squares = 0.0
    compensation = 0.0
    for v in values:
        squares += (v - mean) * (v - mean)
        compensation += v - mean
    return (squares - compensation * compensation / len(values)) / (len(values) - 1)


def _zone_score(kind: str, req: dict[str, Amount], zone: dict[str, Amount], weights: dict[str, int]) -> int:
    if kind == BALANCED_ALLOCATION:
        fractions = []
        for r, q in sorted(req.items()):
            a = ceil_value(zone.get(r, 0))
            f = 1.0 if a == 0 else float(ceil_value(q)) / float(a)
            if f > 1:
                return 0
            fractions.append(f)
        if len(fractions) < 2:
            return 100
        return int((1 - _gonum_variance(fractions)) * 100)
    total = weight_sum = 0
    for r, q in req.items():
        weight = max(weights.get(r, 1), 1)
        weight_sum += weight
        a = zone.get(r, 0)
        if a == 0 or q > a:
            continue
        ca, cq = ceil_value(a), ceil_value(q)
        total += (cq * 100 // ca if kind == MOST_ALLOCATED else (ca - cq) * 100 // ca) * weight
    return total // weight_sum


def _resource_score(kind: str, zones: Zones, req: dict[str, Amount], weights: dict[str, int]) -> int:
    scores = [_zone_score(kind, req, z, weights) for z in zones.values()]
    return min((s for s in scores if s), default=0)


def _literal_score(
    kind: str, zones: Zones, p: Pod, scope: str, costs: dict[int, dict[int, int]], weights: dict[str, int]
) -> int:
    if p.qos_class != "Guaranteed":
        return 100
    if kind == LEAST_NUMA_NODES:
        return _literal_least_numa(zones, p, scope, costs)
    if scope == "pod":
        req = effective_request(p)
        return _resource_score(kind, zones, req, weights) if req else 100
    reqs = [dict(c.requests) for c in p.init_containers + p.containers if c.requests]
    if not reqs:
        return 100
    return sum(_resource_score(kind, zones, r, weights) for r in reqs) // len(reqs)


def _avg(combo: tuple[int, ...], costs: dict[int, dict[int, int]]) -> float:
    total = sum(costs.get(i, {}).get(j, 255) for i in combo for j in combo)
    return float32(float32(total) / float32(len(combo) ** 2))


def _required(
    zones: Zones, req: dict[str, Amount], costs: dict[int, dict[int, int]]
) -> tuple[tuple[int, ...] | None, bool]:
    ids = sorted(zones)
    need = {}
    for r, q in req.items():
        if q == 0:
            continue
        if not any(r in z for z in zones.values()) and is_host_level(r):
            continue
        need[r] = q
    for k in range(1, len(ids) + 1):
        combos = list(itertools.combinations(ids, k))
        minimum = min([255.0, *(_avg(c, costs) for c in combos)])
        best, best_d = None, 256.0
        for c in combos:
            if all(sum(zones[i].get(r, 0) for i in c) >= q for r, q in need.items()):
                d = _avg(c, costs)
                if d == minimum:
                    return c, True
                if d < best_d:
                    best, best_d = c, d
        if best is not None:
            return best, False
    return None, False


def _literal_least_numa(zones: Zones, p: Pod, scope: str, costs: dict[int, dict[int, int]]) -> int:
    step = 100 // 8
    names = {r for z in zones.values() for r in z}

    def norm(count: int, is_min: bool) -> int:
        return max(0, 100 - count * step + (step // 2 if is_min else 0))

    if scope == "pod":
        req = effective_request(p)
        if not names & set(req):
            return 100
        combo, is_min = _required(zones, req, costs)
        return 0 if combo is None else norm(len(combo), is_min)
    work = {i: dict(z) for i, z in zones.items()}
    widest, all_min = 0, True
    for c in p.init_containers + p.containers:
        if not names & set(c.requests):
            continue
        combo, is_min = _required(work, dict(c.requests), costs)
        if combo is None:
            return 0
        widest, all_min = max(widest, len(combo)), all_min and is_min
        for r, q in c.requests.items():
            left: Amount = q
            for i in combo:
                if left == 0:
                    break
                a = work[i].get(r)
                if a is None:
                    continue
                used = min(a, left)
                work[i][r], left = a - used, left - used
    return 100 if widest == 0 else norm(widest, all_min)


CASES = 300


@pytest.mark.parametrize("seed", range(3))
def test_filter_agrees_with_a_literal_transcription(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(CASES):
        zones, p, scope = _random_case(rng)
        view = build_view(topology(zones, scope=scope))
        assert filter_node(p, view).fits == _literal_filter(_model(zones), p, scope), (zones, p, scope)


@pytest.mark.parametrize("kind", [MOST_ALLOCATED, LEAST_ALLOCATED, BALANCED_ALLOCATION, LEAST_NUMA_NODES])
def test_scores_agree_with_a_literal_transcription(kind: str) -> None:
    rng = random.Random(kind)
    strategy = ScoringStrategy(kind, {})
    for _ in range(CASES):
        zones, p, scope = _random_case(rng)
        costs = {i: {j: 10 if i == j else rng.choice([11, 20, 21, 32]) for j in zones} for i in zones}
        view = build_view(topology(zones, scope=scope, costs=costs))
        expected = _literal_score(kind, _model(zones), p, scope, costs, {})
        assert score_node(p, view, strategy) == expected, (zones, p, scope, costs)


# Wide requests (the telco shape: cpu, memory, hugepages and several devices) on wide nodes,
# with weights and quantities past 2**53, where float conversion starts to round.
_WIDE = ("cpu", "memory", "hugepages-1Gi", DEV, "vendor.com/gpu", "vendor.com/fpga")


def _wide_case(rng: random.Random) -> tuple[dict[int, dict[str, str | int]], Pod, str, dict[str, int]]:
    scale = rng.choice([1, 2**40, 2**60])
    zones: dict[int, dict[str, str | int]] = {}
    for i in rng.sample(range(64), rng.randint(1, 8)):
        zones[i] = {r: rng.randrange(0, 9) * scale + rng.randrange(0, 3) for r in _WIDE if rng.random() < 0.9}
    names = rng.sample(_WIDE, rng.randint(1, len(_WIDE)))
    apps = [
        container(f"a{k}", {r: rng.randrange(0, 5) * scale + rng.randrange(0, 2) for r in names})
        for k in range(rng.randint(1, 2))
    ]
    weights = {r: rng.choice([-1, 0, 1, 2, 5]) for r in _WIDE if rng.random() < 0.5}
    return zones, pod(*apps), rng.choice(["container", "pod"]), weights


@pytest.mark.parametrize("kind", [MOST_ALLOCATED, LEAST_ALLOCATED, BALANCED_ALLOCATION])
def test_wide_weighted_requests_agree_with_a_literal_transcription(kind: str) -> None:
    rng = random.Random(f"wide-{kind}")
    for _ in range(CASES):
        zones, p, scope, weights = _wide_case(rng)
        view = build_view(topology(zones, scope=scope))
        expected = _literal_score(kind, _model(zones), p, scope, {}, weights)
        assert score_node(p, view, ScoringStrategy(kind, weights)) == expected, (zones, p, scope, weights)


def test_the_random_cases_cover_the_interesting_shapes() -> None:
    rng = random.Random(0)
    cases = [_random_case(rng) for _ in range(CASES)]
    assert any(p.qos_class == "Guaranteed" for _, p, _ in cases)
    assert any(any(c.is_sidecar for c in p.init_containers) for _, p, _ in cases)
    assert any(
        isinstance(q, Fraction) for _, p, _ in cases for c in p.containers for q in c.requests.values()
    )
    assert any(list(z) != sorted(z) for z, _, _ in cases)
    fits = [filter_node(p, build_view(topology(z, scope=s))).fits for z, p, s in cases]
    assert 0.2 < sum(fits) / len(fits) < 0.9
