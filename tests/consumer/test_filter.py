"""Filter by the reference plugin's rules (``Compat.REFERENCE``), pinned: every call here goes
through :func:`tests.helpers.consumer.reference_filter`. The kubelet's rules are tested in
``test_kubelet_filter.py`` and ``tests/model/test_admission_table.py``."""

import pytest

from rte.consumer.filter import (
    REASON_CONTAINER,
    REASON_INIT_CONTAINER,
    REASON_INVALID_TOPOLOGY,
    REASON_POD,
    REASON_SIDECAR_CONTAINER,
    FilterCode,
)
from rte.consumer.numaview import build_view
from rte.model.pod import QOS_BEST_EFFORT, QOS_BURSTABLE, QOS_GUARANTEED
from tests.helpers.consumer import GI, container, pod, topology, view
from tests.helpers.consumer import reference_filter as filter_node

DEV = "vendor.com/nic"
SCOPES = ["container", "pod"]


def _zones(cpu: list[int], dev: list[int] | None = None) -> dict[int | str, dict[str, str | int]]:
    zones: dict[int | str, dict[str, str | int]] = {}
    for i, c in enumerate(cpu):
        zones[i] = {"cpu": c, "memory": 8 * GI}
        if dev is not None:
            zones[i][DEV] = dev[i]
    return zones


def _guaranteed(cpu: int, **extra: int) -> object:
    return container("c", {"cpu": cpu, "memory": GI, **extra})


# --- QoS x scope (the reference's filter.go) -----------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES)
def test_best_effort_pod_without_devices_passes_even_where_nothing_fits(scope: str) -> None:
    p = pod(container("c", {}, guaranteed=False))
    assert p.qos_class == QOS_BEST_EFFORT
    result = filter_node(p, view(_zones([0, 0]), scope=scope))
    assert result.code is FilterCode.SUCCESS


@pytest.mark.parametrize("scope", SCOPES)
def test_best_effort_pod_with_a_device_is_filtered_on_device_availability(scope: str) -> None:
    p = pod(container("c", {DEV: 1}, guaranteed=False))
    assert p.qos_class == QOS_BEST_EFFORT
    assert not filter_node(p, view(_zones([4, 4], dev=[0, 0]), scope=scope)).fits
    ok = filter_node(p, view(_zones([4, 4], dev=[0, 1]), scope=scope))
    assert ok.fits and ok.numa_id == 1


@pytest.mark.parametrize("scope", SCOPES)
def test_burstable_cpu_only_needs_to_be_listed_in_some_zone(scope: str) -> None:
    p = pod(container("c", {"cpu": 64, "memory": 64 * GI}, guaranteed=False))
    assert p.qos_class == QOS_BURSTABLE
    assert filter_node(p, view(_zones([0, 0]), scope=scope)).fits


@pytest.mark.parametrize("scope", SCOPES)
def test_burstable_cpu_listed_in_no_zone_rejects_the_node(scope: str) -> None:
    p = pod(container("c", {"cpu": 1}, guaranteed=False))
    result = filter_node(p, view({0: {"memory": GI}}, scope=scope))
    assert result.code is FilterCode.UNSCHEDULABLE
    assert "cpu is published in no NUMA zone" in result.reason


@pytest.mark.parametrize("scope", SCOPES)
def test_burstable_devices_are_checked_against_available(scope: str) -> None:
    p = pod(container("c", {"cpu": 1, DEV: 2}, guaranteed=False))
    assert not filter_node(p, view(_zones([0, 0], dev=[1, 1]), scope=scope)).fits
    assert filter_node(p, view(_zones([0, 0], dev=[1, 2]), scope=scope)).numa_id == 1


@pytest.mark.parametrize("scope", SCOPES)
def test_guaranteed_needs_every_request_available_in_one_zone(scope: str) -> None:
    p = pod(_guaranteed(4, **{DEV: 1}))
    assert p.qos_class == QOS_GUARANTEED
    # cpu fits in zone 0, the device only in zone 1: no single zone has both.
    result = filter_node(p, view(_zones([4, 2], dev=[0, 1]), scope=scope))
    assert result.code is FilterCode.UNSCHEDULABLE
    assert filter_node(p, view(_zones([4, 4], dev=[0, 1]), scope=scope)).numa_id == 1


def test_container_scope_subtracts_each_guaranteed_app_container_from_its_zone() -> None:
    p = pod(container("a", {"cpu": 3, "memory": GI}), container("b", {"cpu": 3, "memory": GI}))
    ok = filter_node(p, view(_zones([4, 4])))
    assert ok.fits and ok.placements == (("a", 0), ("b", 1)) and ok.numa_id is None
    bad = filter_node(p, view(_zones([4, 2])))
    assert bad.code is FilterCode.UNSCHEDULABLE
    assert bad.reason.startswith(f'{REASON_CONTAINER} "b"')


