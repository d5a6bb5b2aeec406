"""Fuzzing what the consumer reads besides NRTs and pods: Leases (the agents' heartbeat), Node
objects (allocatable), NRT files as a user gives them to ``rte fit``, and fingerprints.

Each is a value or a one-line ``InputError`` naming the object or file (fingerprints: one of the
fingerprint errors, which the cache turns into a dirty node). Budget and profiles:
tests/conftest.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from rte.consumer.api import node_allocatable
from rte.consumer.store import heartbeat_from_lease, topologies_from_file
from rte.model.fingerprint import FingerprintError, check, compute
from tests.helpers.fuzz import deep_yaml_text, json_values, mutated, value_or_input_error
from tests.helpers.paths import REPO

_LEASE: dict[str, Any] = {
    "apiVersion": "coordination.k8s.io/v1",
    "kind": "Lease",
    "metadata": {"name": "worker-1", "namespace": "rte"},
    "spec": {
        "holderIdentity": "worker-1",
        "leaseDurationSeconds": 40,
        "acquireTime": "2024-05-01T09:00:00.000000Z",
        "renewTime": "2024-05-01T10:00:00.123456Z",
    },
}

_NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "worker-1"},
    "status": {"allocatable": {"cpu": "38", "memory": "100Gi", "hugepages-1Gi": "4Gi", "pods": "110"}},
}

times = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda t: t.isoformat()),
    st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-23:59", "2024-02-30T00:00:00Z"]),
)


@given(st.one_of(mutated(_LEASE), json_values, times.map(lambda t: {**_LEASE, "spec": {"renewTime": t}})))
@example(["worker-1"])
@example({**_LEASE, "spec": {"renewTime": "9999-12-31T23:59:59-23:59"}})
def test_a_lease_is_a_heartbeat_or_an_input_error_naming_it(obj: Any) -> None:
    value_or_input_error(lambda: heartbeat_from_lease(obj, source="Lease rte/worker-1"), "Lease rte/worker-1")


@given(st.one_of(mutated(_NODE), json_values))
def test_a_node_object_is_allocatable_or_an_input_error_naming_the_field(obj: Any) -> None:
    value_or_input_error(lambda: node_allocatable(obj, source="node.yaml"), "node.yaml")


_NRT_FILE = list(yaml.safe_load_all((REPO / "examples" / "nrt-two-nodes.yaml").read_text(encoding="utf-8")))


def _yaml_documents(docs: list[Any]) -> str:
    try:
        return yaml.safe_dump_all(docs)
    except (RecursionError, yaml.YAMLError):
        return "{}"


nrt_texts = st.one_of(
    st.lists(st.sampled_from(_NRT_FILE).flatmap(mutated), min_size=1, max_size=3).map(_yaml_documents),
    st.sampled_from(_NRT_FILE)
    .flatmap(mutated)
    .map(lambda nrt: _yaml_documents([{"kind": "NodeResourceTopologyList", "items": [nrt]}])),
    deep_yaml_text,
    st.text(max_size=80),
    st.sampled_from(["kind: List\nitems: 3\n", "---\n---\n", "kind: " + "9" * 5000, "- 1\n- 2\n"]),
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("nrt-files")


@given(text=nrt_texts)
@example(text="kind: List\nitems: 3\n")
def test_an_nrt_file_is_topologies_or_an_input_error_naming_the_file(scratch: Path, text: str) -> None:
    path = scratch / "nrts.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    value_or_input_error(lambda: topologies_from_file(path), str(path))


_SIGN = compute([("ns", "p")])


@given(st.one_of(st.text(max_size=40), st.sampled_from([_SIGN, _SIGN[:-1] + "x", _SIGN.upper(), _SIGN[:8]])))
def test_a_fingerprint_annotation_is_matched_or_a_fingerprint_error(sign: str) -> None:
    try:
        check(sign, _SIGN)
    except FingerprintError as e:
        assert str(e).splitlines() == [str(e)]
