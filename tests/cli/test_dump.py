"""`rte dump` end to end through the CLI, on all six fixture machines."""

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rte.agent.compute.accounting import hugepages_resource
from rte.cli import main
from tests.helpers.nrt_schema import schema_errors
from tests.helpers.paths import FIXTURES, MACHINES, R640_KUBELET_CONFIG, R640_STATIC, R640_SYSFS

R640, R640_CONFIG = R640_SYSFS, R640_KUBELET_CONFIG
NO_KUBELET = "--no-kubelet"


def _dump(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["dump", *args])
    return result.exit_code, result.stdout, result.stderr


def _resources(zone: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {r["name"]: (r["capacity"], r["allocatable"], r["available"]) for r in zone.get("resources", [])}


def test_seven_machines_are_known() -> None:
    assert len(MACHINES) == 7  # the seventh, Grace-Blackwell-class, is synthetic (see its NOTICE)


@pytest.mark.parametrize("machine", MACHINES)
def test_dump_json_matches_the_fixture_facts_and_the_crd(machine: str) -> None:
    facts = json.loads((FIXTURES / "sysfs" / machine / "FIXTURE.json").read_text())
    nodes = facts["expected_facts_parsed_from_tree"]["numa_nodes"]
    code, out, err = _dump(
        "--sysfs",
        str(FIXTURES / "sysfs" / machine / "sys"),
        "--node-name",
        "n1",
        NO_KUBELET,
        "-o",
        "json",
    )
    assert code == 0, err
    assert err == ""  # hardware capacity was asked for: no notice
    obj = json.loads(out)
    assert schema_errors(obj) == []
    assert obj["metadata"]["name"] == "n1"
    assert [z["name"] for z in obj["zones"]] == [f"node-{i}" for i in sorted(map(int, nodes))]
    ids = sorted(map(int, nodes))
    for zone in obj["zones"]:
        node = nodes[zone["name"].removeprefix("node-")]
        res = _resources(zone)
        ncpus = str(node["ncpus"])
        assert res["cpu"] == (ncpus, ncpus, ncpus)
        if node["memtotal_kb"] is not None:
            mem = str(node["memtotal_kb"] * 1024)
            assert res["memory"] == (mem, mem, mem)
        else:
            assert res["memory"] == ("0", "0", "0")
        for dirname, pages in node["hugepages"].items():
            size = int(dirname.removeprefix("hugepages-").removesuffix("kB")) * 1024
            amount = str(size * pages["nr"])
            assert res[hugepages_resource(size)] == (amount, amount, amount)
        assert [(c["name"], c["value"]) for c in zone["costs"]] == [
            (f"node-{j}", d) for j, d in zip(ids, node["distance"], strict=True)
        ]


def test_dump_yaml_is_the_same_object() -> None:
    _, out_json, _ = _dump("--sysfs", str(R640), NO_KUBELET, "--node-name", "x", "-o", "json")
    _, out_yaml, _ = _dump("--sysfs", str(R640), NO_KUBELET, "--node-name", "x", "-o", "yaml")
    assert yaml.safe_load(out_yaml) == json.loads(out_json)


def test_dump_table_shows_cpusets_memory_devices_and_distances() -> None:
    code, out, _ = _dump(
        "--sysfs",
        str(R640),
        "--node-name",
        "r640",
        "--podresources",
        str(R640_STATIC),
        "--kubelet-config",
        str(R640_CONFIG),
    )
    assert code == 0
    assert "node-0  cpus 0,2,4," in out
    assert "distances node-0=10 node-1=21" in out
    assert "intel.com/intel_sriov_netdevice  32        32           30" in out
    assert "topologyManagerPolicy: single-numa-node" in out


def test_dump_with_a_kubelet_scenario_computes_available_per_zone() -> None:
    code, out, err = _dump(
        "--sysfs",
        str(R640),
        "--node-name",
        "r640",
        "--podresources",
        str(R640_STATIC),
        "--kubelet-config",
        str(R640_CONFIG),
        "-o",
        "json",
    )
    assert code == 0, err
    obj = json.loads(out)
    assert schema_errors(obj) == []
    z0, z1 = (_resources(z) for z in obj["zones"])
    # reserved CPUs 0,52 (node 0) and 1,53 (node 1); pods pin 4 CPUs on node 0 and 8 on node 1
    assert z0["cpu"] == ("52", "50", "46")
    assert z1["cpu"] == ("52", "50", "42")
    assert z0["memory"] == ("47784828928", "47784828928", str(47784828928 - 2 * 2**30))
    assert z1["memory"] == ("50693324800", "50693324800", str(50693324800 - 4 * 2**30))
    assert z0["intel.com/intel_sriov_netdevice"] == ("32", "32", "30")
    assert z1["intel.com/intel_sriov_netdevice"] == ("32", "32", "31")
    attrs = {a["name"]: a["value"] for a in obj["attributes"]}
    assert attrs["topologyManagerPolicy"] == "single-numa-node"
    assert attrs["topologyManagerScope"] == "container"
    assert attrs["nodeTopologyPodsFingerprintMethod"] == "with-exclusive-resources"
    assert (
        obj["metadata"]["annotations"]["topology.node.k8s.io/fingerprint"]
        == attrs["nodeTopologyPodsFingerprint"]
    )
    assert obj["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]


def test_the_fingerprint_of_exclusive_pods_leaves_out_the_shared_pool_pod() -> None:
    from rte.model.fingerprint import compute

    _, out, _ = _dump("--sysfs", str(R640), "--podresources", str(R640_STATIC), "-o", "json")
    exclusive = json.loads(out)["attributes"]
    _, out_all, _ = _dump(
        "--sysfs", str(R640), "--podresources", str(R640_STATIC), "--fingerprint-method", "all", "-o", "json"
    )
    everything = json.loads(out_all)["attributes"]
    fp_of = lambda attrs: next(a["value"] for a in attrs if a["name"] == "nodeTopologyPodsFingerprint")  # noqa: E731
    assert fp_of(exclusive) == compute([("cnf", "dpdk-app-0"), ("cnf", "numa1-worker-7f9c")])
    assert fp_of(everything) == compute(
        [("kube-system", "coredns-6d4b75cb6d-x2x8k"), ("cnf", "dpdk-app-0"), ("cnf", "numa1-worker-7f9c")]
    )


def test_the_method_flag_reads_any_case_and_publishes_the_attribute_spelling() -> None:
    _, out, _ = _dump(
        "--sysfs", str(R640), "--podresources", str(R640_STATIC), "--fingerprint-method", "ALL", "-o", "json"
    )
    attrs = {a["name"]: a["value"] for a in json.loads(out)["attributes"]}
    assert attrs["nodeTopologyPodsFingerprintMethod"] == "all"


def test_malformed_sysfs_content_is_one_line_naming_the_path_with_status_2(tmp_path: Path) -> None:
    node = tmp_path / "devices" / "system" / "node"
    (node / "node0").mkdir(parents=True)
    (node / "online").write_text("0\n")
    (node / "node0" / "cpulist").write_text("0-abc\n")
    code, out, err = _dump("--sysfs", str(tmp_path), NO_KUBELET)
    assert code == 2
    assert out == ""
    lines = [ln for ln in err.splitlines() if ln.startswith("rte: error")]
    assert len(lines) == 1
    assert "node0/cpulist" in lines[0] and "0-abc" in lines[0]
    assert "Traceback" not in err


def test_a_bad_kubelet_config_is_one_line_with_status_2(tmp_path: Path) -> None:
    bad = tmp_path / "kubelet.yaml"
    bad.write_text("topologyManagerPolicy: sometimes\n")
    code, _, err = _dump("--sysfs", str(R640), NO_KUBELET, "--kubelet-config", str(bad))
    assert code == 2
    assert "kubelet.yaml" in err and "sometimes" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["Bad Name!", "UPPER", "a_b", "x" * 254])
def test_a_node_name_that_cannot_name_an_object_is_refused_as_rte_run_refuses_it(name: str) -> None:
    code, out, err = _dump("--sysfs", str(R640), NO_KUBELET, "--node-name", name)
    assert code == 2
    assert out == ""
    assert err == f"rte: error: --node-name: {name!r} is not a valid object name (lowercase DNS subdomain)\n"
    run = CliRunner().invoke(main, ["run", "--dump-config", "--node-name", name])
    assert (run.exit_code, run.stderr) == (2, err)


def test_choices_are_read_in_any_case() -> None:
    code, out, err = _dump(
        "--sysfs",
        str(R640),
        "--podresources",
        str(R640_STATIC),
        "--node-name",
        "x",
        "-o",
        "JSON",
        "--fingerprint-method",
        "ALL",
    )
    assert code == 0, err
    attributes = {a["name"]: a["value"] for a in json.loads(out)["attributes"]}
    assert attributes["nodeTopologyPodsFingerprintMethod"] == "all"


# -- which kubelet (#14.14) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("{file}", "is a regular file, not a socket or a scenario directory"),
        ("unix://{file}", "is a regular file"),
        ("http://127.0.0.1:10250", "unsupported scheme 'http:'"),
        ("dns:kubelet", "unsupported scheme 'dns:'"),
        ("{missing}", "no such socket or directory"),
        ("unix://{missing}", "no such socket or directory"),
        ("unix://{dir}", "is a directory, not a socket"),
    ],
)
def test_an_explicit_podresources_that_cannot_be_a_kubelet_is_bad_input(
    tmp_path: Path, endpoint: str, problem: str
) -> None:
    regular = tmp_path / "kubelet.sock"
    regular.write_text("not a socket")
    given = endpoint.format(file=regular, missing=tmp_path / "gone.sock", dir=tmp_path)
    code, out, err = _dump("--sysfs", str(R640), "--podresources", given)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"rte: error: --podresources: {given}: ") and problem in err


