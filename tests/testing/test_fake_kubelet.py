"""The fake kubelet's own behaviour, where tests rely on it being like the kubelet's."""

from __future__ import annotations

from rte.podres.client import PodResourcesClient
from rte.testing import scenarios as sc
from rte.testing.fake_kubelet import FakeKubelet

SRIOV = "intel.com/intel_sriov_netdevice"


def test_the_fake_kubelet_leaves_unhealthy_devices_out_of_allocatable_only(kubelet: FakeKubelet) -> None:
    kubelet.add_pod(sc.pod("cnf", "holder", sc.container("c", [], [sc.device(SRIOV, "0000:3b:02.6", 0)])))
    kubelet.set_device_health(SRIOV, "0000:3b:02.6", healthy=False)
    with PodResourcesClient(kubelet.endpoint) as client:
        offered = {i for d in client.get_allocatable().devices for i in d.device_ids}
        held = client.get("cnf", "holder")
    assert "0000:3b:02.6" not in offered and len(offered) == 63
    assert held is not None and held.containers[0].devices[0].device_ids == ("0000:3b:02.6",)


def test_the_cpu_manager_state_builder_writes_what_the_agents_reader_reads() -> None:
    from rte.host.kubelet_state import parse_cpu_manager_state

    state = parse_cpu_manager_state(sc.cpu_manager_state(range(8), {"uid": {"init": {1, 2}, "app": {1}}}))
    assert state.policy == "static"
    assert state.default_cpuset == frozenset({0, 3, 4, 5, 6, 7})
    assert state.containers == {"uid": {"init": frozenset({1, 2}), "app": frozenset({1})}}
