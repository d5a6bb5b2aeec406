"""Two real ``rte extender`` processes, one killed with SIGKILL in the middle of a burst of pods.

The test process plays everything else, against the apiserver double:

* **kube-scheduler**: it reaches the extender the way kube-proxy would, through the Service's
  EndpointSlice (which the leader writes), over TLS with a client certificate; for each pod it
  calls filter and prioritize, picks the best node and binds the pod (a merge patch of
  ``spec.nodeName``: the double has no ``pods/binding``). A 503 or a broken connection is retried,
  as the scheduler retries a pod whose extender call failed.
* **the kubelets and agents** of four nodes of two NUMA zones: each bound pod is admitted
  ``ADMIT_AFTER`` later by the single-numa-node rule (the first zone with room for all of its
  CPUs and memory), or rejected with TopologyAffinityError, and the node's NRT is republished
  (available per zone, fingerprint of its started pods) at most every ``PUBLISH_EVERY``.

The leader is killed right after it let a pod through and before that pod is bound, while other
pods are bound but not admitted and admitted but not published: every case the new leader's
takeover must cover (rte/extender/leadership.py). The binding follows the approval by
``BIND_DELAY``, inside the fencing gap (lease duration − renew deadline), the premise of the
takeover's guarantee. Between two pods the scheduler waits ``SETTLE`` so that the single leader's
own window between a bind and its watch event (not what this test is about) stays closed.

The check is exact: the test knows every zone of every node and every pod it bound, and no pod
may have been rejected by the simulated kubelet.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from rte.model import fingerprint as fp
from rte.model.vocabulary import FingerprintMethod
from rte.testing.apiserver import FakeApiServer
from tests.helpers.extender import GI, PROFILE, pod
from tests.helpers.tlscerts import Pki, make_pki
from tests.helpers.waiting import wait_for

NODES = [f"node-{i}" for i in range(4)]
ZONES, ZONE_CPUS, ZONE_MEMORY = 2, 8, 16 * GI
PODS = 30
CPUS = [3, 2, 4, 3, 5, 2]
KILL_AFTER = 10
"""Placements before the leader is killed."""
ADMIT_AFTER, PUBLISH_EVERY = 0.4, 0.8
BIND_DELAY, SETTLE = 0.3, 0.2
LEASE, RENEW, RETRY = "3s", "2s", "300ms"
"""Fencing gap: 1 s, longer than BIND_DELAY."""
NAMESPACE, SERVICE = "rte-scheduler", "rte-extender"
GROUP, VERSION, PLURAL = "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"


def nrt(node: str, free: list[dict[str, int]], started: list[str]) -> dict[str, Any]:
    capacity = {"cpu": ZONE_CPUS, "memory": ZONE_MEMORY}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "topologyPolicies": ["SingleNUMANodeContainerLevel"],
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "container"},
            {"name": fp.ATTRIBUTE, "value": fp.compute([("default", name) for name in started])},
            {"name": fp.ATTRIBUTE_METHOD, "value": FingerprintMethod.ALL.value},
        ],
        "zones": [
            {
                "name": f"node-{z}",
                "type": "Node",
                "costs": [{"name": f"node-{o}", "value": 10 if o == z else 21} for o in range(ZONES)],
                "resources": [
                    {"name": r, "capacity": str(q), "allocatable": str(q), "available": str(free[z][r])}
                    for r, q in capacity.items()
                ],
            }
            for z in range(ZONES)
        ],
    }


class Nodes:
    """The kubelets (single-numa-node admission) and agents of NODES, exactly accounted."""

    def __init__(self, api: FakeApiServer, api_client: Any) -> None:
        self.api = api
        self.core = client.CoreV1Api(api_client)
        self.objects = client.CustomObjectsApi(api_client)
        self.free = {n: [{"cpu": ZONE_CPUS, "memory": ZONE_MEMORY} for _ in range(ZONES)] for n in NODES}
        self.admitted: dict[str, tuple[str, int, int]] = {}
        """pod -> (node, zone, cpus)"""
        self.rejected: list[str] = []
        self.bound_at: dict[str, float] = {}
        self.started: dict[str, list[str]] = {n: [] for n in NODES}
        self.unpublished: set[str] = set()
        self.published_at = dict.fromkeys(NODES, 0.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        for node in NODES:
            self.objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, nrt(node, self.free[node], []))

    def start(self) -> Nodes:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.step()

    def step(self) -> None:
        now = time.monotonic()
        for obj in self.api.list_objects("pods"):
            name, node = obj["metadata"]["name"], obj["spec"].get("nodeName")
            if not node or name in self.admitted or name in self.rejected:
                continue
            if now - self.bound_at.setdefault(name, now) >= ADMIT_AFTER:
                self._admit(obj, name, node)
        for node in sorted(self.unpublished):
            if now - self.published_at[node] >= PUBLISH_EVERY:
                body = nrt(node, self.free[node], self.started[node])
                patch = {"zones": body["zones"], "attributes": body["attributes"]}
                self.objects.patch_cluster_custom_object(GROUP, VERSION, PLURAL, node, patch)
                self.unpublished.discard(node)
                self.published_at[node] = now

    def _admit(self, obj: dict[str, Any], name: str, node: str) -> None:
        request = obj["spec"]["containers"][0]["resources"]["requests"]
        cpus, memory = int(request["cpu"]), int(request["memory"])
        zone = next(
            (z for z, f in enumerate(self.free[node]) if f["cpu"] >= cpus and f["memory"] >= memory), None
        )
        if zone is None:
            self.rejected.append(name)
            status = {"phase": "Failed", "reason": "TopologyAffinityError"}
        else:
            self.free[node][zone]["cpu"] -= cpus
            self.free[node][zone]["memory"] -= memory
            self.admitted[name] = (node, zone, cpus)
            status = {"phase": "Running"}
        self.core.patch_namespaced_pod(name, "default", {"status": status})
        self.started[node].append(name)
        self.unpublished.add(node)

    def in_flight(self) -> int:
        """Bound pods not admitted yet, and nodes whose NRT does not show their newest pods."""
        bound = sum(1 for name in self.bound_at if name not in self.admitted and name not in self.rejected)
        return bound + len(self.unpublished)


class ExtenderProcess:
    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RTE_")}
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        found = wait_for(
            lambda: re.search(r"serving on https://127\.0\.0\.1:(\d+)", self.log), 20, "the extender to start"
        )
        self.port = int(found.group(1))

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(20)
        self._log.close()
        return code


class Scheduler:
    """kube-scheduler's side: the Service (through its EndpointSlice), TLS, filter, prioritize, bind."""

    def __init__(self, api: FakeApiServer, api_client: Any, pki: Pki) -> None:
        self.api = api
        self.core = client.CoreV1Api(api_client)
        self.context = ssl.create_default_context(cafile=pki.ca.path)
        self.context.load_cert_chain(pki.client.cert, pki.client.key)
        self.conn: http.client.HTTPSConnection | None = None
        self.answered_by: list[int] = []

    def leader_port(self) -> int | None:
        found = self.api.get_object("endpointslices", f"{SERVICE}-leader", NAMESPACE)
        return int(found["ports"][0]["port"]) if found else None

    def call(self, verb: str, args: dict[str, Any]) -> Any:
        """The answer, or None when the call failed (the scheduler retries the pod)."""
        port = self.leader_port()
        if port is None:
            return None
        if self.conn is None or self.conn.port != port:
            self.close()
            self.conn = http.client.HTTPSConnection("127.0.0.1", port, context=self.context, timeout=5)
        try:
            self.conn.request("POST", f"/{verb}", body=json.dumps(args))
            response = self.conn.getresponse()
            body = response.read()
            if response.getheader("Connection") == "close":
                self.close()
        except (OSError, http.client.HTTPException):
            self.close()
            return None
        if response.status != 200:
            return None
        self.answered_by.append(port)
        return json.loads(body)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def choose(self, manifest: dict[str, Any]) -> str | bool | None:
        """A node, None when no node fits, False when the extender could not be asked."""
        passed = self.call("filter", {"Pod": manifest, "NodeNames": NODES})
        if passed is None:
            return False
        if not passed["NodeNames"]:
            return None
        scores = self.call("prioritize", {"Pod": manifest, "NodeNames": passed["NodeNames"]})
        if scores is None:
            return False
        return max(scores, key=lambda s: (s["Score"], s["Host"]))["Host"]  # type: ignore[no-any-return]

    def bind(self, name: str, node: str) -> None:
        self.core.patch_namespaced_pod(name, "default", {"spec": {"nodeName": node}})


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def nodes(fake_apiserver: FakeApiServer, kube_api_client: Any) -> Iterator[Nodes]:
    """The nodes with their first NRTs, before the extenders start (so they trust them at once)."""
    simulated = Nodes(fake_apiserver, kube_api_client).start()
    yield simulated
    simulated.stop()


