import json
import logging
import threading
from collections.abc import Iterable, Sequence

import pytest

from rte.consumer.cache.discardreserved import DiscardReservedCache
from rte.consumer.cache.interface import NO_NRT, NOT_FRESH, Lookup
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.passthrough import PassthroughCache
from rte.consumer.cache.resync import CompareResult
from rte.consumer.cache.selection import make_cache
from rte.consumer.config import (
    CacheConfig,
    CacheMode,
    ForeignPodsDetect,
    LoadAwareConfig,
    LoadMode,
    Reconcile,
    ResyncMethod,
    ResyncScope,
    StaleAction,
    cache_settings_from_plugin_args,
)
from rte.consumer.filter import filter_node
from rte.consumer.load import busy_zones, score_weight, weighted_score
from rte.consumer.store import ADDED, DELETED, MODIFIED, NRTStore
from rte.errors import ConfigError
from rte.model import fingerprint as fp
from rte.model.attributes import ZONE_CPU_UTILIZATION
from rte.model.pod import Container, Pod
from rte.model.quantity import Amount
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod, InformerMode
from tests.helpers.clock import FakeClock

GIB = 1024**3
OURS = "topo-aware-scheduler"
GPU = "example.com/gpu"


def pod(
    name: str,
    node: str = "n1",
    phase: str = "Running",
    cpu: Amount = 2,
    *,
    guaranteed: bool = True,
    scheduler: str = OURS,
    uid: str = "",
    extra: dict[str, Amount] | None = None,
) -> Pod:
    requests: dict[str, Amount] = {"cpu": cpu, "memory": GIB, **(extra or {})}
    limits = dict(requests) if guaranteed else {}
    return Pod(
        namespace="ns",
        name=name,
        uid=uid or f"uid-{name}",
        node_name=node,
        phase=phase,
        scheduler_name=scheduler,
        containers=(Container("c", requests, limits),),
    )


def nrt(
    name: str = "n1",
    cpus: Sequence[int] = (8, 8),
    counted: Iterable[Pod] = (),
    *,
    ids: Sequence[int] | None = None,
    method: str | None = FingerprintMethod.ALL.value,
    fingerprint: str | None = None,
    annotation_only: bool = False,
    policy: str = "single-numa-node",
    gpus: Sequence[int] | None = None,
    zone_attrs: dict[int, dict[str, str]] | None = None,
) -> NodeTopology:
    """An NRT whose fingerprint covers ``counted`` (as the agent would publish it)."""
    ids = list(ids) if ids is not None else list(range(len(cpus)))
    zones = []
    for i, (numa_id, cpu) in enumerate(zip(ids, cpus, strict=True)):
        resources = [ResourceInfo("cpu", cpu, cpu, cpu), ResourceInfo("memory", 64 * GIB, 64 * GIB, 64 * GIB)]
        if gpus is not None:
            resources.append(ResourceInfo(GPU, gpus[i], gpus[i], gpus[i]))
        attrs = tuple(Attribute(k, v) for k, v in (zone_attrs or {}).get(numa_id, {}).items())
        zones.append(Zone(f"node-{numa_id}", resources=tuple(resources), attributes=attrs))
    sign = fingerprint if fingerprint is not None else fp.compute(p.key for p in counted)
    attributes = [Attribute("topologyManagerPolicy", policy), Attribute("topologyManagerScope", "container")]
    annotations = {}
    if annotation_only:
        annotations[fp.ANNOTATION] = sign
    else:
        attributes.append(Attribute(fp.ATTRIBUTE, sign))
        if method is not None:
            attributes.append(Attribute(fp.ATTRIBUTE_METHOD, method))
    return NodeTopology(name=name, zones=tuple(zones), attributes=tuple(attributes), annotations=annotations)


def cpus_of(lookup: Lookup) -> tuple[Amount, ...]:
    assert lookup.fresh and lookup.view is not None
    return tuple(lookup.view.available["cpu"])


def setup(
    *topologies: NodeTopology, clock: FakeClock | None = None, **config: object
) -> tuple[NRTStore, OverReserveCache, FakeClock]:
    store = NRTStore()
    store.replace_all(topologies)
    clock = clock or FakeClock()
    # These tests pin the reference plugin's reconciliation (an exact match at resync);
    # tests/consumer/test_reconcile.py covers rte's default.
    config.setdefault("reconcile", Reconcile.EXACT)
    return store, OverReserveCache(store, CacheConfig(**config), clock), clock  # type: ignore[arg-type]


