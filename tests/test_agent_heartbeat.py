"""The heartbeat Lease, through the real kubernetes client against the apiserver double."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_api_helpers import NODE
from apiserver_double import FakeApiServer
from rte.agent.heartbeat import Heartbeat, lease_time
from rte.consumer.store import heartbeat_from_lease
from rte.errors import PublishError, UnavailableError
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE
from rte.runtime.kubeclient import load_api_client

pytest_plugins = ["apiserver_double.pytest_plugin"]

T0 = datetime(2025, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def api_client(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[Any]:
    client = load_api_client(str(fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")), qps=0)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def heartbeat(api_client: Any, clock: Clock) -> Heartbeat:
    return Heartbeat(api_client, NODE, clock=clock)


def lease(api: FakeApiServer) -> dict[str, Any]:
    obj = api.get_object("leases", NODE, HEARTBEAT_LEASE_NAMESPACE)
    assert obj is not None
    return obj


def test_the_first_renewal_creates_the_lease_the_consumer_reads(
    fake_apiserver: FakeApiServer, heartbeat: Heartbeat
) -> None:
    heartbeat.renew()
    obj = lease(fake_apiserver)
    assert obj["spec"] == {
        "holderIdentity": f"rte-agent/{NODE}",
        "leaseDurationSeconds": 40,
        "acquireTime": "2025-03-01T12:00:00.250000Z",
        "renewTime": "2025-03-01T12:00:00.250000Z",
    }
    assert heartbeat_from_lease(obj) == (NODE, T0.timestamp())
    assert [(r.verb, r.code) for r in fake_apiserver.requests] == [("get", 404), ("create", 201)]


def test_later_renewals_are_one_update_each_and_move_only_renew_time(
    fake_apiserver: FakeApiServer, heartbeat: Heartbeat, clock: Clock
) -> None:
    heartbeat.renew()
    first_rv = int(lease(fake_apiserver)["metadata"]["resourceVersion"])
    fake_apiserver.clear_requests()
    for _ in range(3):
        clock.advance(10)
        heartbeat.renew()
    assert [(r.verb, r.code) for r in fake_apiserver.requests] == [("update", 200)] * 3
    spec = lease(fake_apiserver)["spec"]
    assert spec["renewTime"] == "2025-03-01T12:00:30.250000Z"
    assert spec["acquireTime"] == "2025-03-01T12:00:00.250000Z"
    assert int(lease(fake_apiserver)["metadata"]["resourceVersion"]) > first_rv


def test_a_deleted_lease_is_created_again(
    fake_apiserver: FakeApiServer, heartbeat: Heartbeat, clock: Clock
) -> None:
    heartbeat.renew()
    fake_apiserver.delete_object("leases", NODE, HEARTBEAT_LEASE_NAMESPACE)
    fake_apiserver.clear_requests()
    clock.advance(10)
    heartbeat.renew()
    # Leases allow create-on-update, as in the real apiserver: one request puts it back.
    assert [(r.verb, r.code) for r in fake_apiserver.requests] == [("update", 201)]
    assert lease(fake_apiserver)["spec"]["renewTime"] == "2025-03-01T12:00:10.250000Z"


def test_a_lease_changed_by_someone_else_is_re_read_and_taken_back(
    fake_apiserver: FakeApiServer, kube_api_client: Any, heartbeat: Heartbeat, clock: Clock
) -> None:
    from kubernetes import client

    heartbeat.renew()
    client.CoordinationV1Api(kube_api_client).patch_namespaced_lease(
        NODE, HEARTBEAT_LEASE_NAMESPACE, {"spec": {"holderIdentity": "impostor", "leaseDurationSeconds": 5}}
    )
    fake_apiserver.clear_requests()
    clock.advance(10)
    heartbeat.renew()
    assert [(r.verb, r.code) for r in fake_apiserver.requests] == [
        ("update", 409),
        ("get", 200),
        ("update", 200),
    ]
    spec = lease(fake_apiserver)["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == (f"rte-agent/{NODE}", 40)
    assert spec["acquireTime"] == spec["renewTime"] == "2025-03-01T12:00:10.250000Z"


def test_an_unreachable_apiserver_is_unavailable_and_the_next_tick_recovers(
    fake_apiserver: FakeApiServer, heartbeat: Heartbeat
) -> None:
    with fake_apiserver.offline(), pytest.raises(UnavailableError, match=f"renewing Lease rte/{NODE}"):
        heartbeat.renew()
    heartbeat.renew()
    assert lease(fake_apiserver)["spec"]["holderIdentity"] == f"rte-agent/{NODE}"


def test_throttling_is_not_retried_within_a_renewal(
    fake_apiserver: FakeApiServer, heartbeat: Heartbeat
) -> None:
    fake_apiserver.faults.throttle_next(1, retry_after=3)
    with pytest.raises(UnavailableError, match="429"):
        heartbeat.renew()
    assert len(fake_apiserver.requests) == 1


def test_a_forbidden_renewal_is_a_publish_error(fake_apiserver: FakeApiServer, heartbeat: Heartbeat) -> None:
    fake_apiserver.faults.fail_next(1, 403, verb="create", message="only the Lease of its own node")
    with pytest.raises(PublishError, match="403 Forbidden: only the Lease of its own node"):
        heartbeat.renew()


def test_a_renewal_on_a_whole_second_still_carries_six_fractional_digits(
    fake_apiserver: FakeApiServer, api_client: Any
) -> None:
    whole = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    Heartbeat(api_client, NODE, clock=lambda: whole).renew()
    assert lease(fake_apiserver)["spec"]["renewTime"] == "2025-03-01T12:00:00.000001Z"
    assert lease_time(whole).isoformat() == "2025-03-01T12:00:00.000001+00:00"
    assert lease_time(T0) == T0


def test_a_custom_namespace_and_duration_are_used(fake_apiserver: FakeApiServer, api_client: Any) -> None:
    Heartbeat(api_client, NODE, namespace="kube-node-lease", lease_seconds=15).renew()
    obj = fake_apiserver.get_object("leases", NODE, "kube-node-lease")
    assert obj is not None and obj["spec"]["leaseDurationSeconds"] == 15