@pytest.fixture
def extenders(
    fake_apiserver: FakeApiServer, tmp_path: Path, pki: Pki, nodes: Nodes
) -> Iterator[list[ExtenderProcess]]:
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    started: list[ExtenderProcess] = []
    for i in range(2):
        argv = [sys.executable, "-m", "rte", "extender", "--listen=127.0.0.1:0", f"--kubeconfig={kubeconfig}"]
        argv += [
            f"--scheduler-profile={PROFILE}",
            "--strategy=MostAllocated",
            "--cache-resync-period=1",
            "--startup-grace=20s",
            "--lease-namespace=",
            f"--tls-cert-file={pki.server.cert}",
            f"--tls-private-key-file={pki.server.key}",
            f"--client-ca-file={pki.ca.path}",
            "--leader-elect",
            f"--leader-elect-identity=extender-{i}",
            f"--leader-elect-lease-namespace={NAMESPACE}",
            f"--leader-elect-lease-duration={LEASE}",
            f"--leader-elect-renew-deadline={RENEW}",
            f"--leader-elect-retry-period={RETRY}",
            f"--leader-elect-service={SERVICE}",
            "--leader-elect-advertise-address=127.0.0.1",
        ]
        started.append(ExtenderProcess(argv, tmp_path / f"extender-{i}.log"))
    yield started
    for proc in started:
        code = proc.stop()
        if code not in (0, -signal.SIGKILL):
            sys.stderr.write(f"--- {proc.log_path} ---\n{proc.log}\n")
        assert code in (0, -signal.SIGKILL), f"extender exited with {code}"


