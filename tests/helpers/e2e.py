"""End-to-end harness helpers: the real ``rte run`` process against the fake kubelet and apiserver.

The agent runs as a subprocess (``python -m rte run``) with short intervals; the fake kubelet
(real gRPC on a unix socket) and the apiserver double (real HTTP) run in the test process, so
tests change the node or inject faults and then look at what the apiserver double stored.
Every wait polls for a condition with a deadline; nothing sleeps blind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from rte.agent.compute.reading import KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.host.kubelet_config_files import load_kubelet_config
from rte.host.sysfs import read_machine
from rte.model.nrt import to_nrt
from rte.model.pod import Pod, pod_from_manifest
from rte.model.vocabulary import FingerprintMethod
from rte.podres import convert
from rte.podres.files import PodResourcesFiles
from rte.podres.v1 import api_pb2
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.paths import R640_KUBELET_CONFIG, R640_STATIC, R640_SYSFS
from tests.helpers.waiting import wait_for

SYSFS, SCENARIO, KUBELET_CONFIG = R640_SYSFS, R640_STATIC, R640_KUBELET_CONFIG
NODE = "worker-1"
NRT = "noderesourcetopologies"
METHOD = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES


def expected_nrt(kubelet: FakeKubelet, api: FakeApiServer, *, pod_watch: bool = True) -> dict[str, Any]:
    """What the agent must store for the fake kubelet's current state and the API's pods.

    ``pod_watch`` False: the fingerprint follows the kubelet's List (no API pods known).
    """
    listing = api_pb2.ListPodResourcesResponse(pod_resources=kubelet.pods())
    specs: dict[tuple[str, str], Pod] | None = None
    if pod_watch:
        specs = {}
        for obj in api.list_objects("pods"):
            if obj.get("spec", {}).get("nodeName") == NODE:
                pod = pod_from_manifest(obj)
                specs[pod.key] = pod
    reading = NodeReading(
        node_name=NODE,
        machine=read_machine(SYSFS, pci=False),
        config=load_kubelet_config(KUBELET_CONFIG),
        kubelet=KubeletReading(
            PodResourcesFiles(SCENARIO).get_allocatable(),  # the tests never change allocatable
            convert.list_from_proto(listing, "fake kubelet"),
        ),
        rules=PublishingRules(METHOD),
        specs=specs,
    )
    return to_nrt(compute_topology(reading).topology)


def content(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The parts of an NRT the agent computes (server metadata and owners left out)."""
    if obj is None:
        return None
    return {
        "zones": obj.get("zones"),
        "attributes": obj.get("attributes"),
        "topologyPolicies": obj.get("topologyPolicies"),
        "annotations": obj.get("metadata", {}).get("annotations"),
    }


STARTED = re.compile(r'http="(\d+)"')
"""The agent's line once it serves (a deadline on it only ends a failed run: a busy machine
starts the interpreter slowly)."""


class AgentProcess:
    """One ``rte run`` subprocess, its log, and its HTTP endpoints."""

    def __init__(self, argv: list[str], log_path: Path, env: dict[str, str]) -> None:
        self.argv = argv
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self.returncode: int | None = None
        self._port: int | None = None

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def port(self) -> int:
        if self._port is None:
            found = wait_for(lambda: STARTED.search(self.log), 60, "the agent to start")
            assert found is not None  # wait_for returns only what is truthy
            self._port = int(found.group(1))
        return self._port

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metric(self, sample: str, default: float | None = None) -> float:
        """The value of one sample, written as in the exposition (``name{label="v"}`` or ``name``).

        Label order does not matter (the exposition sorts label names). ``default`` stands in for
        a sample not exposed yet (a labelled counter appears with its first increment).
        """
        _, body = self.get("/metrics")
        try:
            return sample_value(body, sample)
        except AssertionError:
            if default is None:
                raise
            return default

    def stop(self, timeout: float = 10.0) -> int:
        if self.returncode is None:
            if self.alive:
                # A SIGTERM before `rte run` installed its handler would kill it (-15): wait until
                # it serves (its handler goes in first), or has ended anyway.
                wait_for(lambda: not self.alive or STARTED.search(self.log), 60, "the agent to start")
                self.proc.send_signal(signal.SIGTERM)
            self.returncode = self.proc.wait(timeout)
            self._log.close()
        return self.returncode


AgentFactory = Callable[..., AgentProcess]


def _key(sample: Sample) -> tuple[str, frozenset[tuple[str, str]]]:
    return sample.name, frozenset(sample.labels.items())


def sample_value(exposition: str, sample: str) -> float:
    """The value of ``sample`` (``name{label="v",...}``) in a Prometheus text exposition."""
    ((wanted,),) = (f.samples for f in text_string_to_metric_families(sample + " 0\n"))
    for family in text_string_to_metric_families(exposition):
        for found in family.samples:
            if _key(found) == _key(wanted):
                return float(found.value)
    raise AssertionError(f"no sample {sample} in the exposition")


class KubeletProcess:
    """The fake kubelet in a process of its own (``python -m rte.testing.fake_kubelet``), so a test
    can SIGKILL it: the socket file then stays behind and connecting to it is refused, as after a
    kubelet crash. :meth:`start` serves the same scenario on the same socket again.
    """

    def __init__(self, scenario: Path = SCENARIO) -> None:
        self.scenario = scenario
        self._dir = Path(tempfile.mkdtemp(prefix="fkp-", dir="/tmp"))  # short: unix socket paths
        self.socket_path = self._dir / "kubelet.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket_path}"

    def start(self) -> KubeletProcess:
        self.socket_path.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "rte.testing.fake_kubelet", "--socket", str(self.socket_path)]
        argv += ["--scenario", str(self.scenario)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RTE_")}
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        wait_for(self.socket_path.exists, 15, "the fake kubelet's socket")
        return self

    def kill(self) -> None:
        """SIGKILL: no cleanup, the socket file stays."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(5)
            self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(5)
            self.proc = None
        shutil.rmtree(self._dir, ignore_errors=True)


def reject_pod(api: FakeApiServer, name: str, reason: str, message: str, namespace: str = "default") -> None:
    """What the kubelet does to a pod it refuses at admission (``kubernetes/kubernetes
    pkg/kubelet/kubelet.go``, ``rejectPod``): phase Failed, the admission ``reason``, and
    "Pod was rejected: " before the message. Written with a PUT through the real client.
    """
    from kubernetes import client

    core = client.CoreV1Api(api.api_client())
    pod = core.read_namespaced_pod(name, namespace)
    pod.status = client.V1PodStatus(phase="Failed", reason=reason, message=f"Pod was rejected: {message}")
    core.replace_namespaced_pod(name, namespace, pod)


def stored(api: FakeApiServer) -> dict[str, Any] | None:
    return api.nrt(NODE)


def dumps(obj: object) -> str:
    return json.dumps(obj, indent=1, sort_keys=True)
