"""Prometheus metrics in the text exposition format (version 0.0.4), without a client library.

:class:`Registry` holds counters, gauges and histograms with labels and renders them; the rules
followed: a ``# HELP`` and ``# TYPE`` line per family; help text escapes backslash and newline;
label values escape backslash, double quote and newline; histogram buckets are cumulative,
carry an ``le`` label (``+Inf`` last) and come with ``_sum`` and ``_count``; values print as
Go's strconv would (``+Inf``, ``-Inf``, ``NaN``, integers without a trailing ``.0``).

:class:`AgentMetrics` is the agent's own set of series.
"""

from __future__ import annotations

import math
import platform
import threading
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence

LabelValues = tuple[str, ...]

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _labels(names: Sequence[str], values: Sequence[str], extra: Iterable[tuple[str, str]] = ()) -> str:
    pairs = [*zip(names, values, strict=True), *extra]
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{escape_label_value(v)}"' for k, v in pairs) + "}"


class _Family:
    kind = ""

    def __init__(self, name: str, help: str, labelnames: Sequence[str], lock: threading.Lock) -> None:
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        self._lock = lock

    def _key(self, labels: Mapping[str, str]) -> LabelValues:
        if set(labels) != set(self.labelnames):
            raise ValueError(f"{self.name}: labels {sorted(labels)} != {sorted(self.labelnames)}")
        return tuple(str(labels[n]) for n in self.labelnames)

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]

    def samples(self) -> list[str]:
        raise NotImplementedError


class Counter(_Family):
    kind = "counter"

    def __init__(self, name: str, help: str, labelnames: Sequence[str], lock: threading.Lock) -> None:
        super().__init__(name, help, labelnames, lock)
        # A family without labels has exactly one series: expose it (as 0) from the start.
        self._values: dict[LabelValues, float] = {} if self.labelnames else {(): 0.0}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if amount < 0:
            raise ValueError(f"{self.name}: a counter only goes up")
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def samples(self) -> list[str]:
        return [
            f"{self.name}{_labels(self.labelnames, k)} {format_value(v)}"
            for k, v in sorted(self._values.items())
        ]


