"""``rte run`` as a real process: what the kubelet's data adds to the NRT beyond podresources List.

* CPUs a finished init container still holds are in ``cpu_manager_state`` only; the NRT must not
  offer them (issue #11: "the agent's published NRT reflects CPUs held by init containers").
* A device that turns unhealthy disappears from ``GetAllocatableResources``; the NRT must follow
  within seconds, and must not be rewritten while nothing changes.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rte.host.kubelet_state import CPU_MANAGER_STATE
from rte.testing import scenarios as sc
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.e2e.test_agent_e2e import converged, exclusive_pod, first_publish
from tests.helpers.e2e import NRT, AgentFactory, stored
from tests.helpers.waiting import wait_for

SRIOV = "intel.com/intel_sriov_netdevice"
R640_CPUS = frozenset(range(104))


def zone_resource(obj: dict[str, Any] | None, zone: str, resource: str) -> dict[str, str]:
    assert obj is not None
    (found,) = [
        r for z in obj["zones"] if z["name"] == zone for r in z.get("resources", []) if r["name"] == resource
    ]
    return dict(found)


def write_like_the_kubelet(path: Path, data: dict[str, Any]) -> None:
    """A temporary file renamed over the checkpoint, as the kubelet's file store does."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def test_cpus_an_init_container_still_holds_are_not_offered_by_the_published_nrt(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet, tmp_path: Path
) -> None:
    state_file = tmp_path / "kubelet" / CPU_MANAGER_STATE  # the agent's --kubelet-root
    entries: dict[str, dict[str, set[int]]] = {  # what the scenario's List shows
        "uid-dpdk": {"app": {2, 4, 54, 56}},
        "uid-worker": {"worker": {3, 5, 7, 9, 55, 57, 59, 61}},
    }
    write_like_the_kubelet(state_file, sc.cpu_manager_state(R640_CPUS, entries))
    agent = start_agent()
    first_publish(agent, api, kubelet)
    before = int(zone_resource(stored(api), "node-0", "cpu")["available"])

    # A pod whose init container ran on CPUs 10 and 12 (NUMA 0) and whose app runs on 6 and 8.
    # List shows the app's CPUs; only the checkpoint knows the init container kept its own.
    kubelet.add_pod(exclusive_pod("with-init", [6, 8]))
    entries["uid-with-init"] = {"init": {10, 12}, "app": {6, 8}}
    write_like_the_kubelet(state_file, sc.cpu_manager_state(R640_CPUS, entries))
    wait_for(
        lambda: int(zone_resource(stored(api), "node-0", "cpu")["available"]) == before - 4,
        5,
        "the init container's CPUs charged in the NRT",
    )

    # The pod is removed: gone from List and, a moment later, from the checkpoint.
    kubelet.remove_pod("default", "with-init")
    del entries["uid-with-init"]
    write_like_the_kubelet(state_file, sc.cpu_manager_state(R640_CPUS, entries))
    converged(api, kubelet, 5, "the CPUs back once both sources let them go")
    assert int(zone_resource(stored(api), "node-0", "cpu")["available"]) == before
    assert agent.alive


def test_a_device_turning_unhealthy_leaves_the_nrt_within_seconds_and_comes_back(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent("--allocatable-refresh", "1s")
    first_publish(agent, api, kubelet)
    before = zone_resource(stored(api), "node-0", SRIOV)
    other_zone = zone_resource(stored(api), "node-1", SRIOV)
    writes = api.writes(NRT)

    kubelet.set_device_health(SRIOV, "0000:3b:02.5", healthy=False)
    wait_for(
        lambda: (
            zone_resource(stored(api), "node-0", SRIOV)["allocatable"] == str(int(before["allocatable"]) - 1)
        ),
        5,
        "the unhealthy device gone from the NRT",
    )
    assert zone_resource(stored(api), "node-1", SRIOV) == other_zone
    kubelet.set_device_health(SRIOV, "0000:3b:02.5", healthy=True)
    wait_for(lambda: zone_resource(stored(api), "node-0", SRIOV) == before, 5, "the device back in the NRT")
    assert api.writes(NRT) == writes + 2  # one write each way, none for the unchanged refreshes
    assert agent.alive
