"""Filter on the reserve cache's lower bound, Score on its best estimate (rte.consumer.cache.estimate)."""

from __future__ import annotations

import random

import pytest

from rte.consumer.cache import estimate
from rte.consumer.cache.estimate import ScoreViewNodes
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.predict import ZoneCharge
from rte.consumer.changelog import MIN_KEPT, ChangeLog
from rte.consumer.cycle import evaluate_nodes, filter_nodes, score_columns, score_lookup
from rte.consumer.numaview import NumaView
from rte.consumer.requests import prepare_pod
from rte.consumer.score import Scorer
from rte.consumer.store import DELETED, MODIFIED
from rte.model.pod import Pod
from tests.consumer.test_reconcile import GIB, cache_with, cpus, nrt, pod, running


def estimated(cache: OverReserveCache, node: str = "n1") -> tuple[int, ...]:
    view = cache.score_views((node,)).get(node)
    if view is None:  # no view of its own: Score rates what Filter decides on
        return cpus(cache)
    return tuple(int(a) for a in view.available["cpu"])


def test_a_pod_on_its_way_is_estimated_on_the_zone_the_kubelet_picks() -> None:
    _, cache = cache_with(nrt((4, 4)))
    cache.reserve("n1", pod("p1", 2))
    assert cpus(cache) == (2, 2)  # Filter: either zone
    assert estimated(cache) == (2, 4)  # Score: the first zone that fits


def test_an_admitted_pod_is_estimated_on_its_zone_only() -> None:
    _, cache = cache_with(
        nrt((1, 4, 4), total=(4, 4, 4), memory=(16 * GIB,) * 3, total_memory=(16 * GIB,) * 3)
    )
    p1 = pod("p1", 2)
    cache.reserve("n1", p1)
    cache.on_pod_event(MODIFIED, running(p1))
    assert cpus(cache) == (0, 2, 4)  # Filter: zone 0 may have freed up meanwhile
    assert estimated(cache) == (1, 2, 4)


def test_pods_on_their_way_are_estimated_one_after_the_other_in_the_order_placed() -> None:
    _, cache = cache_with(nrt((4, 4)))
    cache.reserve("n1", pod("p1", 2))
    cache.reserve("n1", pod("p2", 3))
    assert cpus(cache) == (0, 0)
    assert estimated(cache) == (2, 1)  # p1 on zone 0, then p2 no longer fits there: zone 1


def test_a_node_without_reservations_has_no_score_view_of_its_own() -> None:
    _, cache = cache_with(nrt((4, 4)))
    assert cache.score_views() == {}
    p1 = pod("p1", 2)
    cache.reserve("n1", p1)
    assert set(cache.score_views()) == {"n1"}
    cache.unreserve("n1", p1)
    assert cache.score_views() == {}
    cache.reserve("n1", p1)
    cache.on_pod_event(DELETED, p1)  # a change seen through a pod event, not a call of ours
    assert cache.score_views() == {}


def test_filter_never_decides_on_the_score_view() -> None:
    # The estimate shows 4 CPUs free on zone 1, the lower bound 2: a 3-CPU pod must be refused,
    # however the cycle is driven. This fails if the estimate leaks into Filter.
    _, cache = cache_with(nrt((4, 4)))
    cache.reserve("n1", pod("p1", 2))
    big = prepare_pod(pod("big", 3, node=""))
    assert estimated(cache) == (2, 4)
    assert filter_nodes(big, ["n1"], cache).passed == []
    evaluation = evaluate_nodes(big, ["n1"], cache, Scorer(big))
    assert evaluation.filtered.passed == [] and evaluation.best() is None
    lookup = cache.get("n1")
    assert lookup.view is not None and lookup.view.available["cpu"] == (2, 2)


