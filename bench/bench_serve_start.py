"""``rte extender --nrt-file``, as a process: start to ready, the first round trip, and RSS.

The NRTs (``bench.bench_extender``'s 8-zone workers) are written to a ``NodeResourceTopologyList``
JSON file, as ``kubectl get noderesourcetopologies -o json`` writes one; the extender runs the
OverReserve cache (``--cache-resync-period 5s``, the deployed setting) and is polled on ``/readyz``
every 10 ms. Then, on one kept-alive connection: the first filter+prioritize round trip (the
index must already be warm: built before ``/readyz`` said ready), the median of the next ones,
and the process's RSS. Baseline in the same run: the same file read by PyYAML's C loader is not
run (218 s at 5000 NRTs before this bench existed); the decoder's share is shown instead.

The cluster path (``--kubeconfig`` or in-cluster) imports the ``kubernetes`` client besides;
:func:`client_import` measures that client as the extender builds it in a pod (the ``client``
and ``config`` parts, :mod:`rte.runtime.kubeimport`; pods by a plain GET) against the whole
package and the generated ``CoreV1Api`` it used before, in fresh processes alternating.

``--through-apiserver N`` serves N NRTs listed and watched from the apiserver double instead
(``--kubeconfig``); ``--extender-src DIR ... --rounds R`` runs the extenders of these checkouts
(say main's and this one's, ``''``) alternately against one double: a baseline in the same run.

Run: ``python -m bench.bench_serve_start [--nodes N ...] [--client-import] [--through-apiserver N ...]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from bench.bench_extender import POD, _topology
from bench.timing import Row
from rte.model.nrt import LIST_KIND, to_nrt

MiB = 2**20
EXTENDER_SRC = ""
"""``--extender-src``: the checkout whose ``rte`` the extender runs (empty: this one)."""
STARTUP_NODES = 5000
RSS_NODES = 20_000
CANDIDATES = 1000
"""At 20 000 nodes kube-scheduler scores 5 % of them by default (percentageOfNodesToScore's
adaptive floor, kubernetes ``pkg/scheduler/schedule_one.go``): 1000 candidates per pod."""


def write_nrt_file(path: Path, nodes: int, seed: int = 42) -> int:
    """``nodes`` NRTs as one JSON list; returns the file's size in bytes."""
    rng = random.Random(seed)
    items = [to_nrt(_topology(i, rng)) for i in range(nodes)]
    data = json.dumps({"apiVersion": "v1", "kind": LIST_KIND, "items": items}).encode()
    path.write_bytes(data)
    return len(data)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Extender:
    """``rte extender --nrt-file`` in a child process, until :meth:`stop`."""

    def __init__(self, nrt_file: Path | None, *extra: str) -> None:
        """Serving ``nrt_file``, or (None) what ``extra`` says: ``--kubeconfig`` for a cluster."""
        self.port = _free_port()
        argv = [sys.executable, "-m", "rte", "extender"]
        argv += ["--nrt-file", str(nrt_file)] if nrt_file is not None else []
        argv += ["--listen", f"127.0.0.1:{self.port}", "--cache-resync-period", "5s"]
        argv += ["--lease-namespace", "", "--log-level", "warning", *extra]
        env = dict(os.environ)
        if EXTENDER_SRC:  # another checkout's rte (e.g. main's), for a baseline in the same run;
            # run from there too: ``python -m`` puts the working directory first on sys.path
            env["PYTHONPATH"] = os.pathsep.join([EXTENDER_SRC, env.get("PYTHONPATH", "")])
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=EXTENDER_SRC or None
        )
        try:
            self.ready_after = self._wait_ready()
        except BaseException:
            self.proc.kill()  # not left running behind a failed bench
            self.proc.wait()
            raise
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def _wait_ready(self, timeout: float = 600.0) -> float:
        deadline = self.started + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"extender exited: {self.proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/readyz")
                status = conn.getresponse().status
                conn.close()
                if status == 200:
                    return time.perf_counter() - self.started
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError("extender not ready in time")

    def post(self, verb: str, args: dict[str, Any]) -> Any:
        self.conn.request("POST", f"/{verb}", body=json.dumps(args).encode())
        response = self.conn.getresponse()
        data = response.read()
        assert response.status == 200, data[:300]
        return json.loads(data)

    def round_trip(self, names: list[str]) -> float:
        start = time.perf_counter()
        passed = self.post("filter", {"Pod": POD, "NodeNames": names})["NodeNames"]
        self.post("prioritize", {"Pod": POD, "NodeNames": passed})
        return time.perf_counter() - start

    def rss(self) -> int:
        return int(psutil.Process(self.proc.pid).memory_info().rss)

    def stop(self) -> None:
        self.conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_CLIENT_IMPORT = """
import os, sys, tempfile, time, psutil
import rte.extender.app, rte.extender.watch, rte.extender.endpoint, rte.runtime.leaderelection
from rte.runtime.kubeclient import Source, load_api_client
from rte.runtime.kubeimport import kubernetes_parts_on_demand
secrets = tempfile.mkdtemp()
for name in ("token", "ca.crt"):
    with open(os.path.join(secrets, name), "w") as f:
        f.write("x")
os.environ.update(KUBERNETES_SERVICE_HOST="10.96.0.1", KUBERNETES_SERVICE_PORT="443")
process = psutil.Process()
rss, start = process.memory_info().rss, time.perf_counter()
if sys.argv[1] == "before":
    import kubernetes  # the package's own __init__: every part, as before rte.runtime.kubeimport
kubernetes_parts_on_demand()  # what load_api_client does first (nothing after the line above)
import kubernetes.config.incluster_config as incluster
incluster.SERVICE_TOKEN_FILENAME = os.path.join(secrets, "token")
incluster.SERVICE_CERT_FILENAME = os.path.join(secrets, "ca.crt")
api = load_api_client(sources=(Source.IN_CLUSTER,))
from kubernetes import client
# What the extender constructs with leader election: the Lease and the EndpointSlice writers (its
# lists and watches are plain GETs now; before, CustomObjectsApi and CoreV1Api too).
apis = [client.CoordinationV1Api(api), client.DiscoveryV1Api(api)]
if sys.argv[1] == "before":
    apis += [client.CustomObjectsApi(api), client.CoreV1Api(api)]
print(time.perf_counter() - start, process.memory_info().rss - rss)
"""


