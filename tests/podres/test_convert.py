"""podresources responses -> rte.podres.types, from protobuf and both JSON encodings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format

from rte.errors import InputError
from rte.podres import convert
from rte.podres.files import PodResourcesFiles
from rte.podres.types import ClaimDevice, Device, DynamicResource, MemoryBlock
from rte.podres.v1 import api_pb2
from rte.testing import scenarios
from tests.helpers.paths import PODRES_FIXTURES, R640_NONE_POLICY, R640_STATIC

FIXTURES = PODRES_FIXTURES
STATIC, NONE_POLICY = R640_STATIC, R640_NONE_POLICY
VF = "intel.com/intel_sriov_netdevice"


@pytest.mark.parametrize("scenario", [STATIC, NONE_POLICY], ids=lambda p: p.name)
def test_all_three_encodings_of_a_fixture_give_equal_types(scenario: Path) -> None:
    read = {enc: PodResourcesFiles(scenario, enc) for enc in ("pb", "protojson", "gojson")}
    lists = {enc: files.list() for enc, files in read.items()}
    allocs = {enc: files.get_allocatable() for enc, files in read.items()}
    assert lists["pb"] == lists["protojson"] == lists["gojson"]
    assert allocs["pb"] == allocs["protojson"] == allocs["gojson"]
    assert lists["pb"] and allocs["pb"].devices


def test_get_fixture_decodes_alike_in_every_encoding_and_matches_the_list_entry() -> None:
    pods = [PodResourcesFiles(STATIC, enc).get("cnf", "dpdk-app-0") for enc in ("pb", "protojson", "gojson")]
    assert pods[0] is not None
    assert pods[0] == pods[1] == pods[2]
    assert pods[0] in PodResourcesFiles(STATIC).list()


def test_static_fixture_reads_as_the_readme_describes() -> None:
    files = PodResourcesFiles(STATIC)
    alloc = files.get_allocatable()
    assert len(alloc.cpu_ids) == 100
    assert not alloc.cpu_ids & {0, 1, 52, 53}  # reservedSystemCPUs
    assert len(alloc.devices) == 64
    assert {d.numa_ids for d in alloc.devices} == {(0,), (1,)}
    assert [(m.memory_type, m.numa_ids) for m in alloc.memory] == [("memory", (0,)), ("memory", (1,))]
    pods = {(p.namespace, p.name): p for p in files.list()}
    app = pods["cnf", "dpdk-app-0"].containers[0]
    assert app.cpu_ids == {2, 4, 54, 56}
    assert app.memory == (MemoryBlock("memory", 2 * 1024**3, (0,)),)
    assert pods["cnf", "dpdk-app-0"].containers[1].cpu_ids == frozenset()  # shared pool
    worker = pods["cnf", "numa1-worker-7f9c"].containers[0]
    assert worker.devices == (Device(VF, ("0000:d8:02.0",), (1,)),)


def test_none_policy_fixture_has_devices_but_no_cpus_or_memory() -> None:
    files = PodResourcesFiles(NONE_POLICY)
    alloc = files.get_allocatable()
    assert alloc.cpu_ids == frozenset() and alloc.memory == () and len(alloc.devices) == 64
    assert all(not c.cpu_ids and not c.memory for p in files.list() for c in p.containers)


@pytest.mark.parametrize(
    "node", [{}, {"ID": 0}, {"ID": "0"}], ids=["empty-object", "explicit-number", "explicit-string"]
)
def test_numa_node_zero_serialised_as_an_empty_object_means_id_zero(node: dict[str, object]) -> None:
    doc = {"devices": [{"resource_name": VF, "device_ids": ["a"], "topology": {"nodes": [node]}}]}
    assert convert.allocatable_from_json(doc, "t.json").devices == (Device(VF, ("a",), (0,)),)


def test_numa_node_zero_is_an_empty_message_on_the_wire_and_still_reads_as_zero() -> None:
    msg = api_pb2.AllocatableResourcesResponse(devices=[scenarios.device(VF, "a", 0)])
    assert msg.devices[0].topology.nodes[0].SerializeToString() == b""
    wire = api_pb2.AllocatableResourcesResponse.FromString(msg.SerializeToString())
    assert convert.allocatable_from_proto(wire, "t").devices[0].numa_ids == (0,)


def test_no_topology_has_no_locality_and_the_minus_one_node_an_unknown_one() -> None:
    doc = {
        "devices": [
            {"resourceName": VF, "deviceIds": ["a"]},
            {"resourceName": VF, "deviceIds": ["b"], "topology": {"nodes": [{"ID": "-1"}]}},
            {"resourceName": VF, "deviceIds": ["c"], "topology": {}},
            {"resourceName": VF, "deviceIds": ["d"], "topology": {"nodes": [{"ID": "-1"}, {}]}},
        ]
    }
    devices = convert.allocatable_from_json(doc, "t.json").devices
    assert [d.numa_ids for d in devices] == [(), (), (), (0,)]
    assert [d.numa_unknown for d in devices] == [False, True, False, False]


def test_the_minus_one_node_on_the_wire_reads_as_unknown_and_no_topology_does_not() -> None:
    msg = api_pb2.AllocatableResourcesResponse(
        devices=[scenarios.device(VF, "a"), scenarios.device(VF, "b", -1), scenarios.device(VF, "c", 1)]
    )
    wire = api_pb2.AllocatableResourcesResponse.FromString(msg.SerializeToString())
    devices = convert.allocatable_from_proto(wire, "t").devices
    assert [(d.numa_ids, d.numa_unknown) for d in devices] == [((), False), ((), True), ((1,), False)]


def test_sparse_numa_ids_keep_their_real_names_and_multi_numa_blocks_keep_every_node() -> None:
    block = scenarios.memory("hugepages-1Gi", 4 * 1024**3, 12, 5, 12)
    listing = api_pb2.ListPodResourcesResponse(
        pod_resources=[scenarios.pod("ns", "p", scenarios.container("c", [7], memory=[block]))]
    )
    (pod,) = convert.list_from_proto(listing, "t")
    assert pod.containers[0].memory == (MemoryBlock("hugepages-1Gi", 4 * 1024**3, (5, 12)),)


def _rich_pod() -> api_pb2.PodResources:
    claim = api_pb2.ClaimResource(
        cdi_devices=[api_pb2.CDIDevice(name="vendor.com/gpu=gpu0")],
        driver_name="gpu.example.com",
        pool_name="node-a",
        device_name="gpu-0",
        share_id="",  # present but empty must stay distinguishable from absent
    )
    unshared = api_pb2.ClaimResource(driver_name="gpu.example.com", pool_name="node-a", device_name="gpu-1")
    dra = api_pb2.DynamicResource(claim_name="gpu", claim_namespace="ml", claim_resources=[claim, unshared])
    app = scenarios.container(
        "app", [4, 5], [scenarios.device(VF, "d0", 1)], [scenarios.memory("memory", 10, 1)]
    )
    app.dynamic_resources.append(dra)
    return scenarios.pod("ml", "train", app, cpu_ids=[4, 5, 6], memory=[scenarios.memory("memory", 20, 1)])


def test_pod_level_fields_and_dynamic_resources_survive_every_encoding() -> None:
    listing = api_pb2.ListPodResourcesResponse(pod_resources=[_rich_pod()])
    from_pb = convert.list_from_proto(listing, "t")
    from_protojson = convert.list_from_json(json.loads(json_format.MessageToJson(listing)), "t")
    from_gojson = convert.list_from_json(scenarios.go_json(listing), "t")
    assert from_pb == from_protojson == from_gojson
    (pod,) = from_pb
    assert pod.cpu_ids == {4, 5, 6} and pod.memory == (MemoryBlock("memory", 20, (1,)),)
    claim = ClaimDevice("gpu.example.com", "node-a", "gpu-0", ("vendor.com/gpu=gpu0",), "")
    unshared = ClaimDevice("gpu.example.com", "node-a", "gpu-1", (), None)
    assert pod.containers[0].dynamic_resources == (DynamicResource("gpu", "ml", (claim, unshared)),)


def test_json_style_is_detected_per_document() -> None:
    assert convert.detect_json_style({"podResources": []}, "t") == "protojson"
    assert convert.detect_json_style({"pod_resources": []}, "t") == "gojson"
    assert convert.detect_json_style({}, "t") == "gojson"  # no multi-word key: reads alike


def test_unknown_keys_are_ignored_like_unknown_proto_fields() -> None:
    doc = {"pod_resources": [{"name": "p", "namespace": "n", "future_field": {"x": 1}}]}
    assert convert.list_from_json(doc, "t")[0].name == "p"


@pytest.mark.parametrize(
    ("doc", "field", "detail"),
    [
        (
            {"pod_resources": [{"containers": [{"cpu_ids": [1, "x"]}]}]},
            "pod_resources[0].containers[0].cpu_ids[1]",
            '"x"',
        ),
        (
            {"podResources": [{"containers": [{"cpuIds": ["-2"]}]}]},
            "podResources[0].containers[0].cpuIds[0]",
            "-2",
        ),
        (
            {"pod_resources": [{"containers": [{"cpu_ids": [True]}]}]},
            "pod_resources[0].containers[0].cpu_ids[0]",
            "true",
        ),
        ({"podResources": {"name": "p"}}, "podResources", "expected a list"),
        ({"pod_resources": [{"name": 7}]}, "pod_resources[0].name", "expected a string"),
        ({"pod_resources": ["pod"]}, "pod_resources[0]", "expected an object"),
        (
            {"pod_resources": [{"containers": [{"memory": [{"size": -1}]}]}]},
            "pod_resources[0].containers[0].memory[0].size",
            "negative size",
        ),
        (
            {"pod_resources": [{"containers": [{"devices": [{"topology": {"nodes": [{"ID": "zero"}]}}]}]}]},
            "pod_resources[0].containers[0].devices[0].topology.nodes[0].ID",
            '"zero"',
        ),
    ],
)
def test_malformed_json_names_the_file_and_field(doc: object, field: str, detail: str) -> None:
    with pytest.raises(InputError) as err:
        convert.list_from_json(doc, "/x/list.json")
    assert err.value.source == f"/x/list.json: {field}"
    assert detail in err.value.detail
    assert "\n" not in str(err.value)


def test_a_document_mixing_both_key_styles_is_rejected() -> None:
    with pytest.raises(InputError, match="mixes protojson"):
        convert.list_from_json({"pod_resources": [{"containers": [{"cpuIds": ["1"]}]}]}, "list.json")


def test_a_negative_cpu_id_on_the_wire_names_its_field() -> None:
    listing = api_pb2.ListPodResourcesResponse(
        pod_resources=[scenarios.pod("n", "ok"), scenarios.pod("n", "bad", scenarios.container("c", [-3]))]
    )
    with pytest.raises(InputError, match=r"pod_resources\[1\]\.containers\[0\]\.cpu_ids: negative CPU id -3"):
        convert.list_from_proto(listing, "kubelet")


def test_reading_json_imports_neither_grpc_nor_protobuf() -> None:
    code = (
        "import sys\n"
        "from rte.podres.files import PodResourcesFiles\n"
        f"f = PodResourcesFiles({str(STATIC)!r}, 'gojson')\n"
        "assert f.list() and f.get_allocatable()\n"
        "bad = [m for m in sys.modules if m == 'grpc' or m.startswith('google.protobuf')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
