"""The extender over real HTTP on 127.0.0.1, in kube-scheduler's JSON wire format, and its /metrics.

The store is fed with NRT objects directly (as the watch would), pods through the same event
entry point the pod watch uses; no Kubernetes client is involved here.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rte.consumer.cache.selection import make_cache
from rte.consumer.nrtfile import CompactReader
from rte.consumer.placement import Outcome
from rte.consumer.store import ADDED, DELETED, MODIFIED, NRTStore
from rte.errors import InputError
from rte.extender.server import ExtenderServer
from rte.extender.service import ExtenderService
from rte.extender.settings import extender_settings
from rte.extender.wire import extender_score
from rte.model import numaplacement as npl
from tests.helpers.extender import GI, PROFILE, Client, node, nrt, pod

APP = {"cpu": 4, "memory": 8 * GI}
"""The request of the Guaranteed pod used throughout: 4 CPUs and 8 GiB on one NUMA zone."""
NO_ZONE = "single-numa-node: no single NUMA zone holds cpu=4 and memory=8Gi"
FOREIGN = (
    "invalid node topology data: node has pods bound by other schedulers not yet reflected in its topology"
)
WORKER_A = nrt("worker-a", [{"cpu": 3, "memory": 60 * GI}, {"cpu": 5, "memory": 4 * GI}])
WORKER_B = nrt("worker-b", [{"cpu": 8, "memory": 16 * GI}, {"cpu": 16, "memory": 64 * GI}])
SOLO = nrt("solo", [{"cpu": 4, "memory": 8 * GI}], pods=[])


@dataclass
class Env:
    store: NRTStore
    service: ExtenderService
    server: ExtenderServer
    client: Client


def _env(
    *, period: str = "5", ready: bool = True, state_max_age: float = 0, **options: object
) -> Iterator[Env]:
    settings = extender_settings(cache_resync_period=period, scheduler_profiles=[PROFILE], **options)  # type: ignore[arg-type]
    store = NRTStore()
    for obj in (WORKER_A, WORKER_B, SOLO):
        store.apply_object(ADDED, obj)
    cache = make_cache(settings.cache, store)
    service = ExtenderService(
        store,
        cache,
        settings.strategy,
        profiles=settings.cache.config.profiles,
        informer_mode=settings.cache.config.informer_mode,
    )
    if ready:
        service.nrt_synced.set()
        service.replace_pods([])
    server = ExtenderServer(
        service, "127.0.0.1", 0, max_body=settings.max_request_body, state_max_age=state_max_age
    ).start()
    client = Client(server.url)
    try:
        yield Env(store, service, server, client)
    finally:
        client.close()
        server.stop()


@pytest.fixture
def env() -> Iterator[Env]:
    yield from _env()


@pytest.fixture
def reference_env() -> Iterator[Env]:
    """The reference plugin's reconciliation: an exact fingerprint match at resync."""
    yield from _env(cache_reconcile="ExactMatch")


def names_args(p: dict[str, object], *names: str) -> dict[str, object]:
    return {"Pod": p, "Nodes": None, "NodeNames": list(names)}


def test_filter_with_node_names_answers_with_node_names_and_failed_nodes(env: Env) -> None:
    status, result = env.client.post("filter", names_args(pod("app", APP), "worker-a", "worker-b", "plain"))
    assert status == 200
    assert result == {
        "Nodes": None,
        "NodeNames": ["worker-b", "plain"],
        "FailedNodes": {"worker-a": NO_ZONE},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }


def test_filter_with_node_objects_returns_the_passing_objects_and_checks_allocatable(env: Env) -> None:
    nic_pod = pod("nic", {**APP, "example.com/nic": 1})
    nodes = [
        node("worker-b", {"cpu": "32", "memory": "80Gi", "example.com/nic": "4"}, labels={"zone": "x"}),
        node("solo", {"cpu": "4", "memory": "8Gi"}),
        node("worker-a", {"cpu": "8", "memory": "64Gi", "example.com/nic": "4"}),
    ]
    args = {"Pod": nic_pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None}
    status, result = env.client.post("filter", args)
    assert status == 200
    assert result["NodeNames"] is None
    assert result["Nodes"] == {"metadata": {}, "items": [nodes[0]]}  # the object as sent, labels included
    assert result["FailedNodes"] == {
        "solo": "example.com/nic is not allocatable on the node",
        "worker-a": NO_ZONE,
    }


