"""Splitting a List response into its pods' bytes without decoding it, and finding what changed.

``ListPodResourcesResponse`` has one field, ``repeated PodResources pod_resources = 1``, so its
wire form is a run of ``tag, length, bytes`` records (protobuf encoding guide,
https://protobuf.dev/programming-guides/encoding/#length-types). Cutting them apart costs far less
than decoding the whole message and encoding every pod again to find which pods changed, and the
pods' own bytes are what the reader's cache is keyed on.

Between two Lists most pods are the same records at the same place, counted from the start or
from the end. :func:`changed_records` finds the longest common head and tail of the two
responses by comparing bytes (in C, a handful of comparisons) and cuts only the records between
them, so a List with one changed pod costs the same for 250 pods as for 5000.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_LIST_PODS_TAG = 1 << 3 | 2  # field 1, wire type 2 (length-delimited)


@dataclass(frozen=True)
class Records:
    """A List response cut into its pods' records.

    ``ends``: where each record ends in ``wire`` (8 bytes a pod; the payloads are sliced from
    ``wire`` when asked for, not kept: issue #27, at most 1 KiB a pod for the whole agent). None
    when the records are not cut from ``wire`` (a response in another form, decoded and encoded
    again): ``encoded`` then holds their payloads, and no later response can be compared with it
    byte for byte.
    """

    wire: bytes
    ends: array[int] | None
    encoded: Sequence[bytes] = ()

    def __len__(self) -> int:
        return len(self.ends) if self.ends is not None else len(self.encoded)

    def iter_payloads(self, start: int, stop: int) -> Iterator[bytes]:
        """The payloads of records ``start`` to ``stop`` (excluded), one at a time."""
        if self.ends is None:
            yield from self.encoded[start:stop]
            return
        wire, ends = self.wire, self.ends
        pos = ends[start - 1] if start else 0
        for end in ends[start:stop]:
            pos += 1  # the tag, then the length's varint, which _cut checked
            while wire[pos] & 0x80:
                pos += 1
            yield wire[pos + 1 : end]
            pos = end

    @property
    def payloads(self) -> list[bytes]:
        return list(self.iter_payloads(0, len(self)))


def _cut(wire: bytes, start: int, end: int) -> list[int] | None:
    """The end offsets of the records filling ``wire[start:end]`` exactly, or None."""
    ends = []
    pos = start
    while pos < end:
        if wire[pos] != _LIST_PODS_TAG or pos + 1 >= end:
            return None
        # The length is a varint; pods of up to 127 bytes take one byte, tried first.
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
        pos += length
        ends.append(pos)
    return ends


def count_records(wire: bytes, limit: int) -> int:
    """How many records ``wire`` holds, counting no further than ``limit + 1``.

    Walks the records' tags and lengths only (no payload is touched or copied), so refusing a
    List of 400 000 pods against a cap of a few hundred costs a few hundred steps. A malformed
    record ends the count: the cut that follows reports it.
    """
    count, pos, end = 0, 0, len(wire)
    while pos < end and count <= limit:
        if wire[pos] != _LIST_PODS_TAG:
            break
        length, shift, pos = 0, 0, pos + 1
        while pos < end and shift <= 35:
            byte = wire[pos]
            length |= (byte & 0x7F) << shift
            pos += 1
            if byte < 0x80:
                break
            shift += 7
        pos += length
        count += 1
    return count


def records(wire: bytes) -> Records | None:
    """``wire`` cut into its records; None when it holds anything else (another field, a record
    cut short): the caller then decodes the whole message, which names what is wrong."""
    ends = _cut(wire, 0, len(wire))
    return None if ends is None else Records(wire, array("Q", ends))


def split_pods(wire: bytes) -> list[bytes] | None:
    """The bytes of each ``pod_resources`` entry of a List response, in order (see :func:`records`)."""
    found = records(wire)
    return None if found is None else found.payloads


def _common_head(a: bytes, b: bytes, limit: int) -> int:
    """The length of the longest common prefix of ``a`` and ``b``, at most ``limit``."""
    lo, hi = 0, limit  # a[:lo] == b[:lo]; the answer is at most hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_tail(a: bytes, b: bytes, limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit``."""
    la, lb = len(a), len(b)
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def changed_records(old: Records, wire: bytes) -> tuple[Records, int, int] | None:
    """``wire`` cut into records, reusing ``old`` where the bytes are the same.

    Returns the records and ``(head, tail)``: the first ``head`` and the last ``tail`` records
    are those of ``old`` (the same bytes, the same pods), only the ones between were cut again.
    None when ``old`` cannot be compared (:attr:`Records.ends` None) or ``wire`` is not plain
    records.
    """
    ends = old.ends
    if ends is None:
        return None
    before = old.wire
    shortest = min(len(before), len(wire))
    same_head = _common_head(before, wire, shortest)
    same_tail = _common_tail(before, wire, shortest - same_head)
    head = bisect_right(ends, same_head)  # records lying wholly in the common head
    tail_from = len(before) - same_tail
    # The first record starting in the common tail; never one of the head's.
    first_tail = 0 if tail_from <= 0 else bisect_left(ends, tail_from) + 1
    first_tail = max(first_tail, head)
    start = ends[head - 1] if head else 0
    shift = len(wire) - len(before)
    stop = len(wire) if first_tail >= len(ends) else ends[first_tail - 1] + shift if first_tail else shift
    cut = _cut(wire, start, stop)
    if cut is None:
        # Bytes equal to the old tail need not start a record in the new response (a payload
        # can end with bytes that look like records): cut all the way to the end instead.
        first_tail, cut = len(ends), _cut(wire, start, len(wire))
        if cut is None:
            return None
    tail = len(ends) - first_tail
    kept_ends = ends[first_tail:]
    if shift:
        kept_ends = array("Q", map(shift.__add__, kept_ends))
    return Records(wire, ends[:head] + array("Q", cut) + kept_ends), head, tail
