"""Optional per-zone load attributes: CPU utilisation and memory pressure, banded.

Load-aware schedulers want to avoid busy nodes; NUMA-aware ones can go further and prefer a
zone that is not saturated. This module turns host counters into two zone attributes,
``cpuUtilizationPercent`` and ``memoryPressurePercent`` (integer percent strings), and is off
unless the daemon is configured to use it.

**Banding keeps writes near zero.** Load moves all the time; publishing every wiggle would
rewrite the NRT (and wake every scheduler watching it) on every cycle. A published value
changes only when a new reading leaves the band ``[last - band, last + band]`` around the last
*published* value, so a steady node produces no writes and a real shift shows up at once.

Definitions (documented because consumers compare them against thresholds):

* CPU: busy share of the zone's CPU time since the previous sample, over the CPUs sysfs puts
  in the zone. Busy is everything but ``idle`` and ``iowait``; ``guest`` and ``guest_nice`` are
  already inside ``user`` and ``nice`` and are not added twice. The first sample only primes.
* Memory: the share of the zone's regular memory (``MemTotal`` minus its hugepage pool, which
  is never "free" to ordinary pages) that is in use and not easily reclaimable:
  ``MemTotal - MemFree - hugepages - (Active(file) + Inactive(file) + SReclaimable)``.
  The hugepage pool is the one read at startup (``Machine``).

Per-CPU times come from psutil (``/proc/stat``), which lists online CPUs in ascending id order;
they are mapped onto the machine's online CPU ids, and a sample whose CPU count does not match
(a CPU went on- or offline since startup) is skipped rather than misattributed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from rte.host.machine import Machine
from rte.host.sysfs import parse_node_meminfo
from rte.host.sysfsio import read_text as sysfs_read_text
from rte.model.attributes import ZONE_CPU_UTILIZATION, ZONE_MEMORY_PRESSURE
from rte.model.topology import Attribute, NodeTopology, zone_name

LOAD_ATTRIBUTES = (ZONE_CPU_UTILIZATION, ZONE_MEMORY_PRESSURE)


class CpuTimes(Protocol):
    """What psutil's ``scputimes`` offers (Linux fields; missing ones count as 0)."""

    @property
    def user(self) -> float: ...
    @property
    def system(self) -> float: ...
    @property
    def idle(self) -> float: ...


_BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")
_IDLE_FIELDS = ("idle", "iowait")


def busy_and_total(times: CpuTimes) -> tuple[float, float]:
    """(busy seconds, all seconds) of one CPU's cumulative times."""
    busy = sum(float(getattr(times, f, 0.0)) for f in _BUSY_FIELDS)
    idle = sum(float(getattr(times, f, 0.0)) for f in _IDLE_FIELDS)
    return busy, busy + idle


def cpu_percent(
    before: Mapping[int, CpuTimes], after: Mapping[int, CpuTimes], cpus: Iterable[int]
) -> float | None:
    """Busy percent of ``cpus`` between two samples; None when no time passed on any of them."""
    busy = total = 0.0
    for cpu in cpus:
        if cpu not in before or cpu not in after:
            continue
        b0, t0 = busy_and_total(before[cpu])
        b1, t1 = busy_and_total(after[cpu])
        if t1 < t0 or b1 < b0:
            continue  # counters went backwards (a CPU was re-onlined): no information
        busy += b1 - b0
        total += t1 - t0
    if total <= 0:
        return None
    return 100.0 * busy / total


def memory_percent(meminfo: Mapping[str, int], hugepages_bytes: int = 0) -> float | None:
    """Percent of regular memory in use and not easily reclaimable; None for a memory-less zone."""
    mem_total = meminfo.get("MemTotal")
    if mem_total is None or "MemFree" not in meminfo:
        return None
    regular = mem_total - hugepages_bytes
    if regular <= 0:
        return None
    reclaimable = sum(meminfo.get(k, 0) for k in ("Active(file)", "Inactive(file)", "SReclaimable"))
    used = mem_total - meminfo["MemFree"] - hugepages_bytes - reclaimable
    return 100.0 * min(max(used, 0), regular) / regular