def test_prioritize_scales_scores_to_the_extender_range(env: Env) -> None:
    status, result = env.client.post("prioritize", names_args(pod("app", APP), "worker-b", "solo", "plain"))
    assert status == 200
    # worker-b scores 50 of 100 (LeastAllocated, see test_cli_fit): 5 of 10. solo is filled
    # exactly (0 left in its zone) and plain has no NRT: both 0.
    assert result == [
        {"Host": "worker-b", "Score": 5},
        {"Host": "solo", "Score": 0},
        {"Host": "plain", "Score": 0},
    ]
    burstable = pod("web", {"cpu": 1})
    _, result = env.client.post("prioritize", names_args(burstable, "worker-b", "plain"))
    assert result == [{"Host": "worker-b", "Score": 10}, {"Host": "plain", "Score": 10}]


@pytest.mark.parametrize(
    ("ours", "theirs"), [(0, 0), (1, 1), (9, 1), (10, 1), (11, 2), (50, 5), (94, 10), (100, 10), (130, 10)]
)
def test_extender_scores_round_up_so_that_only_zero_stays_zero(ours: int, theirs: int) -> None:
    assert extender_score(ours) == theirs


def test_the_strategy_flag_reaches_prioritize() -> None:
    for env in _env(strategy="LeastNUMANodes"):
        _, result = env.client.post("prioritize", names_args(pod("app", APP), "worker-b"))
        assert result == [{"Host": "worker-b", "Score": 10}]  # 94 of 100


def test_keys_are_matched_case_insensitively_like_go_does(env: Env) -> None:
    status, result = env.client.post("filter", {"pod": pod("app", APP), "nodenames": ["worker-a", "solo"]})
    assert status == 200
    assert result["NodeNames"] == ["solo"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "ExtenderArgs: not valid JSON"),
        (b"[]", "ExtenderArgs: expected a JSON object, got list"),
        (b'{"NodeNames": ["solo"]}', "ExtenderArgs.Pod: missing or not an object"),
        (json.dumps({"Pod": pod("p")}).encode(), "ExtenderArgs: neither NodeNames nor Nodes is set"),
        (
            json.dumps({"Pod": {"kind": "Service"}, "NodeNames": []}).encode(),
            "ExtenderArgs.Pod: kind: expected Pod",
        ),
        (
            json.dumps({"Pod": pod("p", {"cpu": "two"}), "NodeNames": ["solo"]}).encode(),
            "ExtenderArgs.Pod: spec.containers[0].resources",
        ),
        (
            json.dumps({"Pod": pod("p", {"cpu": "-2"}), "NodeNames": ["solo"]}).encode(),
            "ExtenderArgs.Pod: spec.containers[0].resources.limits.cpu: must not be negative, got '-2'",
        ),
        (
            json.dumps({"Pod": {**pod("p"), "spec": {"containers": []}}, "NodeNames": ["solo"]}).encode(),
            "ExtenderArgs.Pod: spec.containers: a pod needs at least one container",
        ),
        (
            json.dumps({"Pod": {**pod("p"), "spec": {}}, "NodeNames": ["solo"]}).encode(),
            "ExtenderArgs.Pod: spec.containers: a pod needs at least one container",
        ),
    ],
)
def test_a_bad_request_is_a_400_with_an_error_field(env: Env, body: bytes, error: str) -> None:
    for verb in ("filter", "prioritize"):
        status, result = env.client.request("POST", f"/{verb}", body)
        assert status == 400
        assert set(result) == {"Error"}
        assert result["Error"].startswith(error)


