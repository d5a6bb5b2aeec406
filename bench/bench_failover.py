"""How long the scheduler goes without a serving extender when the leader goes away (issue #26, item 11).

Two real ``rte extender`` processes with leader election at the deployed timings (lease 15 s,
renew deadline 10 s, retry 2 s: ``deploy/scheduler-extender.yaml`` sets none, so the defaults)
run against the apiserver double (:mod:`rte.testing.apiserver`), with a few NRTs and the
Service's EndpointSlice written by the leader (``--leader-elect-service``). A prober plays
kube-scheduler reaching the Service: every 20 ms it POSTs ``/filter`` to the endpoint the
EndpointSlice names. The leader is then

* killed with **SIGKILL** (a crash, an OOM kill, a node lost): nobody releases the Lease; or
* sent **SIGTERM** (a rollout, a drain), right after a pod it let through was bound (the usual
  case: the hand-off has nothing to wait for), or
* sent **SIGTERM** while a pod it let through is not bound yet, bound ``--bind-after`` seconds
  later (the hand-off waits for that binding, the fencing gap at the latest).

The gap is from the signal to the first ``200`` from the other replica. Each case runs
``--rounds`` times on fresh processes; the medians and maxima are printed.

Run: ``python -m bench.bench_failover [--rounds 3] [--extender-src DIR]`` (``--extender-src``:
another checkout's extender, e.g. main's, for the figures before).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from rte.model import fingerprint as fp
from rte.model.vocabulary import FingerprintMethod
from rte.testing.apiserver import FakeApiServer

NAMESPACE, SERVICE, PROFILE = "rte-scheduler", "rte-extender", "topology-aware"
NODES = [f"node-{i}" for i in range(4)]
GI = 1 << 30
PROBE_EVERY = 0.02


def _nrt(node: str) -> dict[str, Any]:
    zone = {
        "type": "Node",
        "resources": [
            {"name": "cpu", "capacity": "16", "allocatable": "16", "available": "16"},
            {"name": "memory", **dict.fromkeys(("capacity", "allocatable", "available"), str(32 * GI))},
        ],
    }
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "topologyPolicies": ["SingleNUMANodeContainerLevel"],
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "container"},
            {"name": fp.ATTRIBUTE, "value": fp.compute([])},
            {"name": fp.ATTRIBUTE_METHOD, "value": FingerprintMethod.ALL.value},
        ],
        "zones": [{**zone, "name": f"node-{z}"} for z in range(2)],
    }


def _pod(name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": PROFILE,
        "containers": [
            {"name": "c", "resources": {k: {"cpu": "1", "memory": "1Gi"} for k in ("requests", "limits")}},
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


class Extender:
    def __init__(self, identity: str, kubeconfig: Path, log_path: Path, src: str) -> None:
        argv = [sys.executable, "-m", "rte", "extender", "--listen=127.0.0.1:0", f"--kubeconfig={kubeconfig}"]
        argv += [
            f"--scheduler-profile={PROFILE}",
            "--heartbeat-namespace=",
            "--leader-elect",
            f"--leader-elect-identity={identity}",
            f"--leader-elect-lease-namespace={NAMESPACE}",
            f"--leader-elect-service={SERVICE}",
            "--leader-elect-advertise-address=127.0.0.1",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RTE_")}
        if src:
            env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
        self.log_path = log_path
        self._log = log_path.open("wb")
        output = {"stdout": self._log, "stderr": subprocess.STDOUT}
        self.proc = subprocess.Popen(argv, env=env, cwd=src or None, **output)  # type: ignore[call-overload]
        deadline = time.monotonic() + 60
        while True:
            found = re.search(r"serving on http://127\.0\.0\.1:(\d+)", log_path.read_text(errors="replace"))
            if found:
                self.port = int(found.group(1))
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log_path.read_text(errors="replace")[-2000:])
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def _leader_port(api: FakeApiServer) -> int | None:
    found = api.get_object("endpointslices", f"{SERVICE}-leader", NAMESPACE)
    return int(found["ports"][0]["port"]) if found else None


def _filter(port: int, name: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("POST", "/filter", body=json.dumps({"Pod": _pod(name), "NodeNames": NODES}))
        response = conn.getresponse()
        response.read()
        return response.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def _bind(api: FakeApiServer, name: str) -> None:
    """The pod bound to a node (recreated so: the double's pods have no binding subresource)."""
    api.delete_object("pods", name, "default")
    api.create_object("pods", _pod(name, NODES[0]))


def one_round(case: str, bind_after: float, src: str) -> float:
    """The seconds from the signal to the first answer of the other replica."""
    with FakeApiServer() as api, tempfile.TemporaryDirectory() as tmp:
        for node in NODES:
            api.create_object("noderesourcetopologies", _nrt(node))
        kubeconfig = api.write_kubeconfig(Path(tmp) / "kubeconfig")
        extenders = [Extender(f"extender-{i}", kubeconfig, Path(tmp) / f"{i}.log", src) for i in range(2)]
        try:
            deadline = time.monotonic() + 60
            while (port := _leader_port(api)) is None or _filter(port, "warm") != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError("no leader")
                time.sleep(0.1)
            [leader] = [e for e in extenders if e.port == port]
            [standby] = [e for e in extenders if e is not leader]
            time.sleep(3.0)  # the standby's watches synced and it has seen the Lease
            api.create_object("pods", _pod("placed"))
            assert _filter(leader.port, "placed") == 200  # the leader lets it through
            if case != "sigterm-unbound":
                _bind(api, "placed")
                time.sleep(0.5)  # the leader's pod watch has it
            signalled = time.monotonic()
            leader.proc.send_signal(signal.SIGKILL if case == "sigkill" else signal.SIGTERM)
            if case == "sigterm-unbound":
                threading.Timer(bind_after, _bind, (api, "placed")).start()
            while time.monotonic() - signalled < 60:
                if _leader_port(api) == standby.port and _filter(standby.port, "probe") == 200:
                    return time.monotonic() - signalled
                time.sleep(PROBE_EVERY)
            raise RuntimeError("the standby never answered")
        finally:
            for extender in extenders:
                extender.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bind-after", type=float, default=1.0, help="seconds, sigterm-unbound case")
    parser.add_argument("--extender-src", default="", help="run the extenders of another checkout")
    parser.add_argument("--cases", nargs="+", default=["sigkill", "sigterm", "sigterm-unbound"])
    options = parser.parse_args()
    for case in options.cases:
        gaps = [one_round(case, options.bind_after, options.extender_src) for _ in range(options.rounds)]
        print(
            f"{case:<16} gap without a serving extender: median {statistics.median(gaps):5.2f} s, "
            f"max {max(gaps):5.2f} s ({', '.join(f'{g:.2f}' for g in gaps)})",
            flush=True,
        )


if __name__ == "__main__":
    main()
