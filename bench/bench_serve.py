"""The extender as kube-scheduler sees it: round trips per second, alone and with 4 clients,
against a do-nothing JSON server on the same payloads, and whole-Node mode.

Servers run as processes, as in a cluster: ``rte extender --nrt-file`` with 5000 NRTs of 8
zones (``bench.bench_extender``'s workers, OverReserve cache, LeastAllocated), and, as the
baseline in the same run, a **do-nothing JSON server** (:func:`null_handler`): it decodes each
request with orjson and answers every candidate as passing (filter) or scoring 0
(prioritize), encoded with orjson: the wire and HTTP cost without any decision. It runs once
on rte's HTTP server (:mod:`rte.runtime.httpserver`) and once on the standard library's
``ThreadingHTTPServer`` with keep-alive, which is the measure behind keeping rte's server.

A round trip is what the scheduler does per pod: POST ``/filter`` with the candidates, then
``/prioritize`` with those that passed, on one kept-alive connection. The client encodes its
bodies once (kube-scheduler's encoder is not what is measured here) and decodes every answer.
"4 clients" are 4 threads with a connection each, all round-tripping at once; throughput is
pods finished per second of wall time, compared with one client's in the same run.

Run: ``python -m bench.bench_serve``; ``--null-server PORT rte|stdlib`` runs a baseline server.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import orjson

from bench.bench_extender import POD, _node_object
from bench.bench_serve_start import Extender, _free_port, write_nrt_file
from bench.timing import Row

NODES = 5000
CLIENTS = 4
TRIPS = 25
"""Round trips per measurement (per client with 4 clients); medians of these."""


# --- the do-nothing server -----------------------------------------------------------------


def null_answer(path: str, body: bytes) -> bytes:
    """What the do-nothing server answers: every candidate passes, every score is 0."""
    args = orjson.loads(body)
    names = args.get("NodeNames")
    nodes = args.get("Nodes")
    if path.endswith("/filter"):
        return orjson.dumps(
            {
                "Nodes": nodes,
                "NodeNames": names,
                "FailedNodes": {},
                "FailedAndUnresolvableNodes": {},
                "Error": "",
            }
        )
    if names is None:
        names = [n["metadata"]["name"] for n in nodes["items"]]
    return orjson.dumps([{"Host": name, "Score": 0} for name in names])


def _serve_null_rte(port: int) -> None:
    from rte.runtime.httpserver import HttpServer, Limits
    from rte.runtime.httpwire import JSON, HttpRequest, MiB, Response

    def handle(request: HttpRequest) -> Response:
        if request.method == "GET":
            return Response(200, b"{}", JSON)
        return Response(200, null_answer(request.path, request.body), JSON)

    server = HttpServer("127.0.0.1", port, handle, limits=Limits(max_body=64 * MiB)).start()
    threading.Event().wait()
    server.stop()


class _NullHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def _answer(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(b"{}")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(null_answer(self.path, body))

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve_null_stdlib(port: int) -> None:
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", port), _NullHandler).serve_forever()


class NullServer(Extender):
    """The do-nothing server in a child process (``rte``'s HTTP server or ``stdlib``'s)."""

    def __init__(self, kind: str) -> None:
        self.port = _free_port()
        argv = [sys.executable, "-m", "bench.bench_serve", "--null-server", str(self.port), kind]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.ready_after = self._wait_ready()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)


# --- clients ------------------------------------------------------------------------------


class _Meta(msgspec.Struct):
    name: str


class _Named(msgspec.Struct):
    metadata: _Meta


class _NodeList(msgspec.Struct):
    items: list[_Named]


class _FilterAnswer(msgspec.Struct):
    """What kube-scheduler reads of a filter answer (its Go decoder's cost is not measured)."""

    Nodes: _NodeList | None = None
    NodeNames: list[str] | None = None


_ANSWER = msgspec.json.Decoder(_FilterAnswer)


def _pod(k: int) -> dict[str, Any]:
    """The bench pod, or its ``k``-th copy under another name and uid (k > 0)."""
    if not k:
        return POD
    return {**POD, "metadata": {**POD["metadata"], "name": f"pod-{k}", "uid": f"u-{k}"}}


class Trip:
    """One client's round trip on its own kept-alive connection, bodies encoded once.

    ``pods`` > 1: each round trip sends the next of that many pods (equal but for their names),
    as a scheduler sends a new pod each time, instead of the same pod again.
    """

    def __init__(self, port: int, names: list[str], *, whole_nodes: bool = False, pods: int = 1) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.whole_nodes = whole_nodes
        if whole_nodes:
            self.nodes = {n: _node_object(n) for n in names}
        self.pods = [_pod(k) for k in range(pods)] if pods > 1 else [POD]
        self.filter_bodies = [self._body(names, pod) for pod in self.pods]
        self._prioritize: dict[tuple[int, tuple[str, ...]], bytes] = {}
        if pods > 1:  # every candidate passes in these benches: encoded now, not while timed
            for k, pod in enumerate(self.pods):
                self._prioritize[k, tuple(names)] = self._body(names, pod)
        self.passed = 0
        self._next = 0

    def _body(self, names: list[str], pod: dict[str, Any]) -> bytes:
        if self.whole_nodes:
            return orjson.dumps({"Pod": pod, "Nodes": {"items": [self.nodes[n] for n in names]}})
        return orjson.dumps({"Pod": pod, "NodeNames": names})

    def _post(self, verb: str, body: bytes) -> bytes:
        self.conn.request("POST", f"/{verb}", body=body, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        data = response.read()
        assert response.status == 200, data[:300]
        return data

    def __call__(self) -> None:
        k = self._next
        self._next = (k + 1) % len(self.pods)
        result = _ANSWER.decode(self._post("filter", self.filter_bodies[k]))
        if self.whole_nodes:
            assert result.Nodes is not None
            passed = tuple(n.metadata.name for n in result.Nodes.items)
        else:
            assert result.NodeNames is not None
            passed = tuple(result.NodeNames)
        body = self._prioritize.get((k, passed))
        if body is None:
            body = self._prioritize[k, passed] = self._body(list(passed), self.pods[k])
        scores = orjson.loads(self._post("prioritize", body))
        assert len(scores) == len(passed)
        self.passed = len(passed)

    def close(self) -> None:
        self.conn.close()


def cpu_seconds(pid: int) -> float:
    """CPU seconds the threads of process ``pid`` have run, to the nanosecond (Linux's
    ``/proc/PID/task/*/schedstat``; 0 where there is none)."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread gone meanwhile
            continue
    return total / 1e9


SERVER_CPU: dict[int, float] = {}
"""Per server port, the server's CPU seconds per round trip in the last :func:`median_trip`:
unlike wall time, hardly moved by other processes on a shared machine."""


def median_trip(
    port: int,
    names: list[str],
    *,
    whole_nodes: bool = False,
    trips: int = TRIPS,
    pods: int = 1,
    pid: int | None = None,
) -> float:
    """Seconds per round trip, median of ``trips`` after one untimed (``pods``: see :class:`Trip`;
    pass ``trips + 1`` for every timed round trip to send a pod not sent before)."""
    trip = Trip(port, names, whole_nodes=whole_nodes, pods=pods)
    try:
        trip()
        times = []
        cpu = cpu_seconds(pid) if pid else 0.0
        for _ in range(trips):
            start = time.perf_counter()
            trip()
            times.append(time.perf_counter() - start)
        if pid:
            SERVER_CPU[port] = (cpu_seconds(pid) - cpu) / trips
        return statistics.median(times)
    finally:
        trip.close()


def throughput(port: int, names: list[str], clients: int, trips: int = TRIPS) -> float:
    """Pods per second with ``clients`` clients round-tripping at once, ``trips`` each."""
    runners = [Trip(port, names) for _ in range(clients)]
    for trip in runners:
        trip()
    barrier = threading.Barrier(clients + 1)

    def run(trip: Callable[[], None]) -> None:
        barrier.wait()
        for _ in range(trips):
            trip()

    threads = [threading.Thread(target=run, args=(t,)) for t in runners]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    for trip in runners:
        trip.close()
    return clients * trips / elapsed


# --- the measurements ---------------------------------------------------------------------


def _candidates(count: int) -> list[str]:
    rng = random.Random(7)
    return [f"worker-{i:05d}" for i in sorted(rng.sample(range(NODES), count))]


def measure() -> dict[str, float]:
    out: dict[str, float] = {}
    names_500, names_all = _candidates(500), _candidates(NODES)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nrts.json"
        write_nrt_file(path, NODES)
        servers: dict[str, Extender] = {"extender": Extender(path, "--max-request-body", "64Mi")}
        servers["null-rte"] = NullServer("rte")
        servers["null-stdlib"] = NullServer("stdlib")
        try:
            for key, server in servers.items():
                port, pid = server.port, server.proc.pid
                for label, names, pods in (
                    ("500", names_500, 1),
                    ("5000", names_all, 1),
                    ("500 new", names_500, TRIPS + 1),
                    ("5000 new", names_all, TRIPS + 1),
                ):
                    out[f"{key} {label}"] = median_trip(port, names, pods=pods, pid=pid)
                    out[f"{key} {label} cpu"] = SERVER_CPU[port]
                out[f"{key} 5000 seq"] = throughput(server.port, names_all, 1)
                out[f"{key} 5000 x{CLIENTS}"] = throughput(server.port, names_all, CLIENTS)
                out[f"{key} nodes"] = median_trip(server.port, names_all, whole_nodes=True, trips=9)
            out["rss_mib"] = servers["extender"].rss() / 2**20
        finally:
            for server in servers.values():
                server.stop()
    return out


def json_figures(count: int = NODES) -> dict[str, float]:
    """ms to decode a whole-Node request (json, orjson, and what the extender does: only the
    fields used) and to encode the filter's answer (json, orjson)."""
    from bench.timing import median_seconds

    items = [_node_object(f"worker-{i:05d}") for i in range(count)]
    body = json.dumps({"Pod": POD, "Nodes": {"items": items}}).encode()
    answer = {"Nodes": {"metadata": {}, "items": items}, "NodeNames": None, "FailedNodes": {}}
    from rte.extender.wire import decode_args

    return {
        "mib": len(body) / 2**20,
        "decode_args": median_seconds(lambda: decode_args(body)) * 1000,
        "json decode": median_seconds(lambda: json.loads(body)) * 1000,
        "orjson decode": median_seconds(lambda: orjson.loads(body)) * 1000,
        "json encode": median_seconds(lambda: json.dumps(answer, separators=(",", ":")).encode()) * 1000,
        "orjson encode": median_seconds(lambda: orjson.dumps(answer)) * 1000,
    }


def _rows(m: dict[str, float]) -> list[Row]:
    ext500, ext5000 = 1 / m["extender 500"], 1 / m["extender 5000"]
    ratio = m["extender 5000 x4"] / m["extender 5000 seq"]
    vs_null = m["extender 500"] / m["null-rte 500"]
    vs_null_all = m["extender 5000"] / m["null-rte 5000"]
    nodes_ms = m["extender nodes"] * 1000
    return [
        Row(
            "extender round trip, 500 candidates (of 5000 NRTs)",
            f"{ext500:.0f} pods/s",
            "≥ 300 pods/s",
            ext500 >= 300,
        ),
        Row("extender round trip, 5000 candidates", f"{ext5000:.0f} pods/s", "≥ 100 pods/s", ext5000 >= 100),
        Row(
            f"extender, 5000 candidates, {CLIENTS} clients vs 1",
            f"{ratio:.2f}× ({m['extender 5000 x4']:.0f} vs {m['extender 5000 seq']:.0f} pods/s)",
            "≥ 1×",
            ratio >= 1,
        ),
        Row(
            "extender vs do-nothing JSON server, same payload (500 | 5000 candidates)",
            f"{vs_null:.1f}× | {vs_null_all:.1f}×",
            "≤ 3×",
            vs_null <= 3 and vs_null_all <= 3,
        ),
        Row(
            "extender whole-Node mode, 5000 Nodes (filter+prioritize)",
            f"{nodes_ms:.0f} ms (do-nothing: {m['null-rte nodes'] * 1000:.0f})",
            "≤ 60 ms",
            nodes_ms <= 60,
        ),
    ]


def summary() -> list[Row]:
    return _rows(measure())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--null-server", nargs=2, metavar=("PORT", "KIND"))
    args = parser.parse_args()
    if args.null_server:
        port, kind = int(args.null_server[0]), args.null_server[1]
        (_serve_null_rte if kind == "rte" else _serve_null_stdlib)(port)
        return
    j = json_figures()
    print(f"whole-Node request of {NODES} Nodes ({j['mib']:.1f} MiB), median ms:")
    print(
        f"  decode: json {j['json decode']:6.1f}  orjson {j['orjson decode']:6.1f}  "
        f"rte's decode_args (only the fields used, msgspec) {j['decode_args']:6.1f}"
    )
    print(f"  encode the filter's answer: json {j['json encode']:6.1f}  orjson {j['orjson encode']:6.1f}")
    m = measure()
    print(f"{NODES} NRTs of 8 zones; medians of {TRIPS} round trips (filter + prioritize), ms:")
    print(f"  {'server':<12} {'500':>7} {'5000':>7} {'nodes':>7}  {'1 client':>9} {'4 clients':>10}  pods/s")
    for key in ("extender", "null-rte", "null-stdlib"):
        print(
            f"  {key:<12} {m[f'{key} 500'] * 1000:7.1f} {m[f'{key} 5000'] * 1000:7.1f} "
            f"{m[f'{key} nodes'] * 1000:7.1f}  {m[f'{key} 5000 seq']:9.1f} {m[f'{key} 5000 x4']:10.1f}"
        )
    print("  a new pod each round trip (not sent before), ms; and the server's CPU ms per round trip:")
    head = f"cpu: {'500':>5} {'5000':>5} {'500 new':>8} {'5000 new':>8}"
    print(f"  {'server':<12} {'500':>7} {'5000':>7}  {head}")
    for key in ("extender", "null-rte", "null-stdlib"):
        cpu = [m[f"{key} {label} cpu"] * 1000 for label in ("500", "5000", "500 new", "5000 new")]
        print(
            f"  {key:<12} {m[f'{key} 500 new'] * 1000:7.1f} {m[f'{key} 5000 new'] * 1000:7.1f}  "
            f"     {cpu[0]:5.2f} {cpu[1]:5.2f} {cpu[2]:8.2f} {cpu[3]:8.2f}"
        )
    print(f"  extender RSS {m['rss_mib']:.0f} MiB")
    for row in _rows(m):
        print(f"  {row.what}: {row.figure} (target {row.target})")


if __name__ == "__main__":
    main()
