"""The extender's HTTP server: kube-scheduler's verbs plus state, health and readiness.

Routes:

* ``POST .../filter`` and ``POST .../prioritize``: the scheduler's calls. Only the last path
  segment is matched, so any ``urlPrefix`` path works (``http://host:8888/`` or
  ``http://host:8888/scheduler``), with ``filterVerb: filter`` and ``prioritizeVerb: prioritize``.
* ``GET /state`` (``?node=NAME`` for one node): the reserve cache and store, as JSON.
* ``GET /healthz``: the process serves. ``GET /readyz``: 200 once the NRT (and pod) lists synced.
* ``GET /metrics``: Prometheus text format (:mod:`rte.extender.metrics`); each verb call's
  duration is measured from its headers to the last byte of the answer.

Errors are JSON objects with an ``Error`` field, the field ``ExtenderFilterResult`` uses:
400 for a body that is not a valid ``ExtenderArgs``, 503 before the first NRT list (deciding on
an empty store would let every node pass), 500 for a bug. kube-scheduler treats any status but
200 as a failed call: the pod is retried later, or, with ``ignorable: true``, scheduled without
the extender.

HTTP/1.1 keep-alive (the scheduler's Go client reuses connections), one thread per connection.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from rte import __version__
from rte.errors import InputError
from rte.extender.metrics import VERBS
from rte.extender.service import ExtenderService
from rte.extender.wire import decode_args
from rte.metrics import CONTENT_TYPE

log = logging.getLogger(__name__)

MAX_BODY = 256 * 1024 * 1024
"""Bytes. A ``nodeCacheCapable: false`` request carries every candidate Node object (a few KiB
each); 5000 nodes stay well below this."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"rte-extender/{__version__}"
    server: _Server
    _status = 0
    """The status code of the last answer sent on this connection (for the request metrics)."""

    def setup(self) -> None:
        super().setup()
        # Small JSON answers on a kept-alive connection: without NODELAY, Nagle and delayed ACKs
        # can add 40 ms to every call.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: Any) -> None:
        self._send_bytes(status, json.dumps(body, separators=(",", ":")).encode(), "application/json")

    def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self._status = status
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"Error": message})

    def _body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return self._chunked()
            self._error(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
            return None
        try:
            size = int(length)
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, f"bad Content-Length {length!r}")
            return None
        if size < 0 or size > MAX_BODY:
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body of {size} bytes exceeds {MAX_BODY}")
            return None
        return self.rfile.read(size)

    def _chunked(self) -> bytes | None:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            except ValueError:
                self.close_connection = True
                self._error(HTTPStatus.BAD_REQUEST, "malformed chunked body")
                return None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                self.close_connection = True
                self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body exceeds {MAX_BODY} bytes")
                return None
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def do_POST(self) -> None:
        start = time.perf_counter()
        verb = urlsplit(self.path).path.rstrip("/").rsplit("/", 1)[-1]
        self._status = 0
        try:
            self._post(verb)
        finally:
            if verb in VERBS:  # other paths would let any client grow the label set
                self.server.service.metrics.record_request(verb, self._status, time.perf_counter() - start)

    def _post(self, verb: str) -> None:
        body = self._body()
        if body is None:
            return
        service = self.server.service
        if verb not in ("filter", "prioritize"):
            self._error(
                HTTPStatus.NOT_FOUND, f"no such verb {verb!r}; this extender serves filter and prioritize"
            )
            return
        if not service.ready():
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, f"extender not ready: {service.not_ready_reason()}")
            return
        try:
            args = decode_args(body)
            result: Any = service.filter(args) if verb == "filter" else service.prioritize(args)
        except InputError as e:
            self._error(HTTPStatus.BAD_REQUEST, str(e))
            return
        except Exception as e:  # a bug: answer, log, keep serving
            log.exception("%s failed", verb)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{verb} failed: {type(e).__name__}: {e}")
            return
        self._send(HTTPStatus.OK, result)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        service = self.server.service
        if path == "/healthz":
            self._send(HTTPStatus.OK, {"status": "ok"})
        elif path == "/readyz":
            if service.ready():
                self._send(HTTPStatus.OK, {"status": "ready"})
            else:
                self._send(HTTPStatus.SERVICE_UNAVAILABLE, {"status": service.not_ready_reason()})
        elif path == "/metrics":
            self._send_bytes(HTTPStatus.OK, service.metrics.registry.expose().encode(), CONTENT_TYPE)
        elif path == "/state":
            node = parse_qs(url.query).get("node", [None])[0]
            try:
                self._send(HTTPStatus.OK, service.state(node))
            except Exception as e:
                log.exception("state dump failed")
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"state dump failed: {e}")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such path {url.path!r}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog (5) is too short when the scheduler opens many connections at once.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], service: ExtenderService) -> None:
        self.service = service
        super().__init__(address, _Handler)


class ExtenderServer:
    """The HTTP server in a background thread. ``port=0`` picks a free port (see :attr:`port`)."""

    def __init__(self, service: ExtenderService, host: str = "0.0.0.0", port: int = 8888) -> None:
        self.service = service
        self._httpd = _Server((host, port), service)
        self._thread: threading.Thread | None = None
        self._serving = False

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> ExtenderServer:
        if self._thread is None:
            self._serving = True
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="extender-http",
                daemon=True,
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` is called from another one."""
        self._serving = True
        self._httpd.serve_forever(poll_interval=0.05)

    def stop(self) -> None:
        if self._serving:  # shutdown() waits for the loop to end: it must be running
            self._serving = False
            self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