def test_a_body_over_the_configured_limit_is_a_413_from_its_content_length() -> None:
    for env in _env(max_request_body="4Ki"):
        many = names_args(pod("app", APP), *(f"node-{i:04d}" for i in range(1000)))
        status, result = env.client.post("filter", many)
        assert status == 413
        assert result == {"Error": f"body of {len(json.dumps(many))} bytes exceeds the limit of 4096"}
        env.client.close()
        assert env.client.post("filter", names_args(pod("app", APP), "solo"))[0] == 200


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000, b'{"Pod": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001],
    ids=["list", "object"],
)
def test_json_nested_too_deeply_is_a_400_with_a_one_line_reason(env: Env, body: bytes) -> None:
    status, result = env.client.request("POST", "/filter", body)
    assert (status, result) == (400, {"Error": "ExtenderArgs: not valid JSON: nested too deeply"})


def test_unknown_verbs_and_paths_are_404_with_an_error_field(env: Env) -> None:
    assert env.client.post("bind", {}) == (
        404,
        {"Error": "no such verb 'bind'; this extender serves filter, prioritize and preempt"},
    )
    status, result = env.client.get("/nope")
    assert status == 404 and "Error" in result


def test_any_url_prefix_path_reaches_the_verbs(env: Env) -> None:
    body = json.dumps(names_args(pod("app", APP), "solo")).encode()
    status, result = env.client.request("POST", "/scheduler/numa/filter", body)
    assert status == 200 and result["NodeNames"] == ["solo"]


def test_a_chunked_body_is_read_too(env: Env) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", env.server.port, timeout=10)
    body = json.dumps(names_args(pod("app", APP), "solo")).encode()
    conn.request("POST", "/filter", body=iter([body[:10], body[10:]]), encode_chunked=True)
    response = conn.getresponse()
    assert response.status == 200
    assert json.loads(response.read())["NodeNames"] == ["solo"]
    conn.close()


def test_one_kept_alive_connection_serves_every_call(env: Env) -> None:
    env.client.post("filter", names_args(pod("app", APP), "solo"))
    sock = env.client.conn.sock
    assert sock is not None
    env.client.post("prioritize", names_args(pod("app", APP), "solo"))
    env.client.get("/healthz")
    assert env.client.conn.sock is sock


def test_before_the_nrt_list_synced_calls_are_refused_and_readyz_says_why() -> None:
    for env in _env(ready=False):
        assert env.client.get("/healthz") == (200, {"status": "ok"})
        assert env.client.get("/readyz") == (503, {"status": "NodeResourceTopology list not synced yet"})
        status, result = env.client.post("filter", names_args(pod("app", APP), "solo"))
        assert (status, result) == (
            503,
            {"Error": "extender not ready: NodeResourceTopology list not synced yet"},
        )
        env.service.nrt_synced.set()
        assert env.client.get("/readyz") == (503, {"status": "pod list not synced yet"})
        env.service.replace_pods([])
        assert env.client.get("/readyz") == (200, {"status": "ready"})


def _reservations(env: Env, name: str) -> list[str]:
    _, state = env.client.get(f"/state?node={name}")
    return [r["pod"] for r in state["cache"]["nodes"][name]["reservations"]]


def _fits(env: Env, name: str, p: dict[str, object] | None = None) -> bool:
    _, result = env.client.post("filter", names_args(p or pod("probe", APP), name))
    return name in result["NodeNames"]


def test_a_bound_pending_pod_of_ours_is_reserved_and_forgotten_when_deleted(env: Env) -> None:
    assert _fits(env, "solo")
    bound = pod("first", APP, node="solo", phase="Pending")
    env.service.on_pod_event(ADDED, pod("first", APP))  # not bound yet: nothing to reserve
    assert _reservations(env, "solo") == []
    env.service.on_pod_event(MODIFIED, bound)
    assert _reservations(env, "solo") == ["default/first"]
    assert not _fits(env, "solo")  # the zone's 4 CPUs are taken by the reservation
    env.service.on_pod_event(MODIFIED, bound)  # a repeated event reserves nothing more
    assert _reservations(env, "solo") == ["default/first"]
    env.service.on_pod_event(DELETED, bound)
    assert _reservations(env, "solo") == []
    assert _fits(env, "solo")


