"""The synthetic scenario builder (rte.testing.scenarios) and the fake kubelet as a program."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from rte.podres import convert
from rte.podres.client import PodResourcesClient
from rte.podres.files import PodResourcesFiles
from rte.testing import scenarios


def test_the_large_node_has_the_requested_shape_with_sparse_numa_ids() -> None:
    s = scenarios.large_node()
    alloc = convert.allocatable_from_proto(s.allocatable, "large")
    pods = convert.list_from_proto(s.listing, "large")
    assert len(s.numa_ids) == 8 and s.numa_ids != tuple(range(8))
    assert sum(len(c) for c in s.zone_cpus.values()) == 384
    assert len(alloc.cpu_ids) == 384 - len(s.reserved_cpus)
    assert len(alloc.devices) == 64 and len({d.numa_ids for d in alloc.devices}) > 1
    assert {n for m in alloc.memory for n in m.numa_ids} == set(s.numa_ids)
    assert len(pods) == 250


def test_the_large_node_never_over_allocates_and_has_multi_numa_memory() -> None:
    s = scenarios.large_node()
    alloc = convert.allocatable_from_proto(s.allocatable, "large")
    containers = [c for p in convert.list_from_proto(s.listing, "large") for c in p.containers]
    cpus = [cpu for c in containers for cpu in c.cpu_ids]
    assert len(cpus) == len(set(cpus)) and set(cpus) <= alloc.cpu_ids
    devices = [d.device_ids for c in containers for d in c.devices]
    assert len(devices) == len(set(devices)) and set(devices) <= {d.device_ids for d in alloc.devices}
    assert any(len(m.numa_ids) == 2 for c in containers for m in c.memory)
    for zone in s.numa_ids:
        used = sum(
            m.size for c in containers for m in c.memory if m.memory_type == "memory" and zone in m.numa_ids
        )
        assert used <= 2 * s.zone_memory["memory"]  # a two-zone block counts in both zones


def test_the_same_seed_gives_the_same_scenario_and_another_seed_does_not() -> None:
    assert scenarios.large_node(seed=3).listing == scenarios.large_node(seed=3).listing
    assert scenarios.large_node(seed=3).listing != scenarios.large_node(seed=4).listing


def test_a_written_scenario_reads_back_alike_in_every_encoding(tmp_path: Path) -> None:
    s = scenarios.synthetic(numa_ids=(0, 3, 6), cpus=24, pods=20, devices=6)
    s.write(tmp_path, ("pb", "protojson", "gojson"))
    reads = [PodResourcesFiles(tmp_path, enc) for enc in ("pb", "protojson", "gojson")]
    assert reads[0].list() == reads[1].list() == reads[2].list() == convert.list_from_proto(s.listing, "s")
    assert reads[0].get_allocatable() == reads[1].get_allocatable() == reads[2].get_allocatable()


def test_the_fake_kubelet_runs_as_a_program_and_removes_its_socket_on_sigterm(tmp_path: Path) -> None:
    scenarios.synthetic(numa_ids=(0, 2), cpus=8, pods=3, devices=2).write(tmp_path / "scn")
    sock = Path(f"/tmp/fkl-test-{time.monotonic_ns()}.sock")
    cmd = [
        sys.executable,
        "-m",
        "rte.testing.fake_kubelet",
        "--socket",
        str(sock),
        "--scenario",
        str(tmp_path / "scn"),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "serving" in proc.stdout.readline()
        with PodResourcesClient(str(sock)) as client:
            client.wait_ready(timeout=10)
            assert len(client.list()) == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert not sock.exists()
    finally:
        proc.kill()
        sock.unlink(missing_ok=True)
