"""NUMA-aware victim selection: a victim set is kept only when the kubelet's admission model
admits the preemptor once the victims' zones are given back (rte.consumer.preemption.victims)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rte.consumer.cache.predict import ZoneCharge
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.preemption.placements import (
    ContainerPlacements,
    FirstKnown,
    charges_from_containers,
    pinned_request,
)
from rte.consumer.preemption.victims import Candidate, admits, choose_victims, credited_view
from rte.consumer.requests import prepare_pod
from rte.consumer.store import DELETED, MODIFIED
from rte.errors import InputError
from rte.model.pod import QOS_BURSTABLE, Container, Pod, pod_from_manifest
from rte.model.quantity import Amount
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from tests.consumer.test_reconcile import cache_with, cpus, nrt, running
from tests.consumer.test_reconcile import pod as reconcile_pod

GIB = 2**30
SNN = "single-numa-node"


def node(
    available: Sequence[int],
    allocatable: int = 16,
    policy: str = "single-numa-node",
    scope: str = "container",
) -> NumaView:
    """A node of ``len(available)`` zones of ``allocatable`` CPUs and 64 GiB each, with
    ``available[i]`` CPUs free on zone i (memory never short)."""
    zones = tuple(
        Zone(
            name=f"node-{i}",
            resources=(
                ResourceInfo("cpu", allocatable, allocatable, cpus),
                ResourceInfo("memory", 64 * GIB, 64 * GIB, 64 * GIB),
            ),
        )
        for i, cpus in enumerate(available)
    )
    attrs = (Attribute("topologyManagerPolicy", policy), Attribute("topologyManagerScope", scope))
    return build_view(NodeTopology(name="n1", zones=zones, attributes=attrs))


def guaranteed(name: str, cpus: int, priority: int = 0, containers: int = 1) -> Pod:
    request = {"cpu": cpus, "memory": GIB}
    return Pod(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        node_name="n1",
        containers=tuple(
            Container(f"c{i}", requests=dict(request), limits=dict(request)) for i in range(containers)
        ),
        priority=priority,
    )


def on(p: Pod, zone: int | None, *, pdb: bool = False) -> Candidate:
    """``p`` holding its whole request on ``zone`` (None: unknown)."""
    charge = None if zone is None else {zone: {"cpu": p.containers[0].requests["cpu"] * len(p.containers)}}
    return Candidate(p, charge, pdb)


HIGH = 1000


def test_the_scheduler_s_victims_stand_when_their_zone_then_admits_the_pod() -> None:
    view = node([2, 2])
    low = on(guaranteed("low", 6), 1)
    choice = choose_victims(prepare_pod(guaranteed("hi", 8, HIGH)), view, [low], [on(guaranteed("x", 4), 0)])
    assert choice is not None
    assert choice.victims == (low,) and choice.added == ()


def test_victims_freeing_the_wrong_zone_get_the_lower_priority_pod_that_frees_the_right_one() -> None:
    # Node-wide, evicting "a" frees 6 + 5 free = 11 CPUs for a pod of 8, but on zone 0 only 7.
    view = node([1, 4])
    a = on(guaranteed("a", 6), 0)  # zone 0: 7 free after it, the pod needs 8
    b = on(guaranteed("b", 4), 1)  # zone 1: 8 free after it
    prep = prepare_pod(guaranteed("hi", 8, HIGH))
    assert not admits(prep, credited_view(view, [a.zones or {}]))
    choice = choose_victims(prep, view, [a], [b])
    assert choice is not None
    assert choice.added == (b,)
    assert admits(prep, credited_view(view, [c.zones or {} for c in choice.victims]))


def test_a_node_where_nothing_helps_is_dropped() -> None:
    view = node([1, 1])
    prep = prepare_pod(guaranteed("hi", 8, HIGH))
    assert choose_victims(prep, view, [on(guaranteed("a", 6), 0)], [on(guaranteed("b", 4), 1)]) is None


def test_pods_whose_zone_is_unknown_give_nothing_back() -> None:
    view = node([1, 1])
    prep = prepare_pod(guaranteed("hi", 8, HIGH))
    assert choose_victims(prep, view, [on(guaranteed("a", 10), None)], []) is None
    assert choose_victims(prep, view, [], [on(guaranteed("b", 10), None)]) is None


def test_pods_of_the_pod_s_priority_or_higher_are_never_added() -> None:
    view = node([1, 1])
    prep = prepare_pod(guaranteed("hi", 8, HIGH))
    same = on(guaranteed("same", 10, HIGH), 0)
    higher = on(guaranteed("higher", 10, HIGH + 1), 1)
    assert choose_victims(prep, view, [], [same, higher]) is None
    lower = on(guaranteed("lower", 10, HIGH - 1), 1)
    choice = choose_victims(prep, view, [], [same, higher, lower])
    assert choice is not None and choice.added == (lower,)


def test_the_fewest_victims_win_even_on_a_later_zone() -> None:
    # Zone 0 needs three small pods out, zone 1 one big pod; the walk over all pods reprieves
    # the big one first (more important) and would end with the three.
    view = node([2, 2])
    small = [on(guaranteed(f"s{i}", 2, priority=1), 0) for i in range(3)]
    big = on(guaranteed("big", 6, priority=5), 1)
    choice = choose_victims(prepare_pod(guaranteed("hi", 8, HIGH)), view, [], [*small, big])
    assert choice is not None and choice.added == (big,)


def test_pdb_violations_count_before_the_number_of_victims() -> None:
    view = node([2, 2])
    protected = on(guaranteed("protected", 6), 1, pdb=True)
    free = [on(guaranteed(f"f{i}", 3), 0) for i in range(2)]
    choice = choose_victims(prepare_pod(guaranteed("hi", 8, HIGH)), view, [], [protected, *free])
    assert choice is not None
    assert [c.pod.name for c in choice.added] == ["f0", "f1"] and choice.pdb_violations == 0


def test_lower_priority_victims_are_preferred_among_sets_of_equal_size() -> None:
    view = node([2, 2])
    cheap = on(guaranteed("cheap", 6, priority=1), 1)
    dear = on(guaranteed("dear", 6, priority=50), 0)
    choice = choose_victims(prepare_pod(guaranteed("hi", 8, HIGH)), view, [], [dear, cheap])
    assert choice is not None and choice.added == (cheap,)


def test_credits_stop_at_the_zone_s_allocatable() -> None:
    view = node([10, 0], allocatable=12)
    credited = credited_view(view, [{0: {"cpu": 6}}])
    assert credited.zone(0) == {"cpu": 12, "memory": 64 * GIB}


@pytest.mark.parametrize(
    ("policy", "scope"),
    [
        ("single-numa-node", "container"),
        ("single-numa-node", "pod"),
        ("restricted", "container"),
        ("restricted", "pod"),
        ("best-effort", "container"),
        ("best-effort", "pod"),
    ],
)
def test_every_policy_and_scope_decides_through_the_admission_model(policy: str, scope: str) -> None:
    # Two containers of 6 CPUs, 2 free CPUs per zone: in container scope each may take a zone,
    # in pod scope a single-zone policy needs 12 CPUs on one zone (8 at most), best-effort spreads.
    view = node([2, 2], policy=policy, scope=scope)
    prep = prepare_pod(guaranteed("hi", 6, HIGH, containers=2))
    a, b = on(guaranteed("a", 6), 0), on(guaranteed("b", 6), 1)
    choice = choose_victims(prep, view, [], [a, b])
    if scope == "pod" and policy != "best-effort":
        assert choice is None  # 12 CPUs on one 16-CPU zone: 8 free at most on either
        return
    assert choice is not None and choice.added == (a, b)


def test_a_node_without_an_nrt_keeps_the_scheduler_s_victims() -> None:
    a = on(guaranteed("a", 6), None)
    choice = choose_victims(prepare_pod(guaranteed("hi", 8, HIGH)), None, [a], [])
    assert choice is not None and choice.victims == (a,)


# --- placements -------------------------------------------------------------------------------


def test_containers_placed_by_numaplacement_give_back_their_pinned_resources() -> None:
    p = guaranteed("p", 3, containers=2)
    charges = charges_from_containers([p], {("ns", "p", "c0"): 0, ("ns", "p", "c1"): 1})
    assert charges == {p.key: {0: {"cpu": 3, "memory": GIB}, 1: {"cpu": 3, "memory": GIB}}}
    assert charges_from_containers([p], {}) == {}


def test_only_what_the_managers_pin_is_given_back() -> None:
    burstable = Pod(
        "ns",
        "b",
        containers=(Container("c", {"cpu": 2, "memory": GIB, "example.com/nic": 1}, {"cpu": 4}),),
        status_qos_class=QOS_BURSTABLE,
    )
    assert pinned_request(burstable, burstable.containers[0]) == {"example.com/nic": 1}
    half: dict[str, Amount] = {"cpu": Fraction(3, 2), "memory": GIB}
    fractional = Pod("ns", "f", containers=(Container("c", half, half),))
    assert pinned_request(fractional, fractional.containers[0]) == {"memory": GIB}


def test_the_first_source_that_knows_a_pod_wins() -> None:
    p, q = guaranteed("p", 2), guaranteed("q", 2)
    first = ContainerPlacements(lambda n: {("ns", "p", "c0"): 1})
    second = ContainerPlacements(lambda n: {("ns", "p", "c0"): 0, ("ns", "q", "c0"): 0})
    zones = FirstKnown(first, second).pod_zones("n1", [p, q])
    assert zones == {p.key: {1: {"cpu": 2, "memory": GIB}}, q.key: {0: {"cpu": 2, "memory": GIB}}}
    assert ContainerPlacements(lambda n: None).pod_zones("n1", [p]) == {}


# --- properties -------------------------------------------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[NumaView, Pod, list[Candidate], list[Candidate]]:
    zones = draw(st.integers(1, 3))
    policy = draw(st.sampled_from(["single-numa-node", "restricted", "best-effort"]))
    scope = draw(st.sampled_from(["container", "pod"]))
    free = [draw(st.integers(0, 16)) for _ in range(zones)]
    view = node(free, policy=policy, scope=scope)
    preemptor = guaranteed("hi", draw(st.integers(1, 16)), priority=10, containers=draw(st.integers(1, 2)))
    pods = []
    for i in range(draw(st.integers(0, 6))):
        p = guaranteed(f"v{i}", draw(st.integers(1, 8)), priority=draw(st.integers(0, 12)))
        zone = draw(st.one_of(st.none(), st.integers(0, zones - 1)))
        pods.append(on(p, zone, pdb=draw(st.booleans())))
    split = draw(st.integers(0, len(pods)))
    return view, preemptor, pods[:split], pods[split:]


def _credits(victims: Sequence[Candidate]) -> list[ZoneCharge]:
    return [c.zones for c in victims if c.zones]


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_a_chosen_set_admits_the_pod_and_none_of_its_added_pods_is_superfluous(
    scenario: tuple[NumaView, Pod, list[Candidate], list[Candidate]],
) -> None:
    view, preemptor, scheduler, others = scenario
    prep = prepare_pod(preemptor)
    choice = choose_victims(prep, view, scheduler, others)
    usable = [c for c in others if c.zones and c.priority < preemptor.priority]
    if choice is None:
        # Dropped only when even every usable pod evicted leaves the pod refused.
        assert not admits(prep, credited_view(view, _credits([*scheduler, *usable])))
        return
    assert choice.victims[: len(scheduler)] == tuple(scheduler)
    assert all(c in usable for c in choice.added)
    assert admits(prep, credited_view(view, _credits(choice.victims)))
    for c in choice.added:
        rest = [v for v in choice.victims if v is not c]
        assert not admits(prep, credited_view(view, _credits(rest))), f"{c.pod.name} was not needed"


def test_victims_are_kept_in_the_order_the_pods_were_given() -> None:
    view = node([0, 0])
    pods = [on(guaranteed(f"v{i}", 4, priority=i), 0) for i in range(4)]
    choice = choose_victims(prepare_pod(guaranteed("hi", 16, HIGH)), view, [], list(reversed(pods)))
    assert choice is not None
    assert [c.pod.name for c in choice.added] == ["v3", "v2", "v1", "v0"]


def test_a_pod_s_priority_is_read_from_its_spec() -> None:
    manifest = {"metadata": {"name": "p"}, "spec": {"priority": 1000, "containers": [{"name": "c"}]}}
    assert pod_from_manifest(manifest).priority == 1000
    del manifest["spec"]["priority"]  # type: ignore[attr-defined]
    assert pod_from_manifest(manifest).priority == 0
    with pytest.raises(InputError, match=r"spec\.priority"):
        pod_from_manifest(
            {"metadata": {"name": "p"}, "spec": {"priority": "high", "containers": [{"name": "c"}]}}
        )


# --- the reserve cache's knowledge --------------------------------------------------------------


def test_the_cache_knows_learnt_zones_and_takes_zones_taught_by_preemption() -> None:
    """Two pods started between two NRTs teach nothing (rte.consumer.cache.placement); what
    preemption teaches (decoded numaplacement) makes the deletion give the zone back at once."""
    p1, p2 = (running(reconcile_pod(n, 2)) for n in ("p1", "p2"))
    store, cache = cache_with(nrt((4, 4)))
    for p in (p1, p2):
        cache.on_pod_event(MODIFIED, p)
    store.apply(MODIFIED, nrt((2, 2), [p1, p2], memory=(15 * GIB, 15 * GIB)))
    assert cpus(cache) == (2, 2)
    assert cache.known_zones("n1") == {}
    cache.learn_zones("n1", {p1.key: {1: {"cpu": 2, "memory": GIB}}, ("ns", "gone"): {0: {"cpu": 1}}})
    assert cache.known_zones("n1") == {p1.key: {1: {"cpu": 2, "memory": GIB}}}  # live pods only
    cache.on_pod_event(DELETED, p1)
    assert cpus(cache) == (2, 4)
    assert cache.known_zones("n1") == {}  # given back


def test_a_pod_the_cache_placed_alone_is_known_on_its_predicted_zone() -> None:
    p1 = reconcile_pod("p1", 2)
    _, cache = cache_with(nrt((4, 4)))
    cache.reserve("n1", p1)
    assert cache.known_zones("n1") == {p1.key: {0: {"cpu": 2, "memory": GIB}}}


def test_a_victim_s_hold_first_pays_off_what_the_clamp_at_zero_hid() -> None:
    """Regression (the placement and preempt branches merged, ``rte simulate --preemption numa``
    counted false evictions): zone 0 has 1 CPU free, a pod in flight is charged 4 CPUs on every
    zone, so the cache serves 0 there, clamped; 3 of the charge are hidden. Evicting ``v`` (3 CPUs
    on zone 0) leaves the kubelet 1 + 3 - 4 = 0 on zone 0 when the in-flight pod lands there (and
    it must: zone 1 has 2). Crediting ``v`` on the clamped 0 showed 3 and nominated the node for
    a 3-CPU pod that the kubelet then could not place; the hold must first pay off the hidden
    part, as the cache's own credits do (applied before reservations, rte.consumer.cache.placement)."""
    v = running(reconcile_pod("v", 3))
    store, cache = cache_with(nrt((4, 4)))
    cache.on_pod_event(MODIFIED, v)
    store.apply(MODIFIED, nrt((1, 2), [v], memory=(15 * GIB, 16 * GIB)))
    assert cpus(cache) == (1, 2)
    cache.learn_zones("n1", {v.key: {0: {"cpu": 3, "memory": GIB}}})
    cache.reserve("n1", reconcile_pod("inflight", 4))
    assert cpus(cache) == (0, 0)
    view = cache.get("n1").view
    assert view is not None
    hold = cache.known_zones("n1")[v.key]
    assert credited_view(view, [hold]).available["cpu"] == (0, 0)
    preemptor = prepare_pod(replace(reconcile_pod("hi", 3), priority=HIGH))
    assert choose_victims(preemptor, view, [Candidate(v, hold)], []) is None
    # Enough given back, the hidden part paid off, the rest is room again.
    assert credited_view(view, [hold, {0: {"cpu": 3}}]).available["cpu"] == (3, 0)  # 1 - 4 + 3 + 3
