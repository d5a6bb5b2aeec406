"""Several extender replicas, one leader: who answers the verbs, and how a new leader takes over.

Every replica keeps its watches warm (NRTs, pods, Leases), feeds its own reserve cache from the
same pod watch and runs the periodic resync, so every replica is ready (``/readyz``). Only the
holder of the leader Lease (:mod:`rte.runtime.leaderelection`) answers ``filter`` and
``prioritize``, and only once it has **taken over**; the others answer 503 and close the
connection. With ``--leader-elect-service`` the leader points the Service at itself
(:mod:`rte.extender.endpoint`).

**What a new leader does**, in this order, before it answers its first verb:

1. It restarts the reserve cache's startup rule (``--startup-grace``) from now, for every node:
   a node is not trusted (filtered out, score 0) until a fingerprint match, or until the grace
   ends.
2. It lists every pod again (a list begun after it won the Lease) and replaces its pod index
   with it: every pod bound before that list is known, reserved if still in flight.
3. It runs one resync: each node whose NRT's fingerprint matches the pods known on it is flushed
   (adopts that NRT, keeps or adds a reservation for every bound pod still in flight).
4. It publishes its endpoint and starts answering, while :meth:`LeaderElector.is_leader` holds.
   An answer computed while the leadership lapsed is not sent (503 instead).

**Why no pod the old leader placed is forgotten.** A pod P that the old leader let through was
placed by kube-scheduler, which binds it (an API write) right after its scheduling cycle. The
old leader's last answer precedes the new leader's Lease by at least the fencing gap,
``--leader-elect-lease-duration`` − ``--leader-elect-renew-deadline`` (5 s by default), whether
it crashed, hung or lost the apiserver. A leader that stops (SIGTERM, a rollout) gives the Lease
up as soon as it has seen bound (or deleted) every pod it answered within that gap, and after
the gap at the latest (:mod:`rte.extender.handoff`): either way P's binding was written before
the new leader won the Lease. If P's binding was written within the gap, the list of step 2
holds P bound, and:

* P still in flight (bound, not running): the pod index reserves it on every zone of its node
  (pessimistic, the reserve cache's rule), until a fingerprint match shows an NRT counting it;
* P running: it is in the node's fingerprinted pod set. Until an NRT whose fingerprint covers
  exactly that set (so an NRT computed after the kubelet admitted P) has been adopted, the node
  is not trusted (step 1); afterwards the NRT itself accounts for P.

So every placement is accounted on its node either by a reservation or by a confirmed NRT, which
is what the single process guarantees too. What is not covered: a binding delayed beyond the gap
(kube-scheduler's binding cycle waits for PreBind plugins, such as volume binding), and, after
the grace, a node whose agent has not published within it (the startup rule's own limit). The
e2e test ``tests/e2e/test_extender_failover_e2e.py`` kills the leader with SIGKILL in a burst and
checks every zone of every node against the pods bound to it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from rte.consumer.cache.overreserve import OverReserveCache
from rte.extender.endpoint import LeaderEndpoint
from rte.extender.handoff import AnsweredPods
from rte.extender.service import ExtenderService
from rte.runtime.leaderelection import ElectionConfig, LeaderElector, LeaseLock

log = logging.getLogger(__name__)

ENDPOINT_CHECK = 10.0
"""Seconds between two checks, by the leader, that the Service's EndpointSlice still names it."""