# --- reserve, flush, mismatch -------------------------------------------------------------------


def test_a_reservation_is_taken_from_every_zone_until_a_matching_fingerprint_flushes_it() -> None:
    store, cache, _ = setup(nrt(cpus=(8, 8)))
    p1 = pod("p1", cpu=3)
    cache.reserve("n1", p1)
    assert cpus_of(cache.get("n1", p1)) == (5, 5)
    assert cache.get("n1").view is cache.get("n1").view, "views are built once per change"

    # The agent publishes the node with p1 placed on NUMA 1 and p1 in its fingerprint.
    store.apply(MODIFIED, nrt(cpus=(8, 5), counted=[p1]))
    assert cpus_of(cache.get("n1")) == (5, 5), "updates are not adopted while reservations exist"
    assert cache.resync([p1]).flushed == (), "a node that never failed the filter is not checked"

    cache.mark_maybe_over_reserved("n1")
    report = cache.resync([p1])
    assert report.flushed == ("n1",)
    assert cpus_of(cache.get("n1")) == (8, 5)
    assert cache.state_dump()["nodes"]["n1"]["reservations"] == []


def test_a_mismatch_keeps_the_node_dirty_and_its_reservations(caplog: pytest.LogCaptureFixture) -> None:
    store, cache, _ = setup(nrt(cpus=(8, 8)))
    p1 = pod("p1", cpu=3)
    cache.reserve("n1", p1)
    cache.mark_maybe_over_reserved("n1")
    store.apply(MODIFIED, nrt(cpus=(8, 8), counted=[]))  # the agent has not seen p1 yet
    with caplog.at_level(logging.DEBUG, logger="rte.consumer.cache.overreserve"):
        report = cache.resync([p1])
    assert report.flushed == () and report.still_dirty == ("n1",)
    assert report.comparisons["n1"].result is CompareResult.MISMATCH
    assert cpus_of(cache.get("n1")) == (5, 5)
    assert [r.levelno for r in caplog.records] == [logging.DEBUG], "a mismatch is routine"
    # Retried next period, and flushed once the agent catches up.
    store.apply(MODIFIED, nrt(cpus=(5, 8), counted=[p1]))
    assert cache.resync([p1]).flushed == ("n1",)


@pytest.mark.parametrize(
    ("sign", "result"),
    [("garbage", CompareResult.MALFORMED), ("pfp0v999" + "0" * 16, CompareResult.INCOMPATIBLE)],
)
def test_an_unreadable_fingerprint_is_a_warning_and_keeps_the_node_dirty(
    sign: str, result: CompareResult, caplog: pytest.LogCaptureFixture
) -> None:
    _, cache, _ = setup(nrt(fingerprint=sign))
    cache.mark_maybe_over_reserved("n1")
    with caplog.at_level(logging.DEBUG, logger="rte.consumer.cache.overreserve"):
        report = cache.resync([])
    assert report.comparisons["n1"].result is result and report.still_dirty == ("n1",)
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_an_nrt_without_any_fingerprint_never_flushes() -> None:
    topology = nrt()
    bare = NodeTopology(name="n1", zones=topology.zones, attributes=topology.attributes[:2])
    _, cache, _ = setup(bare)
    cache.mark_maybe_over_reserved("n1")
    report = cache.resync([])
    assert report.comparisons["n1"].result is CompareResult.MISSING
    assert report.still_dirty == ("n1",)


def test_the_filter_recovers_a_node_once_the_resync_proves_the_reservation_unneeded() -> None:
    store, cache, _ = setup(nrt(cpus=(4, 4)))
    first, second = pod("first", cpu=3), pod("second", cpu=3, node="")
    cache.reserve("n1", first)
    lookup = cache.get("n1", second)
    verdict = filter_node(second, lookup.view, fresh=lookup.fresh)
    assert not verdict.fits, "pessimism: 3 CPUs taken from both zones"
    cache.mark_maybe_over_reserved("n1")
    store.apply(MODIFIED, nrt(cpus=(1, 4), counted=[first]))
    cache.resync([first, second])
    lookup = cache.get("n1", second)
    assert filter_node(second, lookup.view, fresh=lookup.fresh).numa_id == 1


