"""When a leader that is stopping may give its Lease up: once every placement it allowed is known.

The fencing gap (``--leader-elect-lease-duration`` − ``--leader-elect-renew-deadline``) is what
makes a new leader safe after a crash: kube-scheduler binds a pod right after the extender let
it through, and the gap is the time allowed for that binding to be written before a new leader
lists the pods (:mod:`rte.extender.leadership`). A leader stopping on SIGTERM need not assume:
it watches the pods itself. :class:`AnsweredPods` keeps the pods it answered within the last gap
(a filter that let some node through, or a prioritize) and strikes each off when its pod watch
shows it bound or deleted. Once none is left, every binding its answers led to is in the
apiserver, so a successor's list (begun after it wins the Lease) holds them all: the Lease may
be released at once, with the same guarantee as waiting out the gap. A pod that is never bound
(kube-scheduler gave up on it) is waited for until its answer is a gap old, as before.

Issue #26, item 11: a rollout left the verbs unanswered for 8.7 s, of which 5 s were the gap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rte.model.pod import PodKey

KEPT = 10_000
"""Pods answered that are remembered at most; more within one gap (a flood) and the leader
waits the whole gap instead (:meth:`AnsweredPods.settled` says no)."""


class AnsweredPods:
    """The pods answered within the last ``window`` seconds whose binding has not been seen."""

    def __init__(self, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting: dict[PodKey, float] = {}
        """Pod -> when it was last answered (oldest first)."""
        self._overflowed_at: float | None = None

    def answered(self, key: PodKey) -> None:
        now = self._clock()
        with self._lock:
            self._waiting.pop(key, None)
            self._waiting[key] = now
            self._expire(now)
            if len(self._waiting) > KEPT:
                self._waiting.pop(next(iter(self._waiting)))
                self._overflowed_at = now

    def seen(self, key: PodKey, bound: bool) -> None:
        """A pod event: the pod is bound (or deleted, ``bound`` True too), or still pending."""
        if bound:
            with self._lock:
                self._waiting.pop(key, None)

    def settled(self) -> bool:
        """Whether every pod answered within the window has been seen bound or deleted."""
        now = self._clock()
        with self._lock:
            self._expire(now)
            overflowed = self._overflowed_at is not None and now - self._overflowed_at < self.window
            return not self._waiting and not overflowed

    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    def _expire(self, now: float) -> None:
        waiting = self._waiting
        while waiting:
            key, at = next(iter(waiting.items()))
            if now - at < self.window:
                return
            del waiting[key]