def banded(last: int | None, reading: float, band: float) -> int:
    """The value to publish: the new reading when it left the band around ``last``, else ``last``."""
    new = round(reading)
    if last is None or abs(new - last) > band:
        return new
    return last


def psutil_cpu_times(cpu_ids: Sequence[int]) -> Callable[[], dict[int, CpuTimes]]:
    """A reader of per-CPU times keyed by real CPU id (empty when the online set changed)."""
    ids = sorted(cpu_ids)

    def read() -> dict[int, CpuTimes]:
        import psutil

        times = psutil.cpu_times(percpu=True)
        if len(times) != len(ids):
            return {}
        return dict(zip(ids, times, strict=True))

    return read


class ZoneLoadSampler:
    """Samples CPU and memory load per NUMA zone; see the module docstring."""

    def __init__(
        self,
        machine: Machine,
        sysfs_root: Path,
        *,
        band: float = 10.0,
        cpu_times: Callable[[], Mapping[int, CpuTimes]] | None = None,
        read_text: Callable[[str], str | None] = sysfs_read_text,
    ) -> None:
        if band < 0:
            raise ValueError(f"band must be >= 0, got {band}")
        self.machine = machine
        self.band = band
        self._node_dir = os.path.join(os.fspath(sysfs_root), "devices", "system", "node")
        online = machine.online_cpus if machine.online_cpus is not None else frozenset(machine.cpus)
        self._cpu_times = cpu_times or psutil_cpu_times(sorted(online))
        self._read_text = read_text
        self._published: dict[tuple[int, str], int] = {}
        self._previous: Mapping[int, CpuTimes] = self._cpu_times()

    def sample(self) -> dict[int, dict[str, str]]:
        """Zone id -> load attributes to publish (only zones with at least one value)."""
        current = self._cpu_times()
        previous, self._previous = self._previous, (current or self._previous)
        out: dict[int, dict[str, str]] = {}
        for node in self.machine.nodes:
            readings: dict[str, float | None] = {
                ZONE_CPU_UTILIZATION: cpu_percent(previous, current, node.cpus) if node.cpus else None,
                ZONE_MEMORY_PRESSURE: self._memory(node.id, node.hugepages_total_bytes),
            }
            attrs: dict[str, str] = {}
            for name, reading in readings.items():
                key = (node.id, name)
                if reading is not None:
                    self._published[key] = banded(self._published.get(key), reading, self.band)
                if key in self._published:  # no reading this time: keep what was published
                    attrs[name] = str(self._published[key])
            if attrs:
                out[node.id] = attrs
        return out

    def _memory(self, node_id: int, hugepages_bytes: int) -> float | None:
        path = os.path.join(self._node_dir, f"node{node_id}", "meminfo")
        text = self._read_text(path)
        if text is None:
            return None
        try:
            meminfo = parse_node_meminfo(text)
        except ValueError:
            return None  # a torn read; the next sample will do
        return memory_percent(meminfo, hugepages_bytes)


def with_zone_load(topology: NodeTopology, load: Mapping[int, Mapping[str, str]]) -> NodeTopology:
    """``topology`` with each zone's load attributes replaced by ``load[zone id]`` (canonical)."""
    by_name = {zone_name(zone_id): attrs for zone_id, attrs in load.items()}
    zones = []
    for zone in topology.zones:
        attrs = by_name.get(zone.name)
        if attrs is None and not any(a.name in LOAD_ATTRIBUTES for a in zone.attributes):
            zones.append(zone)
            continue
        kept = tuple(a for a in zone.attributes if a.name not in LOAD_ATTRIBUTES)
        added = tuple(Attribute(k, v) for k, v in sorted((attrs or {}).items()))
        zones.append(replace(zone, attributes=kept + added))
    return replace(topology, zones=tuple(zones)).canonical()