def test_a_pod_that_finished_frees_its_reservation(env: Env) -> None:
    env.service.on_pod_event(ADDED, pod("job", APP, node="solo", phase="Pending"))
    assert _reservations(env, "solo") == ["default/job"]
    env.service.on_pod_event(MODIFIED, pod("job", APP, node="solo", phase="Succeeded"))
    assert _reservations(env, "solo") == []


def test_a_pod_first_seen_running_is_not_reserved_by_the_reference(reference_env: Env) -> None:
    env = reference_env
    env.service.replace_pods([pod("old", APP, node="solo", phase="Running")])
    assert _reservations(env, "solo") == []
    assert _fits(env, "solo")


def test_by_default_a_running_pod_the_nrt_does_not_account_for_is_charged(env: Env) -> None:
    env.service.replace_pods([pod("old", APP, node="solo", phase="Running")])
    assert _reservations(env, "solo") == ["default/old"]  # solo's NRT fingerprints no pod
    assert not _fits(env, "solo")


def test_a_failed_filter_marks_the_node_and_a_matching_fingerprint_flushes_it(reference_env: Env) -> None:
    env = reference_env
    env.service.on_pod_event(ADDED, pod("first", APP, node="solo", phase="Pending"))
    assert not _fits(env, "solo")
    _, state = env.client.get("/state?node=solo")
    solo = state["cache"]["nodes"]["solo"]
    assert (solo["dirty"], solo["maybeOverReserved"]) == (True, 1)
    # The pod starts and the agent publishes an NRT that reflects it.
    env.service.on_pod_event(MODIFIED, pod("first", APP, node="solo", phase="Running"))
    env.store.apply_object(MODIFIED, nrt("solo", [{"cpu": 0, "memory": 0}], pods=[("default", "first")]))
    report = env.service.resync()
    assert report.flushed == ("solo",)
    _, state = env.client.get("/state?node=solo")
    solo = state["cache"]["nodes"]["solo"]
    assert solo["reservations"] == []
    assert (solo["dirty"], solo["maybeOverReserved"], solo["foreignPods"]) == (False, 0, 0)
    assert solo["lastCompare"]["result"] == "match"
    assert solo["zones"]["node-0"]["available"] == {"cpu": "0", "memory": "0"}
    assert state["lastResync"]["flushed"] == ["solo"]
    assert state["requests"]["resyncs"] == 1


def test_a_mismatching_fingerprint_keeps_the_reservation_and_the_mark(reference_env: Env) -> None:
    env = reference_env
    env.service.on_pod_event(ADDED, pod("first", APP, node="solo", phase="Running"))
    env.service.on_pod_event(ADDED, pod("second", APP, node="solo", phase="Pending"))
    assert not _fits(env, "solo")
    report = env.service.resync()  # the NRT still fingerprints the empty set: "first" is missing
    assert report.still_dirty == ("solo",)
    _, state = env.client.get("/state?node=solo")
    solo = state["cache"]["nodes"]["solo"]
    assert solo["reservations"][0]["pod"] == "default/second"
    assert solo["dirty"] is True
    assert solo["lastCompare"]["result"] == "mismatch"


def test_a_pod_of_another_scheduler_makes_the_node_unusable_until_a_resync_matches(
    reference_env: Env,
) -> None:
    env = reference_env
    env.service.on_pod_event(
        ADDED, pod("sneaky", {"cpu": 1}, node="solo", phase="Running", scheduler="default-scheduler")
    )
    _, result = env.client.post("filter", names_args(pod("app", APP), "solo"))
    assert result["FailedNodes"] == {"solo": FOREIGN}
    _, [score] = env.client.post("prioritize", names_args(pod("app", APP), "solo"))
    assert score == {"Host": "solo", "Score": 0}
    env.store.apply_object(
        MODIFIED, nrt("solo", [{"cpu": 3, "memory": 8 * GI}], pods=[("default", "sneaky")])
    )
    assert env.service.resync().flushed == ("solo",)
    _, result = env.client.post("filter", names_args(pod("small", {"cpu": 2, "memory": GI}), "solo"))
    assert result["NodeNames"] == ["solo"]


