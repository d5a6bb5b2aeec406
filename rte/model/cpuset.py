"""Linux cpuset list syntax ("0-3,8,10-11"), as used by sysfs and the kubelet.

Parsing is strict: anything that is not a comma-separated list of ``N`` or ``A-B`` (A <= B)
raises :class:`ValueError` with the offending text, so callers can name the file it came from.
Whitespace and trailing NUL bytes (a kernel quirk on some sysfs ``*_list`` files) are ignored.
Ids above :data:`MAX_ID` are refused too: a range is expanded into a set, and ``0-4294967295``
must not cost gigabytes before anything can say it is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_ID = 65535
"""The largest CPU or NUMA node id a cpuset may name. Linux sizes its CPU and node masks when it
is built (``CONFIG_NR_CPUS``, a few thousand at most), far below this."""


def _is_id(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 12


def parse_cpuset(text: str) -> frozenset[int]:
    """Return the set of ids in a cpuset list; the empty string is the empty set."""
    cleaned = text.replace("\x00", "").strip()
    if not cleaned:
        return frozenset()
    ids: set[int] = set()
    for part in cleaned.split(","):
        part = part.strip()
        lo_text, sep, hi_text = part.partition("-")
        # ASCII only: str.isdigit() also takes "²" and other digits int() refuses or misreads;
        # and no more digits than MAX_ID has, so int() never meets a thousand-digit number.
        if not _is_id(lo_text) or (sep and not _is_id(hi_text)):
            raise ValueError(f"not a cpuset list: {text.strip()[:80]!r}")
        lo = int(lo_text)
        hi = int(hi_text) if sep else lo
        if hi < lo:
            raise ValueError(f"descending range {part!r} in cpuset list {text.strip()!r}")
        if hi > MAX_ID:
            raise ValueError(f"id {hi} above {MAX_ID} in cpuset list {text.strip()[:80]!r}")
        ids.update(range(lo, hi + 1))
    return frozenset(ids)


def format_cpuset(ids: Iterable[int]) -> str:
    """Render ids as the shortest cpuset list: sorted, consecutive runs collapsed."""
    ordered = sorted(set(ids))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)
