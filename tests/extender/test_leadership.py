"""Two extender replicas in one process against the apiserver double: one leader, one warm standby.

Short election timings (a 1.5 s lease) make failover take seconds. The real-process failover
under load, with SIGKILL, is ``tests/e2e/test_extender_failover_e2e.py``.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings
from rte.testing.apiserver import FakeApiServer
from tests.helpers.e2e import sample_value
from tests.helpers.extender import GI, PROFILE, nrt, pod
from tests.helpers.waiting import wait_for

NAMESPACE = "rte-scheduler"
APP = {"cpu": 4, "memory": 4 * GI}
Start = Callable[..., ExtenderApp]
FAST = {
    "leader_elect_lease_duration": "1500ms",
    "leader_elect_renew_deadline": "1s",
    "leader_elect_retry_period": "200ms",
}


@pytest.fixture
def start(fake_apiserver: FakeApiServer) -> Iterator[Start]:
    apps: list[ExtenderApp] = []

    def make(identity: str, **flags: Any) -> ExtenderApp:
        settings = extender_settings(
            listen="127.0.0.1:0",
            cache_resync_period="3600",  # OverReserve; the takeover and the tests resync
            scheduler_profiles=[PROFILE],
            lease_namespace="",
            leader_elect=True,
            leader_elect_identity=identity,
            leader_elect_lease_namespace=NAMESPACE,
            leader_elect_service="rte-extender",
            leader_elect_advertise_address="127.0.0.1",
            **{**FAST, **flags},
        )
        app = ExtenderApp(settings, api_client=fake_apiserver.api_client(), state_max_age=0).start()
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.stop()


def call(app: ExtenderApp, method: str, path: str, body: Any = None) -> tuple[int, Any, str | None]:
    assert app.server is not None
    conn = http.client.HTTPConnection("127.0.0.1", app.server.port, timeout=10)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body))
        response = conn.getresponse()
        data = response.read().decode()
        parsed = json.loads(data) if response.getheader("Content-Type") == "application/json" else data
        return response.status, parsed, response.getheader("Connection")
    finally:
        conn.close()


def filter_on(app: ExtenderApp, node: str) -> tuple[int, Any]:
    status, result, _ = call(app, "POST", "/filter", {"Pod": pod("probe", APP), "NodeNames": [node]})
    return status, result


def serving(*apps: ExtenderApp) -> ExtenderApp | None:
    return next((a for a in apps if a.leadership is not None and a.leadership.serving()), None)


def leader_port(api: FakeApiServer) -> int | None:
    found = api.get_object("endpointslices", "rte-extender-leader", NAMESPACE)
    if found is None:
        return None
    assert found["endpoints"][0]["addresses"] == ["127.0.0.1"]
    return int(found["ports"][0]["port"])


def test_only_the_leader_answers_the_verbs_and_the_service_points_at_it(
    start: Start, fake_apiserver: FakeApiServer, objects: Any
) -> None:
    objects.create_cluster_custom_object(
        "topology.node.k8s.io",
        "v1alpha2",
        "noderesourcetopologies",
        nrt("solo", [{"cpu": 8, "memory": 8 * GI}]),
    )
    a, b = start("a"), start("b")
    leader = wait_for(lambda: serving(a, b), 15, "a leader to take over")
    standby = b if leader is a else a
    wait_for(lambda: standby.service.ready(), 10, "the standby's watches")
    assert leader.server is not None
    wait_for(lambda: leader_port(fake_apiserver) == leader.server.port, 10, "the Service to point at it")

    for app in (leader, standby):
        assert call(app, "GET", "/readyz")[0] == 200  # both warm, both ready
    status, result = filter_on(leader, "solo")
    assert status == 200 and result["NodeNames"] == ["solo"]
    status, error, connection = call(
        standby, "POST", "/filter", {"Pod": pod("p", APP), "NodeNames": ["solo"]}
    )
    assert status == 503 and connection == "close"
    assert error["Error"] == f"not the leader (the leader is {leader.settings.election.identity})"  # type: ignore[union-attr]
    for app, value in ((leader, 1.0), (standby, 0.0)):
        assert sample_value(call(app, "GET", "/metrics")[1], "rte_extender_is_leader") == value
    state = call(leader, "GET", "/state")[1]["leadership"]
    assert (state["leader"], state["serving"], state["phase"]) == (True, True, "serving")

    assert leader.leadership is not None
    leader.leadership.stop()  # as on SIGTERM: stops answering, gives the Lease up after the fencing gap
    assert filter_on(leader, "solo")[0] == 503
    wait_for(lambda: serving(standby), 15, "the standby to take over")
    assert standby.server is not None
    wait_for(lambda: leader_port(fake_apiserver) == standby.server.port, 10, "the Service to follow")
    assert filter_on(standby, "solo")[0] == 200


def test_a_new_leader_trusts_a_node_only_once_a_fingerprint_confirms_what_the_old_one_placed(
    start: Start, objects: Any, kube_api_client: Any
) -> None:
    grace = 4.0
    publish = objects.create_cluster_custom_object
    publish(
        "topology.node.k8s.io",
        "v1alpha2",
        "noderesourcetopologies",
        nrt("solo", [{"cpu": 4, "memory": 8 * GI}, {"cpu": 4, "memory": 8 * GI}], pods=[]),
    )
    # The reference's reconciliation; by default the pod would be charged, unconfirmed, at once.
    old = start("old", startup_grace=f"{grace}s", cache_reconcile="ExactMatch")
    wait_for(lambda: serving(old), 15, "the first leader")
    # The old leader let a pod through to solo; it was bound and started before the standby
    # came up, and the agent has not published it yet: nothing the standby sees accounts for it.
    core = client.CoreV1Api(kube_api_client)
    core.create_namespaced_pod("default", pod("placed", APP, node="solo", phase="Running"))
    standby = start("standby", startup_grace=f"{grace}s", cache_reconcile="ExactMatch")
    wait_for(lambda: standby.service.ready(), 10, "the standby's watches")
    time.sleep(grace + 0.5)  # its own startup grace is over: by itself it would trust solo again
    assert standby.cache.get("solo").fresh

    assert old.leadership is not None
    old.leadership.stop()
    wait_for(lambda: serving(standby), 15, "the standby to take over")
    status, result = filter_on(standby, "solo")
    assert status == 200 and result["NodeNames"] == []
    assert result["FailedNodes"]["solo"].endswith("node topology not yet confirmed after scheduler start")

    # The agent publishes solo with the pod in zone 0: the fingerprint confirms it, solo is trusted.
    objects.patch_cluster_custom_object(
        "topology.node.k8s.io",
        "v1alpha2",
        "noderesourcetopologies",
        "solo",
        {
            "zones": nrt("solo", [{"cpu": 0, "memory": 4 * GI}, {"cpu": 4, "memory": 8 * GI}])["zones"],
            "attributes": nrt("solo", [{}], pods=[("default", "placed")])["attributes"],
        },
    )

    def confirmed() -> bool:
        standby.service.resync()
        return filter_on(standby, "solo")[1]["NodeNames"] == ["solo"]

    wait_for(confirmed, 10, "the fingerprint match")


SLOW = {
    "leader_elect_lease_duration": "60s",
    "leader_elect_renew_deadline": "40s",
    "leader_elect_retry_period": "20s",
}
"""A fencing gap of 20 s and a standby that looks every 20-44 s: what this test waits for
(10 s at most) can only come from the hand-off, not from either delay running out."""


def test_a_stopping_leader_hands_over_once_the_pods_it_answered_are_bound(
    start: Start, fake_apiserver: FakeApiServer, objects: Any, kube_api_client: Any
) -> None:
    """Issue #26, item 11: on SIGTERM the leader waited out the whole fencing gap before giving
    the Lease up, and the standby noticed at its next retry. Now the Lease is released as soon
    as every pod the leader let through is seen bound (the guarantee the gap stood for), and
    the standby, watching the Lease, takes it at once."""
    solo = nrt("solo", [{"cpu": 8, "memory": 8 * GI}])
    objects.create_cluster_custom_object("topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", solo)
    a = start("a", **SLOW)
    leader = wait_for(lambda: serving(a), 15, "a to lead")
    b = start("b", **SLOW)
    standby = b.leadership
    assert standby is not None
    wait_for(lambda: b.service.ready() and standby.elector.holder == "a", 15, "b to see a lead")
    core = client.CoreV1Api(kube_api_client)
    manifest = pod("placed", APP, phase="Pending")
    core.create_namespaced_pod("default", manifest)
    status, result, _ = call(leader, "POST", "/filter", {"Pod": manifest, "NodeNames": ["solo"]})
    assert status == 200 and result["NodeNames"] == ["solo"]

    assert leader.leadership is not None
    stopping = threading.Thread(target=leader.leadership.stop)
    stopping.start()
    wait_for(lambda: filter_on(leader, "solo")[0] == 503, 10, "the leader to stop answering")
    leases = client.CoordinationV1Api(kube_api_client)

    def draining() -> bool:  # still held by a, marked as being given up
        spec = leases.read_namespaced_lease("rte-extender", NAMESPACE).spec
        return bool(spec.holder_identity == "a" and spec.lease_duration_seconds == 1)

    wait_for(draining, 10, "the Lease to be marked draining")
    assert stopping.is_alive()  # the pod it let through is not bound yet
    core.patch_namespaced_pod("placed", "default", {"spec": {"nodeName": "solo"}})  # the scheduler binds
    stopping.join(10)
    assert not stopping.is_alive(), "the Lease was not handed over once the pod was bound"
    wait_for(lambda: serving(b), 10, "the standby to take the released Lease")
    assert filter_on(b, "solo")[0] == 200
    # The pod b let through is bound too, so b's own stop (the fixture's) hands over at once
    # instead of waiting out its 20 s fencing gap.
    core.create_namespaced_pod("default", pod("probe", APP, node="solo", phase="Running"))
