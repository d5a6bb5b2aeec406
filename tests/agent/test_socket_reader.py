"""The socket reader decodes only pods whose bytes it has not seen, and hands back the same objects
for the others (what lets the pod tally skip them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rte.agent.kubelet import SocketReader
from rte.errors import InputError
from rte.podres import convert
from rte.podres.client import PodResourcesClient
from rte.podres.v1 import api_pb2
from rte.testing import scenarios
from rte.testing.fake_kubelet import FakeKubelet


class _Wire:
    """A client double that answers List with given bytes."""

    endpoint = "test"
    decode = PodResourcesClient.decode

    def __init__(self, *answers: bytes) -> None:
        self.answers = list(answers)

    def list_wire(self) -> bytes:
        return self.answers.pop(0)


def _listing(n: int) -> api_pb2.ListPodResourcesResponse:
    return scenarios.synthetic(numa_ids=(0, 1), cpus=16, pods=n, devices=4).listing


def test_unchanged_pods_come_back_as_the_same_objects_over_the_socket(tmp_path: Path) -> None:
    scenario = scenarios.synthetic(numa_ids=(0, 1), cpus=16, pods=30, devices=4)
    with FakeKubelet(scenario=scenario.write(tmp_path / "s"), rate_limit=None) as kubelet:
        reader = SocketReader(PodResourcesClient(kubelet.endpoint, qps=None))
        try:
            first = reader.list()
            listed = kubelet.pods()
            kubelet.set_pods(listed[:10] + listed[11:])  # one pod gone
            second = reader.list()
        finally:
            reader.close()
    assert len(second.pods) == 29 and second.digest != first.digest
    assert all(a is b for a, b in zip(first.pods[:10] + first.pods[11:], second.pods, strict=True))
    assert second.pods == convert.list_from_proto(_without(scenario.listing, 10), "x")


def _without(listing: api_pb2.ListPodResourcesResponse, index: int) -> api_pb2.ListPodResourcesResponse:
    out = api_pb2.ListPodResourcesResponse()
    out.pod_resources.extend(p for i, p in enumerate(listing.pod_resources) if i != index)
    return out


def test_a_response_in_another_form_is_decoded_whole_with_the_same_result() -> None:
    listing = _listing(5)
    plain = listing.SerializeToString()
    unknown_field = plain + b"\x10\x01"  # field 2, a varint: not in the schema, ignored by decoders
    reader = SocketReader(_Wire(plain, unknown_field))  # type: ignore[arg-type]
    first, second = reader.list(), reader.list()
    assert second.digest != first.digest
    assert second.pods == first.pods == convert.list_from_proto(listing, "x")
    assert all(a is b for a, b in zip(first.pods, second.pods, strict=True))


@pytest.mark.parametrize("wire", [b"\x0a\x02\xff\xff", b"\x0a\x05abc"])
def test_bytes_that_do_not_decode_are_a_one_line_input_error(wire: bytes) -> None:
    with pytest.raises(InputError, match="kubelet List response from test"):
        SocketReader(_Wire(wire)).list()  # type: ignore[arg-type]