def test_without_podresources_an_absent_default_socket_is_hardware_capacity_with_a_notice(
    tmp_path: Path,
) -> None:
    from rte.commands.dump import read_node

    err = io.StringIO()
    reading = read_node(
        sysfs_root=str(R640), node_name="n", default_endpoint=f"unix://{tmp_path}/kubelet.sock", err=err
    )
    assert reading.kubelet is None
    assert err.getvalue() == (
        f"rte: no kubelet podresources at unix://{tmp_path}/kubelet.sock: showing hardware capacity"
        " (allocatable = available = capacity)\n"
    )


def test_no_kubelet_contradicts_an_explicit_podresources() -> None:
    code, _, err = _dump("--sysfs", str(R640), "--no-kubelet", "--podresources", str(R640_STATIC))
    assert code == 2
    assert err == "rte: error: --no-kubelet: contradicts --podresources\n"


# -- inputs that cannot be true (#14.14) -----------------------------------------------------------


def test_a_sysfs_tree_that_cannot_be_true_is_one_line_with_status_2(tmp_path: Path) -> None:
    node = tmp_path / "devices" / "system" / "node"
    (node / "node0").mkdir(parents=True)
    (node / "online").write_text("0\n")
    (node / "node0" / "meminfo").write_text("Node 0 MemFree: 1024 kB\n")
    code, out, err = _dump("--sysfs", str(tmp_path), NO_KUBELET)
    assert (code, out) == (2, "")
    assert err == f"rte: error: {node}/node0/meminfo: no MemTotal line: every node's meminfo has one\n"


