"""``rte extender``: the store, the cache, the feeds, the resync timer and the HTTP server, wired.

:class:`ExtenderApp` starts everything in background threads and stops it again (tests use it
directly); :func:`run_extender` runs it in the foreground until SIGTERM or SIGINT
(:class:`~rte.runtime.signals.SignalWaiter`).

The reserve cache is resynced every ``cacheResyncPeriodSeconds`` (OverReserve only; the other
caches have nothing to resync), and once as soon as the lists have synced, as the cache expects
at start; the extender is ready only after that first pass, so that no request waits behind it.

With TLS settings the verbs port is HTTPS with client certificates, and ``--probe-listen`` adds
a plain-HTTP server for the probes and metrics. With ``--leader-elect`` a
:class:`~rte.extender.leadership.Leadership` campaigns for the Lease (through an API client of its
own, so that a burst of relists cannot delay a renewal) and gates the verbs; stopping gives the
Lease up only after the fencing gap.
"""

from __future__ import annotations

import gc
import importlib
import logging
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from rte import __version__
from rte.consumer.cache.selection import make_cache
from rte.consumer.config import CacheMode
from rte.consumer.store import NRTStore, topologies_from_file
from rte.extender.endpoint import LeaderEndpoint
from rte.extender.gates import Gates
from rte.extender.leadership import Leadership
from rte.extender.server import STATE_MAX_AGE, ExtenderServer
from rte.extender.service import ExtenderService
from rte.extender.settings import ExtenderSettings
from rte.runtime.heap import release_free_heap
from rte.runtime.kubeclient import Source, load_api_client, raw_list_call
from rte.runtime.leaderelection import LeaseLock
from rte.runtime.reflector import Reflector
from rte.runtime.signals import SignalWaiter
from rte.runtime.tls import ServerTls

log = logging.getLogger(__name__)

EXTENDER_USER_AGENT = f"rte-extender/{__version__}"
API_QPS = 50.0
"""Client-side pacing of the extender's apiserver requests (lists, relists and watches of NRTs,
pods and Leases): kube-scheduler's own ``clientConnection`` default, the same order of traffic."""
API_TIMEOUT = 10.0
"""Seconds; bounds requests that set no timeout of their own (the watches set theirs)."""
ELECTION_QPS = 5.0
"""Pacing of the leader election's own client: a read and a write per retry period."""


class _Resyncer:
    """Runs :meth:`ExtenderService.resync` every ``period`` seconds, and once when pods synced."""

    def __init__(self, service: ExtenderService, period: float) -> None:
        self.service = service
        self.period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cache-resync", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set() and not self.service.synced():
            self._stop.wait(0.05)
        while not self._stop.is_set():
            try:
                self.service.resync()
            except Exception:  # a bug must not stop future resyncs
                log.exception("cache resync failed")
            first = self.service.gates.first_resync
            if first is not None and not first.is_set():
                # The first pass placed the listed pods on their nodes: every node with a pod has
                # a new view, whose row the first request would build otherwise (173 ms for 2500
                # candidates at 50 000 nodes, each with its agent pod; issue #27). Build them now.
                try:
                    self.service.warm()
                except Exception:  # a bug must not keep the extender from ever being ready
                    log.exception("warm-up after the first resync failed")
                # The pods and node states the pass made join the NRTs out of the cyclic
                # collector's sight, as the list's did (ExtenderService.nrt_listed): else the
                # first request to trigger a full collection walks them all.
                gc.freeze()
                # The first pass built every node's state and view: what the lists and the
                # warm-up freed stays resident among them unless given back (rte.runtime.heap).
                release_free_heap()
                first.set()  # ready from now on (a failed pass too: it logged)
            self._stop.wait(self.period)


