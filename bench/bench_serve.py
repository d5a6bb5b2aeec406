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
Every server answers with ``Server-Timing: app;dur=<ms>, cpu;dur=<ms>``, its time from the
request read to the answer ready and its serving thread's CPU time within it (the figure other
processes on a busy machine do not inflate); a round trip's **server time** (and CPU) is the sum
over its two calls, and what is left of
the round trip is the client decoding the answers (timed apart) and the wire: sending, reading
and copying the bodies through HTTP over loopback. Whole-Node mode (``nodeCacheCapable: false``)
is measured both ways, since its 2.6 MiB requests make the wire a large part of the round trip.
"4 clients" are 4 threads with a connection each, all round-tripping at once; throughput is
pods finished per second of wall time, compared with one client's in the same run.

Run: ``python -m bench.bench_serve`` (``--whole-nodes``: whole-Node mode only;
``--extender-src /work/main '' --rounds 3``: whole-Node mode of each checkout's extender in turn);
``--null-server PORT rte|stdlib`` runs a baseline server.
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
from dataclasses import dataclass
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
    from rte.runtime.httpwire import JSON, HttpRequest, MiB, Response, server_timing

    def handle(request: HttpRequest) -> Response:
        if request.method == "GET":
            return Response(200, b"{}", JSON)
        start, cpu = time.perf_counter(), time.thread_time()
        answer = null_answer(request.path, request.body)
        timing = server_timing(time.perf_counter() - start, time.thread_time() - cpu)
        return Response(200, answer, JSON, headers=(timing,))

    server = HttpServer("127.0.0.1", port, handle, limits=Limits(max_body=64 * MiB)).start()
    threading.Event().wait()
    server.stop()


class _NullHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def _answer(self, data: bytes, timing: tuple[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if timing is not None:
            self.send_header(*timing)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(b"{}")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        from rte.runtime.httpwire import server_timing

        start, cpu = time.perf_counter(), time.thread_time()
        answer = null_answer(self.path, body)
        self._answer(answer, server_timing(time.perf_counter() - start, time.thread_time() - cpu))

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


def server_seconds(header: str | None) -> tuple[float, float]:
    """The ``app`` and ``cpu`` durations of a ``Server-Timing`` field, in seconds (a server that
    sent none is a failed measurement, not a zero)."""
    metrics = dict(m.split(";dur=", 1) for m in (header or "").split(", ") if ";dur=" in m)
    assert metrics.keys() >= {"app", "cpu"}, f"no Server-Timing in the answer: {header!r}"
    return float(metrics["app"]) / 1000, float(metrics["cpu"]) / 1000


LIST_VERSIONS = 4
"""Whole-Node round trips cycle through this many versions of the Node list (one Node's label
differs), as a cluster whose Nodes change sends them: no filter reads a list the extender
remembers (it keeps two), while prioritize reads the list its filter read, as kube-scheduler
sends it when every Node passed. Each filter's decode is thus measured cold."""


def _version(node: dict[str, Any], version: int) -> dict[str, Any]:
    metadata = node["metadata"]
    return {**node, "metadata": {**metadata, "labels": {**metadata["labels"], "bench/version": str(version)}}}


def _pod(k: int) -> dict[str, Any]:
    """The bench pod, or its ``k``-th copy under another name and uid (k > 0)."""
    if not k:
        return POD
    return {**POD, "metadata": {**POD["metadata"], "name": f"pod-{k}", "uid": f"u-{k}"}}


class Trip:
    """One client's round trip on its own kept-alive connection, bodies encoded once; after each,
    :attr:`server`, :attr:`cpu` and :attr:`decode` hold its server time, the server's CPU time
    and the client's decoding time.

    ``pods`` > 1 (names mode): each round trip sends the next of that many pods, equal but for
    their names, as a scheduler sends a new pod each time, instead of the same pod again (which
    the extender's per-pod memos answer faster).
    """

    def __init__(self, port: int, names: list[str], *, whole_nodes: bool = False, pods: int = 1) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.whole_nodes = whole_nodes
        self.versions: list[dict[str, dict[str, Any]]] = []
        self.pods = [_pod(k) for k in range(pods)]
        if whole_nodes:
            assert pods == 1, "whole-Node trips vary their Node list, not their pod"
            nodes = {n: _node_object(n) for n in names}
            self.versions = [{**nodes, names[0]: _version(nodes[names[0]], v)} for v in range(LIST_VERSIONS)]
        self.filter_bodies = [self._body(names, v) for v in range(max(len(self.pods), len(self.versions)))]
        self._prioritize: dict[tuple[int, tuple[str, ...]], bytes] = {}
        if pods > 1:  # every candidate passes in these benches: encoded now, not while timed
            self._prioritize = {(k, tuple(names)): body for k, body in enumerate(self.filter_bodies)}
        self.version = 0
        self.passed = 0
        self.server = 0.0
        self.cpu = 0.0
        self.decode = 0.0

    def _body(self, names: list[str], version: int) -> bytes:
        """The request for list version ``version`` (whole-Node mode) or pod ``version``."""
        if self.whole_nodes:
            nodes = self.versions[version]
            return orjson.dumps({"Pod": POD, "Nodes": {"items": [nodes[n] for n in names]}})
        return orjson.dumps({"Pod": self.pods[version], "NodeNames": names})

    def _post(self, verb: str, body: bytes) -> bytes:
        self.conn.request("POST", f"/{verb}", body=body, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        data = response.read()
        assert response.status == 200, data[:300]
        server, cpu = server_seconds(response.getheader("Server-Timing"))
        self.server += server
        self.cpu += cpu
        return data

    def __call__(self) -> None:
        self.server = self.cpu = self.decode = 0.0
        version = self.version = (self.version + 1) % len(self.filter_bodies)
        answer = self._post("filter", self.filter_bodies[version])
        start = time.perf_counter()
        result = _ANSWER.decode(answer)
        self.decode += time.perf_counter() - start
        if self.whole_nodes:
            assert result.Nodes is not None
            passed = tuple(n.metadata.name for n in result.Nodes.items)
        else:
            assert result.NodeNames is not None
            passed = tuple(result.NodeNames)
        body = self._prioritize.get((version, passed))
        if body is None:
            body = self._prioritize[version, passed] = self._body(list(passed), version)
        answer = self._post("prioritize", body)
        start = time.perf_counter()
        scores = orjson.loads(answer)
        self.decode += time.perf_counter() - start
        assert len(scores) == len(passed)
        self.passed = len(passed)

    def close(self) -> None:
        self.conn.close()


@dataclass(frozen=True)
class TripTimes:
    """Medians over round trips, in seconds (each taken on its own: they need not add up)."""

    total: float
    server: float
    """The server's own time (``Server-Timing``), filter + prioritize."""
    cpu: float
    """The server's CPU time within it."""
    decode: float
    """The client decoding the two answers."""


def median_trip(
    port: int, names: list[str], *, whole_nodes: bool = False, trips: int = TRIPS, new_pods: bool = False
) -> TripTimes:
    """Round trip times, medians of ``trips`` after one untimed per list version (``new_pods``:
    every timed round trip sends a pod not sent before; see :class:`Trip`)."""
    trip = Trip(port, names, whole_nodes=whole_nodes, pods=trips + 2 if new_pods else 1)
    try:
        for _ in range(len(trip.versions) or 1):  # every prioritize body encoded before the clock runs
            trip()
        times, server, cpu, decode = [], [], [], []
        for _ in range(trips):
            start = time.perf_counter()
            trip()
            times.append(time.perf_counter() - start)
            server.append(trip.server)
            cpu.append(trip.cpu)
            decode.append(trip.decode)
        return TripTimes(*map(statistics.median, (times, server, cpu, decode)))
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


THROUGHPUT_ROUNDS = 5
"""Pairs of throughput measurements (one client, then CLIENTS, the order swapped every pair)."""


def paired_throughput(port: int, names: list[str]) -> tuple[float, float]:
    """(one client, CLIENTS clients) pods per second: the medians of THROUGHPUT_ROUNDS pairs
    measured alternately, so that a burst of load on the machine lands on both sides rather
    than on one (a single pair gave 0.97x to 1.30x on a quiet machine within minutes)."""
    alone: list[float] = []
    together: list[float] = []
    for i in range(THROUGHPUT_ROUNDS):
        for clients in (1, CLIENTS) if i % 2 == 0 else (CLIENTS, 1):
            (alone if clients == 1 else together).append(throughput(port, names, clients))
    return statistics.median(alone), statistics.median(together)


# --- the measurements ---------------------------------------------------------------------


def _candidates(count: int) -> list[str]:
    rng = random.Random(7)
    return [f"worker-{i:05d}" for i in sorted(rng.sample(range(NODES), count))]


NODE_TRIPS = 15
"""Whole-Node round trips per measurement (2.6 MiB each way, twice)."""


def _times(out: dict[str, float], key: str, times: TripTimes) -> None:
    out[key], out[f"{key} server"], out[f"{key} decode"] = times.total, times.server, times.decode
    out[f"{key} cpu"] = times.cpu


def measure(*, whole_nodes_only: bool = False) -> dict[str, float]:
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
                nodes = median_trip(server.port, names_all, whole_nodes=True, trips=NODE_TRIPS)
                _times(out, f"{key} nodes", nodes)
                if whole_nodes_only:
                    continue
                _times(out, f"{key} 500", median_trip(server.port, names_500))
                _times(out, f"{key} 5000", median_trip(server.port, names_all))
                _times(out, f"{key} 500 new", median_trip(server.port, names_500, new_pods=True))
                _times(out, f"{key} 5000 new", median_trip(server.port, names_all, new_pods=True))
                seq, together = paired_throughput(server.port, names_all)
                out[f"{key} 5000 seq"], out[f"{key} 5000 x{CLIENTS}"] = seq, together
            out["rss_mib"] = servers["extender"].rss() / 2**20
        finally:
            for server in servers.values():
                server.stop()
    return out


def compare_whole_nodes(sources: list[str], rounds: int) -> dict[str, list[TripTimes]]:
    """Whole-Node round trips of the extenders of several checkouts ("" this one), one after the
    other in each of ``rounds`` rounds, on the same NRT file: a change and its baseline measured
    in the same minutes on a machine whose load varies."""
    import bench.bench_serve_start as start

    times: dict[str, list[TripTimes]] = {source: [] for source in sources}
    names = _candidates(NODES)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nrts.json"
        write_nrt_file(path, NODES)
        for _ in range(rounds):
            for source in sources:
                start.EXTENDER_SRC = source
                extender = Extender(path, "--max-request-body", "64Mi")
                try:
                    trip = median_trip(extender.port, names, whole_nodes=True, trips=NODE_TRIPS)
                    times[source].append(trip)
                finally:
                    extender.stop()
    start.EXTENDER_SRC = ""
    return times


def _print_comparison(times: dict[str, list[TripTimes]]) -> None:
    rounds = len(next(iter(times.values())))
    print(f"whole-Node mode, {NODES} Nodes, per checkout; medians over {rounds} rounds of medians, ms:")
    heads = ("round trip", "server", "(CPU)", "client decode", "rest: wire")
    print(f"  {'checkout':<24} " + " ".join(f"{h:>13}" for h in heads))
    for source, runs in times.items():
        fields = ("total", "server", "cpu", "decode")
        total, server, cpu, decode = (statistics.median(getattr(t, f) for t in runs) * 1000 for f in fields)
        figures = (total, server, cpu, decode, total - server - decode)
        print(f"  {source or 'this one':<24} " + " ".join(f"{f:13.1f}" for f in figures))


def json_figures(count: int = NODES) -> dict[str, float]:
    """ms to decode a whole-Node request (json, orjson, and what the extender does: only the
    fields used) and to encode the filter's answer (json, orjson)."""
    from bench.timing import median_seconds

    items = [_node_object(f"worker-{i:05d}") for i in range(count)]
    body = json.dumps({"Pod": POD, "Nodes": {"items": items}}).encode()
    answer = {"Nodes": {"metadata": {}, "items": items}, "NodeNames": None, "FailedNodes": {}}
    from rte.extender.wire import decode_args

    # Versions of the list, cycled so that none is one of the two the decoder remembers.
    versions = [
        json.dumps({"Pod": POD, "Nodes": {"items": [_version(items[0], v), *items[1:]]}}).encode()
        for v in range(LIST_VERSIONS)
    ]
    cycle = iter(versions * 8)
    return {
        "mib": len(body) / 2**20,
        "decode_args": median_seconds(lambda: decode_args(next(cycle))) * 1000,
        "decode_args again": median_seconds(lambda: decode_args(body)) * 1000,
        "json decode": median_seconds(lambda: json.loads(body)) * 1000,
        "orjson decode": median_seconds(lambda: orjson.loads(body)) * 1000,
        "json encode": median_seconds(lambda: json.dumps(answer, separators=(",", ":")).encode()) * 1000,
        "orjson encode": median_seconds(lambda: orjson.dumps(answer)) * 1000,
    }


def _whole_node_rows(m: dict[str, float]) -> list[Row]:
    """Whole-Node mode against its target: the server's own time, and the round trip over
    loopback, each beside the do-nothing server's (rte's HTTP server, orjson both ways)."""
    ms = {k: v * 1000 for k, v in m.items() if k.startswith(("extender nodes", "null-rte nodes"))}
    return [
        Row(
            f"extender whole-Node mode, {NODES} Nodes (filter+prioritize): server time (Server-Timing)",
            f"{ms['extender nodes server']:.0f} ms, CPU {ms['extender nodes cpu']:.0f} "
            f"(do-nothing: {ms['null-rte nodes server']:.0f}, CPU {ms['null-rte nodes cpu']:.0f})",
            "≤ 60 ms",
            ms["extender nodes server"] <= 60,
        ),
        Row(
            f"extender whole-Node mode, {NODES} Nodes (filter+prioritize): round trip over loopback",
            f"{ms['extender nodes']:.0f} ms (do-nothing: {ms['null-rte nodes']:.0f})",
            "≤ 60 ms",
            ms["extender nodes"] <= 60,
        ),
    ]


def _rows(m: dict[str, float]) -> list[Row]:
    ext500, ext5000 = 1 / m["extender 500"], 1 / m["extender 5000"]
    new500, new5000 = 1 / m["extender 500 new"], 1 / m["extender 5000 new"]
    ratio = m["extender 5000 x4"] / m["extender 5000 seq"]
    vs_null = m["extender 500"] / m["null-rte 500"]
    vs_null_all = m["extender 5000"] / m["null-rte 5000"]
    return [
        Row(
            "extender round trip, the same pod again, 500 candidates (of 5000 NRTs)",
            f"{ext500:.0f} pods/s",
            "≥ 300 pods/s",
            ext500 >= 300,
        ),
        Row(
            "extender round trip, the same pod again, 5000 candidates",
            f"{ext5000:.0f} pods/s",
            "≥ 100 pods/s",
            ext5000 >= 100,
        ),
        Row(
            "extender server time per round trip (Server-Timing), 500 | 5000 candidates",
            f"{m['extender 500 server'] * 1000:.1f} | {m['extender 5000 server'] * 1000:.1f} ms "
            f"(CPU {m['extender 500 cpu'] * 1000:.1f} | {m['extender 5000 cpu'] * 1000:.1f})",
            "-",
            None,
        ),
        Row(
            "extender round trip, a new pod each time (as kube-scheduler sends them), 500 candidates",
            f"{new500:.0f} pods/s (server CPU {m['extender 500 new cpu'] * 1000:.1f} ms)",
            "≥ 300 pods/s",
            new500 >= 300,
        ),
        Row(
            "extender round trip, a new pod each time, 5000 candidates",
            f"{new5000:.0f} pods/s (server CPU {m['extender 5000 new cpu'] * 1000:.1f} ms)",
            "≥ 100 pods/s",
            new5000 >= 100,
        ),
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
        *_whole_node_rows(m),
    ]


def summary() -> list[Row]:
    return _rows(measure())


def _print_whole_nodes(m: dict[str, float]) -> None:
    print(f"whole-Node mode, {NODES} Nodes; medians of {NODE_TRIPS} round trips (filter + prioritize), ms:")
    heads = ("round trip", "server", "(CPU)", "client decode", "rest: wire")
    print(f"  {'server':<12} " + " ".join(f"{h:>13}" for h in heads))
    for key in ("extender", "null-rte", "null-stdlib"):
        total, server, cpu, decode = (m[f"{key} nodes{p}"] * 1000 for p in ("", " server", " cpu", " decode"))
        figures = (total, server, cpu, decode, total - server - decode)
        print(f"  {key:<12} " + " ".join(f"{f:13.1f}" for f in figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--null-server", nargs=2, metavar=("PORT", "KIND"))
    parser.add_argument("--whole-nodes", action="store_true", help="measure whole-Node mode only")
    parser.add_argument(
        "--extender-src",
        nargs="+",
        metavar="DIR",
        help="whole-Node mode only, the extenders of these checkouts ('' this one) in turn",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --extender-src")
    args = parser.parse_args()
    if args.extender_src:
        _print_comparison(compare_whole_nodes(args.extender_src, args.rounds))
        return
    if args.null_server:
        port, kind = int(args.null_server[0]), args.null_server[1]
        (_serve_null_rte if kind == "rte" else _serve_null_stdlib)(port)
        return
    j = json_figures()
    print(f"whole-Node request of {NODES} Nodes ({j['mib']:.1f} MiB), median ms:")
    print(
        f"  decode: json {j['json decode']:6.1f}  orjson {j['orjson decode']:6.1f}  "
        f"rte's decode_args (only the fields used, msgspec) {j['decode_args']:6.1f}, "
        f"a list sent again {j['decode_args again']:4.1f}"
    )
    print(f"  encode the filter's answer: json {j['json encode']:6.1f}  orjson {j['orjson encode']:6.1f}")
    m = measure(whole_nodes_only=args.whole_nodes)
    _print_whole_nodes(m)
    if args.whole_nodes:
        for row in _whole_node_rows(m):
            print(f"  {row.what}: {row.figure} (target {row.target})")
        return
    print(f"{NODES} NRTs of 8 zones; medians of {TRIPS} round trips (filter + prioritize), ms (server time):")
    print(f"  {'server':<12} {'500':>13} {'5000':>13}  {'1 client':>9} {'4 clients':>10}  pods/s")
    for key in ("extender", "null-rte", "null-stdlib"):
        print(
            f"  {key:<12} {m[f'{key} 500'] * 1000:5.1f} ({m[f'{key} 500 server'] * 1000:5.1f}) "
            f"{m[f'{key} 5000'] * 1000:5.1f} ({m[f'{key} 5000 server'] * 1000:5.1f})  "
            f"{m[f'{key} 5000 seq']:9.1f} {m[f'{key} 5000 x4']:10.1f}"
        )
    print(f"  extender RSS {m['rss_mib']:.0f} MiB")
    for row in _rows(m):
        print(f"  {row.what}: {row.figure} (target {row.target})")


if __name__ == "__main__":
    main()
