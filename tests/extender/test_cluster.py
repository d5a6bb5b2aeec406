"""``rte extender`` against the apiserver double, through the real ``kubernetes`` client and a kubeconfig.

The whole app runs: list + watch of NRTs, pods and Leases, the reserve cache, the HTTP server.
The double has no ``pods/binding`` subresource, so "the scheduler binds the pod" is a merge
patch setting ``spec.nodeName``; the watch event the extender sees is the same.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings
from rte.testing.apiserver import FakeApiServer
from tests.helpers.extender import GI, PROFILE, Client, nrt, pod
from tests.helpers.waiting import wait_for

APP = {"cpu": 4, "memory": 8 * GI}
GROUP, VERSION, PLURAL = "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"


def settings_for(fake_kubeconfig: Path, **more: str) -> Any:
    return extender_settings(
        cache_resync_period="3600",  # OverReserve; the test triggers resyncs itself
        scheduler_profiles=[PROFILE],
        foreign_pods_detect="OnlyExclusiveResources",
        cache_reconcile="ExactMatch",  # these tests pin the reference's reconciliation
        stale_after="30",
        listen="127.0.0.1:0",
        kubeconfig=str(fake_kubeconfig),
        **more,
    )


@pytest.fixture
def app(fake_apiserver: FakeApiServer, fake_kubeconfig: Path) -> Iterator[ExtenderApp]:
    settings = settings_for(fake_kubeconfig)
    extender = ExtenderApp(settings, state_max_age=0).start()  # /state as of now
    try:
        yield extender
    finally:
        extender.stop()


@pytest.fixture
def core(kube_api_client: Any) -> Any:
    return client.CoreV1Api(kube_api_client)


def fits(http: Client, node: str) -> bool:
    status, result = http.post("filter", {"Pod": pod("probe", APP), "NodeNames": [node]})
    assert status == 200
    return node in result["NodeNames"]


def node_state(http: Client, node: str) -> dict[str, Any]:
    _, state = http.get(f"/state?node={node}")
    entry: dict[str, Any] = state["cache"]["nodes"].get(node) or {}
    return entry


def publish(objects: Any, body: dict[str, Any]) -> None:
    """What the agent does: create the NRT, or merge-patch its zones and attributes."""
    name = body["metadata"]["name"]
    try:
        objects.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    except client.ApiException:
        objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
        return
    patch = {"zones": body["zones"], "attributes": body["attributes"]}
    objects.patch_cluster_custom_object(GROUP, VERSION, PLURAL, name, patch)


def test_an_nrt_created_after_start_is_picked_up_by_the_watch(
    app: ExtenderApp, objects: Any, http: Client
) -> None:
    assert fits(http, "solo")  # no NRT: the node passes, as the reference lets it
    publish(objects, nrt("solo", [{"cpu": 2, "memory": 8 * GI}], pods=[]))
    wait_for(lambda: not fits(http, "solo"))  # 2 CPUs per zone: too small, now that it is known
    assert node_state(http, "solo")["dirty"] is True  # the failure asks for a resync

    publish(objects, nrt("solo", [{"cpu": 4, "memory": 8 * GI}], pods=[]))

    def adopted() -> bool:
        # Once the watch delivered it, the resync confirms the new NRT by its fingerprint (the
        # empty pod set: we know no pods on solo either) and adopts it. Until then each failed
        # probe keeps the node marked.
        app.service.resync()
        return fits(http, "solo")

    wait_for(adopted)
    assert node_state(http, "solo")["lastCompare"]["result"] == "match"
    objects.delete_cluster_custom_object(GROUP, VERSION, PLURAL, "solo")
    wait_for(lambda: node_state(http, "solo").get("hasNRT") is False)


def test_a_pod_bound_through_the_api_is_reserved_and_a_matching_fingerprint_flushes(
    app: ExtenderApp, objects: Any, core: Any, http: Client
) -> None:
    publish(objects, nrt("solo", [{"cpu": 4, "memory": 8 * GI}], pods=[]))
    wait_for(lambda: node_state(http, "solo").get("hasNRT"))
    assert fits(http, "solo")

    # The scheduler places our pod: created unbound, then bound to solo, still Pending.
    core.create_namespaced_pod("default", pod("first", APP, phase="Pending"))
    core.patch_namespaced_pod("first", "default", {"spec": {"nodeName": "solo"}})
    wait_for(lambda: node_state(http, "solo")["reservations"])
    [reservation] = node_state(http, "solo")["reservations"]
    assert (reservation["pod"], reservation["source"]) == ("default/first", "reserve")
    assert not fits(http, "solo")  # the reservation holds the zone's 4 CPUs ...
    assert node_state(http, "solo")["dirty"] is True  # ... so the failure asks for a resync

    # A resync before the pod starts: the NRT's fingerprint (no started pods) matches what we
    # know, so the node is flushed, but the reservation survives: the pod is in flight, and no
    # NRT can reflect it yet. (The reference drops it here and may over-commit the node.)
    app.service.resync()
    state = node_state(http, "solo")
    assert state["lastCompare"]["result"] == "match"
    assert [r["pod"] for r in state["reservations"]] == ["default/first"]

    # The pod starts; the agent publishes an NRT that reflects it, fingerprint included.
    core.patch_namespaced_pod("first", "default", {"status": {"phase": "Running"}})
    publish(objects, nrt("solo", [{"cpu": 0, "memory": 0}], pods=[("default", "first")]))

    def released() -> bool:
        assert not fits(http, "solo")  # full either way; the failure marks it for the resync
        app.service.resync()
        return not node_state(http, "solo")["reservations"]

    wait_for(released)
    state = node_state(http, "solo")
    assert state["reservations"] == []
    assert state["dirty"] is False
    assert state["zones"]["node-0"]["available"] == {"cpu": "0", "memory": "0"}


def test_agent_leases_give_heartbeat_ages(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path, kube_api_client: Any
) -> None:
    settings = settings_for(fake_kubeconfig, heartbeat_source="lease")
    with ExtenderApp(settings, state_max_age=0) as extender:
        assert extender.server is not None
        http = Client(extender.server.url)
        wait_for(lambda: http.get("/readyz")[0] == 200)
        fake_apiserver.create_object(PLURAL, nrt("solo", [{"cpu": 4, "memory": 8 * GI}], pods=[]))
        leases = client.CoordinationV1Api(kube_api_client)
        renew = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        leases.create_namespaced_lease(
            "rte", {"metadata": {"name": "solo"}, "spec": {"holderIdentity": "rte-agent", "renewTime": renew}}
        )
        age = wait_for(lambda: node_state(http, "solo").get("heartbeatAgeSeconds") is not None)
        assert age
        state = node_state(http, "solo")
        assert 0 <= state["heartbeatAgeSeconds"] < 30
        assert state["stale"] is False
        assert set(http.get("/state")[1]["watches"]) == {"nrt", "pods", "pdbs", "leases"}
        leases.delete_namespaced_lease("solo", "rte")
        wait_for(lambda: node_state(http, "solo").get("heartbeatAgeSeconds") is None)
        http.close()


AGENT_LABELS = {"app.kubernetes.io/name": "rte", "app.kubernetes.io/component": "node-agent"}


def test_agent_pod_readiness_gives_heartbeats_from_the_pod_watch(
    core: Any, objects: Any, http: Client, fake_apiserver: FakeApiServer
) -> None:
    """The default source: a ready agent pod vouches now (age 0); a pod not ready since a time
    gives that time; no Lease is read, no watch added (the pods are watched anyway)."""
    publish(objects, nrt("solo", [{"cpu": 4, "memory": 8 * GI}], pods=[]))
    fake_apiserver.add_pod("agent-solo", namespace="rte", node_name="solo", labels=AGENT_LABELS)
    # A pod never ready counts from its creation: fresh for the max age (30 s) still.
    wait_for(lambda: node_state(http, "solo").get("heartbeatAgeSeconds") is not None)
    assert node_state(http, "solo")["stale"] is False
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    core.patch_namespaced_pod("agent-solo", "rte", {"status": {"conditions": [ready]}})
    wait_for(lambda: node_state(http, "solo").get("heartbeatAgeSeconds") == 0)
    # Not ready for a minute: older than the 30 s max age, stale.
    since = datetime.fromtimestamp(time.time() - 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    unready = {"type": "Ready", "status": "False", "lastTransitionTime": since}
    core.patch_namespaced_pod("agent-solo", "rte", {"status": {"conditions": [unready]}})
    wait_for(lambda: node_state(http, "solo")["stale"] is True)
    assert 55 < node_state(http, "solo")["heartbeatAgeSeconds"] < 120
    # A pod of another namespace with the same labels is not an agent.
    fake_apiserver.add_pod("impostor", namespace="default", node_name="solo", labels=AGENT_LABELS)
    core.patch_namespaced_pod("impostor", "default", {"status": {"conditions": [ready]}})
    time.sleep(0.3)
    assert node_state(http, "solo")["stale"] is True
    assert set(http.get("/state")[1]["watches"]) == {"nrt", "pods", "pdbs"}


def test_the_watches_survive_an_apiserver_outage_and_a_410(
    app: ExtenderApp, fake_apiserver: FakeApiServer, objects: Any, http: Client
) -> None:
    def store_cpu(node: str) -> int | None:
        topology = app.store.get(node)
        return None if topology is None else int(topology.zones[0].resources[0].available)

    publish(objects, nrt("solo", [{"cpu": 2, "memory": 8 * GI}], pods=[]))
    wait_for(lambda: store_cpu("solo") == 2)
    with fake_apiserver.offline():
        time.sleep(0.3)  # every watch fails and backs off; decisions keep using the store
        assert not fits(http, "solo")
        assert http.get("/readyz")[0] == 200
    fake_apiserver.create_object(PLURAL, nrt("late", [{"cpu": 8, "memory": 16 * GI}], pods=[]))
    wait_for(lambda: store_cpu("late") == 8, timeout=10)  # resumed from its resourceVersion
    assert app.feeds.status()["nrt"]["lists"] == 1
    assert fake_apiserver.wait_for_watches(3)  # NRTs, pods (the agents' readiness too) and PDBs
    fake_apiserver.expire_watches()  # ERROR 410 on every watch: list again
    publish(objects, nrt("solo", [{"cpu": 4, "memory": 8 * GI}], pods=[]))
    wait_for(lambda: store_cpu("solo") == 4, timeout=10)
    wait_for(lambda: app.feeds.status()["nrt"]["lists"] == 2)
    _, state = http.get("/state")
    assert state["watches"]["nrt"]["failures"] >= 1
    assert state["watches"]["nrt"]["lastError"]  # the outage, as the watch saw it
    assert set(state["watches"]) == {"nrt", "pods", "pdbs"}


def test_readyz_says_why_while_the_nrt_list_keeps_failing(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path
) -> None:
    fake_apiserver.uninstall_crd()  # the NRT list answers 404 until the CRD is installed
    settings = extender_settings(listen="127.0.0.1:0", kubeconfig=str(fake_kubeconfig))
    with ExtenderApp(settings) as extender:
        assert extender.server is not None
        c = Client(extender.server.url)
        wait_for(lambda: "last error: 404" in c.get("/readyz")[1]["status"])
        assert c.post("filter", {"Pod": pod("p", APP), "NodeNames": ["n"]})[0] == 503
        fake_apiserver.install_crd()
        wait_for(lambda: c.get("/readyz")[0] == 200, timeout=10)
        c.close()


def test_decisions_read_the_watch_fed_store_and_send_nothing_to_the_apiserver(
    app: ExtenderApp, objects: Any, http: Client, fake_apiserver: FakeApiServer
) -> None:
    # The reference's default (Passthrough) GETs the node's NRT on every Filter; ours never does.
    publish(objects, nrt("busy", [{"cpu": 8, "memory": 16 * GI}], pods=[]))
    wait_for(lambda: node_state(http, "busy").get("hasNRT"))
    fake_apiserver.clear_requests()
    for i in range(25):
        names = {"Pod": pod(f"p{i}", APP), "NodeNames": ["busy", "solo"]}
        assert http.post("filter", names)[0] == 200
        assert http.post("prioritize", names)[0] == 200
    reads = [r for r in fake_apiserver.requests if r.verb in ("get", "list")]
    assert reads == []


def test_listed_and_watched_nrts_share_their_equal_parts(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path
) -> None:
    # As --nrt-file reads them (rte.consumer.nrtfile.CompactReader): at 20 000 NRTs each
    # NRT's own copy of every string, zone and amount was most of the extender's memory.
    zones = [{"cpu": 4, "memory": 8 * GI}, {"cpu": 4, "memory": 8 * GI}]
    for name in ("listed-a", "listed-b"):
        fake_apiserver.create_object(PLURAL, nrt(name, zones, pods=[]))
    settings = extender_settings(listen="127.0.0.1:0", kubeconfig=str(fake_kubeconfig))
    with ExtenderApp(settings, state_max_age=0) as extender:
        store = extender.store
        wait_for(lambda: "listed-b" in store, 10, "the NRT list")
        fake_apiserver.create_object(PLURAL, nrt("watched", zones, pods=[]))
        wait_for(lambda: "watched" in store, 10, "the watch event")
        a, b, watched = (store.get(n) for n in ("listed-a", "listed-b", "watched"))
        assert a is not None and b is not None and watched is not None
        assert a.zones == b.zones == watched.zones
        assert a.zones is b.zones is watched.zones
        assert a.attributes is watched.attributes
