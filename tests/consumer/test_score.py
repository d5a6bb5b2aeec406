"""Score by the reference plugin's rules (``Compat.REFERENCE``), pinned: every call goes through
:func:`tests.helpers.consumer.reference_score`. The kubelet's rules are in ``test_kubelet_score.py``."""

import pytest

from rte.consumer.cache.reservations import subtract_placed
from rte.consumer.least_numa import average_distance, float32, normalize
from rte.consumer.numaview import subtract_requests
from rte.consumer.score import (
    SCORE_FUNCTIONS,
    ScoringStrategy,
    sample_variance,
)
from rte.consumer.strategies import (
    BALANCED_ALLOCATION,
    LEAST_ALLOCATED,
    LEAST_NUMA_NODES,
    MOST_ALLOCATED,
    STRATEGIES,
    parse_weight,
    strategy_name,
    weight_table,
)
from rte.errors import ConfigError
from tests.helpers.consumer import GI, container, pod, slit, view
from tests.helpers.consumer import reference_score as score_node

MOST = ScoringStrategy(MOST_ALLOCATED)
LEAST = ScoringStrategy(LEAST_ALLOCATED)
BALANCED = ScoringStrategy(BALANCED_ALLOCATION)
LNN = ScoringStrategy(LEAST_NUMA_NODES)
DEV = "vendor.com/nic"

# Two zones: 4 cpu / 8Gi and 8 cpu / 8Gi.
TWO_ZONES = {0: {"cpu": 4, "memory": 8 * GI}, 1: {"cpu": 8, "memory": 8 * GI}}


def _g(cpu: int | str = 2, mem: int = 4 * GI, name: str = "c", **extra: int) -> object:
    return container(name, {"cpu": cpu, "memory": mem, **extra})


# --- gating (the reference's score.go) -----------------------------------------------------------


def test_pods_that_are_not_guaranteed_score_100_everywhere() -> None:
    burstable = pod(container("c", {"cpu": 1}, guaranteed=False))
    assert score_node(burstable, None, LEAST) == 100
    assert score_node(burstable, view(TWO_ZONES), LNN) == 100


def test_a_guaranteed_pod_scores_0_without_an_nrt_or_with_stale_data() -> None:
    p = pod(_g())
    assert score_node(p, None, LEAST) == 0
    assert score_node(p, view(TWO_ZONES), LEAST, fresh=False) == 0


@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted", None])
def test_resource_strategies_score_0_unless_single_numa_node(policy: str | None) -> None:
    assert score_node(pod(_g()), view(TWO_ZONES, policy=policy), MOST) == 0


def test_least_numa_nodes_scores_under_any_policy() -> None:
    assert score_node(pod(_g()), view(TWO_ZONES, policy="none", costs=slit([0, 1])), LNN) == 94


def test_an_unknown_strategy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"scoringStrategy\.type"):
        ScoringStrategy("MostRequested")


def test_every_strategy_the_commands_offer_has_a_score_function_and_no_other() -> None:
    assert tuple(SCORE_FUNCTIONS) == STRATEGIES


@pytest.mark.parametrize("text", ["leastnumanodes", "LEASTNUMANODES", " LeastNUMANodes "])
def test_strategy_names_are_read_in_any_case_and_come_back_as_the_reference_spells_them(text: str) -> None:
    assert strategy_name(text) == LEAST_NUMA_NODES


@pytest.mark.parametrize("text", ["cpu=0", "cpu=-3"])
def test_a_weight_below_one_typed_by_a_user_is_an_error(text: str) -> None:
    with pytest.raises(ConfigError, match=r"--weight: weight of cpu must be a positive integer"):
        parse_weight(text)


def test_weights_given_by_a_user_apply_over_the_defaults() -> None:
    assert weight_table(["cpu=3", "example.com/nic=2"]) == {"cpu": 3, "memory": 1, "example.com/nic": 2}


# --- MostAllocated / LeastAllocated / BalancedAllocation (hand-checked) ---------------------------


@pytest.mark.parametrize(("scope"), ["pod", "container"])
def test_most_allocated_keeps_the_smallest_non_zero_zone_score(scope: str) -> None:
    # zone 0: cpu 2/4 -> 50, memory 4/8 -> 50 => 50; zone 1: cpu 2/8 -> 25, memory 50 => 37
    assert score_node(pod(_g()), view(TWO_ZONES, scope=scope), MOST) == 37