class Gauge(_Family):
    kind = "gauge"

    def __init__(self, name: str, help: str, labelnames: Sequence[str], lock: threading.Lock) -> None:
        super().__init__(name, help, labelnames, lock)
        # A family without labels has exactly one series: expose it (as 0) from the start.
        self._values: dict[LabelValues, float] = {} if self.labelnames else {(): 0.0}

    def set(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = float(value)

    def replace_all(self, values: Mapping[LabelValues, float]) -> None:
        """Swap in a complete new set of label values (series not in it disappear)."""
        with self._lock:
            self._values = {tuple(k): float(v) for k, v in values.items()}

    def value(self, **labels: str) -> float | None:
        with self._lock:
            return self._values.get(self._key(labels))

    def samples(self) -> list[str]:
        return [
            f"{self.name}{_labels(self.labelnames, k)} {format_value(v)}"
            for k, v in sorted(self._values.items())
        ]


class Histogram(_Family):
    kind = "histogram"

    def __init__(
        self,
        name: str,
        help: str,
        labelnames: Sequence[str],
        lock: threading.Lock,
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> None:
        super().__init__(name, help, labelnames, lock)
        if "le" in self.labelnames:
            raise ValueError(f"{self.name}: 'le' is reserved in histograms")
        self.buckets = tuple(sorted(float(b) for b in buckets if not math.isinf(b)))
        self._counts: dict[LabelValues, list[int]] = {}
        self._sums: dict[LabelValues, float] = {}

    def observe(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            counts = self._counts.setdefault(key, [0] * (len(self.buckets) + 1))
            counts[bisect_left(self.buckets, value)] += 1  # le is inclusive: value == bound counts
            self._sums[key] = self._sums.get(key, 0.0) + value

    def count(self, **labels: str) -> int:
        with self._lock:
            return sum(self._counts.get(self._key(labels), []))

    def samples(self) -> list[str]:
        lines = []
        for key in sorted(self._counts):
            running = 0
            for bound, n in zip((*self.buckets, math.inf), self._counts[key], strict=True):
                running += n
                le = (("le", format_value(bound)),)
                lines.append(f"{self.name}_bucket{_labels(self.labelnames, key, le)} {running}")
            lines.append(f"{self.name}_sum{_labels(self.labelnames, key)} {format_value(self._sums[key])}")
            lines.append(f"{self.name}_count{_labels(self.labelnames, key)} {running}")
        return lines


class Registry:
    """A set of metric families, rendered in registration order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: dict[str, _Family] = {}

    def _add(self, family: _Family) -> None:
        if family.name in self._families:
            raise ValueError(f"metric {family.name} registered twice")
        self._families[family.name] = family

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Counter:
        c = Counter(name, help, labelnames, self._lock)
        self._add(c)
        return c

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Gauge:
        g = Gauge(name, help, labelnames, self._lock)
        self._add(g)
        return g

    def histogram(
        self, name: str, help: str, labelnames: Sequence[str] = (), buckets: Sequence[float] = LATENCY_BUCKETS
    ) -> Histogram:
        h = Histogram(name, help, labelnames, self._lock, buckets=buckets)
        self._add(h)
        return h

    def expose(self) -> str:
        lines: list[str] = []
        with self._lock:
            for family in self._families.values():
                lines.extend(family.header())
                lines.extend(family.samples())
        return "\n".join(lines) + "\n"


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

WRITE_OUTCOMES = ("created", "patched", "skipped", "recreated", "failed")


class AgentMetrics:
    """Every series the agent exports (prefix ``rte_agent_``)."""

    def __init__(self, node: str, version: str, registry: Registry | None = None) -> None:
        r = self.registry = registry or Registry()
        self.build_info = r.gauge(
            "rte_agent_build_info", "Always 1; labels carry the agent version.", ("version", "python", "node")
        )
        self.build_info.set(1, version=version, python=platform.python_version(), node=node)
        self.scan_seconds = r.histogram(
            "rte_agent_scan_duration_seconds", "Time to read the node and compute its NodeResourceTopology."
        )
        self.publish_seconds = r.histogram(
            "rte_agent_publish_duration_seconds", "Time spent in one publish call (retries included)."
        )
        self.writes = r.counter(
            "rte_agent_nrt_writes_total",
            "NodeResourceTopology publish decisions by outcome (skipped: content unchanged, no write).",
            ("outcome",),
        )
        for outcome in WRITE_OUTCOMES:
            self.writes.inc(0, outcome=outcome)
        self.podresources_errors = r.counter(
            "rte_agent_podresources_errors_total",
            "Failed kubelet podresources calls by method and kind.",
            ("method", "kind"),
        )
        self.polls = r.counter("rte_agent_kubelet_polls_total", "podresources List polls made.")
        self.changes = r.counter(
            "rte_agent_kubelet_changes_total", "Polls whose List result differed from the previous one."
        )
        self.triggers = r.counter(
            "rte_agent_triggers_total", "Cycle triggers received by reason.", ("reason",)
        )
        self.cycles = r.counter("rte_agent_cycles_total", "Cycles run, by result.", ("result",))
        self.cycle_errors = r.counter(
            "rte_agent_cycle_errors_total",
            "Failed cycles by cause (kubelet, input, apiserver, crd, ...).",
            ("cause",),
        )
        self.heartbeats = r.counter(
            "rte_agent_heartbeats_total", "Heartbeat Lease renewals by result.", ("result",)
        )
        self.last_publish = r.gauge(
            "rte_agent_last_successful_publish_timestamp_seconds",
            "Unix time of the last publish that left the stored NRT equal to the computed one.",
        )
        self.ready = r.gauge("rte_agent_ready", "1 when /readyz would answer 200.")
        self.zone_available = r.gauge(
            "rte_agent_zone_available",
            "Available amount per zone and resource in the last computed object (CPUs, bytes, devices).",
            ("zone", "resource"),
        )
        self.findings = r.gauge(
            "rte_agent_findings",
            "Input inconsistencies handled by an accounting rule in the last computed object, by kind.",
            ("kind",),
        )

    def record_zones(self, zones: Iterable[tuple[str, str, float]]) -> None:
        self.zone_available.replace_all({(zone, res): value for zone, res, value in zones})

    def record_findings(self, kinds: Iterable[str]) -> None:
        counts: dict[tuple[str, ...], float] = {}
        for kind in kinds:
            counts[(kind,)] = counts.get((kind,), 0) + 1
        self.findings.replace_all(counts)