# --- foreign pods --------------------------------------------------------------------------------


def test_a_foreign_pod_blocks_the_node_until_a_matching_resync() -> None:
    store, cache, _ = setup(nrt(cpus=(8, 8)))
    intruder = pod("intruder", scheduler="default-scheduler")
    cache.on_pod_event(ADDED, intruder)
    assert cache.get("n1") == NOT_FRESH
    assert "other schedulers" in cache.unfresh_reason("n1")
    assert cache.resync([intruder]).still_dirty == ("n1",)
    store.apply(MODIFIED, nrt(cpus=(6, 8), counted=[intruder]))
    assert cache.resync([intruder]).flushed == ("n1",)
    assert cpus_of(cache.get("n1")) == (6, 8)


def test_our_own_pods_and_unbound_pods_are_never_foreign() -> None:
    _, cache, _ = setup(nrt())
    cache.on_pod_event(ADDED, pod("mine"))
    cache.on_pod_event(ADDED, pod("unbound", node="", scheduler="default-scheduler"))
    assert cache.get("n1").fresh


def test_a_deleted_or_finished_foreign_pod_only_marks_the_node_dirty() -> None:
    _, cache, _ = setup(nrt())
    cache.on_pod_event(DELETED, pod("gone", scheduler="default-scheduler"))
    cache.on_pod_event(MODIFIED, pod("done", phase="Succeeded", scheduler="default-scheduler"))
    assert cache.get("n1").fresh
    assert cache.state_dump()["nodes"]["n1"]["dirty"] is True


def test_foreign_detection_only_exclusive_counts_pods_with_exclusive_resources() -> None:
    _, cache, _ = setup(nrt(gpus=(1, 1)), foreign_pods_detect=ForeignPodsDetect.ONLY_EXCLUSIVE_RESOURCES)
    cache.on_pod_event(ADDED, pod("burstable", guaranteed=False, scheduler="other"))
    assert cache.get("n1").fresh
    cache.on_pod_event(ADDED, pod("burstable-gpu", guaranteed=False, scheduler="other", extra={GPU: 1}))
    assert cache.get("n1") == NOT_FRESH, "a device listed in the NRT is exclusive whatever the QoS"


def test_foreign_detection_off_ignores_every_pod() -> None:
    _, cache, _ = setup(nrt(), foreign_pods_detect=ForeignPodsDetect.NONE)
    cache.on_pod_event(ADDED, pod("intruder", scheduler="default-scheduler"))
    assert cache.get("n1").fresh


# --- Topology Manager config change --------------------------------------------------------------


def test_a_config_change_flushes_without_a_check_but_keeps_in_flight_reservations() -> None:
    store, cache, _ = setup(nrt(cpus=(8, 8)))
    running, starting = pod("running", cpu=1), pod("starting", phase="Pending", cpu=2)
    cache.reserve("n1", running)
    cache.reserve("n1", starting)
    cache.mark_maybe_over_reserved("n1")
    store.apply(MODIFIED, nrt(cpus=(7, 8), policy="restricted", fingerprint="pfp0v001" + "0" * 16))
    report = cache.resync([running, starting])
    assert report.config_flushed == ("n1",) and report.flushed == ()
    lookup = cache.get("n1")
    assert lookup.view is not None and lookup.view.tm.policy == "restricted"
    assert cpus_of(lookup) == (5, 6), "the Pending pod is still reserved, the running one is not"
    assert cache.state_dump()["nodes"]["n1"]["dirty"] is True, "nothing was verified"


def test_a_config_change_flushes_a_node_that_only_holds_reservations() -> None:
    # Not dirty, not foreign: the node never failed the filter, it just has reservations (so it
    # does not follow new NRTs). A policy change must still reach the filter at the next resync.
    store, cache, _ = setup(nrt(cpus=(8, 8)))
    starting = pod("starting", phase="Pending", cpu=2)
    cache.reserve("n1", starting)
    store.apply(MODIFIED, nrt(cpus=(8, 8), policy="restricted", fingerprint="pfp0v001" + "0" * 16))
    assert cache.get("n1").view.tm.policy == "single-numa-node"  # type: ignore[union-attr]
    report = cache.resync([starting])
    assert report.config_flushed == ("n1",) and report.flushed == ()
    lookup = cache.get("n1")
    assert lookup.view is not None and lookup.view.tm.policy == "restricted"
    assert cpus_of(lookup) == (6, 6), "the in-flight reservation survives the flush"


