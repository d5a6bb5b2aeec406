"""The laptop helpers: a generated sysfs tree matches its scenario; local_pods edits what is served."""

from __future__ import annotations

import json
from pathlib import Path

from rte.agent.compute.reading import KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.host.sysfs import read_machine
from rte.model.vocabulary import FingerprintMethod
from rte.podres.files import PodResourcesFiles
from rte.testing import fake_sysfs, local_doubles, local_pods, scenarios
from tests.helpers.paths import R640_STATIC

SCENARIO = R640_STATIC


def test_a_generated_sysfs_tree_matches_its_scenario_without_findings(tmp_path: Path) -> None:
    scenario = scenarios.synthetic(numa_ids=(0, 2, 5), cpus=48, pods=40, devices=6, seed=3)
    machine = read_machine(fake_sysfs.write_sysfs(tmp_path / "sys", scenario), pci=False)
    assert [n.id for n in machine.nodes] == [0, 2, 5]
    assert machine.nodes[1].cpus == frozenset(scenario.zone_cpus[2])
    files = PodResourcesFiles(scenario.write(tmp_path / "scenario"))
    kubelet = KubeletReading(files.get_allocatable(), files.list())
    computed = compute_topology(
        NodeReading("n1", machine, None, kubelet, PublishingRules(FingerprintMethod.ALL))
    )
    assert computed.accounting.findings == ()


def test_local_pods_adds_and_removes_pods_in_the_served_list(tmp_path: Path) -> None:
    local_doubles.copy_scenario(SCENARIO, tmp_path / "scenario")
    before = len(PodResourcesFiles(tmp_path / "scenario").list())
    local_pods.main(["--run-dir", str(tmp_path), "add", "demo", "--cpus", "6,8", "--memory", "1Gi"])
    pods = PodResourcesFiles(tmp_path / "scenario").list()
    demo = next(p for p in pods if p.name == "demo")
    assert demo.containers[0].cpu_ids == frozenset({6, 8})
    assert demo.containers[0].memory[0].size == 2**30
    local_pods.main(["--run-dir", str(tmp_path), "remove", "demo"])
    assert len(PodResourcesFiles(tmp_path / "scenario").list()) == before
    assert json.loads((tmp_path / "scenario" / "list.protojson.json").read_text())["podResources"]
