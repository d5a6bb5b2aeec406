"""Giving freed heap memory back to the system after a big read (a list of 20 000 NRTs).

glibc's malloc keeps what a process frees in its arenas, one per thread that allocated, and
returns to the kernel only a free stretch at the very top of the main heap. The buffers of a
big read (the page bytes of a list, a file's bytes, the decoder's temporaries) are freed once
the topologies are built, but stay resident among them. ``malloc_trim(0)`` releases the free
pages of every arena (``madvise(MADV_DONTNEED)`` since glibc 2.8; malloc_trim(3)), which no
allocation of Python objects in use touches: what is resident afterwards is what is kept.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger(__name__)


def release_free_heap() -> bool:
    """Return the heap's free pages to the system; False where the C library has no
    ``malloc_trim`` (musl, macOS), whose allocators return memory by themselves."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    released = bool(trim(0))
    log.debug("malloc_trim: memory %s", "released" if released else "not released (none free)")
    return True


M_ARENA_MAX = -8
"""``mallopt``'s parameter for the most arenas malloc may create (glibc's malloc/malloc.h)."""


def limit_malloc_arenas(count: int) -> bool:
    """Let glibc's malloc create at most ``count`` arenas from now on, as ``MALLOC_ARENA_MAX``
    would (mallopt(3)); an explicit ``MALLOC_ARENA_MAX`` in the environment wins.

    By default glibc gives threads up to 8 arenas per core, and each thread that allocates keeps
    what it freed in its own. The agent's dozen threads (gRPC's, the watches', the loop) are idle
    nearly always, so sharing two arenas costs no measurable contention and keeps their freed
    memory in one place: 2.0 MiB less resident at 5000 pods (docs/performance.md, "Agent
    memory"). False where the C library is not glibc (no ``mallopt``) or the call failed.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, count))