def test_a_reservation_is_pessimistic_whatever_the_pod_s_qos_class() -> None:
    # A Burstable pod's cpu runs in the shared pool, but the scheduler does not know the kubelet's
    # choice either way: its requests are taken from every zone, like a Guaranteed pod's.
    _, cache, _ = setup(nrt(cpus=(8, 8)))
    cache.reserve("n1", pod("burstable", phase="Pending", cpu=3, guaranteed=False))
    assert cpus_of(cache.get("n1")) == (5, 5)
    view = cache.get("n1").view
    assert view is not None and view.available["memory"] == (63 * GIB, 63 * GIB)


def test_resync_scope_only_resources_ignores_config_changes() -> None:
    store, cache, _ = setup(nrt(), resync_scope=ResyncScope.ONLY_RESOURCES)
    cache.reserve("n1", pod("p1", phase="Pending"))
    store.apply(MODIFIED, nrt(policy="restricted"))
    assert cache.resync([]).config_flushed == ()
    view = cache.get("n1").view
    assert view is not None and view.tm.policy == "single-numa-node"


# --- the reference's gaps ------------------------------------------------------------------------


def test_an_nrt_created_after_start_is_served_at_once() -> None:
    store, cache, _ = setup()
    assert cache.get("late") == NO_NRT
    store.apply(ADDED, nrt("late", cpus=(4, 4)))
    assert cpus_of(cache.get("late")) == (4, 4)  # the reference never sees it (#967)


def test_a_node_with_zero_relevant_pods_resyncs_on_the_empty_set_fingerprint() -> None:
    store, cache, clock = setup(nrt(cpus=(8, 8)), absent_pod_grace=10.0)
    gone = pod("gone", cpu=4)
    cache.reserve("n1", gone)
    cache.mark_maybe_over_reserved("n1")
    clock.now += 11  # the pod was deleted; nothing is left on the node
    store.apply(MODIFIED, nrt(cpus=(8, 8), counted=[]))
    assert cache.resync([]).flushed == ("n1",)  # the reference skips nodes without pods forever
    assert cpus_of(cache.get("n1")) == (8, 8)


def test_reservations_of_pods_still_in_flight_survive_a_matching_flush() -> None:
    store, cache, _ = setup(nrt(cpus=(8, 8)))
    running = pod("running", cpu=1)
    bound_pending = pod("bound-pending", phase="Pending", cpu=2)
    binding = pod("binding", node="", phase="Pending", cpu=3)
    placed_by_peer = pod("peer", phase="Pending", cpu=1)  # bound, never reserved by us
    for p in (running, bound_pending, binding):
        cache.reserve("n1", p)
    cache.mark_maybe_over_reserved("n1")
    store.apply(MODIFIED, nrt(cpus=(7, 8), counted=[running]))
    assert cache.resync([running, bound_pending, binding, placed_by_peer]).flushed == ("n1",)
    # The NRT reflects only "running"; the reference would now show (7, 8) and over-commit.
    assert cpus_of(cache.get("n1")) == (1, 2)
    sources = {r["pod"]: r["source"] for r in cache.state_dump()["nodes"]["n1"]["reservations"]}
    assert sources == {"ns/bound-pending": "reserve", "ns/binding": "reserve", "ns/peer": "in-flight"}


def test_a_reserved_pod_missing_from_the_pod_list_is_kept_only_for_the_grace() -> None:
    _, cache, clock = setup(nrt(cpus=(8, 8)), absent_pod_grace=30.0)
    cache.reserve("n1", pod("lagging", cpu=2))
    cache.mark_maybe_over_reserved("n1")
    clock.now += 5
    cache.resync([])
    assert cpus_of(cache.get("n1")) == (6, 6), "the pod informer may lag the scheduler"
    cache.mark_maybe_over_reserved("n1")
    clock.now += 30
    cache.resync([])
    assert cpus_of(cache.get("n1")) == (8, 8)


def test_a_pod_recreated_under_the_same_name_does_not_keep_the_old_reservation() -> None:
    _, cache, clock = setup(nrt(cpus=(8, 8)), absent_pod_grace=0.0)
    cache.reserve("n1", pod("p", phase="Pending", uid="old"))
    cache.mark_maybe_over_reserved("n1")
    clock.now += 1
    cache.resync([pod("p", node="", phase="Pending", uid="new")])
    assert cpus_of(cache.get("n1")) == (8, 8)


