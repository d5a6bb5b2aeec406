"""The agent's Prometheus series (prefix ``rte_agent_``), in its own registry.

The exposition, the registry and the label-keyword families come from :mod:`rte.runtime.metrics`
(prometheus_client underneath); ``Registry`` and ``CONTENT_TYPE`` are re-exported here because
the HTTP server serves ``AgentMetrics.registry.expose()`` with that content type.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable

from rte.runtime.metrics import (
    CONTENT_TYPE,
    Counter,
    Gauge,
    Histogram,
    Registry,
    SnapshotGauge,
    add_runtime_collectors,
)

__all__ = ["CONTENT_TYPE", "TAE_REASONS", "WRITE_OUTCOMES", "AgentMetrics", "Registry"]

WRITE_OUTCOMES = ("created", "patched", "skipped", "recreated", "failed")

TAE_REASONS = ("TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError")
"""``status.reason`` of a pod the kubelet refused at admission over alignment
(``kubernetes/kubernetes pkg/kubelet/cm/topologymanager/topology_manager.go``,
``pkg/kubelet/cm/cpumanager/policy_static.go``, ``pkg/kubelet/lifecycle/predicate.go``)."""


class AgentMetrics:
    """Every series the agent exports, plus the process metrics, in ``registry``."""

    def __init__(self, node: str, version: str, registry: Registry | None = None) -> None:
        r = self.registry = registry if registry is not None else Registry()
        add_runtime_collectors(r)
        self.build_info = Gauge(
            r,
            "rte_agent_build_info",
            "Always 1; labels carry the agent version.",
            ("version", "python", "node"),
        )
        self.build_info.set(1, version=version, python=platform.python_version(), node=node)
        self.scan_seconds = Histogram(
            r,
            "rte_agent_scan_duration_seconds",
            "Time to read the node and compute its NodeResourceTopology.",
        )
        self.publish_seconds = Histogram(
            r, "rte_agent_publish_duration_seconds", "Time spent in one publish call (retries included)."
        )
        self.writes = Counter(
            r,
            "rte_agent_nrt_writes_total",
            "NodeResourceTopology publish decisions by outcome (skipped: content unchanged, no write).",
            ("outcome",),
        )
        for outcome in WRITE_OUTCOMES:
            self.writes.inc(0, outcome=outcome)
        self.podresources_errors = Counter(
            r,
            "rte_agent_podresources_errors_total",
            "Failed kubelet podresources calls by method and kind.",
            ("method", "kind"),
        )
        self.polls = Counter(r, "rte_agent_kubelet_polls_total", "podresources List polls made.")
        self.changes = Counter(
            r, "rte_agent_kubelet_changes_total", "Polls whose List result differed from the previous one."
        )
        self.triggers = Counter(
            r, "rte_agent_triggers_total", "Cycle triggers received by reason.", ("reason",)
        )
        self.cycles = Counter(r, "rte_agent_cycles_total", "Cycles run, by result.", ("result",))
        self.cycle_errors = Counter(
            r,
            "rte_agent_cycle_errors_total",
            "Failed cycles by cause (kubelet, input, apiserver, crd, ...).",
            ("cause",),
        )
        self.heartbeats = Counter(
            r, "rte_agent_heartbeats_total", "Heartbeat Lease renewals by result.", ("result",)
        )
        self.last_publish = Gauge(
            r,
            "rte_agent_last_successful_publish_timestamp_seconds",
            "Unix time of the last publish that left the stored NRT equal to the computed one.",
        )
        self.ready = Gauge(r, "rte_agent_ready", "1 when /readyz would answer 200.")
        self.sysfs_failing = Gauge(
            r,
            "rte_agent_sysfs_read_failing",
            "1 while the last sysfs re-read failed and the last good machine model is published.",
        )
        self.sysfs_failing.set(0.0)
        self.zone_available = SnapshotGauge(
            r,
            "rte_agent_zone_available",
            "Available amount per zone and resource in the last computed object (CPUs, bytes, devices).",
            ("zone", "resource"),
        )
        self.findings = SnapshotGauge(
            r,
            "rte_agent_findings",
            "Input inconsistencies handled by an accounting rule in the last computed object, by kind.",
            ("kind",),
        )
        # Exposed at 0 from the start, so alerts on increase() see the first error.
        self.topology_affinity_errors = Counter(
            r,
            "rte_agent_topology_affinity_errors_total",
            "Pods on this node the kubelet refused at admission for NUMA alignment, by status.reason.",
            ("reason",),
        )
        for reason in TAE_REASONS:
            self.topology_affinity_errors.inc(0, reason=reason)
        self.nrt_repairs = Counter(
            r,
            "rte_agent_nrt_repairs_total",
            "Times the agent's own NRT was found deleted or edited by someone else (what: deleted,"
            " edited); each asks for a repair, rate limited.",
            ("what",),
        )
        for what in ("deleted", "edited"):
            self.nrt_repairs.inc(0, what=what)
        self.policy_known = Gauge(
            r,
            "rte_agent_topology_policy_known",
            "1 when the published NRT states the node's Topology Manager policy; 0 when the agent"
            " could not learn it (no kubelet config): consumers then treat the node as policy none.",
        )

    def record_zones(self, zones: Iterable[tuple[str, str, float]]) -> None:
        self.zone_available.replace_all({(zone, res): value for zone, res, value in zones})

    def record_findings(self, kinds: Iterable[str]) -> None:
        counts: dict[tuple[str, ...], float] = {}
        for kind in kinds:
            counts[(kind,)] = counts.get((kind,), 0) + 1
        self.findings.replace_all(counts)
