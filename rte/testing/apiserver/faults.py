"""Programmable failures: what makes the double worth more than a dict behind HTTP.

Rules are consumed in the order they were added; each matches requests by HTTP method, Kubernetes
verb (get, list, watch, create, update, patch, delete), resource (plural), object name and a
regular expression searched in the URL path. All methods are thread-safe.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})


@dataclass
class RequestRecord:
    """One request as the server saw it; ``code`` 0 means the connection was cut, no answer."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    resource: str
    namespace: str | None
    name: str | None
    content_type: str = ""
    user_agent: str = ""
    code: int = 0
    # True when the request changed stored state (a no-op update or a failure did not).
    changed: bool = False
    injected: bool = False
    duration: float = 0.0

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS


@dataclass
class Match:
    method: str | None = None
    verb: str | None = None
    resource: str | None = None
    name: str | None = None
    path: str | None = None
    verbs: frozenset[str] | None = None

    def __call__(self, rec: RequestRecord) -> bool:
        return (
            (self.method is None or self.method.upper() == rec.method)
            and (self.verb is None or self.verb == rec.verb)
            and (self.verbs is None or rec.verb in self.verbs)
            and (self.resource is None or self.resource == rec.resource)
            and (self.name is None or self.name == rec.name)
            and (self.path is None or re.search(self.path, rec.path) is not None)
        )


@dataclass
class Fault:
    """What to do instead of serving a request."""

    # "status": answer ``code``; "reset": close the connection without an answer.
    action: str
    code: int = 0
    message: str | None = None
    reason: str | None = None
    retry_after: int | None = None
    details: dict[str, Any] | None = None


@dataclass
class _Rule:
    remaining: int
    match: Match
    fault: Fault


@dataclass
class _Latency:
    seconds: float
    match: Match


@dataclass
class Faults:
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rules: list[_Rule] = field(default_factory=list)
    _latency: list[_Latency] = field(default_factory=list)

    def fail_next(
        self,
        count: int,
        code: int,
        *,
        message: str | None = None,
        reason: str | None = None,
        retry_after: int | None = None,
        method: str | None = None,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> None:
        """Answer the next ``count`` matching requests with a ``code`` Status instead of serving them."""
        fault = Fault("status", code, message=message, reason=reason, retry_after=retry_after)
        self._add(count, Match(method, verb, resource, name, path), fault)

    def throttle_next(
        self,
        count: int,
        retry_after: int = 1,
        *,
        method: str | None = None,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> None:
        """429 TooManyRequests with ``Retry-After``, as API priority and fairness answers."""
        fault = Fault(
            "status", 429, message="Too many requests, please try again later.", retry_after=retry_after
        )
        self._add(count, Match(method, verb, resource, name, path), fault)

    def conflict_next_writes(
        self, count: int, *, resource: str | None = None, name: str | None = None
    ) -> None:
        """409 Conflict on the next ``count`` create/update/patch/delete requests."""
        fault = Fault("conflict", 409)
        self._add(count, Match(resource=resource, name=name, verbs=WRITE_VERBS), fault)

    def reset_next(
        self,
        count: int,
        *,
        method: str | None = None,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> None:
        """Close the connection of the next ``count`` matching requests without answering."""
        self._add(count, Match(method, verb, resource, name, path), Fault("reset"))

    def set_latency(
        self,
        seconds: float,
        *,
        method: str | None = None,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> None:
        """Delay every matching request by ``seconds`` before serving it (0 removes all delays)."""
        with self._lock:
            if seconds <= 0:
                self._latency.clear()
            else:
                self._latency.append(_Latency(seconds, Match(method, verb, resource, name, path)))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._latency.clear()

    @property
    def pending(self) -> int:
        """How many injected failures are still to be served."""
        with self._lock:
            return sum(r.remaining for r in self._rules)

    def _add(self, count: int, match: Match, fault: Fault) -> None:
        if count <= 0:
            return
        with self._lock:
            self._rules.append(_Rule(count, match, fault))

    def delay_for(self, rec: RequestRecord) -> float:
        with self._lock:
            return sum(lat.seconds for lat in self._latency if lat.match(rec))

    def take(self, rec: RequestRecord) -> Fault | None:
        """The fault to inject into this request, if any; consumes one use of the rule."""
        with self._lock:
            for rule in self._rules:
                if rule.match(rec):
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self._rules.remove(rule)
                    return rule.fault
        return None