def test_sparse_and_unsorted_numa_ids_are_handled_as_ids() -> None:
    _, cache, _ = setup(nrt(cpus=(6, 8, 4), ids=(3, 0, 7)))
    cache.reserve("n1", pod("p1", cpu=5))
    lookup = cache.get("n1")
    assert lookup.view is not None and lookup.view.ids == (0, 3, 7)
    assert cpus_of(lookup) == (3, 1, 0)
    zones = cache.state_dump()["nodes"]["n1"]["zones"]
    assert zones["node-7"] == {
        "available": {"cpu": "4", "memory": str(64 * GIB)},
        "availableAfterReservations": {"cpu": "0", "memory": str(63 * GIB)},
    }


def test_exclusivity_is_judged_with_the_resource_names_of_the_nrt_being_checked() -> None:
    # The cached NRT does not list the GPU yet; the new one does, and the agent counted the pod.
    store, cache, _ = setup(nrt(method=FingerprintMethod.WITH_EXCLUSIVE_RESOURCES.value))
    gpu_pod = pod("gpu", guaranteed=False, extra={GPU: 1})
    cache.mark_maybe_over_reserved("n1")
    store.apply(
        MODIFIED, nrt(gpus=(0, 1), counted=[gpu_pod], method=FingerprintMethod.WITH_EXCLUSIVE_RESOURCES.value)
    )
    assert cache.resync([gpu_pod]).flushed == ("n1",)


def test_a_clean_node_follows_the_store_and_the_reference_mode_does_not() -> None:
    store, cache, _ = setup(nrt(cpus=(8, 8)))
    store.apply(MODIFIED, nrt(cpus=(2, 8)))
    assert cpus_of(cache.get("n1")) == (2, 8)
    store, reference, _ = setup(nrt(cpus=(8, 8)), follow_clean_nodes=False)
    reference.get("n1")
    store.apply(MODIFIED, nrt(cpus=(2, 8)))
    assert cpus_of(reference.get("n1")) == (8, 8)


def test_a_reservation_on_a_node_without_nrt_applies_when_its_nrt_appears() -> None:
    store, cache, _ = setup()
    cache.reserve("n1", pod("early", phase="Pending", cpu=2))
    assert cache.get("n1") == NO_NRT
    store.apply(ADDED, nrt(cpus=(8, 8)))
    assert cpus_of(cache.get("n1")) == (6, 6)
    store.apply(DELETED, nrt())
    assert cache.get("n1") == NO_NRT
    store.apply(ADDED, nrt(cpus=(8, 8)))
    assert cpus_of(cache.get("n1")) == (6, 6), "a republished NRT does not forget our reservation"
    reserved = cache.get_topology("n1")
    assert reserved is not None and [z.resource("cpu").available for z in reserved.zones] == [6, 6]  # type: ignore[union-attr]


def test_reservations_on_a_node_without_nrt_are_pruned_once_their_pods_run() -> None:
    _, cache, _ = setup()
    cache.reserve("n1", pod("p", phase="Pending"))
    cache.resync([pod("p", phase="Running")])
    assert cache.state_dump()["nodes"] == {}


# --- fingerprint methods and informer modes ------------------------------------------------------

EXCL = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES.value


@pytest.mark.parametrize(
    ("resync_method", "published_method", "annotation_only", "agent_counts_exclusive_only", "matches"),
    [
        (ResyncMethod.AUTODETECT, EXCL, False, True, True),
        (ResyncMethod.AUTODETECT, FingerprintMethod.ALL.value, False, False, True),
        (ResyncMethod.AUTODETECT, None, False, False, True),  # no method attribute: all
        (ResyncMethod.AUTODETECT, None, False, True, False),
        (ResyncMethod.ALL, EXCL, False, True, False),  # forced all beats the attribute
        (ResyncMethod.ONLY_EXCLUSIVE_RESOURCES, FingerprintMethod.ALL.value, False, True, True),
        (ResyncMethod.ONLY_EXCLUSIVE_RESOURCES, None, True, False, True),  # annotation: always all
    ],
)
def test_the_fingerprint_method_follows_the_lookup_table(
    resync_method: ResyncMethod,
    published_method: str | None,
    annotation_only: bool,
    agent_counts_exclusive_only: bool,
    matches: bool,
) -> None:
    exclusive, shared = pod("exclusive"), pod("shared", guaranteed=False)
    counted = [exclusive] if agent_counts_exclusive_only else [exclusive, shared]
    published = nrt(counted=counted, method=published_method, annotation_only=annotation_only)
    _, cache, _ = setup(published, resync_method=resync_method)
    cache.mark_maybe_over_reserved("n1")
    assert (cache.resync([exclusive, shared]).flushed == ("n1",)) is matches


