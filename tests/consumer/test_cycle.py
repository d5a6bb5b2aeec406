"""A Python scheduler using the library with a reserve cache gets the extender's bookkeeping.

Filter failures on trusted data mark the node for the next resync, successes reset the failure
streak, distrusted nodes say why, and the load-aware score mode scales the score: all through
``evaluate_through_cache`` (and the extender's ``filter_nodes`` / ``score_nodes`` under it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from rte.consumer.api import evaluate_through_cache
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.passthrough import PassthroughCache
from rte.consumer.config import CacheConfig, LoadAwareConfig, LoadMode, Reconcile
from rte.consumer.store import ADDED, MODIFIED, NRTStore
from rte.model import fingerprint as fp
from rte.model.attributes import ZONE_CPU_UTILIZATION
from rte.model.pod import Container, Pod
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod

GIB = 1024**3
OURS = "topo-aware-scheduler"


def pod(name: str, cpu: int, node: str = "", phase: str = "Pending", scheduler: str = OURS) -> Pod:
    requests = {"cpu": cpu, "memory": GIB}
    return Pod(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        node_name=node,
        phase=phase,
        scheduler_name=scheduler,
        containers=(Container("c", requests, dict(requests)),),
    )


def nrt(
    name: str, cpus: Sequence[int], counted: Iterable[Pod] = (), busy: Iterable[int] = ()
) -> NodeTopology:
    hot = set(busy)
    zones = tuple(
        Zone(
            f"node-{i}",
            resources=(ResourceInfo("cpu", 8, 8, c), ResourceInfo("memory", 64 * GIB, 64 * GIB, 64 * GIB)),
            attributes=(Attribute(ZONE_CPU_UTILIZATION, "95"),) if i in hot else (),
        )
        for i, c in enumerate(cpus)
    )
    attributes = (
        Attribute("topologyManagerPolicy", "single-numa-node"),
        Attribute("topologyManagerScope", "container"),
        Attribute(fp.ATTRIBUTE, fp.compute(p.key for p in counted)),
        Attribute(fp.ATTRIBUTE_METHOD, FingerprintMethod.ALL.value),
    )
    return NodeTopology(name=name, zones=zones, attributes=attributes)


def over_reserve(*topologies: NodeTopology, **config: object) -> tuple[NRTStore, OverReserveCache]:
    store = NRTStore()
    store.replace_all(topologies)
    config.setdefault("reconcile", Reconcile.EXACT)  # the reference's marks and resync
    return store, OverReserveCache(store, CacheConfig(**config))  # type: ignore[arg-type]


def test_a_failure_caused_by_our_reservations_is_marked_and_a_matching_resync_clears_it() -> None:
    store, cache = over_reserve(nrt("n1", cpus=(4, 4)))
    placed = pod("p1", cpu=3, node="n1")
    cache.reserve("n1", placed)  # pessimistically taken from both zones: 1 cpu left in each
    incoming = pod("p2", cpu=2)

    [decision] = evaluate_through_cache(incoming, ["n1"], cache)
    assert (decision.fits, decision.score) == (False, None)
    assert decision.reason == "single-numa-node: no single NUMA zone holds cpu=2"
    assert cache.state_dump()["nodes"]["n1"]["dirty"], "the next resync must check this node"

    # The agent publishes p1 on zone 0; the fingerprint covers exactly the pods we know there.
    store.apply(MODIFIED, nrt("n1", cpus=(1, 4), counted=[placed]))
    assert cache.resync([pod("p1", cpu=3, node="n1", phase="Running")]).flushed == ("n1",)

    [decision] = evaluate_through_cache(incoming, ["n1"], cache, "MostAllocated")
    assert (decision.fits, decision.reason) == (True, "fits NUMA zone 1")
    assert decision.score == 25  # zone 1: cpu 2/4 -> 50, memory 1Gi/64Gi -> 1 => (50 + 1) // 2


def test_by_default_an_admitted_pod_placed_alone_takes_only_the_zones_the_kubelet_may_use() -> None:
    _, cache = over_reserve(nrt("n1", cpus=(4, 4)), reconcile=Reconcile.HISTORY)
    placed = pod("p1", cpu=3, node="n1")
    cache.reserve("n1", placed)
    cache.on_pod_event("MODIFIED", replace(placed, phase="Running"))  # the kubelet put it on zone 0
    [decision] = evaluate_through_cache(pod("p2", cpu=2), ["n1"], cache)
    assert (decision.fits, decision.reason) == (True, "fits NUMA zone 1")
    assert cache.state_dump()["nodes"]["n1"]["zones"]["node-1"]["availableAfterReservations"]["cpu"] == "4"


def test_a_success_resets_the_failure_streak() -> None:
    _, cache = over_reserve(nrt("n1", cpus=(4, 4)), dirty_after_failures=2)
    cache.reserve("n1", pod("p1", cpu=3, node="n1"))
    evaluate_through_cache(pod("big", cpu=2), ["n1"], cache)  # fails: streak 1
    evaluate_through_cache(pod("small", cpu=1), ["n1"], cache)  # fits: streak back to 0
    evaluate_through_cache(pod("big", cpu=2), ["n1"], cache)  # fails: streak 1 again
    state = cache.state_dump()["nodes"]["n1"]
    assert (state["failureStreak"], state["dirty"]) == (1, False)
    evaluate_through_cache(pod("big", cpu=2), ["n1"], cache)
    assert cache.state_dump()["nodes"]["n1"]["dirty"]


def test_a_node_with_a_foreign_pod_fails_with_the_cache_s_explanation() -> None:
    _, cache = over_reserve(nrt("n1", cpus=(4, 4)), nrt("n2", cpus=(4, 4)))
    cache.on_pod_event(ADDED, pod("theirs", cpu=1, node="n1", phase="Running", scheduler="default-scheduler"))
    decisions = evaluate_through_cache(pod("p", cpu=1), ["n1", "n2"], cache)
    assert [d.node for d in decisions] == ["n1", "n2"]
    assert not decisions[0].fits and decisions[1].fits
    assert decisions[0].reason.startswith("invalid node topology data: ")
    assert "other schedulers" in decisions[0].reason


def test_load_score_mode_halves_the_score_where_the_kubelet_would_pick_a_busy_zone() -> None:
    load = LoadAwareConfig(mode=LoadMode.SCORE, score_factor=0.5)
    store = NRTStore()
    store.replace_all([nrt("hot", cpus=(4, 4), busy=[0]), nrt("cool", cpus=(4, 4), busy=[1])])
    cache = PassthroughCache(store, CacheConfig(load=load))
    decisions = evaluate_through_cache(pod("p", cpu=2), ["hot", "cool"], cache, "MostAllocated")
    # Both place the pod on zone 0 (lowest id) and score (50 + 1) // 2 = 25 unscaled.
    assert [(d.node, d.score) for d in decisions] == [("hot", 12), ("cool", 25)]
    plain = PassthroughCache(store, CacheConfig())
    unscaled = evaluate_through_cache(pod("p", cpu=2), ["hot", "cool"], plain, "MostAllocated")
    assert [d.score for d in unscaled] == [25, 25]


def test_load_filter_mode_keeps_pods_off_busy_zones() -> None:
    store = NRTStore()
    store.replace_all([nrt("n1", cpus=(4, 4), busy=[0])])
    cache = PassthroughCache(store, CacheConfig(load=LoadAwareConfig(mode=LoadMode.FILTER)))
    [decision] = evaluate_through_cache(pod("p", cpu=2), ["n1"], cache)
    assert decision.reason == "fits NUMA zone 1"