def client_import(repeats: int = 5) -> dict[str, tuple[float, float]]:
    """Median (seconds, bytes of RSS) of the extender's in-cluster client, from the first kubernetes
    import to its API objects: ``now`` and ``before`` (the package's ``__init__``, ``CoreV1Api``)."""
    runs: dict[str, list[tuple[float, float]]] = {"now": [], "before": []}
    for _ in range(repeats):
        for how, seen in runs.items():
            out = subprocess.run([sys.executable, "-c", _CLIENT_IMPORT, how], capture_output=True, check=True)
            seconds, rss = out.stdout.split()
            seen.append((float(seconds), float(rss)))
    return {
        how: (statistics.median(s for s, _ in seen), statistics.median(r for _, r in seen))
        for how, seen in runs.items()
    }


def measure(nodes: int, candidates: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nrts.json"
        size = write_nrt_file(path, nodes)
        extender = Extender(path)
        try:
            rng = random.Random(7)
            names = [f"worker-{i:05d}" for i in sorted(rng.sample(range(nodes), min(candidates, nodes)))]
            return {"file_mib": size / MiB, **_trips(extender, names)}
        finally:
            extender.stop()


def _trips(extender: Extender, names: list[str]) -> dict[str, float]:
    """A started extender's figures: ready time, its first round trip and the median of the next
    seven over ``names``, and its RSS after them."""
    first = extender.round_trip(names)
    later = statistics.median(extender.round_trip(names) for _ in range(7))
    return {
        "ready_s": extender.ready_after,
        "first_ms": first * 1000,
        "later_ms": later * 1000,
        "rss_mib": extender.rss() / MiB,
    }


def measure_cluster(nodes: int, candidates: int, sources: list[str] | None = None) -> list[dict[str, float]]:
    """As :func:`measure`, the NRTs listed and watched from the apiserver double (``--kubeconfig``,
    the deployed path) instead of read from a file, once per checkout in ``sources`` ("" this
    one), one after the other against the same double. The double's store is filled directly
    (its schema validation would take minutes at 20 000), and it runs in this process."""
    from rte.testing.apiserver import FakeApiServer

    global EXTENDER_SRC
    rng = random.Random(42)
    results = []
    with tempfile.TemporaryDirectory() as tmp, FakeApiServer() as api:
        api.install_crd()
        for i in range(nodes):
            obj = to_nrt(_topology(i, rng))
            obj["metadata"]["uid"] = f"bench-{i}"
            api.storage.create("noderesourcetopologies", obj)
        kubeconfig = api.write_kubeconfig(Path(tmp) / "kubeconfig")
        for source in sources or [EXTENDER_SRC]:
            EXTENDER_SRC = source
            extender = Extender(None, "--kubeconfig", str(kubeconfig))
            try:
                names = [
                    f"worker-{i:05d}"
                    for i in sorted(random.Random(7).sample(range(nodes), min(candidates, nodes)))
                ]
                results.append(_trips(extender, names))
            finally:
                extender.stop()
    return results


def summary() -> list[Row]:
    start = measure(STARTUP_NODES, 500)
    big = measure(RSS_NODES, CANDIDATES)
    return [
        Row(
            f"rte extender --nrt-file, {STARTUP_NODES} NRTs ({start['file_mib']:.0f} MiB JSON): ready after",
            f"{start['ready_s']:.1f} s",
            "≤ 5 s",
            start["ready_s"] <= 5,
        ),
        Row(
            f"extender first round trip after start, {RSS_NODES} NRTs, {CANDIDATES} candidates",
            f"{big['first_ms']:.0f} ms (then {big['later_ms']:.0f})",
            "≤ 200 ms",
            big["first_ms"] <= 200,
        ),
        Row(
            f"extender RSS, {RSS_NODES} NRTs",
            f"{big['rss_mib']:.0f} MiB",
            "≤ 150 MiB",
            big["rss_mib"] <= 150,
        ),
        _client_import_row(client_import()),
    ]


def _client_import_row(cost: dict[str, tuple[float, float]]) -> Row:
    (now_s, now_rss), (before_s, before_rss) = cost["now"], cost["before"]
    before = f"{before_rss / MiB:.1f} MiB, {before_s * 1000:.0f} ms"
    return Row(
        "extender in-cluster client: kubernetes import, load_api_client, API objects (before, same run)",
        f"{now_rss / MiB:.1f} MiB, {now_s * 1000:.0f} ms (whole package and generated list APIs: {before})",
        "",
        None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[STARTUP_NODES, RSS_NODES])
    parser.add_argument("--candidates", type=int, default=CANDIDATES)
    parser.add_argument("--client-import", action="store_true", help="also the kubernetes import cost")
    parser.add_argument(
        "--through-apiserver",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="also N NRTs via --kubeconfig",
    )
    parser.add_argument(
        "--extender-src",
        nargs="*",
        default=[""],
        metavar="DIR",
        help="run the extender from these checkouts, alternately ('' this one), against one double",
    )
    parser.add_argument("--rounds", type=int, default=1, help="how many times each --through-apiserver N")
    args = parser.parse_args()
    print(f"rte extender --nrt-file (OverReserve), {os.cpu_count()} CPUs")
    global EXTENDER_SRC
    sources = args.extender_src
    for nodes in args.nodes:
        for source in sources * args.rounds:
            EXTENDER_SRC = source
            m = measure(nodes, args.candidates)
            print(
                f"  {nodes:6d} NRTs ({m['file_mib']:5.1f} MiB JSON), rte from {source or 'this checkout'}: "
                f"ready after {m['ready_s']:6.2f} s; first round trip ({args.candidates} candidates) "
                f"{m['first_ms']:7.1f} ms, then median {m['later_ms']:6.1f} ms; RSS {m['rss_mib']:6.1f} MiB"
            )
    for nodes in args.through_apiserver:
        runs = sources * args.rounds  # alternating, against one double filled once
        for source, m in zip(runs, measure_cluster(nodes, args.candidates, runs), strict=True):
            print(
                f"  {nodes:6d} NRTs through the apiserver double (--kubeconfig), rte from "
                f"{source or 'this checkout'}: ready after {m['ready_s']:6.2f} s; first round trip "
                f"{m['first_ms']:.1f} ms, then median {m['later_ms']:.1f} ms; RSS {m['rss_mib']:6.1f} MiB"
            )
    if args.client_import:
        row = _client_import_row(client_import())
        print(f"  {row.what}: {row.figure}")


if __name__ == "__main__":
    main()