@pytest.mark.parametrize(
    ("mode", "agent_counts_terminal", "matches"),
    [
        (InformerMode.DEDICATED, True, True),
        (InformerMode.DEDICATED, False, False),
        (InformerMode.SHARED, False, True),
        (InformerMode.SHARED, True, False),
    ],
)
def test_informer_modes_decide_whether_terminal_pods_count(
    mode: InformerMode, agent_counts_terminal: bool, matches: bool
) -> None:
    running, done, pending = pod("running"), pod("done", phase="Succeeded"), pod("pending", phase="Pending")
    counted = [running, done] if agent_counts_terminal else [running]
    _, cache, _ = setup(nrt(counted=counted), informer_mode=mode)
    cache.mark_maybe_over_reserved("n1")
    assert (cache.resync([running, done, pending]).flushed == ("n1",)) is matches


# --- N consecutive failures ----------------------------------------------------------------------


def test_with_a_streak_threshold_only_consecutive_failures_mark_the_node() -> None:
    _, cache, _ = setup(nrt(), dirty_after_failures=3)
    cache.mark_maybe_over_reserved("n1")
    cache.mark_maybe_over_reserved("n1")
    cache.note_filter_success("n1")
    cache.mark_maybe_over_reserved("n1")
    cache.mark_maybe_over_reserved("n1")
    assert cache.resync([]).comparisons == {}
    cache.mark_maybe_over_reserved("n1")
    assert cache.resync([]).flushed == ("n1",)


def test_the_reference_marks_a_node_on_its_first_failure() -> None:
    _, cache, _ = setup(nrt())
    cache.mark_maybe_over_reserved("n1")
    dump = cache.state_dump()["nodes"]["n1"]
    assert dump["dirty"] and dump["maybeOverReserved"] == 1 and dump["failureStreak"] == 1


# --- staleness -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [(StaleAction.UNSCHEDULABLE, NOT_FRESH), (StaleAction.NO_NRT, NO_NRT)],
)
def test_a_node_whose_agent_heartbeat_is_too_old_is_treated_per_the_action(
    action: StaleAction, expected: Lookup
) -> None:
    store, cache, clock = setup(nrt(), heartbeat_max_age=30.0, stale_action=action)
    store.observe_heartbeat("n1", clock.now - 10)
    assert cache.get("n1").fresh and cache.get("n1").view is not None
    clock.now += 25
    assert cache.get("n1") == expected
    store.observe_heartbeat("n1", clock.now)
    assert cache.get("n1").view is not None


def test_staleness_is_off_by_default_and_ignore_only_reports() -> None:
    store, cache, clock = setup(nrt())
    store.observe_heartbeat("n1", clock.now - 3600)
    assert cache.get("n1").view is not None
    store, cache, clock = setup(nrt(), heartbeat_max_age=30.0)
    store.observe_heartbeat("n1", clock.now - 3600)
    assert cache.get("n1").view is not None
    dump = cache.state_dump()["nodes"]["n1"]
    assert dump["stale"] is True and dump["heartbeatAgeSeconds"] == 3600


def test_a_node_without_heartbeat_is_stale_only_when_configured() -> None:
    _, lenient, _ = setup(nrt(), heartbeat_max_age=30.0, stale_action=StaleAction.UNSCHEDULABLE)
    assert lenient.get("n1").fresh
    _, strict, _ = setup(
        nrt(), heartbeat_max_age=30.0, stale_action=StaleAction.UNSCHEDULABLE, stale_if_no_heartbeat=True
    )
    assert strict.get("n1") == NOT_FRESH


# --- startup rule --------------------------------------------------------------------------------


