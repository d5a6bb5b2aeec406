"""The consumer decodes numaplacement when its pod set is the agent's, and the reserve cache
uses it to learn where pods placed in bursts are, so their room comes back when they end."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rte.consumer.cache import placement as cache_placement
from rte.consumer.cache.diagnosis import WAITING_FOR_AGENT
from rte.consumer.placement import (
    NodePlacement,
    Outcome,
    PinnedMemo,
    decode_node_placement,
    expected_containers,
    pinned_containers,
)
from rte.consumer.store import DELETED, MODIFIED
from rte.model import attributes as names
from rte.model import numaplacement as npl
from rte.model.numaplacement import ContainerId
from rte.model.pod import Container, Pod, PodLevelResources
from rte.model.topology import Attribute, NodeTopology
from tests.consumer.test_reconcile import (
    GIB,
    Kubelet,
    cache_with,
    cpus,
    nrt,
    pod,
    run_random_history,
    running,
)

HALF = Fraction(1, 2)
SNN_FACTS = (Attribute(names.CPU_MANAGER_POLICY, "static"), Attribute(names.MEMORY_MANAGER_POLICY, "Static"))


def with_placement(
    topology: NodeTopology, located: dict[ContainerId, int], *, facts: tuple[Attribute, ...] = SNN_FACTS
) -> NodeTopology:
    """``topology`` with the attributes an agent publishes for ``located`` (and its manager facts)."""
    payload = npl.encode(len(topology.zones), located.items())
    zones = tuple(
        replace(z, attributes=(*z.attributes, Attribute(npl.VECTOR_ATTRIBUTE, payload.vectors[i])))
        if i in payload.vectors
        else z
        for i, z in enumerate(topology.zones)
    )
    attributes = (*topology.attributes, *facts, Attribute(npl.METADATA_ATTRIBUTE, payload.pack_metadata()))
    return replace(topology, zones=zones, attributes=attributes)


def cid(p: Pod, container: str = "c") -> ContainerId:
    return ContainerId(p.namespace, p.name, container)


# --- decoding -----------------------------------------------------------------------------------


def test_the_pinned_containers_of_the_agent_s_pod_set_are_decoded_to_their_zones() -> None:
    p1, p2 = running(pod("p1", 2)), running(pod("p2", 1))
    shared = replace(running(pod("shared", 1)), containers=(Container("c", {"cpu": HALF}),))
    topology = with_placement(nrt((4, 4)), {cid(p1): 1, cid(p2): 0})
    decoded = decode_node_placement(topology, [p1, p2, shared])
    assert decoded == NodePlacement(Outcome.DECODED, {cid(p1): 1, cid(p2): 0})
    assert decoded.pod_zones(p1.key) == {"c": 1}
    assert decoded.zone_pods() == {0: [cid(p2)], 1: [cid(p1)]}


@pytest.mark.parametrize(
    ("topology_changes", "pods_changes", "outcome"),
    [
        ("no metadata", None, Outcome.ABSENT),
        ("restricted", None, Outcome.ABSENT),
        ("corrupted vector", None, Outcome.ERROR),
        (None, "one pod fewer", Outcome.MISMATCH),
        (None, "memory unpinned", Outcome.MISMATCH),
        (None, "pod-level resources", Outcome.MISMATCH),
    ],
)
def test_anything_but_the_agent_s_exact_set_is_not_decoded(
    topology_changes: str | None, pods_changes: str | None, outcome: Outcome
) -> None:
    p1, p2 = running(pod("p1", 2)), running(pod("p2", 1))
    topology = with_placement(nrt((4, 4)), {cid(p1): 1, cid(p2): 0})
    pods = [p1, p2]
    if topology_changes == "no metadata":
        topology = replace(
            topology, attributes=tuple(a for a in topology.attributes if a.name != npl.METADATA_ATTRIBUTE)
        )
    elif topology_changes == "restricted":
        topology = replace(
            topology,
            attributes=tuple(
                Attribute(a.name, "restricted") if a.name == names.TOPOLOGY_MANAGER_POLICY else a
                for a in topology.attributes
            ),
        )
    elif topology_changes == "corrupted vector":
        zone = replace(topology.zones[0], attributes=(Attribute(npl.VECTOR_ATTRIBUTE, "\\"),))
        topology = replace(topology, zones=(zone, topology.zones[1]))
    if pods_changes == "one pod fewer":
        pods = [p1]
    elif pods_changes == "memory unpinned":  # p3 asks for memory in a Guaranteed pod, 500m CPU
        p3 = replace(
            running(pod("p3", 1)),
            containers=(Container("c", {"cpu": HALF, "memory": GIB}, {"cpu": HALF, "memory": GIB}),),
        )
        topology = replace(
            topology,
            attributes=tuple(a for a in topology.attributes if a.name != names.MEMORY_MANAGER_POLICY),
        )
        pods = [p1, p2, p3]  # is p3 pinned? the NRT does not say its memory manager policy
    elif pods_changes == "pod-level resources":
        pods = [p1, replace(p2, resources=PodLevelResources({"cpu": 1}, {"cpu": 1}))]
    assert decode_node_placement(topology, pods).outcome is outcome


def test_pinned_containers_follow_the_kubelet_s_managers() -> None:
    half = HALF
    guaranteed_half = replace(
        running(pod("g", 1)),
        containers=(Container("c", {"cpu": half, "memory": GIB}, {"cpu": half, "memory": GIB}),),
    )
    assert pinned_containers(guaranteed_half, {"cpu", "memory"}, "static", "Static") == ["c"]
    assert pinned_containers(guaranteed_half, {"cpu", "memory"}, "static", "None") == []
    whole = running(pod("w", 2))
    assert pinned_containers(whole, {"cpu"}, "none", "None") == []
    assert pinned_containers(whole, {"cpu"}, None, "None") == ["c"]  # RTE's NRTs do not say: static
    burstable_device = replace(
        running(pod("d", 1)), containers=(Container("c", {"cpu": half, "vendor.com/nic": 1}),)
    )
    assert pinned_containers(burstable_device, {"cpu", "vendor.com/nic"}, "static", "None") == ["c"]
    assert pinned_containers(burstable_device, {"cpu"}, "static", "None") == []  # no NUMA locality


def test_a_memo_of_pinned_containers_answers_only_for_the_same_pod_and_facts() -> None:
    """The reserve cache keeps each pod's pinned containers between a node's NRTs (issue #27);
    an answer is reused only for the very same pod object on a node with the same managers and
    zone resources, and decoding with the memo equals decoding without it."""
    p1, p2 = running(pod("p1", 2)), running(pod("p2", 1))
    topology = with_placement(nrt((4, 4)), {cid(p1): 1, cid(p2): 0})
    memo: PinnedMemo = {}
    first = decode_node_placement(topology, [p1, p2], memo)
    assert (
        first == decode_node_placement(topology, [p1, p2]) == decode_node_placement(topology, [p1, p2], memo)
    )
    assert set(memo) == {p1.key, p2.key}
    # The managers change (CPU manager none): nothing pinned any more, whatever the memo held.
    unpinned = with_placement(
        nrt((4, 4)),
        {},
        facts=(Attribute(names.CPU_MANAGER_POLICY, "none"), Attribute(names.MEMORY_MANAGER_POLICY, "None")),
    )
    assert expected_containers(unpinned, [p1, p2], memo) == expected_containers(unpinned, [p1, p2]) == []
    # A new spec under the same name (a burstable pod): its own answer, not the old pod's.
    burstable = replace(p1, containers=(Container("c", {"cpu": HALF}),))
    assert expected_containers(topology, [burstable], memo) == []
    assert expected_containers(topology, [p1], memo) == [cid(p1)]


_sizes = st.lists(st.integers(1, 3), min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(_sizes, st.data())
def test_a_pod_set_other_than_the_encoded_one_is_never_decoded(cpus_: list[int], data: st.DataObject) -> None:
    """The pods the consumer passes differ from the agent's by at least one pod with a pinned
    container (one missing or one more): the placement is refused, never decoded."""
    pods = [running(pod(f"p{i}", c)) for i, c in enumerate(cpus_)]
    zones = data.draw(st.lists(st.integers(0, 1), min_size=len(pods), max_size=len(pods)))
    topology = with_placement(nrt((4, 4)), {cid(p): z for p, z in zip(pods, zones, strict=True)})
    assert decode_node_placement(topology, pods).outcome is Outcome.DECODED
    if data.draw(st.booleans()):
        other = pods[:-1]
    else:
        other = [*pods, running(pod("extra", data.draw(st.integers(1, 3))))]
    assert decode_node_placement(topology, other).outcome is Outcome.MISMATCH


# --- the reserve cache --------------------------------------------------------------------------


def _burst() -> tuple[object, object, Pod, Pod]:
    """Two pods placed together on a node; the agent's NRT then charges both, with placement."""
    p1, p2 = pod("p1", 2), pod("p2", 1)
    store, cache = cache_with(with_placement(nrt((4, 4)), {}))
    for p in (p1, p2):
        cache.reserve("n1", p)
        cache.on_pod_event(MODIFIED, p)
    for p in (p1, p2):
        cache.on_pod_event(MODIFIED, running(p))
    after = nrt((3, 2), [p1, p2], memory=(15 * GIB, 15 * GIB))
    store.apply(MODIFIED, with_placement(after, {cid(p1): 1, cid(p2): 0}))
    return store, cache, p1, p2


def test_pods_placed_together_are_learnt_from_the_placement_and_give_their_room_back() -> None:
    _, cache, p1, p2 = _burst()
    assert cpus(cache) == (3, 2)
    located = cache.placement("n1")
    assert located is not None and located.containers == {cid(p1): 1, cid(p2): 0}
    assert cache.placement_outcomes() == {"decoded": 2}  # the first NRT (no pods) too
    assert cache.state_dump()["nodes"]["n1"]["podHoldsKnown"] == 2
    cache.on_pod_event(DELETED, running(p1))
    assert cpus(cache) == (3, 4)  # p1's two CPUs are back on zone 1 before the agent publishes
    cache.on_pod_event(DELETED, running(p2))
    assert cpus(cache) == (4, 4)
    assert cache.diagnose("n1") == WAITING_FOR_AGENT


def test_without_placement_the_same_burst_teaches_nothing() -> None:
    p1, p2 = pod("p1", 2), pod("p2", 1)
    store, cache = cache_with(nrt((4, 4)))
    for p in (p1, p2):
        cache.reserve("n1", p)
        cache.on_pod_event(MODIFIED, p)
        cache.on_pod_event(MODIFIED, running(p))
    store.apply(MODIFIED, nrt((3, 2), [p1, p2], memory=(15 * GIB, 15 * GIB)))
    cache.on_pod_event(DELETED, running(p1))
    assert cpus(cache) == (3, 2)  # waits for the agent
    assert cache.placement_outcomes() == {"absent": 2}


def test_a_placement_the_nrt_s_numbers_contradict_teaches_nothing() -> None:
    p1, p2 = pod("p1", 2), pod("p2", 1)
    holds: dict[tuple[str, str], cache_placement.ZoneCharge] = {}
    live = {p.key: running(p) for p in (p1, p2)}
    after = nrt((3, 2), [p1, p2], memory=(15 * GIB, 15 * GIB))
    wrong = with_placement(after, {cid(p1): 0, cid(p2): 1})  # swapped: zone 0 lost 1 CPU, not 2
    decoded = decode_node_placement(wrong, live.values())
    assert decoded.outcome is Outcome.DECODED
    assert cache_placement.learn(holds, nrt((4, 4)), set(), after, set(live), live, decoded) == []
    assert holds == {}


def test_a_pod_that_ended_before_its_nrt_arrived_gives_its_room_back_at_adoption() -> None:
    p1, p2 = pod("p1", 2), pod("p2", 1)
    store, cache = cache_with(with_placement(nrt((4, 4)), {}))
    for p in (p1, p2):
        cache.reserve("n1", p)
        cache.on_pod_event(MODIFIED, p)
        cache.on_pod_event(MODIFIED, running(p))
    cache.on_pod_event(DELETED, running(p1))  # before the agent's NRT with p1 and p2 arrives
    after = nrt((3, 2), [p1, p2], memory=(15 * GIB, 15 * GIB))
    store.apply(MODIFIED, with_placement(after, {cid(p1): 1, cid(p2): 0}))
    assert cpus(cache) == (3, 4)
    assert cache.state_dump()["nodes"]["n1"]["endedPodsGivenBack"] == ["ns/p1"]


class PlacingKubelet(Kubelet):
    """The property's node double, publishing the numaplacement of what it admitted."""

    swap = False

    def nrt(self, counted: object) -> NodeTopology:
        pods = list(counted)  # type: ignore[call-overload]
        located = {}
        for p in pods:
            zone = self.placed[p.name][0]
            located[cid(p)] = 1 - zone if self.swap else zone
        return with_placement(super().nrt(pods), located)


class SwappingKubelet(PlacingKubelet):
    swap = True


def test_the_cache_never_serves_more_than_the_kubelet_has_with_placement_and_gives_more_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tests/consumer/test_reconcile.py's property with a node publishing numaplacement; ended
    pods' room comes back far more often (pods admitted in bursts are learnt too)."""
    real = cache_placement.released
    credits = [0]

    def counting(*args: Any) -> bool:
        given = real(*args)
        credits[0] += given
        return given

    monkeypatch.setattr(cache_placement, "released", counting)
    decoded = 0
    for seed in range(100):
        decoded += run_random_history(random.Random(seed), PlacingKubelet()).placement_outcomes()["decoded"]
    with_placement_credits, credits[0] = credits[0], 0
    for seed in range(100):
        run_random_history(random.Random(seed))
    assert decoded > 0
    assert with_placement_credits > 2 * credits[0] > 0


def test_the_property_catches_a_cache_that_trusts_a_wrong_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the check of the NRTs' difference, a placement on the wrong zones (the consumer's
    # container set not the agent's) gives ended pods' room back where it was not: the property
    # (never more than the kubelet has) must catch it.
    monkeypatch.setattr(cache_placement, "_agrees", lambda difference, sums: True)
    failures = 0
    for seed in range(100):
        try:
            run_random_history(random.Random(seed), SwappingKubelet())
        except AssertionError:
            failures += 1
    assert failures > 0
