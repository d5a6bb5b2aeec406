"""Where the repository's files are, for tests: fixtures (sysfs trees, podresources scenarios,
kubelet configs and checkpoints) and the shipped manifests.

The R640 trio is the node most agent tests run on: a Dell R640 with 2 NUMA zones and SR-IOV
VFs, its podresources scenario with static CPU and memory managers, and the matching kubelet
config and memory manager checkpoint.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
HACK = REPO / "hack"

FIXTURES = REPO / "tests" / "fixtures"
SYSFS_FIXTURES = FIXTURES / "sysfs"
PODRES_FIXTURES = FIXTURES / "podres"
KUBELET_FIXTURES = FIXTURES / "kubelet"

R640_SYSFS = SYSFS_FIXTURES / "dell-r640-2s-xeon6230r-2numa-sriov-vfs" / "sys"
R640_STATIC = PODRES_FIXTURES / "dell-r640-sriov-static"
R640_NONE_POLICY = PODRES_FIXTURES / "dell-r640-sriov-nonepolicy"
R640_KUBELET_CONFIG = KUBELET_FIXTURES / "config" / "dell-r640-sriov-static-kubelet-config.SYNTHETIC.yaml"
R640_MEMORY_STATE = KUBELET_FIXTURES / "state" / "memory_manager_state.SYNTHETIC.dell-r640-scenario.json"

R740XD_SYSFS = SYSFS_FIXTURES / "dell-r740xd-2s-xeon6230-2numa-nics-hugepages" / "sys"

# The real machines under tests/fixtures/sysfs/ (each has a FIXTURE.json of expected facts).
MACHINES = sorted(p.name for p in SYSFS_FIXTURES.iterdir() if (p / "FIXTURE.json").is_file())
