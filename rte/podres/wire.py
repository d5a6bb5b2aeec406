"""Splitting a List response into its pods' bytes, without decoding it.

``ListPodResourcesResponse`` has one field, ``repeated PodResources pod_resources = 1``, so its
wire form is a run of ``tag, length, bytes`` records (protobuf encoding guide,
https://protobuf.dev/programming-guides/encoding/#length-types). Cutting them apart costs far less
than decoding the whole message and encoding every pod again to find which pods changed, and the
pods' own bytes are what the reader's cache is keyed on.
"""

from __future__ import annotations

_LIST_PODS_TAG = 1 << 3 | 2  # field 1, wire type 2 (length-delimited)


def split_pods(wire: bytes) -> list[bytes] | None:
    """The bytes of each ``pod_resources`` entry of a List response, in order.

    None when ``wire`` holds anything else (another field, a record cut short): the caller then
    decodes the whole message, which names what is wrong.
    """
    out = []
    pos, end = 0, len(wire)
    while pos < end:
        if wire[pos] != _LIST_PODS_TAG or pos + 1 >= end:
            return None
        # The length is a varint; pods of up to 16 KiB take one or two bytes, tried first.
        first = wire[pos + 1]
        if first < 0x80:
            length, pos = first, pos + 2
        else:
            length, shift, pos = first & 0x7F, 7, pos + 2
            while True:
                if pos >= end or shift > 35:
                    return None
                byte = wire[pos]
                length |= (byte & 0x7F) << shift
                pos += 1
                if byte < 0x80:
                    break
                shift += 7
        if pos + length > end:
            return None
        out.append(wire[pos : pos + length])
        pos += length
    return out
