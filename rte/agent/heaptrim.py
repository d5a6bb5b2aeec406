"""When the agent gives its heap's free pages back: after a cycle that read many pods.

A first List of 5000 pods, or the pod watch's first list, frees its buffers once what is kept is
built, and glibc keeps them resident among the kept objects (some 0.3 MiB at 5000 pods; issue
#27 asks at most 1 KiB a pod). ``malloc_trim`` gives them back
(:func:`rte.runtime.heap.release_free_heap`, a few milliseconds); a cycle for one changed pod
leaves nothing worth one, so the loop asks :meth:`HeapTrim.after_cycle` after each successful
cycle and a trim happens only when many pods were read since the last.
"""

from __future__ import annotations

from collections.abc import Callable

from rte.runtime.heap import release_free_heap

TRIM_AFTER_PODS = 256
"""Pods whose facts were computed since the last trim that make the next cycle trim."""


class HeapTrim:
    """The trim policy; used by the loop's thread only."""

    def __init__(self, trim: Callable[[], object] = release_free_heap) -> None:
        self._trim = trim
        self._due = False
        self._computed_at = 0
        self.trims = 0
        """How many times the heap was trimmed."""

    def pods_listed(self) -> None:
        """The pod watch read a whole list: trim after the next successful cycle."""
        self._due = True

    def after_cycle(self, facts_computed: int) -> None:
        """A cycle succeeded; ``facts_computed``: the pod tally's count so far (0 without one)."""
        if self._due or facts_computed - self._computed_at >= TRIM_AFTER_PODS:
            self._due, self._computed_at = False, facts_computed
            self._trim()
            self.trims += 1
