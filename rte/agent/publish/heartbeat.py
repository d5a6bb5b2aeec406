"""The agent's freshness signal: a ``coordination.k8s.io/v1`` Lease named after the node.

The NRT is written only when its content changes, so a quiet node and a dead agent look the
same in it. Rather than rewriting the large, widely watched NRT just to say "still here", the
agent renews a small Lease, the mechanism the kubelet itself uses for node heartbeats. The
consumer reads ``spec.renewTime`` (see ``rte.consumer.store.heartbeat_from_lease``).

**A renewal vouches for the NRT, not for the process.** :class:`HeartbeatRunner` renews only
while the agent's view is current (:meth:`rte.agent.status.AgentStatus.vouching`: a cycle that
talked to the kubelet confirmed the stored NRT recently, no cycle failed since, the kubelet
answers, the CRD exists). An agent that is alive but blind (kubelet gone, nothing published,
publishing failing) withholds renewals, so its Lease ages like a dead agent's and a consumer's
``--stale-after`` rule stops trusting the NRT. The Lease carries no other state, so every
consumer that reads ``renewTime`` gets this meaning without knowing anything about rte.

Renewal mirrors the kubelet's: keep the last Lease the server returned and send an update
(PUT) carrying its ``resourceVersion``; on 409 re-read and try again, on 404 create it.
One renewal is at most a few requests and never sleeps: if the apiserver is unavailable the
caller just renews again on its next tick, which is what a heartbeat should do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from rte.agent.metrics import AgentMetrics
from rte.agent.pacing import Backoff
from rte.agent.publish.retry import Failure, classify, describe, is_api_error
from rte.agent.status import AgentStatus
from rte.errors import PublishError, UnavailableError
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE

log = logging.getLogger(__name__)

HOLDER_PREFIX = "rte-agent/"
_ATTEMPTS = 3
WITHHELD_RECHECK = 1.0
"""Seconds between checks while renewals are withheld: the Lease follows soon after the view is
current again, and the check is a lock and a few comparisons, no request."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def lease_time(when: datetime) -> datetime:
    """``when`` in UTC, never on a whole second.

    The apiserver parses Lease times (MicroTime) with exactly six fractional digits, but the
    Python client serialises a datetime with ``isoformat()``, which drops the fraction when the
    microseconds are 0: one renewal in a million would be refused as malformed. Moving such an
    instant by one microsecond is harmless.
    """
    when = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return when.replace(microsecond=1) if when.microsecond == 0 else when


