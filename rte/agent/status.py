"""Liveness, readiness and freshness of the agent, decided from what the loop reports (clock injected).

* **alive** (``/healthz``): the loop is making progress. It ticks at least once a second when
  idle; while it is busy (a kubelet call, a cycle, a publish with its retries) it is alive until
  that one operation has lasted ``stall_timeout``. A slow apiserver therefore makes the agent
  unready, never killed; only a loop that is stuck gets restarted.
* **vouching** (the heartbeat Lease is renewed only then): the stored NRT is what the node is
  now. Never while one operation of the loop (a List, a cycle) has run longer than
  ``busy_limit`` (the Lease duration): the probes and the heartbeat read this from their own
  threads, so a loop stuck on a huge kubelet answer is a watchdog's finding, not its own. A
  cycle that talked to the kubelet in that cycle (or used the List a successful poll
  had just made) confirmed the stored object within ``ready_window``, no cycle failed since, and
  nothing that blinds the agent stands (kubelet unreachable, CRD missing, sysfs never read
  since start). With ``--no-publish``, a successful scan counts as a publish.
* **ready** (``/readyz``): vouching, no degradation stands (an unreadable sysfs file: the last
  good machine model stands in, pod changes are still published, but someone should look), and
  the apiserver answered a request (a write, a resync's read, a heartbeat renewal) within
  ``api_window``, so an apiserver outage shows even on a quiet node that writes nothing.
"""

from __future__ import annotations

import threading


class AgentStatus:
    """Thread-safe: the loop and the heartbeat write, the HTTP handlers read.

    ``api_window`` None: no apiserver to answer (``--no-publish``).
    """

    def __init__(
        self,
        *,
        ready_window: float,
        stall_timeout: float,
        idle_timeout: float = 30.0,
        api_window: float | None = None,
        busy_limit: float | None = None,
    ) -> None:
        self.ready_window = ready_window
        self.busy_limit = busy_limit
        self.stall_timeout = stall_timeout
        self.idle_timeout = idle_timeout
        self.api_window = api_window
        self._lock = threading.Lock()
        self._tick: float | None = None
        self._busy_since: float | None = None
        self._busy_with = ""
        self._last_success: float | None = None
        self._last_error: str | None = None
        self._problems: dict[str, str] = {}
        self._degraded: dict[str, str] = {}
        self._api_answered: float | None = None
        self._api_error: str | None = None

    # -- written by the loop and the heartbeat ----------------------------------------------------

    def tick(self, now: float) -> None:
        with self._lock:
            self._tick = now

    def busy(self, now: float, what: str) -> None:
        with self._lock:
            self._busy_since, self._busy_with = now, what

    def idle(self, now: float) -> None:
        with self._lock:
            self._busy_since, self._tick = None, now

    def succeeded(self, now: float) -> None:
        """A cycle ended with the stored (or printed) object equal to the computed one."""
        with self._lock:
            self._last_success = now
            self._last_error = None

    def failed(self, error: str) -> None:
        with self._lock:
            self._last_error = error

    def problem(self, name: str, detail: str | None) -> None:
        """Set (``detail``) or clear (None) a problem that blinds the agent, such as ``kubelet``."""
        with self._lock:
            _set(self._problems, name, detail)

    def degraded(self, name: str, detail: str | None) -> None:
        """Set or clear a degradation such as ``sysfs``: unready, but the NRT is still vouched for."""
        with self._lock:
            _set(self._degraded, name, detail)

    def api_answered(self, now: float) -> None:
        """The apiserver answered a request of ours (whatever the answer's content)."""
        with self._lock:
            self._api_answered = now
            self._api_error = None

    def api_failed(self, error: str) -> None:
        """A request to the apiserver failed; kept for the readiness reason."""
        with self._lock:
            self._api_error = error

    # -- read by the probes and the heartbeat -----------------------------------------------------

    def liveness(self, now: float) -> tuple[bool, str]:
        with self._lock:
            if self._busy_since is not None:
                took = now - self._busy_since
                if took > self.stall_timeout:
                    return False, f"stalled: {self._busy_with} running for {took:.0f}s"
                return True, f"ok ({self._busy_with})"
            if self._tick is None:
                return True, "starting"
            quiet = now - self._tick
            if quiet > self.idle_timeout:
                return False, f"stalled: loop has not ticked for {quiet:.0f}s"
            return True, "ok"

    def vouching(self, now: float) -> tuple[bool, str]:
        """Whether the published NRT is current (what the heartbeat Lease asserts), and why not."""
        with self._lock:
            return self._vouching(now)

    def readiness(self, now: float) -> tuple[bool, str]:
        with self._lock:
            reasons = {**self._problems, **self._degraded}
            overrun = self._overrun(now)
            if overrun is not None:
                reasons["busy"] = overrun
            if reasons:
                return False, "; ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
            ok, reason = self._vouching(now)
            if not ok:
                return ok, reason
            if self.api_window is not None and self._api_answered is not None:
                silent = now - self._api_answered
                if silent > self.api_window:
                    last = f": {self._api_error}" if self._api_error else ""
                    return False, (
                        f"apiserver: no answer for {silent:.0f}s (limit {self.api_window:.0f}s){last}"
                    )
            return True, "ok"

    def _overrun(self, now: float) -> str | None:
        """Why the operation under way has run too long to vouch for anything, or None."""
        if self.busy_limit is None or self._busy_since is None:
            return None
        took = now - self._busy_since
        if took <= self.busy_limit:
            return None
        limit = f"longer than the Lease duration, {self.busy_limit:.0f}s"
        return f"{self._busy_with} running for {took:.0f}s ({limit})"

    def _vouching(self, now: float) -> tuple[bool, str]:
        overrun = self._overrun(now)
        if overrun is not None:
            return False, f"busy: {overrun}"
        if self._problems:
            return False, "; ".join(f"{k}: {v}" for k, v in sorted(self._problems.items()))
        if self._last_error is not None:
            return False, f"last cycle failed: {self._last_error}"
        if self._last_success is None:
            return False, "no successful publish yet"
        age = now - self._last_success
        if age > self.ready_window:
            return False, f"last successful publish {age:.0f}s ago (limit {self.ready_window:.0f}s)"
        return True, "ok"

    @property
    def last_success(self) -> float | None:
        with self._lock:
            return self._last_success


def _set(table: dict[str, str], name: str, detail: str | None) -> None:
    if detail is None:
        table.pop(name, None)
    else:
        table[name] = detail
