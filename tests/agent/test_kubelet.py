"""The agent's computation against a real gRPC kubelet double on a unix socket.

Each scenario ends with a sane, schema-valid object and clear warnings, never a crash.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from rte.agent.compute.accounting import account
from rte.agent.compute.reading import KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.cli import main
from rte.commands.dump import read_node
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_config_files import load_kubelet_config
from rte.host.sysfs import read_machine
from rte.model import fingerprint as fp
from rte.model.nrt import to_nrt
from rte.model.vocabulary import FingerprintMethod
from rte.podres.convert import allocatable_from_proto, list_from_proto
from rte.podres.reader import ONE_SHOT_BURST, ONE_SHOT_QPS, open_reader
from rte.podres.v1 import api_pb2
from rte.testing import scenarios
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.nrt_schema import schema_errors
from tests.helpers.paths import (
    R640_KUBELET_CONFIG,
    R640_MEMORY_STATE,
    R640_NONE_POLICY,
    R640_STATIC,
    R640_SYSFS,
)

R640, STATIC, NONE, STATIC_CONFIG = R640_SYSFS, R640_STATIC, R640_NONE_POLICY, R640_KUBELET_CONFIG
SRIOV = "intel.com/intel_sriov_netdevice"
STATIC_POLICIES = KubeletConfig(cpu_manager_policy="static", memory_manager_policy="Static")


def _dump_json(*args: str) -> tuple[dict, str]:  # type: ignore[type-arg]
    result = CliRunner().invoke(main, ["dump", "--node-name", "n", "-o", "json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def _kubelet_part(endpoint: str, timeout: float) -> KubeletReading | None:
    """What ``rte dump`` read from the kubelet at ``endpoint`` (as its default socket); None when
    nothing answered."""
    reading = read_node(
        sysfs_root=str(R640), node_name="n", default_endpoint=endpoint, timeout=timeout, err=io.StringIO()
    )
    return reading.kubelet


@pytest.mark.parametrize("scenario", [STATIC, NONE])
def test_socket_and_files_give_the_same_object(scenario: Path) -> None:
    config = ["--kubelet-config", str(STATIC_CONFIG)] if scenario == STATIC else []
    with FakeKubelet(scenario=scenario) as kubelet:
        over_socket, _ = _dump_json("--sysfs", str(R640), "--podresources", kubelet.endpoint, *config)
    from_files, _ = _dump_json("--sysfs", str(R640), "--podresources", str(scenario), *config)
    assert over_socket == from_files
    assert schema_errors(over_socket) == []


def test_none_policies_publish_node_pools_and_devices_per_zone() -> None:
    with FakeKubelet(scenario=NONE) as kubelet:
        obj, _ = _dump_json("--sysfs", str(R640), "--podresources", kubelet.endpoint)
    for zone in obj["zones"]:
        res = {r["name"]: r for r in zone["resources"]}
        assert res["cpu"]["available"] == "104"  # the whole pool: cpu never blocks alignment here
        assert res[SRIOV]["allocatable"] == "32"
    # no memory data at all on this old-style tree: the resource is still listed in every zone
    assert all(any(r["name"] == "memory" for r in z["resources"]) for z in obj["zones"])


def test_large_sparse_node_over_the_socket(tmp_path: Path) -> None:
    scenario = scenarios.large_node()
    machine = scenarios.machine_for(scenario)
    config = KubeletConfig(
        cpu_manager_policy="static", memory_manager_policy="Static", reserved_system_cpus=frozenset({0, 1})
    )
    with FakeKubelet(scenario=scenario.write(tmp_path / "large")) as kubelet:
        reader = open_reader(kubelet.endpoint, timeout=5, qps=ONE_SHOT_QPS, burst=ONE_SHOT_BURST)
        try:
            data = KubeletReading(reader.get_allocatable(), reader.list().pods)
        finally:
            reader.close()
    assert len(data.pods) == 250
    reading = NodeReading("big", machine, config, data, PublishingRules(FingerprintMethod.ALL))
    computed = compute_topology(reading)
    topology, accounting = computed.topology, computed.accounting
    assert accounting.findings == ()
    assert [z.name for z in topology.zones] == [f"node-{i}" for i in scenarios.LARGE_NODE_NUMA_IDS]
    obj = to_nrt(topology)
    assert schema_errors(obj) == []
    # totals agree with the scenario: every allocatable CPU is either free or pinned exactly once
    pinned = set()
    for pod in data.pods:
        for c in pod.containers:
            pinned |= c.cpu_ids
    available = sum(z.resource("cpu").available for z in topology.zones)  # type: ignore[union-attr]
    assert available == 382 - len(pinned)
    nics = sum(z.resource(scenarios.NIC).allocatable for z in topology.zones if z.resource(scenarios.NIC))  # type: ignore[union-attr]
    assert nics == 64
    assert topology.attribute(fp.ATTRIBUTE) == fp.compute((p.namespace, p.name) for p in data.pods)


def test_a_kubelet_restart_mid_run_is_survived(tmp_path: Path) -> None:
    kubelet = FakeKubelet(scenario=STATIC).start()
    try:
        assert _kubelet_part(kubelet.endpoint, timeout=3) is not None
        kubelet.stop()  # the socket disappears
        assert not Path(kubelet.socket_path).exists()
        assert _kubelet_part(kubelet.endpoint, timeout=0.5) is None
        kubelet.start()  # ... and comes back
        data = _kubelet_part(kubelet.endpoint, timeout=3)
        assert data is not None and len(data.pods) == 3
    finally:
        kubelet.close()


def test_a_default_socket_that_does_not_answer_gives_hardware_capacity_and_a_warning(tmp_path: Path) -> None:
    kubelet = FakeKubelet(scenario=STATIC).start()
    kubelet.fail("List", grpc.StatusCode.UNAVAILABLE, "kubelet is restarting")
    err = io.StringIO()
    try:
        reading = read_node(sysfs_root=str(R640), node_name="n", default_endpoint=kubelet.endpoint, err=err)
    finally:
        kubelet.close()
    assert reading.kubelet is None
    assert "kubelet is restarting" in err.getvalue()
    assert "hardware capacity" in err.getvalue()
    assert schema_errors(to_nrt(compute_topology(reading).topology)) == []


def test_an_explicit_socket_that_does_not_answer_is_an_error_not_hardware_capacity() -> None:
    with FakeKubelet(scenario=STATIC) as kubelet:
        kubelet.fail("List", grpc.StatusCode.UNAVAILABLE, "kubelet is restarting")
        result = CliRunner().invoke(main, ["dump", "--sysfs", str(R640), "--podresources", kubelet.endpoint])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("rte: error: ") and "kubelet is restarting" in result.stderr


def test_unimplemented_get_allocatable_degrades_to_sysfs_and_config() -> None:
    with FakeKubelet(scenario=STATIC) as kubelet:
        kubelet.unimplemented("GetAllocatableResources")
        obj, err = _dump_json(
            "--sysfs", str(R640), "--podresources", kubelet.endpoint, "--kubelet-config", str(STATIC_CONFIG)
        )
    assert "allocatable comes from sysfs" in err
    z0 = {r["name"]: r for r in obj["zones"][0]["resources"]}
    assert z0["cpu"]["allocatable"] == "50"  # 52 minus reserved CPUs 0 and 52, from the config
    assert z0["cpu"]["available"] == "46"
    assert schema_errors(obj) == []


def test_malformed_kubelet_data_yields_findings_and_a_sane_object() -> None:
    allocatable = api_pb2.AllocatableResourcesResponse()
    allocatable.ParseFromString((STATIC / "get_allocatable_resources.pb").read_bytes())
    allocatable.devices.append(scenarios.device(SRIOV, "0000:ff:00.0", 7))  # NUMA node 7 does not exist
    with FakeKubelet(scenario=STATIC) as kubelet:
        kubelet.set_allocatable(allocatable)
        kubelet.add_pod(
            scenarios.pod(
                "rogue",
                "p",
                scenarios.container("c", [2, 999], [scenarios.device(SRIOV, "0000:ee:00.0", 0)]),
            )
        )
        obj, err = _dump_json(
            "--sysfs", str(R640), "--podresources", kubelet.endpoint, "--kubelet-config", str(STATIC_CONFIG)
        )
    assert "unknown_numa_id" in err and "NUMA node 7" in err
    assert "unknown_device" in err and "0000:ee:00.0" in err
    assert "unknown_cpu" in err and "999" in err
    attrs = {a["name"]: a["value"] for a in obj["attributes"]}
    # Its resource has NUMA-local devices, so the device manager aligns it and the device on node 7
    # matches no NUMA mask: unknown NUMA, not "no topology".
    assert attrs["nodeUnknownNUMAResources"] == f"{SRIOV}=1"
    assert "nodeNonTopologyResources" not in attrs
    assert schema_errors(obj) == []


def test_malformed_bytes_from_the_kubelet_are_a_one_line_error() -> None:
    with FakeKubelet(scenario=STATIC) as kubelet:
        kubelet.serve_raw("List", b"\xff\xff\xff")
        result = CliRunner().invoke(main, ["dump", "--sysfs", str(R640), "--podresources", kubelet.endpoint])
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert len([ln for ln in result.stderr.splitlines() if ln.startswith("rte: error")]) == 1


def test_fingerprint_command_over_the_socket_matches_files() -> None:
    with FakeKubelet(scenario=STATIC) as kubelet:
        live = CliRunner().invoke(
            main, ["fingerprint", "--podresources", kubelet.endpoint, "--fingerprint-method", "all"]
        )
    files = CliRunner().invoke(
        main, ["fingerprint", "--podresources", str(STATIC), "--fingerprint-method", "all"]
    )
    assert live.exit_code == files.exit_code == 0
    assert live.stdout.splitlines()[-1] == files.stdout.splitlines()[-1]
    assert live.stdout.strip() == fp.compute(
        [("kube-system", "coredns-6d4b75cb6d-x2x8k"), ("cnf", "dpdk-app-0"), ("cnf", "numa1-worker-7f9c")]
    )


def test_fingerprint_of_an_explicit_podresources_that_cannot_be_a_kubelet_is_bad_input(
    tmp_path: Path,
) -> None:
    regular = tmp_path / "kubelet.sock"
    regular.write_text("")
    result = CliRunner().invoke(main, ["fingerprint", "--podresources", str(regular)])
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"rte: error: --podresources: {regular}: is a regular file, not a socket or a scenario directory\n"
    )


def test_the_static_scenario_matches_its_memory_manager_checkpoint() -> None:
    """Truth from the kubelet's own checkpoint: our per-zone free memory equals its machine state."""
    from rte.host.kubelet_state import load_memory_manager_state

    state = load_memory_manager_state(R640_MEMORY_STATE)
    allocatable = api_pb2.AllocatableResourcesResponse()
    allocatable.ParseFromString((STATIC / "get_allocatable_resources.pb").read_bytes())
    listing = api_pb2.ListPodResourcesResponse()
    listing.ParseFromString((STATIC / "list.pb").read_bytes())
    result = account(
        read_machine(R640, pci=False),
        load_kubelet_config(STATIC_CONFIG),
        allocatable_from_proto(allocatable, "alloc"),
        list_from_proto(listing, "list"),
    )
    for zone in result.zones:
        numa = zone.numa_id
        assert numa is not None
        table = state.machine_state[numa].memory_map["memory"]
        memory = zone.resource("memory")
        assert memory is not None
        assert (memory.allocatable, memory.available) == (table.allocatable, table.free)


