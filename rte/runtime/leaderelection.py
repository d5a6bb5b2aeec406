"""Leader election on a ``coordination.k8s.io/v1`` Lease, with the semantics of client-go's.

The algorithm is client-go's (kubernetes/client-go ``tools/leaderelection/leaderelection.go``,
tryAcquireOrRenew); the code is ours:

* The Lease names its **holder** and a **lease duration**. A candidate reads it; when the record
  differs from the one it saw last, it notes the time it saw it on its *own* monotonic clock
  (clocks of different machines are never compared, only their rates). It takes the Lease over
  only when nobody holds it, or the record has not changed for a whole lease duration since it
  first saw it (the longer of the record's duration and its own). Writes are updates carrying
  the ``resourceVersion`` read, so of two candidates racing for an expired Lease one gets 409.
* The holder renews every ``retry_period``. It counts as leader until ``renew_deadline`` after
  the start of its last *successful* renewal, and stops acting as leader then, whether or not
  the renewal loop has noticed (:meth:`LeaderElector.is_leader` reads the clock). A renewal that
  finds another holder ends the leadership at once.

**Fencing.** A renewal written at time *s* was sent at *a* ≤ *s*; another candidate saw it at
*o* ≥ *s* and takes over no sooner than *o* + ``lease_duration``, while the old holder stopped at
*a* + ``renew_deadline`` at the latest. So the old leader's last act precedes the new leader's
first by at least ``lease_duration`` − ``renew_deadline`` (5 s with the defaults, the values of
kube-scheduler's own election), whether it crashed, hung, or lost the apiserver.

:meth:`LeaderElector.stop` with ``release`` stops acting at once, waits ``release_delay`` (or
less, as soon as ``release_early`` says the owner knows it safe) and then gives the Lease up
(holder cleared), so that a successor takes over without waiting for the lease to expire. While
it waits, the Lease says so (:data:`DRAINING_DURATION`): candidates then look every
:data:`DRAINING_POLL` instead of every ``retry_period``, and take the released Lease within a
fraction of a second instead of up to 2.2 retry periods (issue #26, item 11). The mark changes
no rule: a candidate still waits a whole lease duration of its own before taking a Lease that
is held, drained or not.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rte.errors import ConfigError

log = logging.getLogger(__name__)

JITTER = 1.2
"""A candidate waits ``retry_period`` times 1 to 1 + JITTER between attempts (client-go's factor),
so replicas started together do not keep colliding."""


DRAINING_DURATION = 1
"""``leaseDurationSeconds`` of a Lease whose holder is stopping (client-go writes the same value
when it releases one); no holder renews with it (:meth:`ElectionConfig.check` wants a lease
duration longer than 1.2 retry periods and the renew deadline)."""
DRAINING_POLL = 0.1
"""Seconds between two looks at a draining Lease."""
EXPIRY_MARGIN = 0.05
"""Seconds after a Lease's expiry (on the candidate's clock) at which it looks again."""


@dataclass(frozen=True)
class ElectionConfig:
    """Who competes for which Lease, and the timing (seconds)."""

    identity: str
    namespace: str
    name: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def check(self) -> ElectionConfig:
        """Raise :class:`ConfigError` unless the timing can work (client-go's rules)."""
        if not self.identity:
            raise ConfigError("--leader-elect-identity", "must not be empty")
        if self.retry_period <= 0:
            raise ConfigError("--leader-elect-retry-period", f"must be positive, got {self.retry_period}s")
        if self.renew_deadline <= JITTER * self.retry_period:
            raise ConfigError(
                "--leader-elect-renew-deadline",
                f"must be longer than {JITTER} x the retry period ({JITTER * self.retry_period:g}s),"
                f" got {self.renew_deadline:g}s",
            )
        if self.lease_duration <= self.renew_deadline:
            raise ConfigError(
                "--leader-elect-lease-duration",
                f"must be longer than the renew deadline ({self.renew_deadline:g}s),"
                f" got {self.lease_duration:g}s",
            )
        return self

    @property
    def fencing_gap(self) -> float:
        """The least time between the old leader's last act and a new leader's first."""
        return self.lease_duration - self.renew_deadline


@dataclass(frozen=True)
class LeaseRecord:
    """What a Lease says about its holder (``resource_version`` is the precondition of an update)."""

    holder: str
    lease_duration: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int
    resource_version: str = ""

    def same_as(self, other: LeaseRecord | None) -> bool:
        return other is not None and (
            self.holder,
            self.lease_duration,
            self.acquire_time,
            self.renew_time,
            self.transitions,
        ) == (other.holder, other.lease_duration, other.acquire_time, other.renew_time, other.transitions)


class LeaseConflict(Exception):
    """The Lease changed since it was read (409), or was created meanwhile."""


def _micro_time(when: datetime) -> datetime:
    # The apiserver's MicroTime wants six fractional digits, and isoformat() drops them when the
    # microseconds are 0: move such an instant by one microsecond.
    when = when.astimezone(UTC)
    return when.replace(microsecond=1) if when.microsecond == 0 else when


class LeaseLock:
    """Reads, creates and updates one Lease through the ``kubernetes`` client."""

    def __init__(self, api_client: Any, namespace: str, name: str, *, timeout: float = 10.0) -> None:
        from kubernetes import client

        self.namespace = namespace
        self.name = name
        self.timeout = timeout
        self._models = client
        self._api = client.CoordinationV1Api(api_client)

    def describe(self) -> str:
        return f"Lease {self.namespace}/{self.name}"

    def get(self) -> LeaseRecord | None:
        try:
            lease = self._api.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.timeout)
        except Exception as e:
            if getattr(e, "status", None) == 404:
                return None
            raise
        return _record(lease)

    def write(self, record: LeaseRecord, *, create: bool) -> LeaseRecord:
        """Create the Lease, or update it with ``record.resource_version`` as the precondition."""
        m = self._models
        body = m.V1Lease(
            metadata=m.V1ObjectMeta(
                name=self.name,
                namespace=self.namespace,
                resource_version=None if create else record.resource_version,
            ),
            spec=m.V1LeaseSpec(
                holder_identity=record.holder or None,
                lease_duration_seconds=record.lease_duration,
                acquire_time=_micro_time(record.acquire_time) if record.acquire_time else None,
                renew_time=_micro_time(record.renew_time) if record.renew_time else None,
                lease_transitions=record.transitions,
            ),
        )
        try:
            if create:
                stored = self._api.create_namespaced_lease(
                    self.namespace, body, _request_timeout=self.timeout
                )
            else:
                stored = self._api.replace_namespaced_lease(
                    self.name, self.namespace, body, _request_timeout=self.timeout
                )
        except Exception as e:
            if getattr(e, "status", None) == 409:
                raise LeaseConflict(f"{self.describe()} changed meanwhile") from e
            raise
        return _record(stored)