def test_reserved_cpus_the_machine_lacks_are_one_line_naming_the_file_and_the_field(tmp_path: Path) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text("cpuManagerPolicy: static\nreservedSystemCPUs: 0,1,200-201\n")
    for inputs in (["--no-kubelet"], ["--podresources", str(R640_STATIC)]):
        code, out, err = _dump("--sysfs", str(R640), "--kubelet-config", str(config), *inputs)
        assert (code, out) == (2, "")
        assert err == (
            f"rte: error: {config}: reservedSystemCPUs: names CPUs 200-201, which this machine does not have"
            " (its CPUs: 0-103)\n"
        )


def test_reserved_memory_on_a_numa_node_the_machine_lacks_is_one_line_with_status_2(tmp_path: Path) -> None:
    """memorymanager ``memory_manager.go`` ``getTotalMemoryTypeReserved`` refuses a reservation on a
    NUMA node missing from ``machineInfo.Topology``: the kubelet cannot be running with this file."""
    config = tmp_path / "kubelet.yaml"
    config.write_text(
        "memoryManagerPolicy: Static\n"
        "reservedMemory:\n"
        "- numaNode: 0\n  limits: {memory: 1Gi}\n"
        "- numaNode: 5\n  limits: {memory: 1Gi}\n"
    )
    code, out, err = _dump("--sysfs", str(R640), "--kubelet-config", str(config), "--no-kubelet")
    assert (code, out) == (2, "")
    assert err == (
        f"rte: error: {config}: reservedMemory: reserves memory on NUMA node 5, which this machine does not"
        " have (its NUMA nodes: 0-1)\n"
    )


def test_dump_shows_devices_attached_to_several_numa_nodes() -> None:
    """Issue #23 item 6: two of four GPUs are attached to both NUMA nodes (one held by a pod);
    the zones count them in both and ``nodeMultiNUMAResources`` says which are shared, in an
    object the CRD accepts."""
    code, out, err = _dump(
        "--sysfs",
        str(R640),
        "--podresources",
        str(FIXTURES / "podres" / "dell-r640-shared-gpus"),
        "--kubelet-config",
        str(R640_CONFIG),
        "-o",
        "json",
    )
    assert code == 0, err
    obj = json.loads(out)
    assert schema_errors(obj) == []
    z0, z1 = (_resources(z) for z in obj["zones"])
    assert z0["example.com/gpu"] == z1["example.com/gpu"] == ("3", "3", "2")
    attrs = {a["name"]: a["value"] for a in obj["attributes"]}
    assert attrs["nodeMultiNUMAResources"] == "example.com/gpu:0-1=1/2"
