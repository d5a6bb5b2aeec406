"""A small HTTP server for probes and scraping: ``/healthz``, ``/readyz``, ``/metrics``.

Probes answer 200 or 503 with a one-line reason in the body (``kubectl describe`` shows it), from
:class:`~rte.agent.status.AgentStatus`. The server runs in daemon threads and never touches the
loop's state beyond those thread-safe reads, so a hung scraper cannot slow the agent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rte.agent.metrics import CONTENT_TYPE, Registry
from rte.agent.status import AgentStatus
from rte.errors import ConfigError

log = logging.getLogger(__name__)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    status: AgentStatus
    registry: Registry
    clock: Callable[[], float]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        now = self.server.clock()
        if path == "/healthz":
            ok, reason = self.server.status.liveness(now)
            self._send(200 if ok else 503, reason + "\n", "text/plain; charset=utf-8")
        elif path == "/readyz":
            ok, reason = self.server.status.readiness(now)
            self._send(200 if ok else 503, reason + "\n", "text/plain; charset=utf-8")
        elif path == "/metrics":
            self._send(200, self.server.registry.expose(), CONTENT_TYPE)
        else:
            self._send(404, "not found: try /healthz, /readyz or /metrics\n", "text/plain; charset=utf-8")

    def _send(self, code: int, body: str, content_type: str) -> None:
        data = body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("http %s - %s", self.address_string(), format % args)


class HealthServer:
    """Serves until :meth:`stop`; ``port`` is the bound port (useful with port 0)."""

    def __init__(
        self,
        host: str,
        port: int,
        status: AgentStatus,
        registry: Registry,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        try:
            self._httpd = _Server((host, port), _Handler)
        except OSError as e:
            raise ConfigError("http_address", f"cannot listen on {host}:{port}: {e.strerror or e}") from e
        self._httpd.status = status
        self._httpd.registry = registry
        self._httpd.clock = clock
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> HealthServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="rte-http", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(2.0)
