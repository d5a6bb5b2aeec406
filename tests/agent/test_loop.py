"""The agent loop driven step by step with an injected clock.

The kubelet side is real (a scenario directory read by the same code as in production); the
apiserver side is a small fake with the Publisher's interface, so each decision of the loop
(when to scan, when to publish, when to wait) is observable without any timing luck.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rte.agent.kubelet import DirectoryReader, Listing
from rte.agent.loop import Agent, HeartbeatRunner, interruptible_sleep
from rte.agent.metrics import AgentMetrics
from rte.agent.pacing import Backoff
from rte.agent.reading import PublishingRules
from rte.agent.scanner import KubeletConfigCache, Scanner
from rte.agent.settings import AgentSettings, load_settings
from rte.agent.status import AgentStatus
from rte.errors import PublishError, UnavailableError
from rte.host.machine import Machine
from rte.host.sysfs import read_machine
from rte.model import fingerprint as fp
from rte.model.pod import Pod
from rte.model.topology import NodeTopology
from rte.podres.types import AllocatableResources
from tests.helpers.clock import FakeClock
from tests.helpers.paths import R640_KUBELET_CONFIG, R640_STATIC, R640_SYSFS

SYSFS, SCENARIO, CONFIG = R640_SYSFS, R640_STATIC, R640_KUBELET_CONFIG


class FakePublisher:
    """The Publisher interface over a dict; ``failures`` raise one by one before succeeding."""

    def __init__(self) -> None:
        self.stored: NodeTopology | None = None
        self.calls: list[float] = []
        self.forgets = 0
        self.failures: list[Exception] = []
        self.crd: list[bool] = []
        self.clock: FakeClock | None = None

    def crd_ready(self) -> bool:
        return self.crd.pop(0) if self.crd else True

    def publish(self, topology: NodeTopology) -> str:
        self.calls.append(self.clock.now if self.clock else 0.0)
        if self.failures:
            raise self.failures.pop(0)
        if self.stored == topology:
            return "skipped"
        outcome = "created" if self.stored is None else "patched"
        self.stored = topology
        return outcome

    def forget(self) -> None:
        self.forgets += 1

    @property
    def writes(self) -> int:
        return sum(1 for _ in self.calls)


class CountingReader(DirectoryReader):
    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.lists = 0
        self.allocatables = 0

    def list(self) -> Listing:
        self.lists += 1
        return super().list()

    def get_allocatable(self) -> AllocatableResources:
        self.allocatables += 1
        return super().get_allocatable()


class Pods:
    def __init__(self) -> None:
        self.is_synced = False
        self.snapshot: dict[tuple[str, str], Pod] = {}

    def synced(self) -> bool:
        return self.is_synced

    def pods(self) -> Mapping[tuple[str, str], Pod]:
        return self.snapshot


class Harness:
    def __init__(self, tmp_path: Path, publish: bool = True, **flags: Any) -> None:
        self.dir = tmp_path / "scenario"
        self.dir.mkdir()
        for name in ("list.protojson.json", "get_allocatable_resources.protojson.json"):
            shutil.copy(SCENARIO / name, self.dir / name)
        self.clock = FakeClock()
        defaults = {"poll_interval": "500ms", "resync_interval": "60s", "retry_base": "1s", "retry_cap": "8s"}
        self.settings: AgentSettings = load_settings(
            env={}, flags={**defaults, **flags}, hostname=lambda: "n1"
        )
        self.reader = CountingReader(self.dir)
        self.metrics = AgentMetrics("n1", "test")
        self.scanner = Scanner(
            node_name="n1",
            reader=self.reader,
            machine_loader=self._load_machine,
            kubelet_config=KubeletConfigCache(CONFIG, None),
            rules=PublishingRules(self.settings.fingerprint_method, self.settings.informer_mode),
            on_kubelet_error=lambda method, kind: self.metrics.podresources_errors.inc(
                method=method, kind=kind
            ),
        )
        self.status = AgentStatus(ready_window=180, stall_timeout=300)
        self.publisher = FakePublisher()
        self.publisher.clock = self.clock
        self.printed: list[NodeTopology] = []
        self.pods = Pods()
        self.agent = Agent(
            self.settings,
            self.scanner,
            metrics=self.metrics,
            status=self.status,
            publisher=self.publisher if publish else None,
            pods=self.pods,
            sink=self.printed.append,
            clock=self.clock,
            rng=lambda: 1.0,
        )

    machine_loads = 0

    def _load_machine(self) -> Machine:
        self.machine_loads += 1
        return read_machine(SYSFS, pci=False)

    def advance(self, seconds: float) -> None:
        """Step the loop, jumping the clock to each deadline, for ``seconds`` of fake time."""
        end = self.clock.now + seconds
        while True:
            delay = self.agent.step()
            if self.clock.now >= end:
                return
            self.clock.now = min(end, self.clock.now + max(delay, 0.001))

    def add_pod(self, name: str, cpus: list[int]) -> None:
        path = self.dir / "list.protojson.json"
        doc = json.loads(path.read_text())
        doc["podResources"].append(
            {
                "namespace": "default",
                "name": name,
                "containers": [{"name": "c", "cpuIds": [str(c) for c in cpus]}],
            }
        )
        path.write_text(json.dumps(doc))

    def ready(self) -> bool:
        return self.status.readiness(self.clock.now)[0]

    def metric(self, name: str, **labels: str) -> float:
        family = getattr(self.metrics, name)
        return float(family.value(**labels))


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


def test_contradicting_kubelet_data_is_a_finding_counted_logged_once_and_flagged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(tmp_path)
    h.advance(1)
    assert h.agent.last_scan is not None and h.agent.last_scan.consistent
    path = h.dir / "list.protojson.json"
    doc = json.loads(path.read_text())
    twin = json.loads(json.dumps(doc["podResources"][1]))
    twin["containers"] = twin["containers"][1:]  # dpdk-app-0 listed twice, differently
    doc["podResources"].append(twin)
    path.write_text(json.dumps(doc))
    with caplog.at_level(logging.WARNING, logger="rte"):
        h.advance(5)
    assert h.agent.last_scan is not None and not h.agent.last_scan.consistent
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


class FlakyHeartbeat:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.renewals = 0

    def renew(self) -> None:
        self.renewals += 1
        if self.failures:
            self.failures -= 1
            raise UnavailableError("apiserver down")


def test_the_heartbeat_retries_sooner_after_a_failure_but_never_later_than_its_interval() -> None:
    metrics = AgentMetrics("n1", "test")
    runner = HeartbeatRunner(
        FlakyHeartbeat(failures=2),
        10.0,
        metrics=metrics,
        backoff=Backoff(1.0, 60.0, rng=lambda: 1.0),
        stop_event=threading.Event(),
    )
    assert runner.renew_once() == 1.0
    assert runner.renew_once() == 2.0
    assert runner.renew_once() == 10.0
    assert metrics.heartbeats.value(result="failed") == 2
    assert metrics.heartbeats.value(result="ok") == 1