def test_container_scope_subtracts_only_devices_for_burstable_pods() -> None:
    p = pod(
        container("a", {"cpu": 3, DEV: 1}, guaranteed=False),
        container("b", {"cpu": 3, DEV: 1}, guaranteed=False),
    )
    result = filter_node(p, view(_zones([0, 0], dev=[1, 1])))
    assert result.placements == (("a", 0), ("b", 1))  # devices moved b, cpu never did
    assert not filter_node(p, view(_zones([9, 9], dev=[1, 0]))).fits


def test_init_containers_are_checked_against_untouched_zones_and_never_subtracted() -> None:
    p = pod(container("app", {"cpu": 4, "memory": GI}), init=[container("init", {"cpu": 4, "memory": GI})])
    result = filter_node(p, view(_zones([4])))
    assert result.fits and result.numa_id == 0


def test_an_init_container_that_fits_nowhere_is_reported_as_such() -> None:
    p = pod(container("app", {"cpu": 1, "memory": GI}), init=[container("init", {"cpu": 8, "memory": GI})])
    result = filter_node(p, view(_zones([4, 4])))
    assert result.code is FilterCode.UNSCHEDULABLE
    assert result.reason.startswith(f'{REASON_INIT_CONTAINER} "init"')


def test_a_sidecar_that_fits_nowhere_is_reported_as_a_sidecar() -> None:
    sidecar = container("proxy", {"cpu": 8, "memory": GI}, sidecar=True)
    result = filter_node(
        pod(container("app", {"cpu": 1, "memory": GI}), init=[sidecar]), view(_zones([4, 4]))
    )
    assert result.reason.startswith(f'{REASON_SIDECAR_CONTAINER} "proxy"')


def test_pod_scope_aligns_the_effective_request_including_overhead() -> None:
    p = pod(
        container("a", {"cpu": 2, "memory": GI}),
        container("b", {"cpu": 2, "memory": GI}),
        overhead={"cpu": 1},
    )
    bad = filter_node(p, view(_zones([4, 4]), scope="pod"))
    assert bad.code is FilterCode.UNSCHEDULABLE and bad.reason.startswith(REASON_POD)
    assert filter_node(p, view(_zones([4, 5]), scope="pod")).numa_id == 1
    # Container scope places a and b separately and ignores the overhead.
    assert filter_node(p, view(_zones([4, 4]), scope="container")).fits


def test_pod_scope_takes_the_largest_init_container_when_it_exceeds_the_app_sum() -> None:
    p = pod(container("a", {"cpu": 1, "memory": GI}), init=[container("i", {"cpu": 6, "memory": GI})])
    assert not filter_node(p, view(_zones([4, 4]), scope="pod")).fits
    assert filter_node(p, view(_zones([4, 6]), scope="pod")).numa_id == 1


# --- sidecars: plain init containers for the reference --------------------------------------------


def _sidecar_pod() -> object:
    return pod(
        container("app", {"cpu": 3, "memory": GI}),
        init=[container("proxy", {"cpu": 3, "memory": GI}, sidecar=True)],
    )


def test_sidecars_are_not_subtracted_like_the_reference() -> None:
    result = filter_node(_sidecar_pod(), view(_zones([4, 2])))  # type: ignore[arg-type]
    assert result.fits and result.placements == (("app", 0),)


def test_sidecars_are_checked_like_init_containers_in_pod_scope() -> None:
    assert filter_node(_sidecar_pod(), view(_zones([4, 4]), scope="pod")).fits  # type: ignore[arg-type]


# --- entry point statuses ------------------------------------------------------------------------


def test_a_node_without_nrt_passes() -> None:
    assert filter_node(pod(_guaranteed(400)), None).code is FilterCode.SUCCESS


def test_a_stale_view_is_unschedulable_with_the_reference_reason() -> None:
    result = filter_node(pod(_guaranteed(1)), view(_zones([4])), fresh=False)
    assert result.code is FilterCode.UNSCHEDULABLE and result.reason == REASON_INVALID_TOPOLOGY


@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted", None])
def test_policies_other_than_single_numa_node_are_never_filtered(policy: str | None) -> None:
    assert filter_node(pod(_guaranteed(400)), view(_zones([4]), policy=policy)).fits


# --- requests, node allocatable and host-level resources ----------------------------------------