def _record(lease: Any) -> LeaseRecord:
    spec, metadata = lease.spec, lease.metadata
    return LeaseRecord(
        holder=(spec and spec.holder_identity) or "",
        lease_duration=int((spec and spec.lease_duration_seconds) or 0),
        acquire_time=spec and spec.acquire_time,
        renew_time=spec and spec.renew_time,
        transitions=int((spec and spec.lease_transitions) or 0),
        resource_version=str((metadata and metadata.resource_version) or ""),
    )


def may_take(
    record: LeaseRecord | None, identity: str, observed_at: float, now: float, duration: float
) -> bool:
    """Whether ``identity`` may write itself as holder: it holds the Lease already, nobody does,
    or the record has been unchanged for ``duration`` (or the record's own, if longer) since it was
    first seen at ``observed_at``."""
    if record is None or not record.holder or record.holder == identity:
        return True
    return now >= observed_at + max(duration, float(record.lease_duration))


class LeaderElector:
    """Campaigns for the Lease in a thread and keeps it; see the module docstring.

    ``on_started`` runs (in the elector's thread: keep it short) when leadership is won,
    ``on_stopped`` when it is lost or given up. :meth:`is_leader` is the authority at any instant.
    """

    def __init__(
        self,
        lock: LeaseLock,
        config: ElectionConfig,
        *,
        on_started: Callable[[], None] = lambda: None,
        on_stopped: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.lock = lock
        self.config = config.check()
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._clock = clock
        self._wall = wall
        self._rng = rng
        self._guard = threading.Lock()
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._leading = False
        self._valid_until = 0.0
        self._stop = threading.Event()
        self._nudged = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error = ""
        self.transitions = 0
        """Times this process became leader."""

    # --- what others ask ---------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True while this process holds the Lease and its last renewal is within the deadline."""
        with self._guard:
            return self._leading and self._clock() < self._valid_until

    @property
    def holder(self) -> str:
        """The holder in the last record seen ("" when none)."""
        with self._guard:
            return self._observed.holder if self._observed is not None else ""

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> LeaderElector:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
            self._thread.start()
        return self

    def stop(
        self,
        *,
        release: bool = True,
        release_delay: float = 0.0,
        release_early: Callable[[], bool] | None = None,
    ) -> None:
        """Stop campaigning; a leader stops acting now and gives the Lease up after
        ``release_delay``, or as soon as ``release_early()`` is true (asked every 20 ms)."""
        self._stop.set()
        self._nudged.set()  # a candidate waiting between attempts: now
        with self._guard:
            was_leading, self._leading = self._leading, False  # stop acting now
        if self._thread is not None:
            self._thread.join(self.lock.timeout + 1.0)
            self._thread = None
        with self._guard:  # an attempt in flight may have renewed meanwhile
            was_leading, self._leading = was_leading or self._leading, False
            held = self._observed is not None and self._observed.holder == self.config.identity
        if was_leading:
            self._safe(self._on_stopped)
        if release and held:
            until = self._clock() + max(0.0, release_delay)
            if self._clock() < until:
                self._write_released(DRAINING_DURATION, holder=self.config.identity, what="draining")
            while self._clock() < until and not (release_early is not None and release_early()):
                time.sleep(0.02)
            self._release()

    # --- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._try():
                delay = self.config.retry_period * (1.0 + JITTER * self._rng())
                if self._draining():
                    delay = min(delay, DRAINING_POLL)
                delay = min(delay, self._until_expiry() + EXPIRY_MARGIN)
                self._nudged.wait(delay)
                self._nudged.clear()
                continue
            log.info("%s: became leader as %s", self.lock.describe(), self.config.identity)
            self.transitions += 1
            self._safe(self._on_started)
            self._keep()
            with self._guard:
                lost = self._leading
                self._leading = False
            if lost:  # not a stop(): stop() reports it itself
                log.warning("%s: leadership lost (%s)", self.lock.describe(), self.last_error or "expired")
                self._safe(self._on_stopped)

    def nudge(self) -> None:
        """Look at the Lease now rather than at the next retry (a watch saw it change: released,
        say). Changes no rule: a held Lease is still taken only once it expired."""
        self._nudged.set()

    def _until_expiry(self) -> float:
        """Seconds until the Lease last seen, held by another, may be taken (:func:`may_take`);
        infinite when there is none to wait for. A candidate looks then rather than up to a
        retry period later: after a crash, the standby takes over a lease duration after the
        last renewal it saw, not up to 2.2 retry periods beyond (issue #26, item 11)."""
        with self._guard:
            record, observed_at = self._observed, self._observed_at
        if record is None or not record.holder or record.holder == self.config.identity:
            return float("inf")
        left = observed_at + max(self.config.lease_duration, float(record.lease_duration)) - self._clock()
        return left if left > 0 else float("inf")  # expired, yet the last attempt failed: no hurry

    def _draining(self) -> bool:
        """Whether the Lease last seen is held by another that is stopping (and releasing it)."""
        with self._guard:
            record = self._observed
        return (
            record is not None
            and bool(record.holder)
            and record.holder != self.config.identity
            and record.lease_duration == DRAINING_DURATION
        )

    def _keep(self) -> None:
        """Renew until the deadline passes without a successful renewal, or another holder shows."""
        while not self._stop.wait(self.config.retry_period):
            if self._try():
                continue
            with self._guard:
                taken = self._observed is not None and self._observed.holder != self.config.identity
                expired = self._clock() >= self._valid_until
            if taken or expired:
                return

    def _try(self) -> bool:
        """One attempt to acquire or renew; True when this process holds the Lease afterwards."""
        started = self._clock()
        now = self._wall()
        me = self.config.identity
        try:
            current = self.lock.get()
            if current is not None:
                seen = self._clock()  # after the read: never before the record was written
                with self._guard:
                    if not current.same_as(self._observed):
                        self._observed, self._observed_at = current, seen
                    observed_at = self._observed_at
                if not may_take(current, me, observed_at, seen, self.config.lease_duration):
                    return False
            renewing = current is not None and current.holder == me
            record = LeaseRecord(
                holder=me,
                lease_duration=max(1, round(self.config.lease_duration)),
                acquire_time=current.acquire_time if renewing and current is not None else now,
                renew_time=now,
                transitions=(current.transitions + (0 if renewing else 1)) if current is not None else 0,
                resource_version=current.resource_version if current is not None else "",
            )
            stored = self.lock.write(record, create=current is None)
        except Exception as e:  # conflict, apiserver away, RBAC: the next attempt may do better
            self.last_error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            log.debug("%s: attempt failed: %s", self.lock.describe(), self.last_error)
            return False
        with self._guard:
            self._observed, self._observed_at = stored, self._clock()
            # Valid from the attempt's start: the write was sent after it, never before.
            self._valid_until = started + self.config.renew_deadline
            self._leading = not self._stop.is_set()
            leading = self._leading
        self.last_error = ""
        return leading

    def _release(self) -> None:
        self._write_released(1, holder="", what="released")

    def _write_released(self, duration: int, *, holder: str, what: str) -> None:
        """Write the Lease as released (holder cleared) or draining (still ours, marked)."""
        with self._guard:
            observed = self._observed
        if observed is None or observed.holder != self.config.identity:
            return
        now = self._wall()
        acquired = observed.acquire_time if holder else now
        record = LeaseRecord(holder, duration, acquired, now, observed.transitions, observed.resource_version)
        try:
            stored = self.lock.write(record, create=False)
            with self._guard:
                self._observed = stored
            log.info("%s: %s", self.lock.describe(), what)
        except Exception as e:  # it expires by itself
            log.warning("%s: could not mark it %s: %s", self.lock.describe(), what, e)

    @staticmethod
    def _safe(callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:  # a bug in a callback must not end the election
            log.exception("leader election callback failed")
