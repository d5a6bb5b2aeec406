"""The heartbeat Lease, through the real kubernetes client against the apiserver double, and the
runner that renews it only while the agent vouches for its NRT."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from rte.agent.metrics import AgentMetrics
from rte.agent.pacing import Backoff
from rte.agent.publish.heartbeat import WITHHELD_RECHECK, Heartbeat, HeartbeatRunner, lease_time
from rte.agent.status import AgentStatus
from rte.consumer.store import heartbeat_from_lease
from rte.errors import PublishError, UnavailableError
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE
from rte.testing.apiserver import FakeApiServer
from tests.helpers.agent_api import NODE
from tests.helpers.clock import FakeClock

T0 = datetime(2025, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0.timestamp())


@pytest.fixture
def heartbeat(api_client: Any, clock: FakeClock) -> Heartbeat:
    return Heartbeat(api_client, NODE, clock=clock.utc)


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
    fake_apiserver: FakeApiServer, heartbeat: Heartbeat, clock: FakeClock
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
    fake_apiserver: FakeApiServer, heartbeat: Heartbeat, clock: FakeClock
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
    fake_apiserver: FakeApiServer, kube_api_client: Any, heartbeat: Heartbeat, clock: FakeClock
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


class FlakyHeartbeat:
    def __init__(self, failures: int = 0, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or UnavailableError("apiserver down")
        self.renewals = 0

    def renew(self) -> None:
        self.renewals += 1
        if self.failures:
            self.failures -= 1
            raise self.error


def runner(heartbeat: FlakyHeartbeat, status: AgentStatus | None, clock: FakeClock) -> HeartbeatRunner:
    return HeartbeatRunner(
        heartbeat,
        10.0,
        metrics=AgentMetrics("n1", "test"),
        backoff=Backoff(1.0, 60.0, rng=lambda: 1.0),
        stop_event=threading.Event(),
        status=status,
        clock=lambda: clock.now,
    )


def test_the_heartbeat_retries_sooner_after_a_failure_but_never_later_than_its_interval(
    clock: FakeClock,
) -> None:
    r = runner(FlakyHeartbeat(failures=2), None, clock)
    assert r.renew_once() == 1.0
    assert r.renew_once() == 2.0
    assert r.renew_once() == 10.0
    assert r.metrics.heartbeats.value(result="failed") == 2
    assert r.metrics.heartbeats.value(result="ok") == 1


def test_the_lease_is_renewed_only_while_the_agent_vouches_for_its_nrt(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    status = AgentStatus(ready_window=180.0, stall_timeout=300.0, api_window=40.0)
    beat = FlakyHeartbeat()
    r = runner(beat, status, clock)
    with caplog.at_level(logging.INFO, logger="rte"):
        assert r.renew_once() == WITHHELD_RECHECK  # nothing published yet: nothing to vouch for
        assert beat.renewals == 0
        assert caplog.records == []  # every start begins so: not worth a warning
        status.succeeded(clock.now)
        assert r.renew_once() == 10.0
        assert beat.renewals == 1
        status.problem("kubelet", "connection refused")  # blind: the NRT may be stale from now on
        assert r.renew_once() == WITHHELD_RECHECK
        assert r.renew_once() == WITHHELD_RECHECK
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.WARNING]
    assert warnings == [
        "not renewing the heartbeat Lease while the NRT may be stale: kubelet: connection refused"
    ]
    status.problem("kubelet", None)
    status.failed("input: bad List")
    assert r.renew_once() == WITHHELD_RECHECK
    status.succeeded(clock.now)
    status.degraded("sysfs", "node0/distance unreadable")  # unready, but pods are still published
    assert r.renew_once() == 10.0
    assert beat.renewals == 2
    assert r.metrics.heartbeats.value(result="withheld") == 4


def test_renewals_tell_readiness_whether_the_apiserver_answers(clock: FakeClock) -> None:
    status = AgentStatus(ready_window=180.0, stall_timeout=300.0, api_window=40.0)
    status.succeeded(clock.now)
    beat = FlakyHeartbeat()
    r = runner(beat, status, clock)
    r.renew_once()
    assert status.readiness(clock.now) == (True, "ok")
    beat.failures = 100
    clock.now += 30
    status.succeeded(clock.now)  # the quiet node's cycles need no apiserver and keep succeeding
    r.renew_once()
    assert status.readiness(clock.now) == (True, "ok")  # 30s of silence: a blip, within the window
    clock.now += 11
    status.succeeded(clock.now)
    ok, reason = status.readiness(clock.now)
    assert not ok
    assert reason == "apiserver: no answer for 41s (limit 40s): apiserver down"
    beat.failures = 0
    r.renew_once()
    assert status.readiness(clock.now) == (True, "ok")


def test_a_forbidden_renewal_counts_as_no_answer(clock: FakeClock) -> None:
    status = AgentStatus(ready_window=180.0, stall_timeout=300.0, api_window=40.0)
    status.succeeded(clock.now)
    r = runner(FlakyHeartbeat(failures=100, error=PublishError("403 Forbidden")), status, clock)
    status.api_answered(clock.now)
    r.renew_once()
    clock.now += 41
    status.succeeded(clock.now)
    assert status.readiness(clock.now)[1].endswith("403 Forbidden")
