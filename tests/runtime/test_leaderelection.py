"""Leader election on a Lease, against the apiserver double through the real ``kubernetes`` client.

Timings are short (a lease of 1.5 s) so that expiry shows within seconds. The fencing test
samples who leads every few milliseconds: an elector reports leadership from its own clock, so
every sample is a fact, and the measured gap can only overstate the real one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from rte.errors import ConfigError
from rte.runtime.leaderelection import ElectionConfig, LeaderElector, LeaseLock, LeaseRecord, may_take
from rte.testing.apiserver import FakeApiServer
from tests.helpers.waiting import wait_for

NAMESPACE, NAME = "rte-scheduler", "rte-extender"
FAST = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


@pytest.fixture
def electors(fake_apiserver: FakeApiServer) -> Iterator[Any]:
    made: list[tuple[LeaderElector, Any]] = []

    def make(identity: str, **timing: float) -> LeaderElector:
        api_client = fake_apiserver.api_client()  # one client each, so that one can be cut off
        config = ElectionConfig(identity, NAMESPACE, NAME, **(timing or FAST))
        events: list[str] = []
        elector = LeaderElector(
            LeaseLock(api_client, NAMESPACE, NAME, timeout=config.renew_deadline),
            config,
            on_started=lambda: events.append("started"),
            on_stopped=lambda: events.append("stopped"),
        )
        elector.events = events  # type: ignore[attr-defined]
        made.append((elector, api_client))
        return elector

    yield make
    for elector, api_client in made:
        elector.stop(release=False)
        api_client.close()


def lease(kube_api_client: Any) -> Any:
    return client.CoordinationV1Api(kube_api_client).read_namespaced_lease(NAME, NAMESPACE)


class _Unreachable:
    """Stands in for one elector's API client: every call fails as a refused connection would."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise ConnectionRefusedError(f"{name}: the apiserver cannot be reached")

        return fail


def cut_off(elector: LeaderElector) -> None:
    """This elector cannot reach the apiserver from now on (the others can)."""
    elector.lock._api = _Unreachable()


def test_of_two_candidates_exactly_one_leads_and_the_lease_names_it(
    electors: Any, kube_api_client: Any
) -> None:
    a, b = electors("a").start(), electors("b").start()
    leader = wait_for(lambda: next((e for e in (a, b) if e.is_leader()), None), 10, "a leader")
    other = b if leader is a else a
    deadline = time.monotonic() + 3 * FAST["lease_duration"]  # the leader keeps renewing
    while time.monotonic() < deadline:
        assert leader.is_leader() and not other.is_leader()
        time.sleep(0.02)
    spec = lease(kube_api_client).spec
    assert spec.holder_identity == leader.config.identity
    assert spec.lease_duration_seconds == 2  # whole seconds, rounded
    assert other.holder == leader.config.identity
    assert leader.events == ["started"] and other.events == []


def test_a_cut_off_leader_stops_acting_before_the_next_one_starts_by_the_fencing_gap(electors: Any) -> None:
    a = electors("a").start()
    wait_for(a.is_leader, 10, "a to lead")
    b = electors("b").start()
    wait_for(lambda: b.holder == "a", 10, "b to see a's lease")
    last_a = first_b = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal last_a, first_b
        while not done.is_set():
            now = time.monotonic()
            if a.is_leader():
                last_a = now
            if b.is_leader() and not first_b:
                first_b = now
                return
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    cut_off(a)
    wait_for(lambda: first_b, 20, "b to take over")
    done.set()
    sampler.join()
    config = a.config
    assert not a.is_leader()
    assert first_b - last_a >= config.lease_duration - config.renew_deadline
    wait_for(lambda: a.events == ["started", "stopped"], 10, "a to report the loss")


def test_a_crashed_leader_is_replaced_no_sooner_than_a_lease_duration_after_its_last_renewal(
    electors: Any, kube_api_client: Any
) -> None:
    a = electors("a").start()
    wait_for(a.is_leader, 10, "a to lead")
    b = electors("b").start()
    wait_for(lambda: b.holder == "a", 10, "b to see a's lease")
    a.stop(release=False)  # as a SIGKILL: nobody releases the Lease
    last_renewal = lease(kube_api_client).spec.renew_time
    wait_for(b.is_leader, 20, "b to take over")
    took_over = datetime.now(UTC)
    assert (took_over - last_renewal).total_seconds() >= FAST["lease_duration"]
    spec = lease(kube_api_client).spec
    assert spec.holder_identity == "b" and spec.lease_transitions == 1


def test_a_released_lease_is_taken_at_once_without_waiting_for_expiry(
    electors: Any, kube_api_client: Any
) -> None:
    slow = {"lease_duration": 60.0, "renew_deadline": 40.0, "retry_period": 1.0}
    a = electors("a", **slow).start()
    wait_for(a.is_leader, 10, "a to lead")
    a.stop(release=True)
    assert not a.is_leader() and a.events == ["started", "stopped"]
    released = lease(kube_api_client).spec
    assert not released.holder_identity and released.lease_transitions == 0
    b = electors("b", **slow).start()
    wait_for(b.is_leader, 20, "b to take the released lease")  # far less than the 60 s lease
    assert lease(kube_api_client).spec.lease_transitions == 1


def test_two_candidates_racing_for_a_free_lease_never_both_lead(electors: Any) -> None:
    many = [electors(f"c{i}") for i in range(4)]
    for elector in many:
        elector.start()
    wait_for(lambda: any(e.is_leader() for e in many), 10, "a leader")
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        assert sum(e.is_leader() for e in many) <= 1
        time.sleep(0.005)


def test_only_an_expired_or_free_lease_may_be_taken() -> None:
    held = LeaseRecord("a", 15, None, None, 0)
    assert may_take(None, "b", 0.0, 0.0, 15.0)
    assert may_take(LeaseRecord("", 1, None, None, 3), "b", 100.0, 100.0, 15.0)
    assert may_take(held, "a", 0.0, 0.0, 15.0)  # its own: a renewal
    assert not may_take(held, "b", 100.0, 114.9, 15.0)
    assert may_take(held, "b", 100.0, 115.0, 15.0)
    assert not may_take(LeaseRecord("a", 30, None, None, 0), "b", 100.0, 115.0, 15.0)  # its longer lease


@pytest.mark.parametrize(
    ("timing", "flag"),
    [
        (
            {"lease_duration": 10.0, "renew_deadline": 10.0, "retry_period": 2.0},
            "--leader-elect-lease-duration",
        ),
        (
            {"lease_duration": 15.0, "renew_deadline": 2.0, "retry_period": 2.0},
            "--leader-elect-renew-deadline",
        ),
        (
            {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 0.0},
            "--leader-elect-retry-period",
        ),
    ],
)
def test_timings_that_cannot_work_are_refused_naming_the_setting(timing: dict[str, float], flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        ElectionConfig("a", NAMESPACE, NAME, **timing).check()