def test_by_default_a_newer_nrt_of_an_older_pod_set_is_adopted_and_state_says_why_a_node_is_refused(
    env: Env,
) -> None:
    env.service.on_pod_event(ADDED, pod("first", APP, node="solo", phase="Pending"))
    assert not _fits(env, "solo")  # "first" holds the zone's 4 CPUs
    _, state = env.client.get("/state?node=solo")
    solo = state["cache"]["nodes"]["solo"]
    assert solo["diagnosis"] == "reserved-on-every-zone"
    # The agent published "first" running while our pod watch still has it Pending: an NRT of a
    # pod set we do not know yet is not adopted...
    env.store.apply_object(MODIFIED, nrt("solo", [{"cpu": 0, "memory": 0}], pods=[("default", "first")]))
    _, state = env.client.get("/state?node=solo")
    assert state["cache"]["nodes"]["solo"]["diagnosis"] == "fingerprint-mismatch"
    # ... until the pod event arrives: adopted at once, no resync, and nothing counted twice.
    env.service.on_pod_event(MODIFIED, pod("first", APP, node="solo", phase="Running"))
    _, state = env.client.get("/state?node=solo")
    solo = state["cache"]["nodes"]["solo"]
    assert (solo["reservations"], solo["adoptions"], solo["diagnosis"]) == ([], 2, "waiting-for-agent")
    assert solo["cachedRevision"] == solo["storeRevision"]


def test_state_dump_covers_every_node_or_one(env: Env) -> None:
    status, state = env.client.get("/state")
    assert status == 200
    assert state["ready"] is True
    assert state["cache"]["mode"] == "OverReserve"
    assert sorted(state["cache"]["nodes"]) == ["solo", "worker-a", "worker-b"]
    assert state["strategy"] == {"type": "LeastAllocated", "weights": {"cpu": 1, "memory": 1}}
    _, one = env.client.get("/state?node=worker-b")
    assert list(one["cache"]["nodes"]) == ["worker-b"]
    assert one["cache"]["nodes"]["worker-b"]["zones"]["node-1"]["available"] == {
        "cpu": "16",
        "memory": str(64 * GI),
    }
    _, none = env.client.get("/state?node=nowhere")
    assert none["cache"]["nodes"] == {}


@pytest.fixture
def snapshot_env() -> Iterator[Env]:
    """/state snapshots that never age within a test."""
    yield from _env(state_max_age=3600)


def test_state_is_served_from_a_snapshot_without_taking_the_cache_lock(snapshot_env: Env) -> None:
    # /filter needs the cache's lock; /state readers must never hold it while they are served.
    env = snapshot_env
    assert env.client.get("/state")[0] == 200  # the first reader takes the snapshot
    answers: list[tuple[int, Any]] = []

    def read() -> None:
        answers.extend([env.client.get("/state"), env.client.get("/state?node=solo")])

    with env.service.cache._lock:  # type: ignore[attr-defined]
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(10)
        assert not reader.is_alive(), "/state waited for the cache lock"
    (full_status, full), (one_status, one) = answers
    assert (full_status, one_status) == (200, 200)
    assert sorted(full["cache"]["nodes"]) == ["solo", "worker-a", "worker-b"]
    assert list(one["cache"]["nodes"]) == ["solo"]


