"""``release_free_heap``: freed heap memory among live objects stops being resident."""

from __future__ import annotations

import os

import pytest

from rte.runtime.heap import limit_malloc_arenas, release_free_heap

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


_ARENAS = """
import ctypes, sys, threading
from rte.runtime.heap import limit_malloc_arenas
if sys.argv[1] == "limit":
    assert limit_malloc_arenas(2)
libc = ctypes.CDLL(None)
ready, go = threading.Barrier(7), threading.Event()
kept = []

def allocate():
    ready.wait()  # all six threads alive at once: none can take over an exited thread's arena
    kept.append([bytearray(20_000) for _ in range(50)])  # malloc'd (not pymalloc, not mmap)
    go.wait()

threads = [threading.Thread(target=allocate) for _ in range(6)]
for t in threads:
    t.start()
ready.wait()
while len(kept) < 6:
    pass
buf, size = ctypes.c_char_p(), ctypes.c_size_t()
libc.open_memstream.restype = ctypes.c_void_p
stream = ctypes.c_void_p(libc.open_memstream(ctypes.byref(buf), ctypes.byref(size)))
libc.malloc_info(0, stream)
libc.fclose(stream)
go.set()
print(ctypes.string_at(buf, size.value).decode().count("<heap nr="))
"""


def _arenas(mode: str, env: dict[str, str] | None = None) -> int:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", _ARENAS, mode],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | (env or {}),
    )
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="glibc's malloc_info")
def test_threads_share_the_arenas_the_agent_allows() -> None:
    try:
        unlimited = _arenas("default")
    except AssertionError:
        pytest.skip("not glibc")
    assert unlimited > 2  # six threads, each its own arena by default (8 per core)
    assert _arenas("limit") <= 2


def test_an_explicit_malloc_arena_max_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert not limit_malloc_arenas(2)
