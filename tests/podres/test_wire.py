"""Cutting a List response into its pods' bytes without decoding it (rte.podres.wire)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rte.podres.v1 import api_pb2
from rte.podres.wire import split_pods


def _pod(name: str, containers: int) -> api_pb2.PodResources:
    pod = api_pb2.PodResources(name=name, namespace="ns")
    for i in range(containers):
        pod.containers.add(name=f"c{i}", cpu_ids=list(range(i % 7)))
    return pod


@given(st.lists(st.tuples(st.text(max_size=30), st.integers(0, 400)), max_size=20))
def test_the_pieces_are_the_pods_bytes_in_order(spec: list[tuple[str, int]]) -> None:
    # Up to 400 containers: pods of a few bytes to tens of KiB, so lengths of one to three bytes.
    pods = [_pod(name, n) for name, n in spec]
    wire = api_pb2.ListPodResourcesResponse(pod_resources=pods).SerializeToString()
    pieces = split_pods(wire)
    assert pieces is not None
    assert [api_pb2.PodResources.FromString(p) for p in pieces] == pods


def test_an_empty_list_has_no_pieces() -> None:
    assert split_pods(b"") == []


@pytest.mark.parametrize(
    "wire",
    [
        b"\x12\x00",  # another field
        b"\x08\x01",  # field 1 as a varint
        b"\x0a\x05abc",  # a record cut short
        b"\x0a",  # a tag without a length
        b"\x0a\x80",  # a length cut short
        b"\x0a\xff\xff\xff\xff\xff\xff\x01",  # a length past any real message
    ],
)
def test_anything_but_plain_pod_records_is_left_to_the_decoder(wire: bytes) -> None:
    assert split_pods(wire) is None