def test_many_state_readers_take_one_snapshot_per_period(snapshot_env: Env) -> None:
    env = snapshot_env
    taken: list[str | None] = []
    state = env.service.state

    def counted(node: str | None = None) -> dict[str, Any]:
        taken.append(node)
        return state(node)

    env.service.state = counted  # type: ignore[method-assign]

    statuses: list[int] = []

    def read() -> None:
        c = Client(env.server.url)
        statuses.extend(c.get("/state?node=solo")[0] for _ in range(5))
        c.close()

    readers = [threading.Thread(target=read) for _ in range(8)]
    for t in readers:
        t.start()
    for t in readers:
        t.join(30)
    assert statuses == [200] * 40
    assert taken == [None]


def test_passthrough_mode_dumps_the_zones_it_serves() -> None:
    for env in _env(period="0"):
        _, state = env.client.get("/state?node=solo")
        assert state["cache"]["mode"] == "Passthrough"
        solo = state["cache"]["nodes"]["solo"]
        assert solo["fresh"] is True
        assert solo["zones"] == {"node-0": {"available": {"cpu": "4", "memory": str(8 * GI)}}}
        # Passthrough keeps no reservations: a bound pod changes nothing until the NRT does.
        env.service.on_pod_event(ADDED, pod("first", APP, node="solo", phase="Pending"))
        assert _fits(env, "solo")


def test_discard_reserved_cannot_block_a_node_behind_an_extender() -> None:
    # The extender sees the pod only once bound, when DiscardReserved already releases the node.
    for env in _env(discard_reserved=True):
        env.service.on_pod_event(ADDED, pod("first", APP, node="solo", phase="Pending"))
        _, state = env.client.get("/state?node=solo")
        assert state["cache"]["mode"] == "DiscardReserved"
        assert state["cache"]["nodes"]["solo"]["fresh"] is True
        assert _fits(env, "solo")


# -- /metrics ----------------------------------------------------------------------------------


