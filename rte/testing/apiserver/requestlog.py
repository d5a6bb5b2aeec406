"""The log of requests a server answered, for tests to count and inspect."""

from __future__ import annotations

import threading
from collections import Counter

from .faults import RequestRecord


class RequestLog:
    """Every request served, in order; a base of :class:`~.server.FakeApiServer`. Thread-safe."""

    def __init__(self) -> None:
        self._log_lock = threading.Lock()
        self._log: list[RequestRecord] = []

    def _record(self, rec: RequestRecord) -> None:
        with self._log_lock:
            self._log.append(rec)

    @property
    def requests(self) -> list[RequestRecord]:
        """Every request served so far (oldest first), including failed and injected ones."""
        with self._log_lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._log_lock:
            self._log.clear()

    def count(
        self,
        verb: str | None = None,
        resource: str | None = None,
        *,
        code: int | None = None,
        name: str | None = None,
        changed: bool | None = None,
    ) -> int:
        """How many logged requests match every given criterion."""
        return sum(
            1
            for r in self.requests
            if (verb is None or r.verb == verb)
            and (resource is None or r.resource == resource)
            and (code is None or r.code == code)
            and (name is None or r.name == name)
            and (changed is None or r.changed == changed)
        )

    def counters(self) -> Counter[tuple[str, str, int]]:
        """Requests by (verb, resource, status code)."""
        return Counter((r.verb, r.resource, r.code) for r in self.requests)

    def writes(self, resource: str | None = None) -> int:
        """Write requests (create, update, patch, delete) received, whatever their outcome."""
        return sum(1 for r in self.requests if r.is_write and (resource is None or r.resource == resource))

    def changes(self, resource: str | None = None) -> int:
        """Write requests that changed stored state (no-op updates and failures excluded)."""
        return sum(1 for r in self.requests if r.changed and (resource is None or r.resource == resource))
