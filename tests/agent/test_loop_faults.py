"""What the loop claims under faults: the kubelet is back only when it answered, a failed sysfs
re-read keeps publishing on the last good model, and a rejected pod refreshes everything at once
(driven step by step with :mod:`tests.helpers.agent_loop`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.helpers.agent_loop import Harness


def test_a_pod_watch_trigger_while_the_kubelet_is_down_lists_again_and_publishes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Only triggered cycles: no allocatable refresh, no resync, so a pod trigger runs alone.
    h = Harness(tmp_path, allocatable_refresh="0", resync_interval="1h")
    h.advance(1)
    published = len(h.publisher.calls)
    h.reader.down = True
    h.advance(1)  # the polls fail
    assert "kubelet" in h.status.readiness(h.clock.now)[1]
    lists = h.reader.lists
    with caplog.at_level(logging.INFO, logger="rte"):
        h.agent.trigger("pods")
        h.advance(0.3)
    assert h.metric("cycle_errors", cause="kubelet") == 1  # the cycle asked the kubelet, and failed
    assert h.reader.lists == lists
    assert len(h.publisher.calls) == published
    assert not h.ready()
    assert not h.status.vouching(h.clock.now)[0]
    assert "answers again" not in caplog.text

    h.reader.down = False
    h.advance(2)
    assert h.ready()
    assert h.publisher.forgets == 1  # back from blindness: the stored object is read again


def test_a_list_from_before_a_failed_call_is_never_reused(tmp_path: Path) -> None:
    h = Harness(tmp_path, allocatable_refresh="0", resync_interval="1h")
    h.advance(1)
    h.reader.down = True
    h.advance(0.6)
    h.reader.down = False
    scan = h.scanner.scan(fresh_list=False)  # as a pod-watch cycle asks: the poll's List if current
    assert scan.kubelet_heard  # ... but it was not: the scan listed again
    reused = h.scanner.scan(fresh_list=False)
    assert not reused.kubelet_heard  # the fresh List is reused, and the scan says it heard nothing


def test_a_failed_sysfs_reread_keeps_publishing_pod_changes_on_the_last_good_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(tmp_path, resync_interval="10s", allocatable_refresh="0")
    h.advance(1)
    good = h.publisher.stored
    h.machine_error = "/sys/devices/system/node/node0/distance"
    with caplog.at_level(logging.INFO, logger="rte"):
        h.advance(10)  # the resync re-reads sysfs, and fails
        reason = h.status.readiness(h.clock.now)[1]
        assert reason.startswith("sysfs: /sys/devices/system/node/node0/distance: cannot read")
        assert reason.endswith("(publishing with the last good machine model)")
        assert h.status.vouching(h.clock.now)[0]  # the NRT is still what the pods are: Lease renewed
        assert h.metric("sysfs_failing") == 1
        h.add_pod("new", [6, 8])
        h.advance(1)
        assert h.publisher.stored != good  # the pod change went out on the last good model
        h.advance(10)  # another failing re-read: no second warning
        h.machine_error = None
        h.agent.trigger("notify")  # any scan tries sysfs again while it is failing
        h.advance(1)
    assert h.ready()
    assert h.metric("sysfs_failing") == 0
    warnings = [r for r in caplog.records if "sysfs re-read failed" in r.getMessage()]
    assert len(warnings) == 1
    assert "sysfs readable again" in caplog.text


def test_an_agent_started_on_an_unreadable_sysfs_retries_with_backoff_and_publishes_once_it_reads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(tmp_path, resync_interval="10s", allocatable_refresh="0")  # retry 1s doubling to 8s
    h.machine_error = "/sys/devices/system/node/node0/distance"
    with caplog.at_level(logging.INFO, logger="rte"):
        h.advance(20)
        ready, reason = h.status.readiness(h.clock.now)
        assert not ready
        assert reason.startswith("sysfs: /sys/devices/system/node/node0/distance: cannot read")
        assert reason.endswith("(no machine model yet; retrying)")
        assert not h.status.vouching(h.clock.now)[0]  # no Lease for an NRT that was never computed
        assert h.publisher.stored is None
        assert h.metric("sysfs_failing") == 1
        # Backoff, not a busy loop: tries at about 0, 1, 3, 7 and 15 s.
        assert 4 <= h.machine_loads <= 6, h.machine_loads
        h.machine_error = None
        h.advance(10)
    assert h.publisher.stored is not None
    assert h.ready()
    assert h.metric("sysfs_failing") == 0
    assert len([r for r in caplog.records if "cycle failed: sysfs: " in r.getMessage()]) == 1
    assert "sysfs readable again" in caplog.text


def test_an_admission_error_rereads_allocatable_and_the_stored_object_at_once(tmp_path: Path) -> None:
    h = Harness(tmp_path, allocatable_refresh="0", resync_interval="1h", debounce="50ms")
    h.advance(1)
    allocatables, forgets, lists = h.reader.allocatables, h.publisher.forgets, h.reader.lists
    h.agent.trigger("admission-error")
    h.advance(0.1)
    assert h.reader.allocatables == allocatables + 1
    assert h.reader.lists == lists + 1
    assert h.publisher.forgets == forgets + 1
    assert h.metric("triggers", reason="admission-error") == 1


def test_an_undecodable_allocatable_answer_is_a_failed_call_unready_and_no_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #26 item 3: a GetAllocatableResources answer that does not decode is treated as the
    call failing, as its timeout is: one warning line, a readiness reason naming the call, the
    heartbeat Lease withheld (vouching false), and all of it cleared once the kubelet answers well."""
    h = Harness(tmp_path, allocatable_refresh="2s", resync_interval="1h")
    h.advance(1)
    assert h.ready()
    h.reader.bad_allocatable = True
    with caplog.at_level(logging.INFO, logger="rte"):
        h.advance(10)  # several refreshes, all failing
        ready, reason = h.status.readiness(h.clock.now)
        assert not ready
        assert reason.startswith("kubelet-allocatable: kubelet GetAllocatableResources response from fake")
        assert "does not decode" in reason
        assert not h.status.vouching(h.clock.now)[0]
        h.reader.bad_allocatable = False
        h.advance(3)
    assert h.ready(), h.status.readiness(h.clock.now)
    assert h.status.vouching(h.clock.now)[0]
    warnings = [r for r in caplog.records if "GetAllocatableResources" in r.getMessage()]
    assert len(warnings) == 2, [r.getMessage() for r in warnings]  # one when it fails, one when it is back
    assert warnings[0].levelno == logging.WARNING