def scrape(env: Env) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(env.server.url + "/metrics", timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def test_each_verb_call_is_timed_and_counted_by_its_status_code(env: Env) -> None:
    before = scrape(env)
    assert sample(before, "rte_extender_request_duration_seconds_count", verb="filter") == 0
    assert sample(before, "rte_extender_requests_total", verb="prioritize", code="200") == 0
    env.client.post("filter", names_args(pod("app", APP), "worker-a", "worker-b"))
    env.client.post("filter", {"Pod": "not a pod"})
    env.client.post("prioritize", names_args(pod("app", APP), "worker-b"))
    env.client.post("bind", {})  # not a verb we serve: no series for it
    after = scrape(env)
    assert sample(after, "rte_extender_request_duration_seconds_count", verb="filter") == 2
    assert sample(after, "rte_extender_request_duration_seconds_count", verb="prioritize") == 1
    assert sample(after, "rte_extender_request_duration_seconds_bucket", verb="filter", le="+Inf") == 2
    assert sample(after, "rte_extender_requests_total", verb="filter", code="200") == 1
    assert sample(after, "rte_extender_requests_total", verb="filter", code="400") == 1
    assert not any(dict(labels).get("verb") == "bind" for _, labels in after)
    assert sample(after, "process_resident_memory_bytes") > 0


def test_each_verb_answer_says_its_server_time_and_other_answers_do_not(env: Env) -> None:
    """``Server-Timing: app;dur=<ms>, cpu;dur=<ms>``: the server's share of the round trip (see
    bench_serve), and its thread's CPU time within it."""
    conn = http.client.HTTPConnection("127.0.0.1", env.server.port, timeout=10)
    try:
        timings = []
        for verb, args in [("filter", names_args(pod("app", APP), "worker-a")), ("prioritize", {"Pod": 1})]:
            conn.request(
                "POST", f"/{verb}", body=json.dumps(args), headers={"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            response.read()
            timings.append(response.getheader("Server-Timing", ""))
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        assert response.getheader("Server-Timing") is None
    finally:
        conn.close()
    for timing in timings:
        metrics = dict(metric.split(";dur=") for metric in timing.split(", "))
        assert metrics.keys() == {"app", "cpu"}, timing
        assert 0 < float(metrics["app"]) < 10_000 and 0 <= float(metrics["cpu"]) < 10_000, timing


def test_readiness_and_the_number_of_nodes_are_read_at_scrape_time() -> None:
    for env in _env(ready=False):
        samples = scrape(env)
        assert sample(samples, "rte_extender_ready") == 0
        assert sample(samples, "rte_extender_nrt_nodes") == 3
        env.service.nrt_synced.set()
        env.service.replace_pods([])
        assert sample(scrape(env), "rte_extender_ready") == 1


def test_a_node_whose_fingerprint_keeps_mismatching_shows_in_the_resync_series(reference_env: Env) -> None:
    env = reference_env
    env.service.on_pod_event(ADDED, pod("first", APP, node="solo", phase="Running"))
    env.service.on_pod_event(ADDED, pod("second", APP, node="solo", phase="Pending"))
    _, result = env.client.post("filter", names_args(pod("app", APP), "solo"))
    assert result["FailedNodes"]  # the failure marks solo for the resync
    env.service.resync()  # the NRT fingerprints the empty set: "first" is missing
    samples = scrape(env)
    assert sample(samples, "rte_extender_resyncs_total") == 1
    assert sample(samples, "rte_extender_resync_nodes_total", result="mismatched") == 1
    assert sample(samples, "rte_extender_resync_nodes_total", result="flushed") == 0
    assert sample(samples, "rte_extender_resync_mismatched_nodes") == 1


def test_the_numaplacement_outcomes_of_adopted_nrts_are_counted(env: Env) -> None:
    """rte_extender_numaplacement_total counts what each adopted NRT's numaplacement gave."""
    before = scrape(env)
    assert {r: sample(before, "rte_extender_numaplacement_total", result=r) for r in Outcome} == {
        "decoded": 0,
        "absent": 0,
        "mismatch": 0,
        "error": 0,
    }
    env.service.on_pod_event(ADDED, pod("first", APP, node="solo", phase="Running"))
    payload = npl.encode(1, [(npl.ContainerId("default", "first", "main"), 0)])
    obj = nrt("solo", [{"cpu": 0, "memory": 0}], pods=[("default", "first")])
    obj["attributes"] += [
        {"name": npl.METADATA_ATTRIBUTE, "value": payload.pack_metadata()},
        {"name": "cpuManagerPolicy", "value": "static"},
    ]
    env.store.apply_object(MODIFIED, obj)
    assert _fits(env, "solo") is False  # a lookup brings the node up to date: the NRT is adopted
    after = scrape(env)
    assert sample(after, "rte_extender_numaplacement_total", result="decoded") == 1
    placed = env.service.cache.placement("solo")  # type: ignore[attr-defined]
    assert placed.containers == {npl.ContainerId("default", "first", "main"): 0}


def test_a_node_whose_nrt_was_refused_as_impossible_is_refused_with_the_reason(env: Env) -> None:
    """Issue #23 item 7: an impossible NRT must not turn its node into "no NRT, passes"."""
    bad = nrt("worker-b", [{"cpu": 8, "memory": 16 * GI}, {"cpu": 16, "memory": 64 * GI}])
    bad["zones"][1]["name"] = "node-0"
    with pytest.raises(InputError) as refused:
        CompactReader().read(bad)
    reason = f"NodeResourceTopology worker-b refused: {refused.value}"
    env.store.reject("worker-b", reason)  # what the watch does with it (tests/extender/test_cluster_pages.py)
    _, result = env.client.post("filter", names_args(pod("app", APP), "worker-a", "worker-b", "plain"))
    assert result["NodeNames"] == ["plain"]
    assert result["FailedNodes"] == {"worker-a": NO_ZONE, "worker-b": reason}
    assert sample(scrape(env), "rte_extender_nrts_rejected") == 1
    env.store.apply_object(MODIFIED, WORKER_B)  # a good NRT ends the refusal
    _, result = env.client.post("filter", names_args(pod("app", APP), "worker-b"))
    assert result["NodeNames"] == ["worker-b"]