def test_score_rates_the_estimate_on_every_path() -> None:
    _, cache = cache_with(
        nrt((1, 4, 4), total=(4, 4, 4), memory=(16 * GIB,) * 3, total_memory=(16 * GIB,) * 3)
    )
    p1 = pod("p1", 2)
    cache.reserve("n1", p1)
    cache.on_pod_event(MODIFIED, running(p1))  # the bound (0, 2, 4), the estimate (1, 2, 4)
    small = prepare_pod(pod("small", 1, node=""))
    scorer = Scorer(small)
    lookup = cache.get("n1")
    on_estimate = scorer(score_lookup(cache, "n1", lookup).view)
    on_bound = scorer(lookup.view)
    assert on_estimate != on_bound  # the example must tell them apart
    evaluation = evaluate_nodes(small, ["n1"], cache, scorer)
    assert evaluation.scores.tolist() == [on_estimate]
    assert score_columns(small, ["n1"], cache, scorer).tolist() == [on_estimate]


def test_the_estimate_never_shows_less_than_the_lower_bound_and_is_exact_when_the_nrt_is() -> None:
    # Pods placed in order on a node whose NRT is exact, admitted in that order: the estimate is
    # what the kubelet will have (the simulator's oracle); the lower bound is never above it.
    for seed in range(60):
        rng = random.Random(seed)
        free = [rng.randint(2, 8), rng.randint(2, 8)]
        _, cache = cache_with(nrt(tuple(free), total=(8, 8)))
        placed: list[Pod] = []
        for i in range(rng.randint(1, 4)):
            p = pod(f"p{i}", rng.randint(1, 3))
            cpu = int(p.containers[0].requests["cpu"])
            zone = next((z for z in range(2) if free[z] >= cpu), None)
            if zone is None:
                break
            free[zone] -= cpu
            cache.reserve("n1", p)
            placed.append(p)
            if rng.random() < 0.5:
                cache.on_pod_event(MODIFIED, running(p))
        bound, estimate = cpus(cache), estimated(cache)
        assert all(b <= e for b, e in zip(bound, estimate, strict=True)), (seed, bound, estimate)
        assert estimate == tuple(free), (seed, estimate, free)


def test_the_nodes_to_check_come_from_the_change_logs_and_every_node_when_they_fall_behind() -> None:
    store, _ = cache_with(nrt((4, 4)))
    changes = ChangeLog()
    tracked = ScoreViewNodes()
    assert tracked.candidates(store, changes, ["gone-from-store"]) == {"n1", "gone-from-store"}
    tracked.nodes.clear()  # as the cache does when the nodes have no reservation
    assert tracked.candidates(store, changes, ["gone-from-store"]) == set()
    changes.note("n7")
    assert tracked.candidates(store, changes, []) == {"n7"}
    tracked.nodes.clear()
    for _ in range(MIN_KEPT + 1):  # the log drops what this reader has not read yet
        changes.note("n8")
    assert tracked.candidates(store, changes, ["n9"]) == {"n1", "n9"}


def test_the_admission_model_runs_once_per_pod_shape_and_state_on_a_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real = estimate.estimated_charge

    def counting(view: NumaView, p: Pod) -> ZoneCharge | None:
        calls.append(p.name)
        return real(view, p)

    monkeypatch.setattr(estimate, "estimated_charge", counting)
    _, cache = cache_with(nrt((4, 4)))
    cache.reserve("n1", pod("p1", 1))
    assert estimated(cache) == (3, 4) and calls == []  # alone on its way: the zone predicted at Reserve
    cache.reserve("n1", pod("p2", 1))  # beside p1: neither keeps a prediction, the model decides
    assert estimated(cache) == (2, 4) and calls == ["p1", "p2"]
    cache.unreserve("n1", pod("p2", 1))
    cache.reserve("n1", pod("p3", 1))  # p2's shape on the same state: remembered, as is p1's
    assert estimated(cache) == (2, 4) and calls == ["p1", "p2"]
    cache.reserve("n1", pod("p4", 2))  # another shape
    assert estimated(cache) == (0, 4) and calls == ["p1", "p2", "p4"]