class ExtenderApp:
    """Everything ``rte extender`` runs; ``start()`` returns once the HTTP port is bound."""

    def __init__(
        self, settings: ExtenderSettings, *, api_client: Any = None, state_max_age: float = STATE_MAX_AGE
    ) -> None:
        self.settings = settings
        self.store = NRTStore()
        self.cache = make_cache(settings.cache, self.store)
        self._api_client = api_client
        self._state_max_age = state_max_age
        self.feeds: Any = None
        self.server: ExtenderServer | None = None
        self.probe_server: ExtenderServer | None = None
        self._resyncer: _Resyncer | None = None
        # Everything readiness and serving wait for is known now, so the service is made with
        # its gates; the leader election is made here and started once the HTTP port is bound.
        self.leadership: Leadership | None = None
        self._election_client: Any = None
        if settings.election is not None:
            config = settings.election
            self._election_client = self._client(ELECTION_QPS, config.renew_deadline)
            lock = LeaseLock(
                self._election_client, config.namespace, config.name, timeout=config.renew_deadline
            )
            self.leadership = Leadership(lock, config, lease_watch=self._leader_lease_watch)
        timer = settings.cache.mode is CacheMode.OVER_RESERVE and settings.cache.resync_period > 0
        gates = Gates(
            pods_tracked=not settings.nrt_files,
            first_resync=threading.Event() if timer else None,  # set by the _Resyncer
            watch_status=None if settings.nrt_files else self._watch_status,
            leadership=self.leadership,
            answered=self.leadership.answered if self.leadership is not None else None,
        )
        self.service = ExtenderService(
            self.store,
            self.cache,
            settings.strategy,
            profiles=settings.cache.config.profiles,
            informer_mode=settings.cache.config.informer_mode,
            compat=settings.compat,
            gates=gates,
        )

    def _watch_status(self) -> Mapping[str, Any]:
        return self.feeds.status() if self.feeds is not None else {}

    def _client(self, qps: float, timeout: float) -> Any:
        return self._api_client or load_api_client(
            self.settings.kubeconfig,
            sources=(Source.IN_CLUSTER, Source.DEFAULT_KUBECONFIG),
            qps=qps,
            timeout=timeout,
            user_agent=EXTENDER_USER_AGENT,
        )

    def start(self) -> ExtenderApp:
        # The kernel's first np.unique imports numpy.ma (80 ms): now, on this thread, before any
        # other starts; not in the first request, nor in the watch thread's warm-up, where it held
        # the import lock while the leader election's thread needed it.
        importlib.import_module("numpy.ma")
        if self.settings.nrt_files:
            topologies = [t for path in self.settings.nrt_files for t in topologies_from_file(path)]
            self.store.replace_all(topologies)
            self.service.nrt_listed()
        else:
            from rte.extender.watch import ClusterFeeds

            api_client = self._client(API_QPS, API_TIMEOUT)
            self.feeds = ClusterFeeds(
                api_client,
                self.store,
                self.service,
                heartbeat_namespace=self.settings.heartbeat_namespace or None,
                heartbeat_source=self.settings.heartbeat_source,
                agent_selector=self.settings.agent_selector,
            ).start()
        tls = ServerTls(self.settings.tls) if self.settings.tls is not None else None
        self.server = ExtenderServer(
            self.service,
            self.settings.host,
            self.settings.port,
            max_body=self.settings.max_request_body,
            state_max_age=self._state_max_age,
            tls=tls,
        ).start()
        if self.settings.probe_address is not None:
            self.probe_server = ExtenderServer(self.service, *self.settings.probe_address, probes_only=True)
            self.probe_server.start()
        if self.leadership is not None:
            self._start_leadership(self.leadership)
        if self.service.gates.first_resync is not None:
            self._resyncer = _Resyncer(self.service, self.settings.cache.resync_period)
            self._resyncer.start()
        log.info(
            "extender serving on %s%s (cache %s, strategy %s%s)",
            self.server.url,
            f", probes on {self.probe_server.url}" if self.probe_server is not None else "",
            self.settings.cache.mode.value,
            self.settings.strategy.type,
            ", leader election" if self.leadership is not None else "",
        )
        return self

    def _start_leadership(self, leadership: Leadership) -> None:
        config = self.settings.election
        assert config is not None and self.server is not None
        endpoint = None
        if self.settings.leader_service:
            endpoint = LeaderEndpoint(
                self._election_client,
                config.namespace,
                self.settings.leader_service,
                self.settings.advertise_address,
                self.server.port,
                pod_name=socket.gethostname(),  # a pod's host name is its name
            )
        feeds = self.feeds
        leadership.start(
            self.service,
            relist_pods=(lambda: feeds.relist("pods")) if feeds is not None else None,
            endpoint=endpoint,
        )

    def _leader_lease_watch(self, on_event: Callable[[str, Any], None]) -> Reflector:
        """A watch of the leader Lease alone, through the election's client (issue #26 item 11:
        a standby looks as soon as it changes)."""
        config = self.settings.election
        assert config is not None
        leases = f"/apis/coordination.k8s.io/v1/namespaces/{config.namespace}/leases"
        selector = ("fieldSelector", f"metadata.name={config.name}")
        listing = raw_list_call(self._election_client, leases, (selector,))
        return Reflector("leader-lease", listing, on_list=lambda _: None, on_event=on_event)

    def stop(self) -> None:
        if self.leadership is not None:
            self.leadership.stop()  # first: no verb is answered after this
        if self.probe_server is not None:
            self.probe_server.stop()
        if self.server is not None:
            self.server.stop()
        if self._resyncer is not None:
            self._resyncer.stop()
        if self.feeds is not None:
            self.feeds.stop()

    def __enter__(self) -> ExtenderApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_extender(settings: ExtenderSettings) -> None:
    """Run until SIGTERM or SIGINT."""
    with SignalWaiter() as signals:
        app = ExtenderApp(settings).start()
        try:
            signals.wait()
            log.info("received %s: shutting down", signals.name)
        finally:
            app.stop()
