"""Cutting a List response into its pods' bytes without decoding it (rte.podres.wire)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rte.podres.v1 import api_pb2
from rte.podres.wire import Records, changed_records, records, split_pods


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


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _wire(payloads: list[bytes]) -> bytes:
    return b"".join(b"\x0a" + _varint(len(p)) + p for p in payloads)


# Few distinct payloads, so that Lists share records, repeat them and move them around; some
# longer than 127 bytes (two-byte lengths) and some empty.
_PAYLOADS = st.sampled_from([b"", b"a", b"b", b"\x0a\x01a", b"x" * 130, b"y" * 200, b"z" * 20000])


@given(st.lists(_PAYLOADS, max_size=12), st.lists(_PAYLOADS, max_size=12), st.lists(_PAYLOADS, max_size=12))
def test_cutting_only_what_changed_gives_what_cutting_it_all_gives(
    head: list[bytes], middle: list[bytes], tail: list[bytes]
) -> None:
    old_wire = _wire(head + middle + tail)
    for new_payloads in (head + tail, head + middle[::-1] + tail, head + middle + middle + tail, middle):
        new_wire = _wire(new_payloads)
        old = records(old_wire)
        assert old is not None
        found = changed_records(old, new_wire)
        assert found is not None
        new, kept_head, kept_tail = found
        assert new == records(new_wire)
        assert new.payloads == new_payloads
        middle_again = list(new.iter_payloads(kept_head, len(new) - kept_tail))
        assert middle_again == new_payloads[kept_head : len(new_payloads) - kept_tail]
        assert kept_head + kept_tail <= min(len(old.payloads), len(new.payloads))
        assert new.payloads[:kept_head] == old.payloads[:kept_head]
        assert new.payloads[len(new.payloads) - kept_tail :] == old.payloads[len(old.payloads) - kept_tail :]


def test_a_change_in_one_record_of_many_cuts_only_that_one() -> None:
    payloads = [b"pod-%04d" % i for i in range(1000)]
    old = records(_wire(payloads))
    assert old is not None
    payloads[500] = b"pod-0500-changed"
    found = changed_records(old, _wire(payloads))
    assert found is not None and found[1:] == (500, 499)


def test_records_re_encoded_from_another_form_are_not_compared() -> None:
    assert changed_records(Records(b"", None, []), _wire([b"a"])) is None
    old = records(_wire([b"a"]))
    assert old is not None and changed_records(old, b"\x12\x00") is None
