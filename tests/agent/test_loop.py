"""The agent loop driven step by step with an injected clock (:mod:`tests.helpers.agent_loop`)."""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from pathlib import Path

import pytest

from rte.agent.loop import interruptible_sleep
from rte.errors import PublishError, UnavailableError
from rte.model import fingerprint as fp
from rte.model.topology import NodeTopology
from tests.helpers.agent_loop import SCENARIO, Harness


def test_the_first_cycle_publishes_once_after_the_debounce(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.advance(0.05)
    assert h.publisher.calls == []  # still debouncing
    h.advance(0.1)
    assert len(h.publisher.calls) == 1
    assert h.publisher.stored is not None and h.publisher.stored.name == "n1"
    assert h.ready()
    h.advance(30)
    assert len(h.publisher.calls) == 1  # nothing changed: the loop did not even ask


def test_a_changed_list_is_found_by_the_poll_and_published(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.advance(1)
    first = h.publisher.stored
    h.add_pod("new", [6, 8])
    h.advance(0.7)  # one poll interval plus the debounce
    assert len(h.publisher.calls) == 2
    assert h.publisher.stored != first
    assert h.metric("changes") == 1
    polls = h.metric("polls")
    h.advance(10)
    assert h.metric("polls") - polls >= 19  # polling goes on at 2/s...
    assert len(h.publisher.calls) == 2  # ...and writes nothing while nothing changes


def test_a_burst_of_triggers_runs_a_single_cycle(tmp_path: Path) -> None:
    h = Harness(tmp_path, poll_interval="0")
    h.advance(1)
    lists = h.reader.lists
    for _ in range(20):
        h.agent.trigger("notify")
        h.clock.now += 0.01
        h.agent.step()
    h.advance(1)
    assert h.reader.lists == lists + 1
    assert h.metric("cycles", result="ok") == 2


def test_the_resync_timer_makes_the_publisher_reread_the_stored_object(tmp_path: Path) -> None:
    h = Harness(tmp_path, resync_interval="10s", allocatable_refresh="0")
    h.advance(1)
    h.advance(10)
    assert h.publisher.forgets == 1
    assert len(h.publisher.calls) == 2  # asked although our content did not change
    assert h.metric("writes", outcome="skipped") == 1


def test_apiserver_failures_make_the_agent_unready_and_are_retried_with_growing_delays(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path)
    h.publisher.failures = [UnavailableError("connection refused")] * 3 + [PublishError("422 Invalid")]
    h.advance(0.2)
    assert not h.ready()
    assert "apiserver" in h.status.readiness(h.clock.now)[1]
    h.advance(30)
    assert h.publisher.stored is not None
    assert h.ready()
    gaps = [b - a for a, b in zip(h.publisher.calls, h.publisher.calls[1:], strict=False)]
    assert gaps[:4] == pytest.approx([1.0, 2.0, 4.0, 8.0], abs=0.02)  # retry_base 1s doubling, jitter 1.0
    assert h.metric("writes", outcome="failed") == 4
    assert h.metric("cycle_errors", cause="apiserver") == 4


def test_a_missing_crd_is_waited_for_before_writing(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.publisher.crd = [False, False, True]
    h.advance(0.2)
    assert h.publisher.calls == []
    assert "CRD" in h.status.readiness(h.clock.now)[1]
    h.advance(5)
    assert len(h.publisher.calls) == 1
    assert h.ready()


def test_writes_are_rate_limited_when_the_content_keeps_changing(tmp_path: Path) -> None:
    h = Harness(tmp_path, poll_interval="100ms", debounce="10ms", publish_qps="1", publish_burst="2")
    h.advance(0.05)
    for i in range(50):  # a new pod every 100 ms for 5 s
        h.add_pod(f"p{i}", [])
        h.advance(0.1)
    h.advance(2)
    assert len(h.publisher.calls) <= 2 + 7  # burst + rate x elapsed
    assert h.publisher.stored is not None
    assert len(h.publisher.stored.attributes) > 0
    h.advance(2)
    # The last state is published even though the writes were held back.
    assert h.publisher.stored == h.agent.last_scan.topology  # type: ignore[union-attr]


def test_bad_kubelet_data_keeps_the_last_object_and_the_loop_running(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.advance(1)
    good = h.publisher.stored
    (h.dir / "list.protojson.json").write_text('{"podResources": [{"name": 5}]}')
    h.advance(3)
    assert h.publisher.stored == good
    assert not h.ready()
    assert h.metric("podresources_errors", method="List", kind="invalid") >= 1
    shutil.copy(SCENARIO / "list.protojson.json", h.dir / "list.protojson.json")
    h.add_pod("fixed", [6])
    h.advance(10)
    assert h.ready()
    assert h.publisher.stored != good


def test_contradicting_kubelet_data_is_a_finding_counted_logged_once_and_makes_the_agent_unready(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(tmp_path)
    h.advance(1)
    assert h.agent.last_scan is not None and h.agent.last_scan.inconsistent is None
    assert h.ready()
    path = h.dir / "list.protojson.json"
    doc = json.loads(path.read_text())
    twin = json.loads(json.dumps(doc["podResources"][1]))
    twin["containers"] = twin["containers"][1:]  # dpdk-app-0 listed twice, differently
    doc["podResources"].append(twin)
    path.write_text(json.dumps(doc))
    with caplog.at_level(logging.WARNING, logger="rte"):
        h.advance(5)
    assert h.agent.last_scan is not None
    assert h.agent.last_scan.inconsistent == (
        "duplicate_pod; published availability capped at the last consistent cycle"
    )
    assert not h.ready()
    family = h.metrics.findings
    assert family.value(kind="duplicate_pod") == 1
    lines = [r.getMessage() for r in caplog.records if "duplicate_pod" in r.getMessage()]
    assert lines == [
        "input inconsistency (duplicate_pod): pod cnf/dpdk-app-0 is listed 2 times"
        " (different entries, all charged)"
    ]


def test_a_kubelet_without_get_allocatable_degrades_with_a_single_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(tmp_path, allocatable_refresh="2s")
    (h.dir / "get_allocatable_resources.protojson.json").unlink()
    with caplog.at_level(logging.WARNING, logger="rte"):
        h.advance(1)
        h.add_pod("x", [6])
        h.advance(10)  # several cycles and several allocatable refreshes
    assert h.publisher.stored is not None and h.ready()
    warnings = [r for r in caplog.records if "allocatable comes from sysfs" in r.getMessage()]
    assert len(warnings) == 1


def test_device_plugin_changes_make_the_next_cycle_reread_allocatable(tmp_path: Path) -> None:
    h = Harness(tmp_path, allocatable_refresh="0")
    h.advance(1)
    assert h.reader.allocatables == 1
    h.agent.trigger("device-plugins")
    h.advance(1)
    assert h.reader.allocatables == 2
    h.agent.trigger("notify")
    h.advance(1)
    assert h.reader.allocatables == 2  # other triggers reuse the cached allocatable


def device_count(topology: NodeTopology | None, resource: str) -> int:
    assert topology is not None
    return sum(int(r.allocatable) for z in topology.zones for r in z.resources if r.name == resource)


def test_a_device_the_kubelet_stops_offering_leaves_the_nrt_within_seconds_without_a_file_trigger(
    tmp_path: Path,
) -> None:
    """Device health: the kubelet drops an unhealthy device from GetAllocatableResources."""
    h = Harness(tmp_path)  # the default allocatable_refresh
    h.advance(1)
    nic = "intel.com/intel_sriov_netdevice"
    before = device_count(h.publisher.stored, nic)
    path = h.dir / "get_allocatable_resources.protojson.json"
    doc = json.loads(path.read_text())
    doc["devices"] = [d for d in doc["devices"] if d["deviceIds"] != ["0000:3b:02.0"]]
    path.write_text(json.dumps(doc))
    h.advance(h.settings.allocatable_refresh + 1)
    assert device_count(h.publisher.stored, nic) == before - 1
    assert h.settings.allocatable_refresh <= 10


def test_an_unchanged_allocatable_answer_costs_the_call_and_no_cycle(tmp_path: Path) -> None:
    h = Harness(tmp_path, allocatable_refresh="1s", resync_interval="60s")
    h.advance(1)
    cycles, allocatables = h.metric("cycles", result="ok"), h.reader.allocatables
    h.advance(30)
    assert h.reader.allocatables - allocatables >= 25  # asked about once a second...
    assert h.metric("cycles", result="ok") == cycles  # ...and nothing to do each time
    assert h.metric("triggers", reason="allocatable") == 0


def test_sysfs_is_reread_on_the_resync_timer_not_on_every_allocatable_refresh(tmp_path: Path) -> None:
    h = Harness(tmp_path, allocatable_refresh="1s", resync_interval="60s")
    h.advance(30)
    assert h.reader.allocatables >= 25  # about one a second
    assert h.machine_loads == 1  # at start only
    h.advance(31)
    assert h.machine_loads == 2  # the resync at 60s


def test_without_publishing_each_new_object_is_printed_once(tmp_path: Path) -> None:
    h = Harness(tmp_path, publish=False)
    h.advance(5)
    assert len(h.printed) == 1
    assert h.ready()  # a successful scan is what readiness means without publishing
    h.add_pod("new", [6, 8])
    h.advance(5)
    assert len(h.printed) == 2


def test_the_fingerprint_follows_the_spec_rule_once_the_pod_watch_has_synced(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.advance(1)
    by_list = h.publisher.stored.attribute(fp.ATTRIBUTE)  # type: ignore[union-attr]
    h.pods.is_synced = True  # the API knows none of the kubelet's pods
    h.advance(1)
    by_spec = h.publisher.stored.attribute(fp.ATTRIBUTE)  # type: ignore[union-attr]
    assert by_spec != by_list
    assert by_spec == fp.compute([])


def test_an_unexpected_error_in_a_cycle_is_retried_not_raised(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.publisher.failures = [RuntimeError("bug")]
    h.advance(5)
    assert h.metric("cycle_errors", cause="internal") == 1
    assert h.publisher.stored is not None


def test_stopping_during_a_retry_sleep_abandons_the_cycle_promptly(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    sleep = interruptible_sleep(h.agent.stop_event)

    def slow_publish(topology: NodeTopology) -> str:
        sleep(30)  # the publisher's backoff between retries
        return "created"

    h.publisher.publish = slow_publish  # type: ignore[method-assign]
    done = threading.Event()
    thread = threading.Thread(target=lambda: (h.agent.run_once(), done.set()), daemon=True)
    thread.start()
    time.sleep(0.05)
    start = time.monotonic()
    h.agent.stop()
    assert done.wait(2)
    assert time.monotonic() - start < 1


def test_a_pod_removal_is_one_write_the_fingerprint_following_the_list_that_frees_it(
    tmp_path: Path,
) -> None:
    """Issue #26 item 8: the API deletes a pod a moment before the kubelet's List drops it. The
    pod watch used to change the fingerprint at once and List the zones one poll later: two
    patches per removal. A pod the API no longer has counts, with its last spec, for as long as
    the List in use still lists it, so one List snapshot gives both and the removal is one write."""
    from rte.model.pod import Container, Pod

    h = Harness(tmp_path, allocatable_refresh="0", resync_interval="1h")
    h.add_pod("leaving", [6, 8])
    guaranteed = Container("c", {"cpu": 2, "memory": 2**30}, {"cpu": 2, "memory": 2**30})
    spec = Pod("default", "leaving", uid="u1", node_name="n1", phase="Running", containers=(guaranteed,))
    h.pods.snapshot = {spec.key: spec}
    h.pods.is_synced = True
    h.advance(2)
    before = h.publisher.stored
    assert before is not None and before.attribute(fp.ATTRIBUTE) == fp.compute([spec.key])
    writes = len(h.publisher.calls)

    h.pods.snapshot = {}  # the watch saw DELETED; the kubelet still lists the pod
    h.agent.trigger("pods")
    h.advance(0.3)
    assert len(h.publisher.calls) == writes  # nothing to say yet: the List still holds it

    h.remove_pod("leaving")  # the next poll shows its CPUs freed
    h.advance(1)
    assert len(h.publisher.calls) == writes + 1
    after = h.publisher.stored
    assert after is not None and after.attribute(fp.ATTRIBUTE) == fp.compute([])
    assert after.zones != before.zones


def test_an_unknown_topology_manager_policy_shows_in_a_metric(tmp_path: Path) -> None:
    """Issue #28: without the kubelet config the NRT states no policy, which consumers read as
    none; the agent says so in rte_agent_topology_policy_known (and one line at start, app.py)."""
    (tmp_path / "blind").mkdir()
    (tmp_path / "informed").mkdir()
    blind = Harness(tmp_path / "blind", kubelet_config=None)
    blind.advance(1)
    assert blind.publisher.stored is not None
    assert blind.metric("policy_known") == 0
    informed = Harness(tmp_path / "informed")
    informed.advance(1)
    assert informed.metric("policy_known") == 1