def test_an_absurd_kubelet_value_that_zeroes_a_zone_is_a_readiness_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #26 item 6: a memory block of 2^64-1 bytes (a uint64 the kubelet should never send)
    zeroes zone 0's memory: the agent publishes the safe number, but says so in /readyz (a
    degradation: the Lease stays, the NRT is what the kubelet said) until the value goes away."""
    h = Harness(tmp_path, allocatable_refresh="0", resync_interval="1h")
    h.advance(1)
    assert h.ready()
    with caplog.at_level(logging.WARNING, logger="rte"):
        h.add_memory_pod("absurd", 2**64 - 1, 0)
        h.advance(1)
    stored = h.publisher.stored
    assert stored is not None
    zone0 = next(z for z in stored.zones if z.name == "node-0")
    assert next(r for r in zone0.resources if r.name == "memory").available == 0
    ready, reason = h.status.readiness(h.clock.now)
    assert not ready
    assert reason.startswith("kubelet-values: held_above_capacity: node-0 memory: pods hold "), reason
    assert "18446744075857035263 > capacity" in reason  # the absurd block plus the 2 GiB one there
    assert h.status.vouching(h.clock.now)[0]
    assert "input inconsistency (held_above_capacity)" in caplog.text
    h.remove_pod("absurd")
    h.advance(1)
    assert h.ready(), h.status.readiness(h.clock.now)


def test_a_list_above_the_pod_limit_is_bad_kubelet_data_unready_and_no_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #26 item 4: an answer holding more pods than the cap is refused as bad data: one
    warning, a readiness reason, the Lease withheld, nothing published from it; the agent
    recovers by itself when the List is back under the cap."""
    h = Harness(tmp_path, allocatable_refresh="0", resync_interval="1h", max_listed_pods="3")
    h.advance(1)
    assert h.ready()
    published = h.publisher.stored
    with caplog.at_level(logging.WARNING, logger="rte"):
        h.add_pod("fourth", [6])
        h.advance(3)
    ready, reason = h.status.readiness(h.clock.now)
    assert not ready
    assert reason.startswith("kubelet: List file in ")
    assert reason.endswith(
        "lists 4 pods, above the limit of 3 (4 x the kubelet's maxPods, or the max_listed_pods setting)"
    )
    assert not h.status.vouching(h.clock.now)[0]
    assert h.publisher.stored == published
    assert len([r for r in caplog.records if "above the limit" in r.getMessage()]) == 1
    h.remove_pod("fourth")
    h.advance(3)
    assert h.ready(), h.status.readiness(h.clock.now)
