"""The extender's Prometheus series (prefix ``rte_extender_``), in its own registry.

What an operator needs to see the extender from kube-scheduler's side: how long each verb takes
(kube-scheduler gives up after the extender's ``httpTimeout``, 5 s in deploy/), how calls end,
whether it is ready, and how the reserve cache's fingerprint resyncs go (nodes that keep failing
the fingerprint check stay pessimistically reserved and take fewer pods).
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping

import prometheus_client

from rte.consumer.cache.interface import ResyncReport
from rte.consumer.placement import Outcome
from rte.runtime.metrics import CallbackCounter, Counter, Gauge, Histogram, Registry, add_runtime_collectors

VERBS = ("filter", "prioritize", "preempt")

REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0)
"""Seconds. Fine around 4-5 s so that "close to the scheduler's 5 s httpTimeout" is measurable."""

RESYNC_RESULTS = ("flushed", "config_flushed", "mismatched")


class ExtenderMetrics:
    """Every series the extender exports, plus the process metrics, in ``registry``."""

    def __init__(self, version: str, registry: Registry | None = None) -> None:
        r = self.registry = registry if registry is not None else Registry()
        add_runtime_collectors(r)
        self.build_info = Gauge(
            r,
            "rte_extender_build_info",
            "Always 1; labels carry the extender version.",
            ("version", "python"),
        )
        self.build_info.set(1, version=version, python=platform.python_version())
        self.request_seconds = Histogram(
            r,
            "rte_extender_request_duration_seconds",
            "Time from a scheduler call's headers to the last byte of the answer, by verb.",
            ("verb",),
            buckets=REQUEST_BUCKETS,
        )
        self.requests = Counter(
            r,
            "rte_extender_requests_total",
            "Scheduler calls by verb and HTTP status code.",
            ("verb", "code"),
        )
        self._seconds = {verb: self.request_seconds.bound(verb=verb) for verb in VERBS}
        self._calls: dict[tuple[str, int], prometheus_client.Counter] = {}
        """Each (verb, code)'s counter, looked up once: label lookups per call were a few per
        cent of a request's time in the server."""
        for verb in VERBS:
            self.requests.inc(0, verb=verb, code="200")
        self.ready = Gauge(r, "rte_extender_ready", "1 when /readyz would answer 200.")
        self.is_leader = Gauge(
            r,
            "rte_extender_is_leader",
            "1 while this replica holds the leader Lease (always 1 without --leader-elect); only the"
            " leader answers filter and prioritize.",
        )
        self.nodes = Gauge(
            r, "rte_extender_nrt_nodes", "Nodes whose NodeResourceTopology the extender holds."
        )
        self.rejected_nrts = Gauge(
            r,
            "rte_extender_nrts_rejected",
            "NodeResourceTopology objects refused as impossible (duplicate zone names, available above"
            " allocatable, ...); their nodes are refused until a good one arrives.",
        )
        self.resyncs = Counter(r, "rte_extender_resyncs_total", "Reserve cache resync passes.")
        self.resync_nodes = Counter(
            r,
            "rte_extender_resync_nodes_total",
            "Nodes handled by resync passes, by result: flushed (fingerprint matched), config_flushed"
            " (Topology Manager configuration changed), mismatched (fingerprint did not match: the node"
            " stays marked and is checked again).",
            ("result",),
        )
        for result in RESYNC_RESULTS:
            self.resync_nodes.inc(0, result=result)
        self.mismatched_nodes = Gauge(
            r,
            "rte_extender_resync_mismatched_nodes",
            "Nodes whose fingerprint did not match at the last resync pass.",
        )

        self.numaplacement = CallbackCounter(
            r,
            "rte_extender_numaplacement_total",
            "NRTs the reserve cache adopted, by what their numaplacement attributes gave: decoded,"
            " absent (none published, or not single-numa-node), mismatch (the cache's container set"
            " is not the agent's: no placement used), error (malformed attributes: no placement used).",
            ("result",),
            declared=[(o.value,) for o in Outcome],
        )

    def track(
        self,
        *,
        ready: Callable[[], bool],
        nodes: Callable[[], int],
        leader: Callable[[], bool] = lambda: True,
        placement: Callable[[], Mapping[str, int]] | None = None,
        rejected: Callable[[], int] = lambda: 0,
    ) -> None:
        """Read readiness, the store's size, leadership, the cache's numaplacement outcomes and
        refused NRTs at each scrape."""
        if placement is not None:
            read = placement
            self.numaplacement.set_function(lambda: {(k,): float(v) for k, v in read().items()})
        self.ready.set_function(lambda: 1.0 if ready() else 0.0)
        self.rejected_nrts.set_function(lambda: float(rejected()))
        self.nodes.set_function(lambda: float(nodes()))
        self.is_leader.set_function(lambda: 1.0 if leader() else 0.0)

    def record_request(self, verb: str, code: int, seconds: float) -> None:
        """One verb call; ``verb`` must be one of :data:`VERBS`."""
        self._seconds[verb].observe(seconds)
        calls = self._calls.get((verb, code))
        if calls is None:
            calls = self._calls[verb, code] = self.requests.bound(verb=verb, code=str(code))
        calls.inc()

    def record_resync(self, report: ResyncReport) -> None:
        self.resyncs.inc()
        self.resync_nodes.inc(len(report.flushed), result="flushed")
        self.resync_nodes.inc(len(report.config_flushed), result="config_flushed")
        self.resync_nodes.inc(len(report.still_dirty), result="mismatched")
        self.mismatched_nodes.set(len(report.still_dirty))
