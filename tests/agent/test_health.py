"""Liveness and readiness rules (injected clock) and the HTTP server that serves them."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from rte.agent.health import HealthServer
from rte.agent.metrics import Registry
from rte.agent.status import AgentStatus
from rte.runtime.metrics import Counter
from tests.helpers.clock import FakeClock


def status() -> AgentStatus:
    return AgentStatus(ready_window=180.0, stall_timeout=300.0, idle_timeout=30.0)


def test_a_new_agent_is_alive_but_not_ready() -> None:
    s = status()
    assert s.liveness(0.0) == (True, "starting")
    assert s.readiness(0.0) == (False, "no successful publish yet")


def test_ready_after_a_publish_until_it_is_older_than_the_window() -> None:
    s = status()
    s.succeeded(10.0)
    assert s.readiness(100.0) == (True, "ok")
    ok, reason = s.readiness(191.0)
    assert not ok and "181s ago" in reason


def test_a_failed_cycle_makes_the_agent_unready_until_the_next_success() -> None:
    s = status()
    s.succeeded(10.0)
    s.failed("apiserver: connection refused")
    assert s.readiness(11.0) == (False, "last cycle failed: apiserver: connection refused")
    s.succeeded(12.0)
    assert s.readiness(12.0)[0]


def test_standing_problems_make_the_agent_unready_even_after_a_publish() -> None:
    s = status()
    s.succeeded(10.0)
    s.problem("kubelet", "socket gone")
    s.problem("crd", "not installed")
    assert s.readiness(11.0) == (False, "crd: not installed; kubelet: socket gone")
    s.problem("crd", None)
    s.problem("kubelet", None)
    assert s.readiness(11.0) == (True, "ok")


def test_a_degradation_makes_the_agent_unready_but_it_still_vouches_for_its_nrt() -> None:
    s = status()
    s.succeeded(10.0)
    s.degraded("sysfs", "node0/distance: cannot read")
    assert s.readiness(11.0) == (False, "sysfs: node0/distance: cannot read")
    assert s.vouching(11.0) == (True, "ok")
    s.problem("kubelet", "socket gone")
    assert s.readiness(11.0) == (False, "kubelet: socket gone; sysfs: node0/distance: cannot read")
    assert s.vouching(11.0) == (False, "kubelet: socket gone")


def test_an_apiserver_silent_for_longer_than_its_window_makes_a_quiet_agent_unready() -> None:
    s = AgentStatus(ready_window=180.0, stall_timeout=300.0, api_window=40.0)
    s.succeeded(10.0)
    s.api_answered(10.0)
    s.api_failed("connection refused")
    s.succeeded(45.0)  # cycles that need no apiserver go on succeeding
    assert s.readiness(50.0) == (True, "ok")
    assert s.readiness(51.0) == (False, "apiserver: no answer for 41s (limit 40s): connection refused")
    assert s.vouching(51.0) == (True, "ok")  # the NRT itself is as current as before
    s.api_answered(52.0)
    assert s.readiness(52.0) == (True, "ok")


def test_a_long_cycle_is_alive_until_the_stall_timeout() -> None:
    s = status()
    s.tick(0.0)
    s.busy(1.0, "cycle")
    assert s.liveness(200.0) == (True, "ok (cycle)")  # a slow apiserver: unready maybe, not dead
    ok, reason = s.liveness(302.0)
    assert not ok and reason == "stalled: cycle running for 301s"
    s.idle(302.0)
    assert s.liveness(303.0) == (True, "ok")


def test_an_idle_loop_that_stops_ticking_is_dead() -> None:
    s = status()
    s.tick(0.0)
    assert s.liveness(29.0)[0]
    assert s.liveness(31.0) == (False, "stalled: loop has not ticked for 31s")


@pytest.fixture
def served(clock: FakeClock) -> Iterator[tuple[HealthServer, AgentStatus, FakeClock]]:
    s = status()
    registry = Registry()
    Counter(registry, "rte_test_total", "A test counter.").inc()
    server = HealthServer("127.0.0.1", 0, s, registry, clock=clock).start()
    try:
        yield server, s, clock
    finally:
        server.stop()


def get(server: HealthServer, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def test_probes_answer_200_or_503_with_the_reason(
    served: tuple[HealthServer, AgentStatus, FakeClock],
) -> None:
    server, s, clock = served
    assert get(server, "/readyz")[0::2] == (503, "no successful publish yet\n")
    s.tick(clock.now)
    s.succeeded(clock.now)
    assert get(server, "/readyz")[0::2] == (200, "ok\n")
    assert get(server, "/healthz")[0::2] == (200, "ok\n")
    clock.now += 60
    assert get(server, "/healthz")[0::2] == (503, "stalled: loop has not ticked for 60s\n")


def test_metrics_are_served_in_the_text_format(served: tuple[HealthServer, AgentStatus, FakeClock]) -> None:
    server, _, _ = served
    code, content_type, body = get(server, "/metrics")
    assert code == 200
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert "rte_test_total 1.0\n" in body


def test_unknown_paths_are_404(served: tuple[HealthServer, AgentStatus, FakeClock]) -> None:
    server, _, _ = served
    assert get(server, "/nope")[0] == 404


def test_an_operation_running_longer_than_the_lease_makes_the_agent_unready_and_withholds_the_lease() -> None:
    """Issue #26 item 4: a List of 400 000 pods kept the loop busy for many seconds while /readyz
    said 200 and the Lease was renewed. The status, read from the probe's and the heartbeat's own
    threads, is the watchdog: past ``busy_limit`` the agent neither is ready nor vouches."""
    s = AgentStatus(ready_window=180.0, stall_timeout=300.0, busy_limit=40.0)
    s.tick(0.0)
    s.succeeded(1.0)
    s.busy(2.0, "podresources List")
    assert s.readiness(42.0) == (True, "ok")  # 40 s: a slow call, not yet a stuck one
    ok, reason = s.readiness(43.0)
    assert not ok
    assert reason == "busy: podresources List running for 41s (longer than the Lease duration, 40s)"
    assert s.vouching(43.0) == (False, reason)
    assert s.liveness(43.0)[0]  # alive: the loop is slow, the stall timeout decides on restarts
    s.idle(44.0)
    assert s.readiness(44.0) == (True, "ok")