def test_after_a_restart_nodes_wait_for_their_first_fingerprint_match() -> None:
    running, bound_pending = pod("running", cpu=1), pod("bound-pending", phase="Pending", cpu=2)
    unpublished = pod("unpublished", node="n2")  # runs on n2, the agent has not published it yet
    _, cache, clock = setup(
        nrt("n1", cpus=(7, 8), counted=[running]), nrt("n2", counted=[]), startup_grace=60.0
    )
    assert cache.get("n1") == NOT_FRESH, "before the first resync nothing is known"
    report = cache.resync([running, bound_pending, unpublished])
    assert report.flushed == ("n1",) and report.still_dirty == ("n2",)
    # n1 matched: usable, and the pod bound by the previous incarnation is reserved.
    assert cpus_of(cache.get("n1")) == (5, 6)
    # n2's NRT may lack what the previous incarnation reserved there: not usable yet.
    assert cache.get("n2") == NOT_FRESH
    assert "not yet confirmed" in cache.unfresh_reason("n2")
    clock.now += 61
    assert cache.get("n2").fresh, "after the grace the mismatch trap cannot block a node forever"


def test_without_the_startup_rule_nodes_are_usable_at_once() -> None:
    _, cache, _ = setup(nrt())
    assert cache.get("n1").fresh


# --- load-aware ----------------------------------------------------------------------------------


def test_load_aware_filter_mode_drops_busy_zones_from_the_view() -> None:
    busy = {1: {ZONE_CPU_UTILIZATION: "95"}, 2: {ZONE_CPU_UTILIZATION: "50"}}
    topology = nrt(cpus=(8, 8, 8), zone_attrs=busy)
    _, cache, _ = setup(topology, load=LoadAwareConfig(mode=LoadMode.FILTER))
    view = cache.get("n1").view
    assert view is not None and view.ids == (0, 2)
    _, off, _ = setup(topology)
    view = off.get("n1").view
    assert view is not None and view.ids == (0, 1, 2)


def test_load_aware_score_mode_scales_by_the_share_of_busy_zones() -> None:
    topology = nrt(cpus=(8, 8), zone_attrs={0: {ZONE_CPU_UTILIZATION: "81"}, 1: {ZONE_CPU_UTILIZATION: "x"}})
    config = LoadAwareConfig(mode=LoadMode.SCORE, score_factor=0.5)
    assert score_weight(topology, config) == 0.75
    assert score_weight(topology, config, zones=frozenset({"node-0"})) == 0.5
    assert score_weight(topology, config, zones=frozenset({"node-1"})) == 1.0
    assert score_weight(topology, LoadAwareConfig()) == 1.0
    _, cache, _ = setup(topology, load=config)
    view = cache.get("n1").view
    assert weighted_score(90, view, config) == 67
    assert weighted_score(90, view, config, numa_id=0) == 45
    assert weighted_score(90, view, LoadAwareConfig()) == 90


def test_a_zone_exactly_at_the_threshold_is_not_busy() -> None:
    at = nrt(cpus=(8, 8), zone_attrs={0: {ZONE_CPU_UTILIZATION: "80"}, 1: {ZONE_CPU_UTILIZATION: "81"}})
    assert busy_zones(at, {ZONE_CPU_UTILIZATION: 80}) == frozenset({"node-1"})


# --- state dump ----------------------------------------------------------------------------------


def test_the_state_dump_is_json_and_tells_the_story_of_each_node() -> None:
    store, cache, clock = setup(nrt(cpus=(8, 8)), heartbeat_max_age=30.0)
    store.observe_heartbeat("n1", clock.now - 4)
    cache.reserve("n1", pod("p1", cpu=3))
    cache.mark_maybe_over_reserved("n1")
    cache.resync([pod("p1", cpu=3)])
    dump = json.loads(json.dumps(cache.state_dump()))
    node = dump["nodes"]["n1"]
    assert dump["mode"] == "OverReserve"
    assert node["zones"]["node-0"]["availableAfterReservations"]["cpu"] == "5"
    assert node["reservations"][0]["pod"] == "ns/p1" and node["reservations"][0]["request"]["cpu"] == "3"
    assert node["dirty"] and node["maybeOverReserved"] == 1 and node["foreignPods"] == 0
    assert node["lastCompare"]["result"] == "mismatch" and node["lastCompare"]["podCount"] == 1
    assert node["lastCompare"]["expected"] == fp.compute([])
    assert node["heartbeatAgeSeconds"] == 4 and node["fresh"] is True