@pytest.mark.parametrize(("scope"), ["pod", "container"])
def test_least_allocated_keeps_the_smallest_non_zero_zone_score(scope: str) -> None:
    # zone 0: (4-2)/4 -> 50, memory 50 => 50; zone 1: 75, 50 => 62
    assert score_node(pod(_g()), view(TWO_ZONES, scope=scope), LEAST) == 50


def test_weights_scale_resources_and_weights_below_one_count_as_one() -> None:
    p = pod(_g())
    # LeastAllocated with cpu x3: zone 0 (150+50)/4 = 50, zone 1 (225+50)/4 = 68
    assert score_node(p, view(TWO_ZONES), ScoringStrategy(LEAST_ALLOCATED, {"cpu": 3})) == 50
    # MostAllocated with cpu x3: zone 0 50, zone 1 (75+50)/4 = 31
    assert score_node(p, view(TWO_ZONES), ScoringStrategy(MOST_ALLOCATED, {"cpu": 3})) == 31
    for weight in (0, -5):
        assert score_node(p, view(TWO_ZONES), ScoringStrategy(MOST_ALLOCATED, {"cpu": weight})) == 37


def test_unlisted_requested_resources_count_with_weight_one() -> None:
    zones = {0: {"cpu": 4, "memory": 8 * GI, DEV: 4}}
    # cpu 50 (x2), memory 50, device 1/4 -> 25 (x1, not listed): (100 + 50 + 25) / 4 = 43
    strategy = ScoringStrategy(MOST_ALLOCATED, {"cpu": 2, "memory": 1})
    assert score_node(pod(_g(**{DEV: 1})), view(zones), strategy) == 43


def test_a_zone_without_enough_of_a_resource_scores_0_for_it() -> None:
    zones = {0: {"cpu": 1, "memory": 8 * GI}}
    # cpu does not fit -> 0, memory 4/8 -> 50 (least: 50) => (0 + 50) / 2 = 25
    assert score_node(pod(_g()), view(zones), LEAST) == 25
    assert score_node(pod(_g()), view(zones), MOST) == 25


def test_a_node_where_every_zone_scores_0_scores_0() -> None:
    zones = {0: {"cpu": 1, "memory": GI}, 1: {"cpu": 1, "memory": GI}}
    assert score_node(pod(_g()), view(zones), MOST) == 0


def test_arithmetic_rounds_quantities_up_like_quantity_value() -> None:
    # 500m -> 1 and 1500m -> 2: MostAllocated cpu 1*100/2 = 50; memory 4/8 = 50
    zones = {0: {"cpu": "1500m", "memory": 8 * GI}}
    assert score_node(pod(_g(cpu="500m")), view(zones), MOST) == 50


@pytest.mark.parametrize(("scope"), ["pod", "container"])
def test_balanced_allocation_uses_one_minus_the_sample_variance(scope: str) -> None:
    # zone 0: fractions .5 and .5 -> 100; zone 1: .25 and .5 -> variance .03125 -> 96
    assert score_node(pod(_g()), view(TWO_ZONES, scope=scope), BALANCED) == 96


def test_balanced_allocation_zeroes_a_zone_with_a_fraction_above_one() -> None:
    zones = {0: {"cpu": 1, "memory": 8 * GI}, 1: {"cpu": 8, "memory": 8 * GI}}
    assert score_node(pod(_g()), view(zones), BALANCED) == 96
    assert score_node(pod(_g()), view({0: zones[0]}), BALANCED) == 0


def test_balanced_allocation_counts_a_missing_resource_as_fraction_one() -> None:
    # cpu 2/4 = .5, memory missing -> 1: variance .125 -> 87
    assert score_node(pod(_g()), view({0: {"cpu": 4}}), BALANCED) == 87


def test_sample_variance_matches_gonum_for_several_values() -> None:
    assert sample_variance([0.25, 0.5]) == 0.03125
    assert sample_variance([0.1, 0.2, 0.3]) == pytest.approx(0.01)