class Heartbeat:
    """Creates and renews Lease ``<namespace>/<node_name>``."""

    def __init__(
        self,
        api_client: Any,
        node_name: str,
        namespace: str = HEARTBEAT_LEASE_NAMESPACE,
        lease_seconds: int = 40,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        from kubernetes import client

        from rte.runtime.restclient import generated_api_client

        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, got {lease_seconds}")
        self.node_name = node_name
        self.namespace = namespace
        self.lease_seconds = lease_seconds
        self.holder = f"{HOLDER_PREFIX}{node_name}"
        self._clock = clock
        self._client = client
        # The agent's client is the lean one (rte.runtime.restclient); the Lease needs the
        # generated API class, loaded only when the heartbeat is on.
        self._leases = client.CoordinationV1Api(generated_api_client(api_client))
        self._lease: Any = None  # the last V1Lease the server returned

    def renew(self) -> None:
        """Set ``renewTime`` to now (creating the Lease when missing).

        Raises :class:`UnavailableError` when the apiserver cannot be reached, throttles or keeps
        conflicting, and :class:`PublishError` when the request is refused (403, 422).
        """
        last: BaseException | None = None
        for _ in range(_ATTEMPTS):
            try:
                self._renew_once()
                return
            except Exception as e:
                if not is_api_error(e):
                    raise
                last = e
                self._lease = None  # read again before the next write
                failure = classify(e)
                if failure is Failure.PERMANENT:
                    raise PublishError(f"renewing Lease {self._where}: {describe(e)}") from e
                if failure in (Failure.THROTTLED, Failure.UNAUTHORIZED):
                    break  # the next tick is soon enough; do not add load now
                # CONFLICT, NOT_FOUND (deleted between read and update) and TRANSIENT (often a
                # stale keep-alive connection) are worth one more immediate try.
        assert last is not None
        raise UnavailableError(f"renewing Lease {self._where}: {describe(last)}") from last

    @property
    def _where(self) -> str:
        return f"{self.namespace}/{self.node_name}"

    def _renew_once(self) -> None:
        now = lease_time(self._clock())
        if self._lease is None:
            self._lease = self._read()
        if self._lease is None:
            body = self._client.V1Lease(
                metadata=self._client.V1ObjectMeta(name=self.node_name, namespace=self.namespace),
                spec=self._client.V1LeaseSpec(
                    holder_identity=self.holder,
                    lease_duration_seconds=self.lease_seconds,
                    acquire_time=now,
                    renew_time=now,
                ),
            )
            self._lease = self._leases.create_namespaced_lease(self.namespace, body)
            log.info("Lease %s created", self._where)
            return
        lease = self._lease
        spec = lease.spec or self._client.V1LeaseSpec()
        if spec.holder_identity != self.holder:
            spec.acquire_time = now  # someone else's (or nobody's) lease: we acquire it now
        spec.holder_identity = self.holder
        spec.lease_duration_seconds = self.lease_seconds
        spec.renew_time = now
        if spec.acquire_time is not None:
            spec.acquire_time = lease_time(spec.acquire_time)
        lease.spec = spec
        self._lease = self._leases.replace_namespaced_lease(self.node_name, self.namespace, lease)

    def _read(self) -> Any:
        try:
            return self._leases.read_namespaced_lease(self.node_name, self.namespace)
        except Exception as e:
            if is_api_error(e) and classify(e) is Failure.NOT_FOUND:
                return None
            raise


class Renewing(Protocol):
    """What the runner needs of :class:`Heartbeat`."""

    def renew(self) -> None: ...


class HeartbeatRunner:
    """Renews the heartbeat Lease every ``interval`` in its own thread, so a slow publish never
    delays it, and only while ``status`` vouches for the NRT; failures are retried sooner (with
    backoff, never later than ``interval``). Every renewal tells ``status`` whether the apiserver
    answered, which is how an outage shows in readiness on a node that writes nothing else.
    """

    def __init__(
        self,
        heartbeat: Renewing,
        interval: float,
        *,
        metrics: AgentMetrics,
        backoff: Backoff,
        stop_event: threading.Event,
        status: AgentStatus | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.heartbeat = heartbeat
        self.interval = interval
        self.metrics = metrics
        self.status = status
        self._backoff = backoff
        self._stop = stop_event
        self._clock = clock
        self._thread: threading.Thread | None = None
        self._failing: str | None = None
        self._withheld = False
        self._renewed = False  # a renewal has succeeded since start

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rte-heartbeat", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def renew_once(self) -> float:
        """One renewal, unless the agent cannot vouch for its NRT; the delay until the next one."""
        if self.status is not None:
            vouching, why = self.status.vouching(self._clock())
            if not vouching:
                self.metrics.heartbeats.inc(result="withheld")
                if not self._withheld and self._renewed:  # before the first publish, nothing changed
                    log.warning("not renewing the heartbeat Lease while the NRT may be stale: %s", why)
                self._withheld = True
                return min(self.interval, WITHHELD_RECHECK)
            if self._withheld and self._renewed:
                log.info("renewing the heartbeat Lease again")
            self._withheld = False
        try:
            self.heartbeat.renew()
        except (UnavailableError, PublishError) as e:
            return self._failed(str(e))
        except Exception as e:
            log.exception("heartbeat Lease renewal failed unexpectedly")
            return self._failed(f"{type(e).__name__}: {e}")
        self.metrics.heartbeats.inc(result="ok")
        self._renewed = True
        if self.status is not None:
            self.status.api_answered(self._clock())
        if self._failing is not None:
            log.info("heartbeat Lease renewed again")
            self._failing = None
        self._backoff.reset()
        return self.interval

    def _failed(self, error: str) -> float:
        self.metrics.heartbeats.inc(result="failed")
        if self.status is not None:
            self.status.api_failed(error)
        if error != self._failing:
            log.warning("heartbeat Lease renewal failed: %s", error)
        self._failing = error
        return min(self.interval, self._backoff.next())

    def _run(self) -> None:
        delay = 0.0
        while not self._stop.wait(delay):
            delay = self.renew_once()
