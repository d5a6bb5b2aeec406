"""The cyclic garbage collector's pace during a simulation (issue #27).

A run makes millions of short-lived objects (views, lookups, NRT objects, event tuples) that
reference counting frees at once; only unreachable cycles need the cyclic collector. With
Python's default thresholds (700, 10, 10) it kept walking every long-lived object (the cache's
views and NRTs, the pods): 16 % of the CPU at 1000 nodes x 6000 pods. With
:data:`GC_THRESHOLDS` it takes 2-3 %. Collection frees only unreachable objects, so no result
depends on its pace (``tests/sim/test_golden.py``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

GC_THRESHOLDS = (50_000, 20, 20)
"""Allocations (net) before a young collection, then young collections per middle one, and
middle ones per full one."""


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect at :data:`GC_THRESHOLDS` inside the block, as before it after."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
