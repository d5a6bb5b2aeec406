"""What a simulation measured, as JSON-ready data and as a table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rte.consumer.cache.interface import ResyncReport
from rte.consumer.cache.resync import CompareResult


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of already sorted values; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * q // 100))  # ceil(n * q / 100), at least 1
    return sorted_values[int(rank) - 1]


@dataclass
class Counters:
    """Event counts; every field ends up in the JSON output."""

    pods_created: int = 0
    """Original pods (replacements of failed pods are not counted again)."""
    pods_scheduled: int = 0
    """Pods admitted by a kubelet (each original pod at most once)."""
    topology_affinity_errors: int = 0
    pods_with_tae: int = 0
    """Original pods that met at least one TopologyAffinityError."""
    scheduling_attempts: int = 0
    unschedulable_attempts: int = 0
    unschedulable_with_room: int = 0
    """Unschedulable attempts while some node's kubelet could have admitted the pod and the node
    had room node-wide: the cost of stale or pessimistic NUMA data, not of a full cluster."""
    nrt_writes: int = 0
    """Agent publishes whose content changed (the agent skips identical objects)."""
    nrt_skipped: int = 0
    """Agent cycles that found nothing new to write."""
    store_updates: int = 0
    resync_passes: int = 0
    resync_checks: int = 0
    fingerprint_matches: int = 0
    fingerprint_mismatches: int = 0
    fingerprint_other: int = 0
    """Missing, malformed or incompatible fingerprints (expected 0)."""
    flushes: int = 0
    config_flushes: int = 0
    fingerprint_disagreements: int = 0
    """Checks where the fingerprint verdict contradicts the simulator's ground truth (the NRT's
    pod set equal to the scheduler's, yet a mismatch; or different, yet a match). Must be 0."""
    nrt_adoptions: int = 0
    """Reserve cache, history reconciliation: NRTs adopted on a match with a recent pod set."""
    nrt_unmatched: int = 0
    """The same: NRTs whose fingerprint matched none of the node's recent pod sets when tried."""
    refused_with_room: dict[str, int] = field(default_factory=dict)
    """For unschedulable attempts with room somewhere: per cache diagnosis
    (:mod:`rte.consumer.cache.diagnosis`), how many nodes with room were refused for it."""
    preemptions: int = 0
    """Nominations: a pod's cycle found no node and preemption evicted pods for it."""
    victims: int = 0
    """Pods evicted by preemption."""
    false_evictions: int = 0
    """Victims evicted for a nomination after which the pod was not admitted on that node."""
    accounting_findings: int = 0
    filter_evaluations: int = 0
    events: int = 0

    def count_comparisons(self, report: ResyncReport, same_pods: Callable[[str], bool]) -> None:
        """One resync pass's fingerprint comparisons; ``same_pods(node)``: the node's NRT in the
        store counted exactly the pods the node has now (the ground truth a verdict must agree
        with)."""
        self.resync_passes += 1
        for name, comparison in report.comparisons.items():
            self.resync_checks += 1
            if comparison.result is CompareResult.MATCH:
                self.fingerprint_matches += 1
            elif comparison.result is CompareResult.MISMATCH:
                self.fingerprint_mismatches += 1
            else:
                self.fingerprint_other += 1
                continue
            if same_pods(name) != (comparison.result is CompareResult.MATCH):
                self.fingerprint_disagreements += 1


class PendingTimes:
    """Creation-to-admission times of the scheduled pods, also per pod shape and priority class."""

    def __init__(self, shapes: Sequence[str], priorities: Sequence[str]) -> None:
        self.every: list[float] = []
        self._by_shape: dict[str, list[float]] = {name: [] for name in shapes}
        self._by_priority: dict[str, list[float]] = {name: [] for name in priorities}
        self._shapes, self._priorities = list(shapes), list(priorities)

    def record(self, waited: float, shape: int, priority: int) -> None:
        """A pod of mix entry ``shape`` and class ``priority`` (positions) waited ``waited``."""
        self.every.append(waited)
        self._by_shape[self._shapes[shape]].append(waited)
        self._by_priority[self._priorities[priority]].append(waited)

    def by_shape(self) -> dict[str, list[float]]:
        return {name: sorted(times) for name, times in self._by_shape.items()}

    def by_priority(self) -> dict[str, list[float]]:
        return {name: sorted(times) for name, times in self._by_priority.items()}