class Leadership:
    """Campaigns for the Lease and runs the takeover; :meth:`serving` gates the verbs."""

    def __init__(
        self,
        lock: LeaseLock,
        config: ElectionConfig,
        *,
        lease_watch: Callable[[Callable[[str, Any], None]], Any] | None = None,
    ) -> None:
        """Made before the service it gates (its :class:`~rte.extender.service.Gates`, with
        :attr:`answered`), started after it (:meth:`start`). ``lease_watch(on_event)`` makes a
        watch of the election's Leases (a reflector: ``start``, ``stop``); each change of ours makes
        a standby look at once instead of at its next retry, so a released Lease is taken within
        the watch's latency (issue #26, item 11)."""
        self.config = config
        self.service: ExtenderService | None = None
        self._relist_pods: Callable[[], Callable[[], bool]] | None = None
        self.endpoint: LeaderEndpoint | None = None
        self.elector = LeaderElector(lock, config, on_started=self._started, on_stopped=self._stopped)
        self.answered = AnsweredPods(config.fencing_gap)
        """The pods answered whose binding is not seen yet: the service notes them (its
        :class:`~rte.extender.service.Gates`), the hand-off waits for them."""
        self.lease_watch = lease_watch(self._lease_event) if lease_watch is not None else None
        self._guard = threading.Lock()
        self._term = 0
        self._serving_term = -1
        self.phase = "standby"
        """What the takeover is doing, for /state and the verbs' 503 (standby when not leader)."""
        self.takeovers = 0

    # --- what the front end asks ---------------------------------------------------------------

    def is_leader(self) -> bool:
        return bool(self.elector.is_leader())

    def serving(self) -> bool:
        with self._guard:
            taken_over = self._serving_term == self._term
        return taken_over and self.elector.is_leader()

    def reason(self) -> str:
        """Why this replica does not answer the verbs ("" when it does)."""
        if self.serving():
            return ""
        if not self.elector.is_leader():
            holder = self.elector.holder
            return f"not the leader (the leader is {holder})" if holder else "not the leader (no leader yet)"
        return f"taking over as leader: {self.phase}"

    def state(self) -> dict[str, Any]:
        return {
            "identity": self.config.identity,
            "lease": f"{self.config.namespace}/{self.config.name}",
            "leader": self.elector.is_leader(),
            "holder": self.elector.holder,
            "serving": self.serving(),
            "phase": self.phase,
            "takeovers": self.takeovers,
            "lastError": self.elector.last_error,
        }

    # --- lifecycle -------------------------------------------------------------------------------

    def start(
        self,
        service: ExtenderService,
        *,
        relist_pods: Callable[[], Callable[[], bool]] | None = None,
        endpoint: LeaderEndpoint | None = None,
    ) -> Leadership:
        """Campaign for the Lease; on winning, take over for ``service``. ``relist_pods()``
        starts a pod list and returns a test of whether it was delivered."""
        self.service, self._relist_pods, self.endpoint = service, relist_pods, endpoint
        self.elector.start()
        if self.lease_watch is not None:
            self.lease_watch.start()
        return self

    def _lease_event(self, event_type: str, obj: Any) -> None:
        """A change of a Lease in the election's namespace: ours, released or draining, say."""
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        if isinstance(metadata, dict) and metadata.get("name") == self.config.name:
            self.elector.nudge()

    def stop(self) -> None:
        """Stop answering now; give the Lease up once every pod answered within the fencing gap
        is seen bound or deleted (:mod:`rte.extender.handoff`), the gap at the latest."""
        answered = self.answered
        self.elector.stop(
            release=True,
            release_delay=self.config.fencing_gap,
            release_early=answered.settled if answered is not None else None,
        )
        if self.lease_watch is not None:
            self.lease_watch.stop()

    # --- callbacks from the elector ---------------------------------------------------------------

    def _started(self) -> None:
        with self._guard:
            self._term += 1
            term = self._term
        threading.Thread(target=self._lead, args=(term,), name="extender-takeover", daemon=True).start()

    def _stopped(self) -> None:
        with self._guard:
            self._term += 1
        self.phase = "standby"

    def _current(self, term: int) -> bool:
        with self._guard:
            return self._term == term and self.elector.is_leader()

    def _lead(self, term: int) -> None:
        """The takeover (module docstring), retried until done or the term ends; then endpoint upkeep."""
        while self._current(term):
            try:
                if self._take_over(term):
                    break
            except Exception as e:  # the apiserver may be away: retry while leader
                log.warning("takeover as leader failed (%s); retrying", e)
            time.sleep(self.config.retry_period)
        while self.endpoint is not None:
            time.sleep(ENDPOINT_CHECK)
            if not self._current(term):
                return
            try:
                self.endpoint.publish()
            except Exception as e:
                log.warning("cannot point the Service at this leader: %s", e)

    def _take_over(self, term: int) -> bool:
        started = time.monotonic()
        service = self.service
        assert service is not None  # set by start(), before the elector can call back
        cache = service.cache
        if isinstance(cache, OverReserveCache):
            self.phase = "restarting the startup grace"
            cache.restart_startup_grace()
        if self._relist_pods is not None:
            self.phase = "listing pods"
            delivered = self._relist_pods()
            while not delivered():
                if not self._current(term):
                    return False
                time.sleep(0.02)
        self.phase = "resyncing the reserve cache"
        service.resync()
        if self.endpoint is not None:
            self.phase = "publishing the endpoint"
            self.endpoint.publish()
        with self._guard:
            if self._term != term:
                return False
            self._serving_term = term
        self.phase = "serving"
        self.takeovers += 1
        log.info("took over as leader in %.2fs", time.monotonic() - started)
        return True
