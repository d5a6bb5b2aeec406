"""The extender's HTTP endpoints: kube-scheduler's verbs plus state, health and readiness.

Routes:

* ``POST .../filter``, ``POST .../prioritize`` and ``POST .../preempt``: the scheduler's calls.
  Only the last path segment is matched, so any ``urlPrefix`` path works (``http://host:8888/``
  or ``http://host:8888/scheduler``), with ``filterVerb: filter``, ``prioritizeVerb:
  prioritize`` and ``preemptVerb: preempt`` (:mod:`rte.extender.preempt`).
* ``GET /state`` (``?node=NAME`` for one node): the reserve cache and store, as JSON, from a
  snapshot at most ``state_max_age`` seconds old (see :class:`StateSnapshots`).
* ``GET /healthz``: the process serves. ``GET /readyz``: 200 once the NRT (and pod) lists synced
  (every warm replica is ready; with leader election only the leader answers the verbs).
* ``GET /metrics``: Prometheus text format (:mod:`rte.extender.metrics`); each verb call's
  duration is measured from its whole request read to its answer ready to send. The verbs'
  answers carry the same duration as ``Server-Timing: app;dur=<ms>, cpu;dur=<ms>`` (the
  second: the serving thread's CPU time within it).

With TLS (``--tls-cert-file``, :mod:`rte.runtime.tls`) only clients holding a certificate of the
client CA get through the handshake, for every route. The probe server (``--probe-listen``,
plain HTTP, :class:`ExtenderServer` with ``probes_only``) serves ``/healthz``, ``/readyz`` and
``/metrics`` and nothing else, for the kubelet and Prometheus, which hold no client certificate.

Errors are JSON objects with an ``Error`` field, the field ``ExtenderFilterResult`` uses:
400 for a body that is not a valid ``ExtenderArgs`` (JSON nested too deeply included), 413 for
one over the size limit, 503 before the first NRT list (deciding on an empty store would let
every node pass) and on a replica that is not the leader (with ``Connection: close``, so that the
client's next connection may reach the leader), 500 for a bug. kube-scheduler treats any status
but 200 as a failed call: the pod is retried later, or, with ``ignorable: true``, scheduled
without the extender.

HTTP/1.1 keep-alive (the scheduler's Go client reuses connections) on the daemons' shared
server (:mod:`rte.runtime.httpserver`): a fixed pool of workers, idle connections cost no thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from rte import __version__
from rte.errors import InputError
from rte.extender.metrics import VERBS
from rte.extender.preemptwire import decode_preemption_args
from rte.extender.service import ExtenderService
from rte.extender.wire import decode_args
from rte.runtime.heap import release_free_heap
from rte.runtime.httpserver import HttpServer, Limits
from rte.runtime.httpwire import JSON, HttpRequest, MiB, Response, json_response, server_timing
from rte.runtime.metrics import CONTENT_TYPE
from rte.runtime.tls import ServerTls
from rte.yamlfile import encode_json

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 64 * MiB
"""Bytes: whole-Node mode at 5000 nodes. With ``nodeCacheCapable: true`` (names only, the
deployed configuration) 5000 nodes take ~100 KiB. Whole Node objects (``nodeCacheCapable:
false``) take ~600 bytes each when minimal and 9-12 KiB when real, since a Node lists up to 50
of its images by default (the kubelet's ``nodeStatusMaxImages``): 64 MiB holds 5000 Nodes of up
to 13 KiB, which is every node of a 5000-node cluster with ``percentageOfNodesToScore: 100``
(by default the scheduler sends at most 10 % of them: kubernetes/kubernetes
``pkg/scheduler/schedule_one.go``, numFeasibleNodesToFind). The bound is memory: such a request
costs two to three times its size while it is served (the body as read, which the Nodes sent back are
views of, and the answer; :mod:`rte.extender.wire` builds no objects for the fields it skips),
and the requests of the last two Node lists stay in memory, within the 1 GiB limit of
``deploy/scheduler-extender.yaml``; a request the fast decoder leaves to ``json`` costs some ten
times its size."""

STATE_MAX_AGE = 1.0
"""Seconds: how old the ``/state`` snapshot may get before a reader refreshes it."""

EXTENDER_LIMITS = Limits(max_body=DEFAULT_MAX_BODY, read_timeout=10.0)
"""kube-scheduler gives up on a call after its ``httpTimeout`` (5 s by default): a request still
arriving after 10 s is one nobody waits for, and it would hold one of the workers."""


def json_error(status: int, message: str) -> Response:
    return json_response(status, {"Error": message})


@dataclass(frozen=True)
class _Snapshot:
    taken: float
    state: dict[str, Any]
    encoded: bytes


class StateSnapshots:
    """``GET /state`` served from a snapshot, so that readers never make ``/filter`` wait.

    Taking the state walks every node under the cache's lock, which ``/filter`` needs too; JSON
    encoding it holds the interpreter for as long again. Eight readers polling it once pushed
    ``/filter``'s p99 from 20 ms to seconds. Here at most one reader at a time takes a new
    snapshot, and only once the current one is ``max_age`` seconds old; every other reader is
    answered from the current snapshot's encoded bytes, without touching the cache or its lock.
    """

    def __init__(
        self, service: ExtenderService, max_age: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._service = service
        self.max_age = max_age
        self._clock = clock
        self._refresh = threading.Lock()
        self._current: _Snapshot | None = None

    def _snapshot(self) -> _Snapshot:
        current = self._current
        if current is not None and self._clock() - current.taken < self.max_age:
            return current
        # Someone else refreshing: answer from the snapshot we have (the first reader waits).
        if not self._refresh.acquire(blocking=current is None):
            assert current is not None
            return current
        try:
            current = self._current
            if current is None or self._clock() - current.taken >= self.max_age:
                taken = self._clock()
                state = self._service.state()
                current = _Snapshot(taken, state, encode_json(state))
                self._current = current
            return current
        finally:
            self._refresh.release()

    def response(self, node: str | None) -> Response:
        snapshot = self._snapshot()
        if node is None:
            return Response(HTTPStatus.OK, snapshot.encoded, JSON)
        cache = snapshot.state["cache"]
        nodes = cache.get("nodes", {})
        one = {node: nodes[node]} if node in nodes else {}
        return json_response(HTTPStatus.OK, {**snapshot.state, "cache": {**cache, "nodes": one}})


PROBES = ("/healthz", "/readyz", "/metrics")


LARGE_BODY = 8 * MiB
"""Bytes: a verb's request at least this large is served alone (:class:`LargeRequests`)."""
LARGE_WAIT = 10.0
"""Seconds a large request waits for its turn before a 503 (the scheduler's call is over by then)."""


class LargeRequests:
    """Large verb requests one at a time, and the heap given back after each.

    Serving a request costs some ten times its body while it runs (its names decoded, the
    decision's columns, the answer), which nothing kept afterwards holds (:mod:`rte.consumer.kept`).
    A realistic request is far below :data:`LARGE_BODY` (5000 names: 100 KiB); whole-Node
    requests of real clusters reach it. Serving such requests one at a time bounds what they
    cost together to one request's worth whatever the workers receive at once, and
    ``malloc_trim`` afterwards (:func:`rte.runtime.heap.release_free_heap`) returns what they
    freed, which glibc would otherwise keep in each worker thread's arena (measured: ~37 MiB
    left resident per 42 MiB request, growing with each; issue #26, item 1).
    """

    def __init__(self, threshold: int = LARGE_BODY, wait: float = LARGE_WAIT) -> None:
        self.threshold = threshold
        self.wait = wait
        self._turn = threading.Lock()

    def serve(self, size: int, call: Callable[[], Response]) -> Response:
        if size < self.threshold:
            return call()
        if not self._turn.acquire(timeout=self.wait):
            return json_error(
                HTTPStatus.SERVICE_UNAVAILABLE,
                f"request of {size} bytes: another large request is being served (retry later)",
            )
        try:
            return call()
        finally:
            release_free_heap()  # what this request freed, before the next one's turn
            self._turn.release()


def extender_handler(
    service: ExtenderService,
    snapshots: StateSnapshots,
    *,
    probes_only: bool = False,
    large: LargeRequests | None = None,
) -> Callable[[HttpRequest], Response]:
    """Routes a request to the service (see the module's docstring)."""
    large_requests = large if large is not None else LargeRequests()

    def not_serving() -> Response:
        return replace(json_error(HTTPStatus.SERVICE_UNAVAILABLE, service.not_serving_reason()), close=True)

    def post(request: HttpRequest) -> Response:
        verb = request.path.rstrip("/").rsplit("/", 1)[-1]
        if verb not in VERBS:  # other paths would let any client grow the metrics' label set
            return _post(request, verb)
        start, cpu = time.perf_counter(), time.thread_time()
        response = _post(request, verb)
        elapsed = time.perf_counter() - start
        service.metrics.record_request(verb, response.status, elapsed)
        timing = server_timing(elapsed, time.thread_time() - cpu)
        return replace(response, headers=(*response.headers, timing))

    def _post(request: HttpRequest, verb: str) -> Response:
        if verb not in VERBS:
            return json_error(
                HTTPStatus.NOT_FOUND,
                f"no such verb {verb!r}; this extender serves filter, prioritize and preempt",
            )
        if not service.serving():
            return not_serving()
        return large_requests.serve(len(request.body), lambda: _decide(request, verb))

    def _decide(request: HttpRequest, verb: str) -> Response:
        try:
            if verb == "preempt":
                answer = encode_json(service.preempt(decode_preemption_args(request.body)))
            elif verb == "filter":
                answer = encode_json(service.filter(decode_args(request.body)))
            else:
                answer = service.prioritize_json(decode_args(request.body))
            if not service.serving():  # the leadership lapsed meanwhile: this answer must not count
                return not_serving()
            return Response(HTTPStatus.OK, answer, JSON)
        except InputError as e:
            return json_error(HTTPStatus.BAD_REQUEST, str(e))
        except RecursionError:
            # json raises it on deep nesting (and so could encoding what was sent back).
            return json_error(HTTPStatus.BAD_REQUEST, "ExtenderArgs: not valid JSON: nested too deeply")
        except Exception as e:  # a bug: answer, log, keep serving
            log.exception("%s failed", verb)
            return json_error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{verb} failed: {type(e).__name__}: {e}")

    def get(request: HttpRequest) -> Response:
        path = request.path.rstrip("/") or "/"
        if probes_only and path not in PROBES:
            return json_error(HTTPStatus.NOT_FOUND, f"{path} is served on the verbs port (--listen) only")
        if path == "/healthz":
            return json_response(HTTPStatus.OK, {"status": "ok"})
        if path == "/readyz":
            if service.ready():
                return json_response(HTTPStatus.OK, {"status": "ready"})
            return json_response(HTTPStatus.SERVICE_UNAVAILABLE, {"status": service.not_ready_reason()})
        if path == "/metrics":
            return Response(HTTPStatus.OK, service.metrics.registry.expose().encode(), CONTENT_TYPE)
        if path == "/state":
            node = parse_qs(request.query).get("node", [None])[0]
            try:
                return snapshots.response(node)
            except Exception as e:
                log.exception("state dump failed")
                return json_error(HTTPStatus.INTERNAL_SERVER_ERROR, f"state dump failed: {e}")
        return json_error(HTTPStatus.NOT_FOUND, f"no such path {request.path!r}")

    def handle(request: HttpRequest) -> Response:
        if request.method == "POST" and probes_only:
            return json_error(HTTPStatus.NOT_FOUND, "the verbs are served on the verbs port (--listen) only")
        if request.method == "POST":
            return post(request)
        if request.method in ("GET", "HEAD"):
            return get(request)
        return json_error(HTTPStatus.NOT_IMPLEMENTED, f"unsupported method {request.method!r}")

    return handle


class ExtenderServer(HttpServer):
    """The extender's HTTP server in background threads. ``port=0`` picks a free port.

    ``tls``: HTTPS with required client certificates. ``probes_only``: the probe server.
    """

    def __init__(
        self,
        service: ExtenderService,
        host: str = "0.0.0.0",
        port: int = 8888,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        state_max_age: float = STATE_MAX_AGE,
        limits: Limits = EXTENDER_LIMITS,
        tls: ServerTls | None = None,
        probes_only: bool = False,
    ) -> None:
        self.service = service
        self.snapshots = StateSnapshots(service, state_max_age)
        super().__init__(
            host,
            port,
            extender_handler(service, self.snapshots, probes_only=probes_only),
            limits=replace(
                limits,
                max_body=4096 if probes_only else max_body,  # probes have no body
                workers=1 if probes_only else limits.workers,
            ),
            errors=json_error,
            server_name=f"rte-extender/{__version__}",
            setting="--probe-listen" if probes_only else "--listen",
            thread_name="extender-probes" if probes_only else "extender-http",
            tls=tls,
        )

    def start(self) -> ExtenderServer:
        super().start()
        return self

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
