"""Liveness and readiness of the agent, decided from what the loop reports (clock injected).

* **alive** (``/healthz``): the loop is making progress. It ticks at least once a second when
  idle; while it is busy (a kubelet call, a cycle, a publish with its retries) it is alive until
  that one operation has lasted ``stall_timeout``. A slow apiserver therefore makes the agent
  unready, never killed; only a loop that is stuck gets restarted.
* **ready** (``/readyz``): a publish succeeded (a write, or the decision that the stored object
  is already right) within ``ready_window``, the last cycle did not fail and nothing is known
  broken (kubelet unreachable, CRD missing). With ``--no-publish``, a successful scan counts as
  a publish.
"""

from __future__ import annotations

import threading


class AgentStatus:
    """Thread-safe: the loop writes, the HTTP handlers read."""

    def __init__(self, *, ready_window: float, stall_timeout: float, idle_timeout: float = 30.0) -> None:
        self.ready_window = ready_window
        self.stall_timeout = stall_timeout
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._tick: float | None = None
        self._busy_since: float | None = None
        self._busy_with = ""
        self._last_success: float | None = None
        self._last_error: str | None = None
        self._problems: dict[str, str] = {}

    # -- written by the loop ----------------------------------------------------------------------

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
        """Set (``detail``) or clear (None) a standing problem such as ``kubelet`` or ``crd``."""
        with self._lock:
            if detail is None:
                self._problems.pop(name, None)
            else:
                self._problems[name] = detail

    # -- read by the probes -----------------------------------------------------------------------

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

    def readiness(self, now: float) -> tuple[bool, str]:
        with self._lock:
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
