"""The agent loop driven step by step with an injected clock, for the loop's tests.

The kubelet side is real (a scenario directory read by the same code as in production), with
switches for faults: ``reader.down`` makes every kubelet call fail as an unreachable socket does,
``reader.bad_allocatable`` makes GetAllocatableResources answer bytes that do not decode, and
``machine_error`` makes the next sysfs reads fail as an unreadable file does. The apiserver
side is a small fake with the Publisher's interface, so each decision of the loop (when to scan,
when to publish, when to wait) is observable without any timing luck.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rte.agent.compute.reading import PublishingRules
from rte.agent.loop import Agent
from rte.agent.metrics import AgentMetrics
from rte.agent.scanner import KubeletConfigCache, Scanner
from rte.agent.settings import AgentSettings, load_settings
from rte.agent.status import AgentStatus
from rte.errors import InputError, UnavailableError
from rte.host.machine import Machine
from rte.host.sysfs import read_machine
from rte.model.pod import Pod
from rte.model.topology import NodeTopology
from rte.podres.reader import DirectoryReader
from rte.podres.source import Listing
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
    """Counts the calls that answered; ``down`` makes every call fail as a dead kubelet's socket."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.lists = 0
        self.allocatables = 0
        self.down = False
        self.bad_allocatable = False

    def _answer(self, method: str) -> None:
        if self.down:
            raise UnavailableError(f"kubelet podresources {method}: connection refused")

    def list(self) -> Listing:
        self._answer("List")
        self.lists += 1
        return super().list()

    def get_allocatable(self) -> AllocatableResources:
        self._answer("GetAllocatableResources")
        if self.bad_allocatable:  # as SocketReader reports an answer that does not decode
            raise InputError(
                "kubelet GetAllocatableResources response from fake", "does not decode: truncated message"
            )
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
    def __init__(
        self, tmp_path: Path, publish: bool = True, kubelet_config: Path | None = CONFIG, **flags: Any
    ) -> None:
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
            kubelet_config=KubeletConfigCache(kubelet_config, None),
            rules=PublishingRules(self.settings.fingerprint_method, self.settings.informer_mode),
            on_kubelet_error=lambda method, kind: self.metrics.podresources_errors.inc(
                method=method, kind=kind
            ),
            max_listed_pods=self.settings.max_listed_pods,
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
    machine_error: str | None = None

    def _load_machine(self) -> Machine:
        self.machine_loads += 1
        if self.machine_error is not None:
            raise InputError(self.machine_error, "cannot read: Is a directory")
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

    def add_memory_pod(self, name: str, size: int, numa: int) -> None:
        """A pod holding one memory block of ``size`` bytes on NUMA node ``numa``."""
        path = self.dir / "list.protojson.json"
        doc = json.loads(path.read_text())
        block = {"memoryType": "memory", "size": str(size), "topology": {"nodes": [{"ID": str(numa)}]}}
        container = {"name": "c", "memory": [block]}
        doc["podResources"].append({"namespace": "default", "name": name, "containers": [container]})
        path.write_text(json.dumps(doc))

    def remove_pod(self, name: str) -> None:
        path = self.dir / "list.protojson.json"
        doc = json.loads(path.read_text())
        doc["podResources"] = [p for p in doc["podResources"] if p["name"] != name]
        path.write_text(json.dumps(doc))

    def ready(self) -> bool:
        return self.status.readiness(self.clock.now)[0]

    def metric(self, name: str, **labels: str) -> float:
        family = getattr(self.metrics, name)
        return float(family.value(**labels))