def test_a_leader_killed_mid_burst_hands_over_without_any_topology_affinity_error(
    fake_apiserver: FakeApiServer,
    kube_api_client: Any,
    nodes: Nodes,
    extenders: list[ExtenderProcess],
    pki: Pki,
) -> None:
    scheduler = Scheduler(fake_apiserver, kube_api_client, pki)
    try:
        first = wait_for(scheduler.leader_port, 20, "a leader to publish itself")
        [leader] = [p for p in extenders if p.port == first]
        [survivor] = [p for p in extenders if p is not leader]
        requests = [{"cpu": CPUS[i % len(CPUS)], "memory": GI} for i in range(PODS)]
        pending = [pod(f"p{i:02d}", r, phase="Pending") for i, r in enumerate(requests)]
        for manifest in pending:
            scheduler.core.create_namespaced_pod("default", manifest)
        wait_for(lambda: scheduler.choose(pending[0]), 20, "the leader to trust the nodes")
        placed: list[tuple[str, str]] = []
        unschedulable: dict[str, int] = {}
        killed_at_placement, in_flight_at_kill = -1, 0
        deadline = time.monotonic() + 120
        while pending and time.monotonic() < deadline:
            manifest = pending.pop(0)
            name = manifest["metadata"]["name"]
            node = scheduler.choose(manifest)
            if node is False:  # the extender could not be asked: retry the pod shortly
                pending.insert(0, manifest)
                time.sleep(0.1)
                continue
            if node is None:  # fits nowhere now: back of the queue, a few times
                unschedulable[name] = unschedulable.get(name, 0) + 1
                if unschedulable[name] < 5:
                    pending.append(manifest)
                time.sleep(0.1)
                continue
            assert isinstance(node, str)
            if len(placed) == KILL_AFTER and killed_at_placement < 0:
                leader.proc.kill()  # SIGKILL: no release, no goodbye; the pod is approved, not bound
                killed_at_placement, in_flight_at_kill = len(placed), nodes.in_flight() + 1
            time.sleep(BIND_DELAY if killed_at_placement == len(placed) else 0)
            scheduler.bind(name, node)
            placed.append((name, node))
            time.sleep(SETTLE)
        wait_for(lambda: not nodes.in_flight(), 20, "every bound pod admitted and published")
    finally:
        scheduler.close()

    logs = "".join(f"--- {p.log_path.name}\n{p.log[-3000:]}" for p in extenders)
    assert killed_at_placement == KILL_AFTER, logs
    assert in_flight_at_kill >= 2, "the kill found nothing in flight but the approved pod"
    after = placed[killed_at_placement:]
    assert len(after) >= 5, f"only {len(after)} placements after the failover\n{logs}"
    assert scheduler.answered_by[0] == leader.port and scheduler.answered_by[-1] == survivor.port
    assert scheduler.leader_port() == survivor.port

    # The exact accounting: no pod was rejected, and each zone holds what was admitted to it.
    assert nodes.rejected == [], f"TopologyAffinityError for {nodes.rejected}\n{logs}"
    assert sorted(nodes.admitted) == sorted(name for name, _ in placed)
    for node in NODES:
        for zone in range(ZONES):
            used = sum(c for n, z, c in nodes.admitted.values() if (n, z) == (node, zone))
            assert used + nodes.free[node][zone]["cpu"] == ZONE_CPUS
            assert nodes.free[node][zone]["cpu"] >= 0
    assert sum(c for _, _, c in nodes.admitted.values()) > ZONES * ZONE_CPUS * len(NODES) // 2  # a full burst
