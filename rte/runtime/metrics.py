"""Prometheus metrics for the long-running commands (``rte run``, ``rte extender``), on prometheus_client.

prometheus_client writes the exposition; this module only fixes how rte uses it:

* **one registry per app instance** (:class:`Registry`), never the library's process-global
  default registry, so several agents or extenders in one process (tests) stay independent;
  :func:`add_runtime_collectors` puts the process, platform and GC metrics into it;
* **families addressed with label keywords** (:class:`Counter`, :class:`Gauge`,
  :class:`Histogram`): ``writes.inc(outcome="patched")``, the call shape the daemons' code uses,
  instead of the library's ``writes.labels(outcome="patched").inc()``; ``value()`` reads a
  sample back (tests, ``/state``);
* **snapshots** (:class:`SnapshotGauge`): a labelled gauge replaced whole at once, so a zone
  or kind that vanished from the last computed object vanishes from the scrape too, and a
  scrape never sees half of an update;
* no ``*_created`` series: they double every counter and histogram and nothing here reads them.

HTTP servers call :meth:`Registry.expose` and answer with :data:`CONTENT_TYPE`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

import prometheus_client
from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The text format ``generate_latest`` writes (Prometheus 2 and 3 both scrape it)."""

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]


class Registry(CollectorRegistry):
    """The metrics of one app instance."""

    def expose(self) -> str:
        """Every family in the text exposition format, for ``GET /metrics``."""
        return prometheus_client.generate_latest(self).decode("utf-8")


def add_runtime_collectors(registry: Registry) -> None:
    """``process_*`` (resident memory, CPU seconds, open fds, ...), ``python_info`` and ``python_gc_*``."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)


def _labels(labels: Mapping[str, str]) -> dict[str, str]:
    return {k: str(v) for k, v in labels.items()}


class Counter:
    """A counter, optionally labelled; a family without labels is exposed as 0 from the start."""

    def __init__(self, registry: Registry, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        self._registry = registry
        self._metric = prometheus_client.Counter(name, help, labelnames, registry=registry)
        self._sample = name if name.endswith("_total") else name + "_total"

    def _child(self, labels: Mapping[str, str]) -> prometheus_client.Counter:
        return self._metric.labels(**_labels(labels)) if labels else self._metric

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        """Raises ValueError for a negative amount or labels other than the family's."""
        self._child(labels).inc(amount)

    def bound(self, **labels: str) -> prometheus_client.Counter:
        """The series of ``labels``, to ``inc()`` on a hot path without looking it up each time."""
        return self._child(labels)

    def value(self, **labels: str) -> float:
        return self._registry.get_sample_value(self._sample, _labels(labels)) or 0.0


class Gauge:
    """A gauge, optionally labelled."""

    def __init__(self, registry: Registry, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        self._registry = registry
        self._name = name
        self._metric = prometheus_client.Gauge(name, help, labelnames, registry=registry)

    def set(self, value: float, **labels: str) -> None:
        (self._metric.labels(**_labels(labels)) if labels else self._metric).set(value)

    def set_function(self, read: Callable[[], float]) -> None:
        """An unlabelled gauge whose value is ``read()`` at each scrape."""
        self._metric.set_function(read)

    def value(self, **labels: str) -> float | None:
        return self._registry.get_sample_value(self._name, _labels(labels))


class Histogram:
    """A histogram, optionally labelled (``le`` is reserved by the format)."""

    def __init__(
        self,
        registry: Registry,
        name: str,
        help: str,
        labelnames: Sequence[str] = (),
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> None:
        self._registry = registry
        self._name = name
        self._metric = prometheus_client.Histogram(name, help, labelnames, registry=registry, buckets=buckets)

    def observe(self, value: float, **labels: str) -> None:
        (self._metric.labels(**_labels(labels)) if labels else self._metric).observe(value)

    def bound(self, **labels: str) -> prometheus_client.Histogram:
        """The series of ``labels``, to ``observe()`` on a hot path without looking it up each time."""
        return self._metric.labels(**_labels(labels)) if labels else self._metric

    def declare(self, **labels: str) -> None:
        """Expose the series for ``labels`` (all buckets at 0) before its first observation."""
        self._metric.labels(**_labels(labels))

    def count(self, **labels: str) -> int:
        return int(self._registry.get_sample_value(self._name + "_count", _labels(labels)) or 0)


class SnapshotGauge(Collector):
    """A labelled gauge whose whole set of series is replaced at once (:meth:`replace_all`)."""

    def __init__(self, registry: Registry, name: str, help: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()
        self._values: dict[tuple[str, ...], float] = {}
        registry.register(self)

    def replace_all(self, values: Mapping[tuple[str, ...], float]) -> None:
        """Swap in a complete new set of label values; series not in it disappear."""
        fresh = {tuple(str(v) for v in key): float(value) for key, value in values.items()}
        for key in fresh:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name}: label values {key} do not match {self.labelnames}")
        with self._lock:
            self._values = fresh

    def value(self, **labels: str) -> float | None:
        with self._lock:
            return self._values.get(tuple(str(labels.get(n, "")) for n in self.labelnames))

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(self.name, self.help, labels=self.labelnames)]

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(self.name, self.help, labels=self.labelnames)
        with self._lock:
            values = sorted(self._values.items())
        for key, value in values:
            family.add_metric(list(key), value)
        return [family]


class CallbackCounter(Collector):
    """A labelled counter whose values are read at each scrape from ``read`` (label values ->
    running total), for totals kept by another object; ``declared`` series always show."""

    def __init__(
        self,
        registry: Registry,
        name: str,
        help: str,
        labelnames: Sequence[str],
        declared: Iterable[tuple[str, ...]] = (),
    ) -> None:
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        self._declared = tuple(declared)
        self._read: Callable[[], Mapping[tuple[str, ...], float]] = dict
        registry.register(self)

    def set_function(self, read: Callable[[], Mapping[tuple[str, ...], float]]) -> None:
        self._read = read

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(self.name, self.help, labels=self.labelnames)
        values = {key: 0.0 for key in self._declared}
        values.update(self._read())
        for key, value in sorted(values.items()):
            family.add_metric(list(key), float(value))
        return [family]

    def describe(self) -> Iterable[Metric]:
        return [CounterMetricFamily(self.name, self.help, labels=self.labelnames)]
