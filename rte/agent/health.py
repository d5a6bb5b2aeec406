"""The agent's probes and scraping endpoint: ``/healthz``, ``/readyz``, ``/metrics``.

Probes answer 200 or 503 with a one-line reason in the body (``kubectl describe`` shows it), from
:class:`~rte.agent.status.AgentStatus`. The server (:mod:`rte.runtime.httpserver`) runs in its own
threads and never touches the loop's state beyond those thread-safe reads, so a hung scraper
cannot slow the agent.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rte import __version__
from rte.agent.metrics import CONTENT_TYPE, Registry
from rte.agent.status import AgentStatus
from rte.runtime.httpserver import HttpServer, Limits
from rte.runtime.httpwire import HttpRequest, Response, plain_error, text_response

HEALTH_LIMITS = Limits(max_body=64 * 1024, workers=2, max_connections=64)
"""Probes and a scraper: two workers; no endpoint takes a body."""


def health_handler(
    status: AgentStatus, registry: Registry, clock: Callable[[], float]
) -> Callable[[HttpRequest], Response]:
    def handle(request: HttpRequest) -> Response:
        if request.method not in ("GET", "HEAD"):
            return plain_error(501, f"unsupported method {request.method!r}")
        if request.path == "/healthz":
            ok, reason = status.liveness(clock())
            return text_response(200 if ok else 503, reason + "\n")
        if request.path == "/readyz":
            ok, reason = status.readiness(clock())
            return text_response(200 if ok else 503, reason + "\n")
        if request.path == "/metrics":
            return text_response(200, registry.expose(), CONTENT_TYPE)
        return text_response(404, "not found: try /healthz, /readyz or /metrics\n")

    return handle


class HealthServer(HttpServer):
    """Serves until :meth:`stop`; ``port`` is the bound port (useful with port 0)."""

    def __init__(
        self,
        host: str,
        port: int,
        status: AgentStatus,
        registry: Registry,
        *,
        clock: Callable[[], float] = time.monotonic,
        limits: Limits = HEALTH_LIMITS,
    ) -> None:
        super().__init__(
            host,
            port,
            health_handler(status, registry, clock),
            limits=limits,
            server_name=f"rte-agent/{__version__}",
            setting="http_address",
        )

    def start(self) -> HealthServer:
        super().start()
        return self