@dataclass
class SimResult:
    config: dict[str, Any]
    counters: Counters
    pending_times: list[float]
    """Creation to admission, seconds, per scheduled pod (sorted)."""
    still_pending: int
    sim_time: float
    wall_seconds: float
    rate: float
    """Poisson arrival rate used (pods/s)."""
    pending_by_shape: dict[str, list[float]] = field(default_factory=dict)
    """The same per pod shape (as written in the pod mix), sorted."""
    pending_by_priority: dict[str, list[float]] = field(default_factory=dict)
    """The same per priority class (lowest first), sorted."""
    series: dict[str, list[float]] = field(default_factory=dict)
    """Time series sampled during the run: ``t``; ``pending`` (created, not yet admitted);
    ``running``; ``tae`` (cumulative); ``refused`` (last cycle found no node, waiting to retry)."""

    def pending_summary(self, values: Sequence[float] | None = None) -> dict[str, float | None]:
        """p50/p90/p99/max/mean of sorted pending times (default: every scheduled pod)."""
        if values is None:
            values = self.pending_times
        return {
            "p50": percentile(values, 50),
            "p90": percentile(values, 90),
            "p99": percentile(values, 99),
            "max": values[-1] if values else None,
            "mean": sum(values) / len(values) if values else None,
        }

    def to_dict(self, *, series: bool = False) -> dict[str, Any]:
        """The JSON output. Everything but ``timing`` is reproducible: same config, same bytes."""
        out: dict[str, Any] = {
            "config": self.config,
            "rate": self.rate,
            "sim_time": self.sim_time,
            "counters": {k: dict(v) if isinstance(v, dict) else v for k, v in vars(self.counters).items()},
            "still_pending": self.still_pending,
            "pending_seconds": self.pending_summary(),
            "pending_seconds_by_shape": {
                name: {"scheduled": len(times), **self.pending_summary(times)}
                for name, times in self.pending_by_shape.items()
            },
            "pending_seconds_by_priority": {
                name: {"scheduled": len(times), **self.pending_summary(times)}
                for name, times in self.pending_by_priority.items()
            },
        }
        if series:
            out["series"] = self.series
        out["timing"] = {
            "wall_seconds": self.wall_seconds,
            "events_per_second": self.counters.events / self.wall_seconds if self.wall_seconds else None,
        }
        return out

    def table(self) -> str:
        c = self.counters
        p = self.pending_summary()
        cfg = self.config

        def sec(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f} s"

        rows = [
            ("nodes / pods", f"{cfg['nodes']} / {cfg['pods']}"),
            (
                "cache",
                f"{cfg['cache']}"
                + (f" (resync every {cfg['cache_resync_period']:g} s)" if cfg["cache"] == "reserve" else ""),
            ),
            ("agent interval", f"{cfg['agent_interval']:g} s"),
            ("policy / scope", f"{cfg['policy']} / {cfg['scope']}"),
            ("arrivals", f"{self.rate:.2f} pods/s" + (f" + bursts {cfg['burst']}" if cfg["burst"] else "")),
            ("simulated time", f"{self.sim_time:.1f} s"),
            ("pods scheduled", f"{c.pods_scheduled} (still pending: {self.still_pending})"),
            ("TopologyAffinityErrors", f"{c.topology_affinity_errors} (pods affected: {c.pods_with_tae})"),
            ("pending p50 / p90 / p99", f"{sec(p['p50'])} / {sec(p['p90'])} / {sec(p['p99'])}"),
            ("pending max / mean", f"{sec(p['max'])} / {sec(p['mean'])}"),
            *(
                (f"  {name}", f"p50 {sec(q['p50'])}, p99 {sec(q['p99'])} ({len(times)} pods)")
                for name, times in self.pending_by_shape.items()
                for q in (self.pending_summary(times),)
            ),
            *(
                (f"  priority {name}", f"p50 {sec(q['p50'])}, p99 {sec(q['p99'])} ({len(times)} pods)")
                for name, times in self.pending_by_priority.items()
                if len(self.pending_by_priority) > 1
                for q in (self.pending_summary(times),)
            ),
            (
                "preemption",
                f"{cfg.get('preemption', 'off')}: {c.preemptions} nominations, {c.victims} victims"
                f" (false evictions: {c.false_evictions})",
            ),
            (
                "scheduling attempts",
                f"{c.scheduling_attempts} (unschedulable: {c.unschedulable_attempts},"
                f" with room on some node: {c.unschedulable_with_room})",
            ),
            ("refused with room, why", ", ".join(f"{k} {v}" for k, v in c.refused_with_room.items()) or "-"),
            ("NRT writes", f"{c.nrt_writes} (unchanged, skipped: {c.nrt_skipped})"),
            ("NRTs adopted (history)", f"{c.nrt_adoptions} (matching no recent pod set: {c.nrt_unmatched})"),
            ("resync passes", f"{c.resync_passes} (nodes checked: {c.resync_checks}, flushed: {c.flushes})"),
            (
                "fingerprints",
                f"match {c.fingerprint_matches}, mismatch {c.fingerprint_mismatches},"
                f" other {c.fingerprint_other}, disagreements {c.fingerprint_disagreements}",
            ),
            (
                "wall time",
                f"{self.wall_seconds:.2f} s ({c.events} events,"
                f" {c.events / self.wall_seconds if self.wall_seconds else 0:,.0f} events/s)",
            ),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