def test_dump_reads_the_memory_checkpoint_from_the_kubelet_dir(tmp_path: Path) -> None:
    checkpoint = R640_MEMORY_STATE
    (tmp_path / "memory_manager_state").write_bytes(checkpoint.read_bytes())
    with_state, err = _dump_json(
        "--sysfs", str(R640), "--podresources", str(STATIC), "--kubelet-config", str(STATIC_CONFIG),
        "--kubelet-root", str(tmp_path),
    )  # fmt: skip
    without, _ = _dump_json(
        "--sysfs", str(R640), "--podresources", str(STATIC), "--kubelet-config", str(STATIC_CONFIG)
    )
    assert with_state == without  # the checkpoint agrees with podresources here
    assert "memory_state_differs" not in err


def test_dump_ignores_a_malformed_checkpoint_with_a_warning_like_the_daemon(tmp_path: Path) -> None:
    (tmp_path / "memory_manager_state").write_text("{not json")
    args = ["--sysfs", str(R640), "--podresources", str(STATIC), "--kubelet-config", str(STATIC_CONFIG)]
    with_bad_state, err = _dump_json(*args, "--kubelet-root", str(tmp_path))
    without, _ = _dump_json(*args)
    assert with_bad_state == without
    warnings = [ln for ln in err.splitlines() if "memory_manager_state" in ln]
    assert len(warnings) == 1 and warnings[0].startswith(
        "rte: warning: ignoring the memory manager checkpoint"
    )
