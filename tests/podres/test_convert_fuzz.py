"""Fuzzing the podresources readers: protobuf bytes and messages, protojson and Go JSON.

Whatever the kubelet (or a scenario file) sends, the conversion answers typed results or a
one-line ``InputError`` naming the source and the field. Budget and profiles: tests/conftest.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rte.podres import convert
from rte.podres.files import PodResourcesFiles
from rte.podres.v1 import api_pb2
from tests.helpers.fuzz import deep_json_text, json_text, json_values, mutated, value_or_input_error
from tests.helpers.paths import R640_STATIC

# ---- JSON ---------------------------------------------------------------------------------------

JSON_READERS: dict[str, Callable[[object, str], Any]] = {
    "list": convert.list_from_json,
    "get_allocatable_resources": convert.allocatable_from_json,
    "get": convert.get_from_json,
}
DOCS = {
    stem: [
        json.loads((R640_STATIC / f"{stem}.{style}.json").read_text()) for style in ("protojson", "gojson")
    ]
    for stem in JSON_READERS
}


@pytest.mark.parametrize("stem", sorted(JSON_READERS))
@given(data=st.data())
def test_a_json_response_is_pods_or_an_input_error_naming_the_field(stem: str, data: st.DataObject) -> None:
    doc = data.draw(st.one_of(st.sampled_from(DOCS[stem]).flatmap(mutated), json_values), label="doc")
    read = JSON_READERS[stem]
    value_or_input_error(lambda: read(doc, f"{stem}.json"), f"{stem}.json")


@given(
    text=st.one_of(
        json_text(st.sampled_from(DOCS["list"]).flatmap(mutated)),
        deep_json_text,
        st.text(max_size=60),
        st.sampled_from(['{"pod_resources": [{"cpu_ids": [' + "1" * 5000 + "]}]}", "\ud800"]),
    )
)
@example(text="[" * 1200 + "]" * 1200)
def test_json_text_is_pods_or_an_input_error_naming_the_file(text: str) -> None:
    encoded = text.encode("utf-8", "surrogatepass")
    value_or_input_error(
        lambda: convert.list_from_json(convert.parse_json(encoded, "list.json"), "list.json"), "list.json"
    )


# ---- protobuf -------------------------------------------------------------------------------

int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)


def _topology(ids: list[int]) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i) for i in ids])


numa = st.lists(st.one_of(st.integers(-2, 8), int64s), max_size=3).map(_topology)
devices = st.builds(
    lambda name, ids, topology: api_pb2.ContainerDevices(
        resource_name=name, device_ids=ids, topology=topology
    ),
    texts,
    st.lists(texts, max_size=3),
    numa,
)
memory = st.builds(
    lambda kind, size, topology: api_pb2.ContainerMemory(memory_type=kind, size=size, topology=topology),
    st.sampled_from(["memory", "hugepages-1Gi", ""]) | texts,
    st.integers(min_value=0, max_value=2**64 - 1),
    numa,
)
claims = st.builds(
    lambda driver, pool, device, cdi, share: api_pb2.ClaimResource(
        driver_name=driver,
        pool_name=pool,
        device_name=device,
        cdi_devices=[api_pb2.CDIDevice(name=n) for n in cdi],
        **({} if share is None else {"share_id": share}),
    ),
    texts,
    texts,
    texts,
    st.lists(texts, max_size=2),
    st.none() | texts,
)
dynamic = st.builds(
    lambda name, namespace, resources: api_pb2.DynamicResource(
        claim_name=name, claim_namespace=namespace, claim_resources=resources
    ),
    texts,
    texts,
    st.lists(claims, max_size=2),
)
cpu_ids = st.lists(st.one_of(st.integers(-1, 200), int64s), max_size=6)
containers = st.builds(
    lambda name, cpus, devs, mem, dyn: api_pb2.ContainerResources(
        name=name, cpu_ids=cpus, devices=devs, memory=mem, dynamic_resources=dyn
    ),
    texts,
    cpu_ids,
    st.lists(devices, max_size=2),
    st.lists(memory, max_size=2),
    st.lists(dynamic, max_size=1),
)
pods = st.builds(
    lambda name, namespace, conts, cpus, mem: api_pb2.PodResources(
        name=name, namespace=namespace, containers=conts, cpu_ids=cpus, memory=mem
    ),
    texts,
    texts,
    st.lists(containers, max_size=3),
    cpu_ids,
    st.lists(memory, max_size=1),
)
list_responses = st.lists(pods, max_size=3).map(lambda p: api_pb2.ListPodResourcesResponse(pod_resources=p))
allocatable_responses = st.builds(
    lambda devs, cpus, mem: api_pb2.AllocatableResourcesResponse(devices=devs, cpu_ids=cpus, memory=mem),
    st.lists(devices, max_size=3),
    cpu_ids,
    st.lists(memory, max_size=2),
)


@given(list_responses, allocatable_responses)
def test_a_protobuf_message_is_pods_or_an_input_error_naming_the_field(
    listed: api_pb2.ListPodResourcesResponse, allocatable: api_pb2.AllocatableResourcesResponse
) -> None:
    value_or_input_error(lambda: convert.list_from_proto(listed, "kubelet"), "kubelet")
    value_or_input_error(lambda: convert.allocatable_from_proto(allocatable, "kubelet"), "kubelet")


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes changed, removed or inserted."""
    out = bytearray(data)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=max(0, len(out) - 1)))
        how = draw(st.sampled_from(["set", "delete", "insert"]))
        if how == "insert" or not out:
            out[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif how == "delete":
            del out[at]
        else:
            out[at] = draw(st.integers(min_value=0, max_value=255))
    return bytes(out)


LIST_PB = (R640_STATIC / "list.pb").read_bytes()


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("podres")


@given(
    data=st.one_of(
        damaged(LIST_PB),
        list_responses.map(lambda m: m.SerializeToString()).flatmap(damaged),
        st.binary(max_size=80),
    )
)
@example(data=b"\x0a" + b"\xff" * 10)
def test_protobuf_bytes_are_pods_or_an_input_error_naming_the_file(scenario: Path, data: bytes) -> None:
    path = scenario / "list.pb"
    path.write_bytes(data)
    value_or_input_error(lambda: PodResourcesFiles(scenario).list(), str(path))
