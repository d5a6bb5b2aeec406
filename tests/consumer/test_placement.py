"""The reserve cache learns where a pod is from two NRTs and gives its room back when it ends."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from rte.consumer.cache import placement
from rte.consumer.cache.diagnosis import WAITING_FOR_AGENT
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.store import DELETED, MODIFIED, NRTStore
from rte.model.pod import Pod
from tests.consumer.test_reconcile import GIB, cache_with, cpus, nrt, pod, run_random_history, running


def test_a_pod_added_alone_between_two_nrts_is_placed_by_their_difference() -> None:
    p1 = running(pod("p1", 2))
    holds: dict[tuple[str, str], placement.ZoneCharge] = {}
    old = nrt((4, 4))
    new = nrt((4, 2), memory=(16 * GIB, 15 * GIB))
    placement.learn(holds, old, set(), new, {p1.key}, {p1.key: p1})
    assert holds == {p1.key: {1: {"cpu": 2, "memory": GIB}}}


@pytest.mark.parametrize(
    ("available", "memory", "why"),
    [
        ((3, 3), (15 * GIB, 16 * GIB), "split over two zones"),
        ((4, 1), (16 * GIB, 15 * GIB), "more than the pod's request: something else changed"),
        ((4, 3), (16 * GIB, 15 * GIB), "less than the pod's request"),
    ],
)
def test_a_difference_that_is_not_the_pod_s_request_on_one_zone_teaches_nothing(
    available: tuple[int, int], memory: tuple[int, int], why: str
) -> None:
    p1 = running(pod("p1", 2))
    holds: dict[tuple[str, str], placement.ZoneCharge] = {}
    placement.learn(holds, nrt((4, 4)), set(), nrt(available, memory=memory), {p1.key}, {p1.key: p1})
    assert holds == {}, why


def test_two_pods_added_together_or_a_dropped_pod_of_unknown_hold_teach_nothing() -> None:
    p1, p2, p3 = (running(pod(n, 1)) for n in ("p1", "p2", "p3"))
    live = {p.key: p for p in (p1, p2, p3)}
    holds: dict[tuple[str, str], placement.ZoneCharge] = {}
    two = nrt((3, 3), memory=(15 * GIB, 15 * GIB))
    placement.learn(holds, nrt((4, 4)), set(), two, {p1.key, p2.key}, live)
    assert holds == {}
    # p1 leaves and p3 comes: p1's hold is unknown, so the difference is not p3's alone.
    placement.learn(holds, two, {p1.key, p2.key}, two, {p2.key, p3.key}, live)
    assert holds == {}
    # With p1's hold known (zone 0), p3 took zone 0 where p1 was.
    holds[p1.key] = {0: {"cpu": 1, "memory": GIB}}
    placement.learn(holds, two, {p1.key, p2.key}, two, {p2.key, p3.key}, live)
    assert holds[p3.key] == {0: {"cpu": 1, "memory": GIB}}


def test_a_pod_of_both_sets_that_ended_meanwhile_may_have_given_room_back() -> None:
    p1, p2 = running(pod("p1", 1)), running(pod("p2", 1))
    holds: dict[tuple[str, str], placement.ZoneCharge] = {}
    after = nrt((4, 3), memory=(16 * GIB, 15 * GIB))
    placement.learn(holds, nrt((4, 4)), {p2.key}, after, {p1.key, p2.key}, {p1.key: p1})  # p2 not live
    assert holds == {}


def _learnt(cache_cpus: tuple[int, int] = (4, 4)) -> tuple[NRTStore, OverReserveCache, Pod]:
    """A cache on a node whose NRT then shows p1 on zone 1 (learnt), and p1."""
    p1 = pod("p1", 2)
    store, cache = cache_with(nrt(cache_cpus))
    cache.reserve("n1", p1)
    cache.on_pod_event(MODIFIED, p1)
    cache.on_pod_event(MODIFIED, running(p1))
    store.apply(MODIFIED, nrt((cache_cpus[0], cache_cpus[1] - 2), [p1], memory=(16 * GIB, 15 * GIB)))
    return store, cache, p1


def test_a_deleted_pod_whose_zone_is_known_gives_its_room_back_before_the_agent_publishes() -> None:
    store, cache, p1 = _learnt()
    assert cpus(cache) == (4, 2)
    cache.on_pod_event(DELETED, running(p1))
    assert cpus(cache) == (4, 4)  # the NRT still charges p1: its zone is given back
    assert cache.state_dump()["nodes"]["n1"]["endedPodsGivenBack"] == ["ns/p1"]
    store.apply(MODIFIED, nrt((4, 4)))  # the NRT without p1: the credit is not needed any more
    assert cpus(cache) == (4, 4)
    assert cache.state_dump()["nodes"]["n1"]["endedPodsGivenBack"] == []
    assert cache.diagnose("n1") == WAITING_FOR_AGENT


def test_a_new_pod_under_an_ended_pod_s_name_voids_what_was_known() -> None:
    _, cache, p1 = _learnt()
    cache.on_pod_event(DELETED, running(p1))
    assert cpus(cache) == (4, 4)
    again = pod("p1", 2)
    cache.on_pod_event(MODIFIED, again)  # bound by someone else under the same name
    assert cpus(cache)[1] <= 2  # the old incarnation's credit is gone, the new pod is charged


def _mutated(monkeypatch: pytest.MonkeyPatch, name: str, fake: object) -> int:
    monkeypatch.setattr(placement, name, fake)
    failures = 0
    for seed in range(150):
        try:
            run_random_history(random.Random(seed))
        except AssertionError:
            failures += 1
    return failures


def test_the_property_catches_a_cache_that_credits_an_ended_pod_on_the_wrong_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tests/consumer/test_reconcile.py's property (never more than the kubelet has) covers the
    # credits: move every credit to the other zone and it fails.
    real = placement.released

    def wrong_zone(
        credits: dict[tuple[str, str], placement.ZoneCharge],
        holds: Mapping[tuple[str, str], placement.ZoneCharge],
        key: tuple[str, str],
        charged: bool,
    ) -> bool:
        moved = {k: {1 - z: c for z, c in h.items()} for k, h in holds.items()}
        return real(credits, moved, key, charged)

    assert _mutated(monkeypatch, "released", wrong_zone) > 0