def test_balanced_allocation_with_a_single_resource_scores_instead_of_nan() -> None:
    # Reference bug: gonum's N-1 variance of one value is 0/0 = NaN, and int64(NaN) is garbage.
    # A pod-level-resources pod is Guaranteed with containers requesting a single resource.
    p = pod(container("c", {"cpu": 2}, guaranteed=False), qos="Guaranteed")
    assert score_node(p, view(TWO_ZONES), BALANCED) == 100


def test_container_scope_averages_init_and_app_containers_truncating() -> None:
    # MostAllocated: init (cpu 1, mem 1Gi) -> zone0 (25+12)/2=18, zone1 (12+12)/2=12 -> 12
    #                app  (cpu 2, mem 4Gi) -> 37
    # mean (12 + 37) / 2 = 24.5 -> 24
    p = pod(_g(), init=[_g(cpu=1, mem=GI, name="i")])
    assert score_node(p, view(TWO_ZONES), MOST) == 24


def test_empty_requests_do_not_divide_by_zero() -> None:
    # Reference bug: the weighted mean divides by the (zero) weight sum and panics.
    forced = pod(container("c", {}, guaranteed=False), qos="Guaranteed")
    for strategy in (MOST, LEAST, BALANCED):
        assert score_node(forced, view(TWO_ZONES), strategy) == 100
        assert score_node(forced, view(TWO_ZONES, scope="pod"), strategy) == 100
    # An empty container is left out of the container-scope mean.
    mixed = pod(_g(), container("empty", {}, guaranteed=False), qos="Guaranteed")
    assert score_node(mixed, view(TWO_ZONES), MOST) == 37


def test_sparse_ids_are_scored_where_the_reference_indexes_past_its_score_slice() -> None:
    sparse = view({0: TWO_ZONES[0], 2: TWO_ZONES[1]})
    assert score_node(pod(_g()), sparse, MOST) == 37
    assert score_node(pod(_g()), sparse, LEAST) == 50


def test_published_order_does_not_change_resource_scores() -> None:
    unsorted = view({1: TWO_ZONES[1], 0: TWO_ZONES[0]})
    assert score_node(pod(_g()), unsorted, MOST) == 37


def test_reservations_subtracted_from_every_zone_change_the_score() -> None:
    reserved = subtract_requests(view(TWO_ZONES), [{"cpu": 2, "memory": 4 * GI}])
    assert reserved.available["cpu"] == (2, 6)
    # zone 0: cpu 2/2 -> 100, memory 4/4 -> 100; zone 1: cpu 2/6 -> 33, memory 100 -> 66
    assert score_node(pod(_g()), reserved, MOST) == 66


def test_subtracting_reservations_clamps_at_zero_and_skips_unlisted_resources() -> None:
    reserved = subtract_requests(view(TWO_ZONES), [{"cpu": 3}, {"cpu": 3, DEV: 1}])
    assert reserved.available["cpu"] == (0, 2)
    assert DEV not in reserved.resource_names


def test_what_the_clamp_hides_is_kept_and_a_credit_pays_it_off_first() -> None:
    """Zone 0 (4 CPUs) overdrawn by 6 shows 0 and keeps the 2 it hid, through later subtractions
    too; a credit (a negative charge) pays that off before it shows as room (why the reserve
    cache and NUMA-aware preemption can credit ended pods on a clamped view)."""
    reserved = subtract_requests(view(TWO_ZONES), [{"cpu": 3}, {"cpu": 3}])
    assert reserved.available["cpu"] == (0, 2)
    assert reserved.zone_shortfall == ({"cpu": 2}, {})
    again = subtract_requests(reserved, [{"cpu": 1}])
    assert again.available["cpu"] == (0, 1) and again.zone_shortfall == ({"cpu": 3}, {})
    assert subtract_placed(again, [{0: {"cpu": -2}}]).available["cpu"] == (0, 1)
    paid = subtract_placed(again, [{0: {"cpu": -5}}])
    assert paid.available["cpu"] == (2, 1) and paid.zone_shortfall == ()


# --- LeastNUMANodes -------------------------------------------------------------------------------


def _kep_pod() -> object:
    return pod(_g(cpu=3, mem=GI, name="a"), _g(cpu=3, mem=GI, name="b"))


