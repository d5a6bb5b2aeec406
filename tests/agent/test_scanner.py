"""The scanner across cycles: checkpoints read from the kubelet root, and the last consistent state
as the ceiling of an inconsistent one."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from rte.agent.compute.reading import PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.agent.scanner import CheckpointFiles, KubeletConfigCache, Scan, Scanner
from rte.host.kubelet_state import CPU_MANAGER_STATE
from rte.host.sysfs import read_machine
from rte.model.vocabulary import FingerprintMethod
from rte.podres.reader import DirectoryReader
from tests.helpers.paths import KUBELET_FIXTURES, R640_KUBELET_CONFIG, R640_STATIC, R640_SYSFS

LIST = "list.protojson.json"
CPU_STATE = KUBELET_FIXTURES / "state" / "cpu_manager_state.SYNTHETIC.dell-r640-scenario.json"


def scanner(tmp_path: Path, kubelet_root: Path | None = None) -> tuple[Scanner, dict[str, Any]]:
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    for name in (LIST, "get_allocatable_resources.protojson.json"):
        shutil.copy(R640_STATIC / name, scenario / name)
    machine = read_machine(R640_SYSFS, pci=False)
    made = Scanner(
        node_name="r640",
        reader=DirectoryReader(scenario),
        machine_loader=lambda: machine,
        kubelet_config=KubeletConfigCache(R640_KUBELET_CONFIG, None),
        rules=PublishingRules(FingerprintMethod.ALL),
        checkpoints=CheckpointFiles(kubelet_root),
    )
    return made, json.loads((scenario / LIST).read_text())


def write_list(made: Scanner, doc: dict[str, Any]) -> None:
    (Path(made.reader.endpoint) / LIST).write_text(json.dumps(doc))  # type: ignore[union-attr]


def available(scan: Scan, zone: int, resource: str) -> int:
    found = scan.topology.zones[zone].resource(resource)
    assert found is not None
    return int(found.available)


def test_an_inconsistent_list_never_publishes_more_than_the_last_consistent_one(tmp_path: Path) -> None:
    made, doc = scanner(tmp_path)
    first = made.scan(fresh_list=True)
    assert first.inconsistent is None
    before = (available(first, 1, "cpu"), available(first, 1, "memory"))

    # The worker on zone 1 leaves while the List lists another pod twice, differently: the data
    # contradicts itself, so zone 1 must not look freer than before.
    pods = doc["podResources"]
    dpdk = next(p for p in pods if p["name"] == "dpdk-app-0")
    other = copy.deepcopy(dpdk)
    other["containers"][0]["cpuIds"] = ["6"]
    write_list(made, {"podResources": [p for p in pods if p["name"] != "numa1-worker-7f9c"] + [other]})
    second = made.scan(fresh_list=True)
    assert second.inconsistent is not None
    assert "duplicate_pod" in {f.kind for f in second.accounting.findings}
    assert (available(second, 1, "cpu"), available(second, 1, "memory")) == before
    assert available(second, 0, "cpu") == available(first, 0, "cpu") - 1  # CPU 6: the worst case

    # Consistent again: the worker's CPUs and memory come back.
    write_list(made, {"podResources": [p for p in pods if p["name"] != "numa1-worker-7f9c"]})
    third = made.scan(fresh_list=True)
    assert third.inconsistent is None
    assert available(third, 1, "cpu") == before[0] + 8
    assert available(third, 1, "memory") == before[1] + 4 * 2**30


def test_without_a_consistent_state_yet_the_worst_case_charges_stand_alone(tmp_path: Path) -> None:
    made, doc = scanner(tmp_path)
    clean = compute_topology(made.read(fresh_list=True))
    write_list(made, {"podResources": doc["podResources"] * 2})  # every pod listed twice, identically
    scan = made.scan(fresh_list=True)
    assert scan.inconsistent is not None
    assert scan.topology.zones == clean.topology.zones  # identical entries are charged once


def test_the_cpu_manager_checkpoint_under_the_kubelet_root_is_read_and_charged(tmp_path: Path) -> None:
    root = tmp_path / "kubelet-state"
    root.mkdir()
    made, _ = scanner(tmp_path, root)
    without = made.scan(fresh_list=True)
    state = json.loads(CPU_STATE.read_text())
    # An init container of dpdk-app-0 still holds CPUs 6 and 58 (zone 0): not in List.
    state["entries"]["6b0c9a57-2f57-4c1e-9d0a-6f1e2a7d3c11"]["init"] = "6,58"
    state["defaultCpuSet"] = "0-1,8,10-53,60,62-103"
    (root / CPU_MANAGER_STATE).write_text(json.dumps(state))
    held = made.scan(fresh_list=True)
    assert available(held, 0, "cpu") == available(without, 0, "cpu") - 2
    assert available(held, 1, "cpu") == available(without, 1, "cpu")
    assert held.inconsistent is None
