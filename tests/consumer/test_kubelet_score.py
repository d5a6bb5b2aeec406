"""Score by the kubelet's rules: the strategies rate the zones the admission model chose, and
LeastNUMANodes counts the width of the merged hint the kubelet would admit with."""

from __future__ import annotations

from rte.consumer.score import ScoringStrategy, score_node
from rte.consumer.strategies import BALANCED_ALLOCATION, LEAST_ALLOCATED, LEAST_NUMA_NODES, MOST_ALLOCATED
from tests.helpers.consumer import GI, container, pod, slit, view
from tests.helpers.consumer import reference_score as reference

MOST = ScoringStrategy(MOST_ALLOCATED)
LEAST = ScoringStrategy(LEAST_ALLOCATED)
BALANCED = ScoringStrategy(BALANCED_ALLOCATION)
LNN = ScoringStrategy(LEAST_NUMA_NODES)

# Zone 0: 4 CPUs / 8Gi, zone 1: 8 CPUs / 8Gi. cpu=2 memory=4Gi fits both; the kubelet takes 0.
TWO_ZONES = {0: {"cpu": 4, "memory": 8 * GI}, 1: {"cpu": 8, "memory": 8 * GI}}
G = pod(container("c", {"cpu": 2, "memory": 4 * GI}))


def test_the_strategies_rate_the_zone_the_kubelet_takes() -> None:
    v = view(TWO_ZONES)
    # zone 0: cpu 2*100//4 = 50, memory 4*100//8 = 50; zone 1: 25 and 50.
    assert score_node(G, v, MOST) == 50
    assert reference(G, v, MOST) == 37  # the smallest non-zero zone score: zone 1, (25+50)//2
    assert score_node(G, v, LEAST) == 50
    assert score_node(G, v, BALANCED) == 100  # both fractions 0.5: no variance


def test_a_two_zone_mask_is_rated_on_its_pooled_availability() -> None:
    wide = pod(container("c", {"cpu": 24, "memory": 100 * GI}))
    v = view({0: {"cpu": 16, "memory": 64 * GI}, 1: {"cpu": 16, "memory": 64 * GI}}, policy="restricted")
    # {0,1} pooled: cpu 24*100//32 = 75, memory 100*100//128 = 78 -> (75+78)//2 = 76.
    assert score_node(wide, v, MOST) == 76
    assert reference(wide, v, MOST) == 0, "the reference scores restricted nodes 0"


def test_container_scope_averages_the_units_on_their_own_zones() -> None:
    two = pod(container("a", {"cpu": 4, "memory": 4 * GI}), container("b", {"cpu": 4, "memory": 4 * GI}))
    v = view({0: {"cpu": 4, "memory": 8 * GI}, 1: {"cpu": 8, "memory": 8 * GI}})
    # a takes zone 0 (cpu 100, memory 50 -> 75); b then zone 1 (cpu 50, memory 50 -> 50): 62.
    assert score_node(two, v, MOST) == 62


def test_least_numa_nodes_counts_the_merged_hint_of_the_kubelet() -> None:
    wide = pod(container("c", {"cpu": 24, "memory": 100 * GI}))
    zones = {0: {"cpu": 16, "memory": 64 * GI}, 1: {"cpu": 16, "memory": 64 * GI}}
    # Two zones at the minimum distance: 100 - 2*12 + 6 = 82.
    assert score_node(wide, view(zones, policy="restricted", costs=slit([0, 1])), LNN) == 82
    # One zone: 94.
    assert score_node(G, view(TWO_ZONES, costs=slit([0, 1])), LNN) == 94


def test_least_numa_nodes_without_a_topology_manager_keeps_kep_454s_search() -> None:
    assert score_node(G, view(TWO_ZONES, policy="none", costs=slit([0, 1])), LNN) == 94


def test_policy_none_scores_zero_with_the_zone_strategies() -> None:
    assert score_node(G, view(TWO_ZONES, policy="none"), MOST) == 0


def test_a_pod_that_is_not_guaranteed_scores_100_everywhere() -> None:
    burstable = pod(container("c", {"cpu": 2}, guaranteed=False))
    assert score_node(burstable, view(TWO_ZONES), MOST) == 100