def _kep_node(cpu0: int, cpu1: int, **kwargs: object) -> object:
    zones = {0: {"cpu": cpu0, "memory": 8 * GI}, 1: {"cpu": cpu1, "memory": 8 * GI}}
    return view(zones, costs=slit([0, 1]), **kwargs)  # type: ignore[arg-type]


def test_the_kep_worked_example_scores_82_and_94() -> None:
    assert score_node(_kep_pod(), _kep_node(2, 4), LNN) == 82  # type: ignore[arg-type]
    assert score_node(_kep_pod(), _kep_node(8, 8), LNN) == 94  # type: ignore[arg-type]


def test_the_kep_example_in_pod_scope_counts_the_effective_request() -> None:
    assert score_node(_kep_pod(), _kep_node(2, 4, scope="pod"), LNN) == 76 + 6  # type: ignore[arg-type]
    assert score_node(_kep_pod(), _kep_node(8, 8, scope="pod"), LNN) == 94  # type: ignore[arg-type]


def test_normalisation_follows_the_kep_formula() -> None:
    assert normalize(2, False, 8) == 76
    assert normalize(2, True, 8) == 82
    assert normalize(1, True, 8) == 94


def test_a_pod_requesting_only_resources_outside_the_zones_scores_100() -> None:
    p = pod(container("c", {"example.com/license": 1}, guaranteed=False), qos="Guaranteed")
    assert score_node(p, _kep_node(2, 4), LNN) == 100  # type: ignore[arg-type]


def test_a_pod_that_fits_nowhere_scores_0() -> None:
    assert score_node(pod(_g(cpu=64)), _kep_node(2, 4), LNN) == 0  # type: ignore[arg-type]


def test_without_costs_every_fit_is_minimum_distance() -> None:
    zones = {i: {"cpu": 2, "memory": 8 * GI} for i in range(3)}
    assert score_node(pod(_g(cpu=3)), view(zones), LNN) == 82


def test_a_fitting_set_that_is_not_the_closest_loses_the_bonus() -> None:
    zones = {0: {"cpu": 2, "memory": 8 * GI}, 1: {"cpu": 2, "memory": 8 * GI}}
    zones |= {2: {"cpu": 1, "memory": 8 * GI}, 3: {"cpu": 1, "memory": 8 * GI}}
    costs = slit(range(4), remote=30)
    costs[2][3] = costs[3][2] = 12  # {2,3} is the closest pair but too small
    assert score_node(pod(_g(cpu=4)), view(zones, costs=costs), LNN) == 76


def test_distance_averages_are_float32_like_the_reference() -> None:
    # Averages only tie differently in float32 far from real SLIT values; negative costs get
    # there. Totals 20 - 2**28 and 22 - 2**28 differ in float64 but are the same float32, so the
    # only fitting pair {1, 2} ties the closest pair {0, 1} and earns the bonus (76 + 6).
    big = 2**27
    costs = {0: {0: 10, 1: -big, 2: 10}, 1: {0: -big, 1: 10, 2: 1 - big}, 2: {0: 10, 1: 1 - big, 2: 10}}
    zones = {
        0: {"cpu": 0, "memory": 8 * GI},
        1: {"cpu": 2, "memory": 8 * GI},
        2: {"cpu": 2, "memory": 8 * GI},
    }
    v = view(zones, costs=costs)
    assert average_distance(v.distances, (0, 1)) == average_distance(v.distances, (1, 2))
    assert (20 - 2**28) / 4 != (22 - 2**28) / 4
    assert score_node(pod(_g(cpu=4)), v, LNN) == 82
    assert float32(0.1) != 0.1 and float32(0.5) == 0.5


def test_sets_averaging_256_or_more_are_never_chosen_like_the_reference() -> None:
    costs = {0: {0: 10, 1: 600}, 1: {0: 600, 1: 10}}
    zones = {0: {"cpu": 2, "memory": 8 * GI}, 1: {"cpu": 2, "memory": 8 * GI}}
    assert score_node(pod(_g(cpu=4)), view(zones, costs=costs), LNN) == 0


