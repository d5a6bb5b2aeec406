"""Per-zone load attributes: pure arithmetic on synthetic counters, banding, and the sampler."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import pytest

from rte.agent.load import (
    ZoneLoadSampler,
    banded,
    busy_and_total,
    cpu_percent,
    memory_percent,
    with_zone_load,
)
from rte.host.machine import CpuInfo, Machine, NumaNode
from rte.host.sysfs import parse_node_meminfo, read_machine
from rte.model.attributes import ZONE_CPU_UTILIZATION as CPU
from rte.model.attributes import ZONE_MEMORY_PRESSURE as MEM
from tests.helpers.agent_api import topology
from tests.helpers.paths import R740XD_SYSFS

GiB = 1 << 30


class Times(NamedTuple):
    """The Linux fields of psutil's ``scputimes``, in its order."""

    user: float = 0.0
    nice: float = 0.0
    system: float = 0.0
    idle: float = 0.0
    iowait: float = 0.0
    irq: float = 0.0
    softirq: float = 0.0
    steal: float = 0.0
    guest: float = 0.0
    guest_nice: float = 0.0


def meminfo(node: int, total_kb: int, free_kb: int, file_kb: int = 0, sreclaimable_kb: int = 0) -> str:
    return (
        "\n".join(
            f"Node {node} {key}: {value:>12} kB"
            for key, value in (
                ("MemTotal", total_kb),
                ("MemFree", free_kb),
                ("MemUsed", total_kb - free_kb),
                ("Active(file)", file_kb // 2),
                ("Inactive(file)", file_kb - file_kb // 2),
                ("SReclaimable", sreclaimable_kb),
            )
        )
        + f"\nNode {node} HugePages_Total:     0\n"
    )


# -- pure functions -------------------------------------------------------------------------------


def test_guest_time_is_not_counted_twice_and_iowait_is_idle() -> None:
    busy, total = busy_and_total(Times(user=10, nice=2, system=3, idle=80, iowait=5, guest=7, guest_nice=1))
    assert (busy, total) == (15, 100)


def test_cpu_percent_is_the_busy_share_of_the_zones_cpus_between_two_samples() -> None:
    before = {0: Times(user=100, idle=900), 1: Times(user=50, idle=950), 2: Times(user=0, idle=1000)}
    after = {0: Times(user=190, idle=910), 1: Times(user=60, idle=1040), 2: Times(user=100, idle=1000)}
    # cpu0: 90 busy of 100; cpu1: 10 of 100 -> 50 %; cpu2 belongs to another zone.
    assert cpu_percent(before, after, {0, 1}) == pytest.approx(50.0)
    assert cpu_percent(before, after, {2}) == pytest.approx(100.0)


def test_cpu_percent_is_unknown_without_elapsed_time_or_with_counters_going_backwards() -> None:
    same = {0: Times(user=5, idle=5)}
    assert cpu_percent(same, same, {0}) is None
    assert cpu_percent({0: Times(user=50, idle=50)}, {0: Times(user=1, idle=1)}, {0}) is None
    assert cpu_percent({}, same, {0}) is None, "a CPU missing from one sample carries no information"


def test_memory_pressure_counts_used_memory_outside_the_hugepage_pool_and_page_cache() -> None:
    info = parse_node_meminfo(meminfo(0, 100 * 1024 * 1024, 30 * 1024 * 1024, file_kb=10 * 1024 * 1024))
    # 100 GiB total, 20 GiB hugepages, 30 GiB free, 10 GiB page cache -> 40 GiB of 80 GiB in use.
    assert memory_percent(info, hugepages_bytes=20 * GiB) == pytest.approx(50.0)
    assert memory_percent(info) == pytest.approx(60.0)


def test_memory_pressure_of_a_memoryless_zone_is_unknown_and_never_out_of_range() -> None:
    assert memory_percent({}) is None
    assert memory_percent({"MemTotal": 4096, "MemFree": 0}, hugepages_bytes=4096) is None
    assert memory_percent({"MemTotal": 4096, "MemFree": 8192}) == 0.0


@pytest.mark.parametrize(
    ("last", "reading", "published"),
    [
        (None, 42.4, 42),  # first value: published as is
        (50, 59.4, 50),  # inside the band: keep
        (50, 40.0, 50),  # on the edge: still inside
        (50, 60.6, 61),  # outside above
        (50, 39.0, 39),  # outside below
    ],
)
def test_a_value_changes_only_when_the_reading_leaves_the_band(
    last: int | None, reading: float, published: int
) -> None:
    assert banded(last, reading, band=10) == published


def test_a_zero_band_publishes_every_change() -> None:
    assert banded(50, 51, band=0) == 51


# -- the sampler ----------------------------------------------------------------------------------


def two_zones_and_a_memory_only_one() -> Machine:
    nodes = (
        NumaNode(0, cpus=frozenset({0, 1}), hugepages={2 * 1024 * 1024: 1024}),
        NumaNode(1, cpus=frozenset({2, 3})),
        NumaNode(2),  # CXL/PMem-like: memory, no CPUs
    )
    cpus = {i: CpuInfo(i, numa_node=i // 2) for i in range(4)}
    return Machine(nodes=nodes, cpus=cpus, online_cpus=frozenset(cpus))


class Host:
    """Injectable counters: per-CPU times and per-node meminfo text."""

    def __init__(self) -> None:
        self.times: dict[int, Times] = {i: Times(user=0, idle=0) for i in range(4)}
        self.files: dict[str, str] = {}

    def tick(self, busy: Mapping[int, float], seconds: float = 100) -> None:
        for cpu, share in busy.items():
            t = self.times[cpu]
            self.times[cpu] = t._replace(user=t.user + share * seconds, idle=t.idle + (1 - share) * seconds)

    def cpu_times(self) -> dict[int, Times]:
        return dict(self.times)

    def read_text(self, path: str) -> str | None:
        for suffix, text in self.files.items():
            if path.endswith(suffix):
                return text
        return None


@pytest.fixture
def host() -> Host:
    h = Host()
    h.files["node0/meminfo"] = meminfo(0, 8 * 1024 * 1024, 4 * 1024 * 1024)  # 8 GiB, 2 GiB hugepages
    h.files["node1/meminfo"] = meminfo(1, 8 * 1024 * 1024, 6 * 1024 * 1024)
    h.files["node2/meminfo"] = meminfo(2, 16 * 1024 * 1024, 16 * 1024 * 1024)
    return h


def sampler(host: Host, band: float = 10.0) -> ZoneLoadSampler:
    return ZoneLoadSampler(
        two_zones_and_a_memory_only_one(),
        Path("/sys"),
        band=band,
        cpu_times=host.cpu_times,
        read_text=host.read_text,
    )


def test_the_sampler_reports_each_zone_and_skips_cpu_where_there_is_none(host: Host) -> None:
    s = sampler(host)
    host.tick({0: 0.8, 1: 0.6, 2: 0.1, 3: 0.1})
    assert s.sample() == {
        0: {CPU: "70", MEM: "33"},  # (8 - 4 - 2) GiB used of 6 GiB regular memory
        1: {CPU: "10", MEM: "25"},
        2: {MEM: "0"},
    }


def test_the_first_sample_only_primes_the_cpu_counters(host: Host) -> None:
    s = sampler(host)
    assert s.sample() == {0: {MEM: "33"}, 1: {MEM: "25"}, 2: {MEM: "0"}}


def test_steady_load_inside_the_band_republishes_the_same_strings(host: Host) -> None:
    s = sampler(host)
    host.tick({0: 0.5, 1: 0.5, 2: 0.2, 3: 0.2})
    first = s.sample()
    for busy in (0.55, 0.45, 0.58, 0.42):
        host.tick({0: busy, 1: busy, 2: 0.25, 3: 0.15})
        assert s.sample() == first
    host.tick({0: 0.9, 1: 0.9, 2: 0.2, 3: 0.2})
    assert s.sample()[0][CPU] == "90"


def test_without_a_new_reading_the_last_published_value_stays(host: Host) -> None:
    s = sampler(host)
    host.tick({0: 0.3, 1: 0.3, 2: 0.3, 3: 0.3})
    assert s.sample()[0][CPU] == "30"
    assert s.sample()[0][CPU] == "30", "no time passed: nothing new to say, the value is kept"
    del host.files["node1/meminfo"]
    assert s.sample()[1] == {CPU: "30", MEM: "25"}


def test_a_torn_meminfo_read_is_skipped(host: Host) -> None:
    s = sampler(host)
    host.files["node2/meminfo"] = "Node 2 MemTotal: garbage"
    assert 2 not in s.sample()


def test_the_sampler_reads_a_real_sysfs_tree(tmp_path: Path) -> None:
    root = R740XD_SYSFS
    machine = read_machine(root, pci=False)
    cpu_ids = sorted(machine.cpu_to_node())
    times = {cpu: Times(user=10, idle=10) for cpu in cpu_ids}
    s = ZoneLoadSampler(machine, root, cpu_times=lambda: times)
    load = s.sample()
    assert sorted(load) == list(machine.node_ids)
    assert all(set(attrs) == {MEM} and 0 <= int(attrs[MEM]) <= 100 for attrs in load.values())


def test_load_attributes_replace_earlier_ones_and_leave_other_zone_attributes_alone() -> None:
    from dataclasses import replace

    from rte.model.topology import Attribute

    base = topology()
    marked = replace(
        base,
        zones=(replace(base.zones[0], attributes=(Attribute("x", "1"), Attribute(CPU, "5"))), base.zones[1]),
    )
    out = with_zone_load(marked, {0: {CPU: "70", MEM: "33"}})
    assert [(a.name, a.value) for a in out.zones[0].attributes] == [(CPU, "70"), (MEM, "33"), ("x", "1")]
    assert out.zones[1].attributes == ()
    assert with_zone_load(out, {}).zones[0].attributes == (Attribute("x", "1"),)
