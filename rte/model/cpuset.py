"""Linux cpuset list syntax ("0-3,8,10-11"), as used by sysfs and the kubelet.

Parsing is strict: anything that is not a comma-separated list of ``N`` or ``A-B`` (A <= B)
raises :class:`ValueError` with the offending text, so callers can name the file it came from.
Whitespace and trailing NUL bytes (a kernel quirk on some sysfs ``*_list`` files) are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable


def parse_cpuset(text: str) -> frozenset[int]:
    """Return the set of ids in a cpuset list; the empty string is the empty set."""
    cleaned = text.replace("\x00", "").strip()
    if not cleaned:
        return frozenset()
    ids: set[int] = set()
    for part in cleaned.split(","):
        part = part.strip()
        lo_text, sep, hi_text = part.partition("-")
        if not lo_text.isdigit() or (sep and not hi_text.isdigit()):
            raise ValueError(f"not a cpuset list: {text.strip()!r}")
        lo = int(lo_text)
        hi = int(hi_text) if sep else lo
        if hi < lo:
            raise ValueError(f"descending range {part!r} in cpuset list {text.strip()!r}")
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
