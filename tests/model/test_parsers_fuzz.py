"""Fuzzing the model's parsers: quantities, cpusets, NRT objects and pods.

The pure text parsers (quantities, cpusets) answer a value or a one-line ``ValueError``; the
readers that name a field (``resource_quantities``, ``from_nrt``, ``pod_from_manifest``) a value or a one-line
``InputError``. Budget and profiles: tests/conftest.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rte.errors import InputError
from rte.model.cpuset import format_cpuset, parse_cpuset
from rte.model.nrt import from_nrt
from rte.model.pod import (
    compute_qos_class,
    effective_request,
    kubelet_pod_request,
    pod_from_manifest,
    resource_quantities,
)
from rte.model.quantity import canonical_quantity, parse_quantity
from tests.helpers.fuzz import (
    huge_integers,
    json_values,
    mutated,
    value_or_input_error,
    value_or_value_error,
)

quantity_like = st.from_regex(
    r"\A[+-]?[0-9]{0,30}(\.[0-9]{0,12})?([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,12})?\Z", fullmatch=True
)
cpuset_like = st.from_regex(r"\A[0-9, \-\x00\n]{0,40}\Z", fullmatch=True)


@given(st.one_of(quantity_like, st.text(max_size=40), huge_integers))
@example("1e999999999")
@example("9" * 5000)
def test_a_quantity_is_a_value_or_a_one_line_value_error(text: str | int) -> None:
    result = value_or_value_error(lambda: parse_quantity(text))
    if not isinstance(result, ValueError) and abs(result) < 10**60:
        # what parses also prints back the way Kubernetes would (within the exponents it reads)
        assert parse_quantity(canonical_quantity(text)) == result


@given(st.dictionaries(st.text(max_size=10), st.one_of(quantity_like, json_values), max_size=4))
@example({"\x1e": ""})  # a field name with a line break made a two-line message
@example({"cpu\nmemory": "1x"})
def test_a_map_of_quantities_is_a_value_or_an_input_error_naming_the_field(value: dict[str, Any]) -> None:
    value_or_input_error(lambda: resource_quantities(value, "spec.overhead"), "spec.overhead")


@given(st.one_of(cpuset_like, st.text(max_size=40)))
@example("0-4294967295")
@example("0-99999999999999999999")
def test_a_cpuset_is_a_value_or_a_one_line_value_error(text: str) -> None:
    result = value_or_value_error(lambda: parse_cpuset(text))
    if not isinstance(result, ValueError):
        assert parse_cpuset(format_cpuset(result)) == result


@pytest.mark.parametrize("text", ["0-4294967295", "65536", "0,99999999999999999999", "0-" + "9" * 5000])
def test_a_cpuset_naming_ids_beyond_any_kernel_is_refused_before_it_is_expanded(text: str) -> None:
    # "0-4294967295" used to build a set of four billion ids: minutes and gigabytes, then a crash.
    with pytest.raises(ValueError, match=r"above 65535|not a cpuset list"):
        parse_cpuset(text)
    assert parse_cpuset("0-65535") == frozenset(range(65536))


_NRT: dict[str, Any] = {
    "apiVersion": "topology.node.k8s.io/v1alpha2",
    "kind": "NodeResourceTopology",
    "metadata": {
        "name": "worker-1",
        "annotations": {"topology.node.k8s.io/fingerprint": "pfp0v001ef46db3751d8e999"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "worker-1", "uid": "u-1"}],
    },
    "topologyPolicies": ["SingleNUMANodeContainerLevel"],
    "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
    "zones": [
        {
            "name": "node-0",
            "type": "Node",
            "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 21}],
            "resources": [
                {"name": "cpu", "capacity": "40", "allocatable": "38", "available": "30"},
                {"name": "memory", "capacity": "100Gi", "allocatable": "99Gi", "available": "90Gi"},
            ],
        },
        {"name": "node-1", "type": "Node", "parent": "socket-0", "attributes": []},
    ],
}


@given(st.one_of(mutated(_NRT), json_values), st.booleans())
@example(
    {**_NRT, "zones": [{"name": "node-0", "type": "Node", "costs": [{"name": "x", "value": 10**30}]}]}, True
)
def test_an_nrt_object_is_a_value_or_an_input_error_naming_the_field(obj: Any, strict: bool) -> None:
    value_or_input_error(lambda: from_nrt(obj, strict=strict), "")


_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "numa-app", "namespace": "ns", "uid": "u-1"},
    "spec": {
        "nodeName": "worker-1",
        "schedulerName": "topology-aware",
        "overhead": {"cpu": "250m"},
        "resources": {"limits": {"cpu": "4", "memory": "8Gi"}},
        "initContainers": [
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "init", "resources": {"limits": {"cpu": "2", "hugepages-1Gi": "2Gi"}}},
        ],
        "containers": [
            {
                "name": "app",
                "resources": {
                    "requests": {"cpu": "3", "memory": "8Gi", "example.com/nic": "1"},
                    "limits": {"cpu": "3", "memory": "8Gi", "example.com/nic": "1"},
                },
            }
        ],
    },
    "status": {"phase": "Pending", "qosClass": "Guaranteed"},
}


@given(st.one_of(mutated(_POD), json_values))
@example({**_POD, "spec": {**_POD["spec"], "containers": []}})
@example({**_POD, "spec": {**_POD["spec"], "overhead": {"cpu": "-1"}}})
def test_a_pod_is_a_value_without_negative_amounts_or_an_input_error_naming_the_field(obj: Any) -> None:
    pod = value_or_input_error(lambda: pod_from_manifest(obj, source="pod.yaml"), "pod.yaml")
    if isinstance(pod, InputError):
        return
    # What the decisions then read must hold for any pod the parser lets through.
    assert pod.containers
    assert all(qty >= 0 for c in (*pod.containers, *pod.init_containers) for qty in c.requests.values())
    assert all(qty >= 0 for qty in kubelet_pod_request(pod).values())
    assert all(qty >= 0 for qty in effective_request(pod).values())
    assert compute_qos_class(pod.containers) in ("Guaranteed", "Burstable", "BestEffort")
