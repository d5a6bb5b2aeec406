"""The gRPC client against the fake kubelet: a real gRPC server on a unix socket."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rte.errors import InputError, NotSupportedError, UnavailableError
from rte.podres.client import PodResourcesClient
from rte.podres.files import PodResourcesFiles
from rte.podres.reader import SocketReader
from rte.podres.source import KubeletReader
from rte.podres.types import Device
from rte.podres.v1 import api_pb2, api_pb2_grpc
from rte.testing import scenarios
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.paths import R640_NONE_POLICY, R640_STATIC

STATIC, NONE_POLICY = R640_STATIC, R640_NONE_POLICY
VF = "intel.com/intel_sriov_netdevice"


@pytest.fixture
def client(kubelet: FakeKubelet) -> Iterator[PodResourcesClient]:
    with PodResourcesClient(kubelet.endpoint, timeout=5) as c:
        yield c


@pytest.mark.parametrize("scenario", [STATIC, NONE_POLICY], ids=lambda p: p.name)
def test_a_fixture_served_over_the_socket_reads_back_equal_to_the_files(scenario: Path) -> None:
    files = PodResourcesFiles(scenario)
    with FakeKubelet(scenario=scenario) as kubelet, PodResourcesClient(kubelet.endpoint) as client:
        assert isinstance(SocketReader(client), KubeletReader)
        assert client.list() == files.list()
        assert client.get_allocatable() == files.get_allocatable()
        assert client.get("cnf", "dpdk-app-0") == files.get("cnf", "dpdk-app-0")


def test_the_generated_stub_speaks_the_kubelet_method_paths(kubelet: FakeKubelet) -> None:
    with grpc.insecure_channel(kubelet.endpoint) as channel:
        stub = api_pb2_grpc.PodResourcesListerStub(channel)
        response = stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
    assert len(response.pod_resources) == 3
    assert kubelet.calls("List") == 1


def test_a_bare_socket_path_is_accepted_as_endpoint(kubelet: FakeKubelet) -> None:
    with PodResourcesClient(str(kubelet.socket_path)) as client:
        assert len(client.list()) == 3


def test_get_of_an_unknown_pod_returns_none(client: PodResourcesClient) -> None:
    assert client.get("cnf", "gone") is None


def test_pods_added_and_removed_while_running_show_in_the_next_list(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    kubelet.add_pod(scenarios.pod("cnf", "late", scenarios.container("c", [10, 12])))
    assert kubelet.remove_pod("kube-system", "coredns-6d4b75cb6d-x2x8k")
    names = {p.name for p in client.list()}
    assert names == {"dpdk-app-0", "numa1-worker-7f9c", "late"}
    late = client.get("cnf", "late")
    assert late is not None and late.containers[0].cpu_ids == {10, 12}


def test_swapping_the_scenario_changes_what_is_served(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    assert len(client.get_allocatable().cpu_ids) == 100
    kubelet.set_scenario(NONE_POLICY)
    assert client.get_allocatable().cpu_ids == frozenset()


def test_unknown_numa_ids_and_devices_missing_from_allocatable_pass_through_unchanged(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    # Judging them is the accounting's job; the client must not drop or "fix" them.
    odd = scenarios.container(
        "c", devices=[scenarios.device(VF, "0000:99:00.0", 7), scenarios.device(VF, "x", -1)]
    )
    kubelet.add_pod(scenarios.pod("cnf", "odd", odd))
    pod = client.get("cnf", "odd")
    assert pod is not None
    assert pod.containers[0].devices == (Device(VF, ("0000:99:00.0",), (7,)), Device(VF, ("x",), (), True))


def test_unimplemented_allocatable_is_not_supported_and_list_still_works(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    kubelet.unimplemented("GetAllocatableResources")
    with pytest.raises(NotSupportedError, match="GetAllocatableResources"):
        client.get_allocatable()
    assert len(client.list()) == 3


def test_a_scenario_without_allocatable_behaves_like_a_1_20_kubelet(tmp_path: Path) -> None:
    (tmp_path / "list.pb").write_bytes((STATIC / "list.pb").read_bytes())
    with (
        FakeKubelet(scenario=tmp_path) as kubelet,
        PodResourcesClient(kubelet.endpoint) as client,
        pytest.raises(NotSupportedError),
    ):
        client.get_allocatable()


def test_get_with_its_feature_gate_off_is_not_supported(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    kubelet.disable_get()
    with pytest.raises(NotSupportedError, match="Get method disabled"):
        client.get("cnf", "dpdk-app-0")


def test_allocatable_disabled_by_its_gate_is_not_supported(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    kubelet.fail(
        "GetAllocatableResources",
        grpc.StatusCode.UNKNOWN,
        "Pod Resources API GetAllocatableResources disabled",
    )
    with pytest.raises(NotSupportedError):
        client.get_allocatable()


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL]
)
def test_other_failures_are_transient(
    kubelet: FakeKubelet, client: PodResourcesClient, code: grpc.StatusCode
) -> None:
    kubelet.fail("List", code, "boom")
    with pytest.raises(UnavailableError, match=f"{code.name}: boom") as err:
        client.list()
    assert not isinstance(err.value, NotSupportedError)


def test_a_slow_kubelet_hits_the_per_call_timeout_which_is_transient(kubelet: FakeKubelet) -> None:
    kubelet.delay("List", 2.0)
    with PodResourcesClient(kubelet.endpoint, timeout=0.2) as client:
        started = time.monotonic()
        with pytest.raises(UnavailableError, match="DEADLINE_EXCEEDED"):
            client.list()
        assert time.monotonic() - started < 1.5


def test_a_response_that_does_not_decode_is_an_input_error(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    kubelet.serve_raw("List", b"\xff\xff\xff")
    with pytest.raises(InputError, match=r"kubelet List response from unix://.*does not decode"):
        client.list()


def test_a_negative_cpu_id_from_the_kubelet_is_an_input_error(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    kubelet.add_pod(scenarios.pod("cnf", "bad", scenarios.container("c", [-3])))
    with pytest.raises(InputError, match="negative CPU id -3"):
        client.list()


def test_a_kubelet_restart_is_transient_and_the_same_client_recovers(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    assert len(client.list()) == 3
    kubelet.stop()
    assert not kubelet.socket_path.exists()
    with pytest.raises(UnavailableError, match="UNAVAILABLE"):
        client.list()
    kubelet.start()
    assert kubelet.socket_path.exists()
    client.wait_ready(timeout=5)
    assert len(client.list()) == 3


def test_wait_ready_returns_once_the_socket_appears(tmp_path: Path) -> None:
    kubelet = FakeKubelet(scenario=STATIC)
    timer = threading.Timer(0.4, kubelet.start)
    timer.start()
    try:
        with PodResourcesClient(kubelet.endpoint) as client:
            started = time.monotonic()
            client.wait_ready(timeout=10)
            assert time.monotonic() - started >= 0.3
            assert len(client.list()) == 3
    finally:
        timer.join()
        kubelet.close()


def test_wait_ready_times_out_with_a_clear_error_and_logs_while_waiting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = f"unix://{tmp_path}/absent.sock"
    caplog.set_level(logging.WARNING, logger="rte.podres.client")
    with PodResourcesClient(endpoint) as client:
        started = time.monotonic()
        with pytest.raises(UnavailableError, match=r"absent\.sock not ready after 0\.[4-9]s"):
            client.wait_ready(timeout=0.5)
        assert time.monotonic() - started < 2
    assert any("waiting for kubelet podresources endpoint" in r.getMessage() for r in caplog.records)


def test_the_default_client_stays_under_the_kubelet_rate_limit(
    kubelet: FakeKubelet, client: PodResourcesClient
) -> None:
    def hammer() -> None:
        for _ in range(4):
            client.list()

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    assert kubelet.calls("List") == 16 and kubelet.rejected() == 0
    # 20 QPS with a burst of 5: 16 calls need at least (16 - 5) / 20 s.
    assert elapsed >= 0.5
    times = kubelet.call_times("List")
    assert len(times) / (times[-1] - times[0]) < 30


def test_without_a_client_limit_the_kubelet_limit_bites_and_is_transient(kubelet: FakeKubelet) -> None:
    with (
        PodResourcesClient(kubelet.endpoint, qps=None) as client,
        pytest.raises(UnavailableError, match="RESOURCE_EXHAUSTED: rejected by rate limit"),
    ):
        for _ in range(40):
            client.list()
    assert kubelet.rejected() >= 1


def _big_listing(pods: int) -> api_pb2.ListPodResourcesResponse:
    listing = api_pb2.ListPodResourcesResponse()
    for i in range(pods):
        # Long ids keep the message count (and the test's time) down while passing 4 MiB.
        devices = [
            scenarios.device("example.com/nic", f"{i:04x}-{j:02x}-" + "v" * 120, i % 8) for j in range(16)
        ]
        listing.pod_resources.append(
            scenarios.pod("ns", f"pod-{i:04d}", scenarios.container("c", [i % 384], devices))
        )
    return listing


def test_a_list_larger_than_grpcs_4_mib_default_passes_with_16_mib(kubelet: FakeKubelet) -> None:
    listing = _big_listing(2000)
    assert 4 * 1024**2 < listing.ByteSize() < 16 * 1024**2
    kubelet.set_pods(list(listing.pod_resources))
    with PodResourcesClient(kubelet.endpoint) as client:
        assert len(client.list()) == 2000
    with (
        PodResourcesClient(kubelet.endpoint, max_receive_bytes=4 * 1024**2) as small,
        pytest.raises(UnavailableError, match="RESOURCE_EXHAUSTED"),
    ):
        small.list()
