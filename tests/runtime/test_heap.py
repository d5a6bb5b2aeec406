"""``release_free_heap``: freed heap memory among live objects stops being resident."""

from __future__ import annotations

import os

import pytest

from rte.runtime.heap import release_free_heap

MiB = 2**20


def _resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads Linux's /proc")
def test_freed_blocks_among_kept_ones_are_given_back() -> None:
    # 160 MiB of 4 KiB blocks (malloc'd from the heap, not mmap'd), one in 64 kept: nothing at
    # the top of the heap is free, so free() alone gives nothing back.
    blocks = [bytes(4096) for _ in range(40_960)]
    kept = blocks[::64]
    del blocks
    before = _resident()
    if not release_free_heap():
        pytest.skip("no malloc_trim in this C library")
    assert before - _resident() > 100 * MiB
    assert len(kept) == 640
