"""Filter + Score of one pod over thousands of nodes through the reserve cache, per request.

Targets (issue "the consumer at kube-scheduler speed", item 2): the library through the cache
(OverReserve, the extender's default, holding a few reservations) in at most 3 ms at 5000 NRTs
and 30 ms at 50,000 NRTs of 8 zones.

Each timed cycle is one scheduling cycle of a Python scheduler using the library: prepare the
pod, :func:`rte.consumer.cycle.evaluate_nodes` over every node (one snapshot of the cache, one
decision), then reserve the best node and unreserve the pod reserved one cycle before, so one or
two nodes change per cycle as in a live scheduler; the names are the same tuple every cycle. The
extender's form, a filter request then a prioritize request on the nodes that passed (lists, as
decoded from a request), is timed the same way; kube-scheduler's choice of a node is not.

The baseline, in the same process on the same store: the same cycle through a cache that offers
only the per-node interface (``get``, ``note_filter_success``...), i.e. the path before the
batched lookups: one lock and one lookup per node and request, and a comparison of every row.

Run: ``.venv/bin/python -m bench.bench_cache``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bench.bench_consumer import HEADLINE, PODS, ZONES, _pod, _topology
from bench.timing import Row, median_seconds, print_rows
from rte.consumer.cache.interface import NRTCache
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cycle import evaluate_nodes, filter_nodes, score_nodes
from rte.consumer.requests import prepare_pod
from rte.consumer.score import Scorer, ScoringStrategy
from rte.consumer.store import ADDED, NRTStore
from rte.model.pod import Pod
from rte.testing.per_node_cache import PerNodeCache

NODES = 5000
MANY_NODES = 50_000
TARGET_MS = 3.0
MANY_TARGET_MS = 30.0
RESERVED = 5
"""Pods reserved before the timing starts (on distinct nodes), kept for the whole run."""


def _setup(count: int) -> tuple[OverReserveCache, list[str]]:
    rng = random.Random(42)
    store = NRTStore()
    for i in range(count):
        store.apply(ADDED, _topology(i, rng))
    cache = OverReserveCache(store)
    names = store.nodes()
    template = _pod(PODS[HEADLINE])
    for k in range(RESERVED):
        cache.reserve(names[k * 97 % count], Pod("bench", f"reserved-{k}", containers=template.containers))
    return cache, names


class _Cycles:
    """Scheduling cycles of numbered pods: each reserves its best node, the one before is undone."""

    def __init__(self, cache: NRTCache, names: list[str]) -> None:
        self.cache, self.names = cache, names
        self.candidates = tuple(names)
        """The library's form: the same tuple each cycle (its rows are remembered by identity)."""
        self.template = _pod(PODS[HEADLINE])
        self.strategy = ScoringStrategy("LeastAllocated")
        self.last: tuple[str, Pod] | None = None
        self.count = 0

    def _next(self) -> Pod:
        self.count += 1
        return Pod("bench", f"pod-{self.count}", containers=self.template.containers)

    def _settle(self, pod: Pod, node: str | None) -> None:
        self.undo()
        if node is not None:
            self.cache.reserve(node, pod)
            self.last = (node, pod)

    def undo(self) -> None:
        """Unreserve the last pod reserved."""
        if self.last is not None:
            self.cache.unreserve(*self.last)
        self.last = None

    def library(self) -> str | None:
        pod = self._next()
        prep = prepare_pod(pod)
        evaluation = evaluate_nodes(prep, self.candidates, self.cache, Scorer(prep, self.strategy))
        best = evaluation.best()
        node = None if best is None else self.names[best[0]]
        self._settle(pod, node)
        return node

    def extender(self) -> str | None:
        pod = self._next()
        prep = prepare_pod(pod)
        passed = filter_nodes(prep, self.names, self.cache).passed
        scores = score_nodes(prep, passed, self.cache, Scorer(prep, self.strategy))
        node = scores[0][0] if scores else None  # (kube-scheduler picks; its cost is not ours)
        self._settle(pod, node)
        return node


def _measure(
    cache: OverReserveCache, names: list[str], form: str, repeat: int, base_repeat: int
) -> tuple[float, float]:
    """(ms per cycle through the batched cache, ms through the per-node baseline), medians."""
    count = len(names)
    batched = _Cycles(cache, names)
    per_node = _Cycles(PerNodeCache(cache), names)  # type: ignore[arg-type]  # per-node methods only
    run: Callable[[_Cycles], str | None] = getattr(_Cycles, form)
    chosen = run(batched)  # the first cycles also fill both mirrors, untimed
    batched.undo()
    if run(per_node) != chosen:
        raise AssertionError(f"the batched and per-node paths chose different nodes ({form}, {count})")
    per_node.undo()
    ms = median_seconds(lambda: run(batched), repeat=repeat) * 1000
    batched.undo()
    base = median_seconds(lambda: run(per_node), repeat=base_repeat) * 1000
    return ms, base


def _row(what: str, ms: float, base: float, target: float | None) -> Row:
    figure = f"{ms:.2f} ms (per-node lookups {base:.1f} ms: {base / ms:.0f}x)"
    if target is None:
        return Row(what, figure, "-", None)
    return Row(what, figure, f"<= {target:.0f} ms", ms <= target)


def summary() -> list[Row]:
    rows = []
    for count, target, repeat in ((NODES, TARGET_MS, 31), (MANY_NODES, MANY_TARGET_MS, 9)):
        cache, names = _setup(count)
        for form, label in (("library", "library evaluate_nodes"), ("extender", "filter then prioritize")):
            ms, base = _measure(cache, names, form, repeat, max(repeat // 3, 3))
            what = f"through the reserve cache, {count} NRTs x {ZONES} zones, {label} ({HEADLINE})"
            rows.append(_row(what, ms, base, target if form == "library" else None))
    return rows


def main() -> None:
    print_rows(summary())


if __name__ == "__main__":
    main()