def test_single_zones_averaging_256_or_more_make_the_search_go_wider_like_the_reference() -> None:
    # Self costs of 300 rule out every single zone; the pair averages (300+10+10+300)/4 = 155.
    costs = {0: {0: 300, 1: 10}, 1: {0: 10, 1: 300}}
    zones = {0: {"cpu": 8, "memory": 8 * GI}, 1: {"cpu": 8, "memory": 8 * GI}}
    assert score_node(pod(_g(cpu=2)), view(zones, costs=costs), LNN) == 82


def test_scores_never_go_negative_with_more_zones_than_max_numa_nodes() -> None:
    # Reference bug: 100 - 3 * 50 + 25 = -25 reaches the framework.
    zones = {i: {"cpu": 1, "memory": 8 * GI} for i in range(4)}
    assert score_node(pod(_g(cpu=3)), view(zones, max_numa="2"), LNN) == 0
    many = {i: {"cpu": 1, "memory": 8 * GI} for i in range(16)}
    assert score_node(pod(_g(cpu=10)), view(many), LNN) == 0
    assert score_node(pod(_g(cpu=7)), view(many), LNN) == 100 - 7 * 12 + 6


def test_max_numa_nodes_sets_the_step() -> None:
    zones = {i: {"cpu": 1, "memory": 8 * GI} for i in range(4)}
    # step 100 // 4 = 25: two zones, no costs (bonus 12) -> 100 - 50 + 12
    assert score_node(pod(_g(cpu=2)), view(zones, max_numa="4"), LNN) == 62


def test_host_level_requests_absent_from_the_zones_no_longer_zero_the_score() -> None:
    # Reference bug: every set needs every requested name in every zone, so a pod that also
    # asks for ephemeral-storage (published in no zone) always scores 0.
    p = pod(_g(cpu=3, mem=GI, **{"ephemeral-storage": 10 * GI}))
    assert score_node(p, _kep_node(8, 8), LNN) == 94  # type: ignore[arg-type]


def test_a_device_in_one_zone_does_not_disqualify_wider_sets() -> None:
    zones = {0: {"cpu": 2, "memory": 8 * GI}, 1: {"cpu": 2, "memory": 8 * GI, DEV: 1}}
    assert score_node(pod(_g(cpu=4, **{DEV: 1})), view(zones, costs=slit([0, 1])), LNN) == 82


def test_a_numa_affine_request_absent_from_every_zone_scores_0() -> None:
    assert score_node(pod(_g(**{"hugepages-1Gi": GI})), _kep_node(8, 8), LNN) == 0  # type: ignore[arg-type]


def test_sparse_ids_subtract_from_the_right_zones() -> None:
    # Reference bug: the chosen id 2 is used as a list index into a 2-zone list (a panic).
    p = pod(_g(cpu=3, mem=GI, name="a"), _g(cpu=3, mem=GI, name="b"))
    zones = {0: {"cpu": 2, "memory": 8 * GI}, 2: {"cpu": 4, "memory": 8 * GI}}
    assert score_node(p, view(zones, costs=slit([0, 2])), LNN) == 82


def test_unsorted_zones_subtract_from_the_zone_actually_chosen() -> None:
    # Published [node-1, node-0]. The first container (3 cpu) fits only node-1; the reference
    # then subtracts from list position 1, i.e. node-0, leaves node-1 at 4 cpu and scores the
    # second container on one zone (94). Really node-1 has 1 cpu left and b needs both (82).
    p = pod(_g(cpu=3, mem=GI, name="a"), _g(cpu=3, mem=GI, name="b"))
    zones = {1: {"cpu": 4, "memory": 8 * GI}, 0: {"cpu": 2, "memory": 8 * GI}}
    assert score_node(p, view(zones, costs=slit([0, 1])), LNN) == 82


def test_container_scope_subtracts_init_containers_as_if_they_persisted() -> None:
    p = pod(_g(cpu=3, mem=GI, name="app"), init=[_g(cpu=3, mem=GI, name="init")])
    assert score_node(p, _kep_node(4, 2), LNN) == 82  # type: ignore[arg-type]


def test_many_zones_do_not_explode_the_search() -> None:
    zones = {i: {"cpu": 1, "memory": 64 * GI} for i in range(64)}
    v = view(zones, max_numa="1024")
    assert score_node(pod(_g(cpu=2)), v, LNN) == 100  # step 0: fits on 2 zones
    assert score_node(pod(_g(cpu=40)), v, LNN) == 0  # beyond the combination budget
