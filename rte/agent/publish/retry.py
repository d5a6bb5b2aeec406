"""What an apiserver failure means for the caller, and how long to wait before trying again.

Every agent component that talks to the apiserver classifies failures the same way:

* ``CONFLICT`` (409): someone else wrote first, or the object already exists. Re-read, retry.
* ``THROTTLED`` (429): API priority and fairness said "later"; wait ``Retry-After`` seconds.
* ``TRANSIENT`` (5xx, timeouts, refused or cut connections): retry with backoff. A write that
  failed this way may or may not have landed, so the caller re-reads before writing again.
* ``NOT_FOUND`` (404): meaningful to the caller (recreate, or the CRD is missing).
* ``UNAUTHORIZED`` (401): the token expired or was rotated; the client reloads it on its own,
  so the next cycle may succeed, but retrying right now will not.
* ``PERMANENT`` (400, 403, 422, any other 4xx): retrying the same request cannot help.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from rte.runtime.ratelimit import backoff_delay


class Failure(Enum):
    CONFLICT = "conflict"
    THROTTLED = "throttled"
    TRANSIENT = "transient"
    NOT_FOUND = "not-found"
    UNAUTHORIZED = "unauthorized"
    PERMANENT = "permanent"


RETRY_AFTER_CAP = 60.0
"""Never wait longer than this on one ``Retry-After``, whatever the server asks."""


def is_api_error(exc: BaseException) -> bool:
    """True for what the kubernetes client raises on an HTTP error or a transport failure."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    return isinstance(exc, ApiException | urllib3.exceptions.HTTPError | OSError)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an ``ApiException`` (None for transport errors and status 0)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and status > 0 else None


def classify(exc: BaseException) -> Failure:
    status = status_of(exc)
    if status is None:
        return Failure.TRANSIENT  # timeouts, refused/reset connections, TLS errors
    if status == 409:
        return Failure.CONFLICT
    if status == 429:
        return Failure.THROTTLED
    if status == 404:
        return Failure.NOT_FOUND
    if status == 401:
        return Failure.UNAUTHORIZED
    if status >= 500:
        return Failure.TRANSIENT
    return Failure.PERMANENT


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` header), capped; None if it did not say."""
    headers = getattr(exc, "headers", None)
    raw = headers.get("Retry-After") if headers is not None else None
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        return None  # the HTTP-date form: the apiserver never sends it
    return min(max(seconds, 0.0), RETRY_AFTER_CAP)


def describe(exc: BaseException) -> str:
    """One line for logs and error messages: ``409 Conflict: <apiserver message>`` or the transport error."""
    status = status_of(exc)
    if status is None:
        return f"{type(exc).__name__}: {exc}"
    reason = getattr(exc, "reason", "") or ""
    message = ""
    body: Any = getattr(exc, "body", None)
    if body:
        try:
            message = str(json.loads(body).get("message", ""))
        except (ValueError, TypeError, AttributeError):
            message = str(body)[:200]
    return f"{status} {reason}: {message}".rstrip(": ")


@dataclass(frozen=True)
class ApiRetryBackoff:
    """Delays between retries of one apiserver request: the server's ``Retry-After`` on a 429,
    else exponential backoff with equal jitter (attempt n waits in [d/2, d], d = min(cap, base x 2^n)).

    Stateless, indexed by attempt; the agent loop's own :class:`rte.agent.pacing.Backoff` counts
    failures itself instead.

    Jitter spreads the retries of a thousand agents that failed together (an apiserver restart)
    instead of bringing them all back in the same instant.
    """

    base: float = 0.2
    cap: float = 10.0
    rng: Callable[[], float] = random.random

    def delay(self, attempt: int) -> float:
        return backoff_delay(attempt, self.base, self.cap, self.rng)

    def delay_for(self, exc: BaseException, attempt: int) -> float:
        """The wait before retry ``attempt`` after ``exc``: the server's ``Retry-After`` when it gave one."""
        asked = retry_after(exc) if classify(exc) is Failure.THROTTLED else None
        return asked if asked is not None else self.delay(attempt)