# --- the other cache modes and their selection ---------------------------------------------------


def test_passthrough_serves_the_latest_nrt_without_accounting() -> None:
    store = NRTStore()
    store.apply(ADDED, nrt(cpus=(8, 8)))
    cache = PassthroughCache(store, clock=FakeClock())
    cache.reserve("n1", pod("p1", cpu=4))
    assert cpus_of(cache.get("n1")) == (8, 8)
    store.apply(MODIFIED, nrt(cpus=(4, 8)))
    assert cpus_of(cache.get("n1")) == (4, 8)
    assert cache.get("n2") == NO_NRT


def test_discard_reserved_blocks_a_node_between_reserve_and_bind() -> None:
    store = NRTStore()
    store.apply(ADDED, nrt(cpus=(8, 8)))
    cache = DiscardReservedCache(store, clock=FakeClock())
    p1 = pod("p1")
    cache.reserve("n1", p1)
    assert cache.get("n1") == NOT_FRESH
    assert cache.state_dump()["nodes"] == {"n1": {"reserved": ["uid-p1"]}}
    cache.post_bind("n1", p1)
    assert cpus_of(cache.get("n1")) == (8, 8)


@pytest.mark.parametrize(
    ("args", "mode", "cls"),
    [
        ({}, CacheMode.PASSTHROUGH, PassthroughCache),
        ({"cacheResyncPeriodSeconds": 5}, CacheMode.OVER_RESERVE, OverReserveCache),
        (
            {"cacheResyncPeriodSeconds": 5, "discardReservedNodes": True},
            CacheMode.DISCARD_RESERVED,
            DiscardReservedCache,
        ),
    ],
)
def test_the_cache_is_selected_like_the_reference(
    args: dict[str, object], mode: CacheMode, cls: type
) -> None:
    settings = cache_settings_from_plugin_args(args)
    assert settings.mode is mode
    assert type(make_cache(settings, NRTStore(), FakeClock())) is cls


def test_plugin_cache_arguments_are_read_and_bad_values_named() -> None:
    settings = cache_settings_from_plugin_args(
        {
            "cacheResyncPeriodSeconds": 5,
            "cache": {"foreignPodsDetect": "OnlyExclusiveResources", "informerMode": "Shared"},
        }
    )
    assert settings.config.foreign_pods_detect is ForeignPodsDetect.ONLY_EXCLUSIVE_RESOURCES
    assert settings.config.informer_mode is InformerMode.SHARED
    assert settings.config.resync_method is ResyncMethod.AUTODETECT
    with pytest.raises(ConfigError, match=r"^cache.resyncMethod: 'Sometimes' is not one of Autodetect, All"):
        cache_settings_from_plugin_args({"cache": {"resyncMethod": "Sometimes"}})
    with pytest.raises(ConfigError, match="dirtyAfterFailures"):
        CacheConfig(dirty_after_failures=0)


# --- threads -------------------------------------------------------------------------------------


def test_concurrent_scheduling_resync_and_watch_events_do_not_corrupt_the_cache() -> None:
    nodes = [f"n{i}" for i in range(4)]
    store, cache, _ = setup(*(nrt(n) for n in nodes))
    errors: list[BaseException] = []
    pods = [pod(f"p{i}", node=nodes[i % 4], phase="Pending", cpu=1) for i in range(40)]

    def scheduler() -> None:
        try:
            for p in pods:
                cache.get(p.node_name, p)
                cache.reserve(p.node_name, p)
                cache.mark_maybe_over_reserved(p.node_name)
                cache.unreserve(p.node_name, p)
                cache.reserve(p.node_name, p)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def resyncer() -> None:
        try:
            for _ in range(20):
                cache.resync(pods)
                json.dumps(cache.state_dump())
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def watcher() -> None:
        try:
            for i in range(40):
                store.apply(MODIFIED, nrt(nodes[i % 4], cpus=(8, 8 - i % 3)))
                cache.on_pod_event(ADDED, pod(f"f{i}", node=nodes[i % 4], scheduler="other"))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=t) for t in (scheduler, resyncer, watcher)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    dump = cache.state_dump()
    assert sum(len(n["reservations"]) for n in dump["nodes"].values()) == 40