def test_a_resource_missing_from_node_allocatable_rejects() -> None:
    p = pod(_guaranteed(1, **{DEV: 1}))
    v = view(_zones([4], dev=[1]))
    result = filter_node(p, v, {"cpu": 4, "memory": 8 * GI})
    assert result.code is FilterCode.UNSCHEDULABLE
    assert f"{DEV} is not allocatable on the node" in result.reason
    assert filter_node(p, v, {DEV: 1}).fits  # cpu and memory always count as known


def test_without_a_node_object_the_allocatable_check_passes() -> None:
    assert filter_node(pod(_guaranteed(1, **{DEV: 1})), view(_zones([4], dev=[1])), None).fits


def test_zero_quantities_are_ignored_even_for_unknown_resources() -> None:
    p = pod(container("c", {"cpu": 1, "memory": GI, "hugepages-1Gi": 0, "example.com/x": 0}))
    assert filter_node(p, view(_zones([4])), {"cpu": 4}).fits


def test_host_level_resources_absent_from_every_zone_pass() -> None:
    p = pod(_guaranteed(1, **{"ephemeral-storage": 10 * GI, "example.com/license": 1}))
    assert filter_node(p, view(_zones([4]))).fits


def test_a_device_listed_in_some_zones_must_fit_in_one_of_them() -> None:
    p = pod(_guaranteed(1, **{DEV: 1}))
    assert not filter_node(p, view({0: {"cpu": 4, "memory": GI, DEV: 0}, 1: {"cpu": 4, "memory": GI}})).fits


def test_a_numa_affine_request_missing_from_every_zone_rejects() -> None:
    p = pod(_guaranteed(1, **{"hugepages-2Mi": 2**21}))
    result = filter_node(p, view(_zones([4, 4])))
    assert "hugepages-2Mi is published in no NUMA zone" in result.reason


def test_fractional_quantities_compare_exactly() -> None:
    p = pod(container("c", {"cpu": "1500m", "memory": GI}))
    assert not filter_node(p, view({0: {"cpu": "1400m", "memory": GI}})).fits
    assert filter_node(p, view({0: {"cpu": "1500m", "memory": GI}})).fits


# --- NUMA ids are ids (fixed reference bugs and producer mistakes) ------------------------------


def test_the_lowest_fitting_id_wins_even_when_zones_are_published_unsorted() -> None:
    v = view({3: {"cpu": 8, "memory": GI}, 1: {"cpu": 8, "memory": GI}, 2: {"cpu": 1, "memory": GI}})
    assert v.published_ids == (3, 1, 2) and v.ids == (1, 2, 3)
    assert filter_node(pod(_guaranteed(4)), v).numa_id == 1


def test_sparse_numa_ids_keep_their_real_names() -> None:
    p = pod(container("a", {"cpu": 3, "memory": GI}), container("b", {"cpu": 3, "memory": GI}))
    result = filter_node(p, view({0: {"cpu": 4, "memory": 8 * GI}, 2: {"cpu": 4, "memory": 8 * GI}}))
    assert result.placements == (("a", 0), ("b", 2))


def test_zone_ids_above_63_are_ignored_instead_of_crashing_like_the_reference_at_64() -> None:
    # The reference accepts id 64 and indexes past its 64-entry table (a panic); the kubelet's
    # 64-bit NUMA mask cannot express it, so it is no alignment target for us.
    v = view({63: {"cpu": 1, "memory": GI}, 64: {"cpu": 8, "memory": GI}, 200: {"cpu": 8, "memory": GI}})
    assert v.ids == (63,)
    assert filter_node(pod(_guaranteed(1)), v).numa_id == 63
    assert not filter_node(pod(_guaranteed(4)), v).fits


def test_zones_that_are_not_numa_nodes_are_ignored() -> None:
    topo = topology(
        {"numa-node-0": {"cpu": 8, "memory": GI}, "node-x": {"cpu": 8}, 1: {"cpu": 2, "memory": GI}}
    )
    v = build_view(topo)
    assert v.ids == (1,)
    assert not filter_node(pod(_guaranteed(4)), v).fits


def test_a_duplicate_zone_id_keeps_the_first_zone() -> None:
    v = view({0: {"cpu": 1, "memory": GI}, "node-00": {"cpu": 8, "memory": GI}})
    assert v.ids == (0,) and not filter_node(pod(_guaranteed(4)), v).fits


def test_negative_available_counts_as_zero() -> None:
    v = view({0: {"cpu": 4, "memory": GI, DEV: -2}})
    assert v.available[DEV] == (0,)
    assert not filter_node(pod(_guaranteed(1, **{DEV: 1})), v).fits
