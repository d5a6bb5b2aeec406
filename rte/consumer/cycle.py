"""One scheduling cycle through an NRT cache: Filter and Score many nodes for one pod.

:mod:`rte.consumer.filter` and :mod:`rte.consumer.score` decide on a view. Around them, the
reference plugin keeps the reserve cache informed, and every front end (the scheduler
extender, a Python scheduler using the library) must do it the same way:

* each node's view comes from the cache (``cache.get``), which may distrust it (not fresh);
* a node that fails Filter on data the cache trusts is marked "maybe over-reserved": perhaps
  only our own pessimistic reservations rejected it, so the next resync checks its fingerprint
  (after ``dirty_after_failures`` failures in a row); a node that passes resets that streak;
* a node the cache distrusts fails with the reference's reason plus the cache's explanation;
* Score rates the cache's best estimate of a node where it has one (the reserve cache:
  :mod:`rte.consumer.cache.estimate`), Filter the view it serves: :func:`score_lookup`;
* in the load-aware score mode (``CacheConfig.load``), a node's score is scaled down when the
  zone the kubelet would pick is busy (:func:`rte.consumer.load.weighted_score`); the filter
  mode needs nothing here, the cache already serves views without the busy zones.

Every front end goes through the same steps: the verdict on the cache's view, the cache's
bookkeeping (:func:`record_verdict`) and the score. The extender and the library decide many
nodes at once through :func:`filter_nodes` and :func:`score_nodes`, which run the kernel
(:mod:`rte.consumer.kernel`) over a table mirroring the views the cache serves
(:mod:`rte.consumer.kernel.mirror`). The simulator calls the per-node forms (:func:`filter_one`,
:func:`record_verdict`, :func:`score_one`) itself, because it memoises verdicts per node and
replays only the ones that can change the cache's marks (:mod:`rte.sim.scheduler`); the kernel
and the scalar path are held equal by a differential test.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import compress
from typing import TypeGuard

import numpy as np

from rte.consumer.cache.interface import Lookup, NRTCache, ScoreViewsCache, implements
from rte.consumer.config import LoadAwareConfig, LoadMode
from rte.consumer.filter import filter_node
from rte.consumer.kernel.decide import Verdicts, decide
from rte.consumer.kernel.mirror import is_batched, mirror_of
from rte.consumer.kernel.table import Bools, Ints, NodeTable
from rte.consumer.load import weighted_score
from rte.consumer.numaview import NumaView
from rte.consumer.requests import PreparedPod
from rte.consumer.score import Scorer
from rte.consumer.verdict import FilterResult


class FilterOutcome:
    """Which nodes passed (in the order asked), why not for the others, and every node's reason.

    Built from the kernel's columns: the lists and dictionaries of names are made on first use,
    so a caller that needs only some of them pays for no others.
    """

    def __init__(
        self, names: Sequence[str], fits: Bools, failed: dict[str, str], codes: Ints, texts: Sequence[str]
    ) -> None:
        self._names, self._fits, self._codes, self._texts = names, fits, codes, texts
        self.failed = failed
        """Why each node that failed did (with the cache's explanation where it distrusts it)."""

    @cached_property
    def passed(self) -> list[str]:
        if self._fits.all():  # the usual filter answer: every candidate
            return list(self._names)
        return list(compress(self._names, self._fits.tolist()))

    @cached_property
    def reasons(self) -> dict[str, str]:
        """The filter's reason for every node, passed ones included ("fits NUMA zone 1")."""
        reasons = dict(zip(self._names, map(self._texts.__getitem__, self._codes.tolist()), strict=True))
        reasons.update(self.failed)
        return reasons


@dataclass(frozen=True)
class Evaluation:
    """Filter and Score of one pod on many nodes (:func:`evaluate_nodes`)."""

    filtered: FilterOutcome
    scores: Ints
    """Per node asked, in order: the score 0..100 where Filter passed, -1 elsewhere."""

    def best(self) -> tuple[int, int] | None:
        """(position of the first node with the highest score, that score); None if none fits."""
        if not len(self.scores):
            return None
        k = int(np.argmax(self.scores))
        score = int(self.scores[k])
        return None if score < 0 else (k, score)


def filter_one(
    prep: PreparedPod, name: str, cache: NRTCache, allocatable: Collection[str] | None = None
) -> tuple[FilterResult, Lookup]:
    """The verdict on one node, from the view the cache serves for it, and that lookup."""
    lookup = cache.get(name, prep.pod)
    return filter_node(prep, lookup.view, allocatable, fresh=lookup.fresh), lookup


def record_verdict(cache: NRTCache, name: str, verdict: FilterResult, lookup: Lookup) -> str:
    """Tell the cache what Filter found on one node; the reason to report for it.

    A success ends the node's failure streak; a failure on data the cache trusts marks the node
    "maybe over-reserved"; a failure on data it distrusts carries the cache's explanation.
    """
    return record_outcome(cache, name, verdict.fits, verdict.reason, lookup)


def record_outcome(cache: NRTCache, name: str, fits: bool, reason: str, lookup: Lookup) -> str:
    """:func:`record_verdict` from a verdict's parts (what the kernel gives per row)."""
    if fits:
        cache.note_filter_success(name)
        return reason
    if not lookup.fresh:
        detail = cache.unfresh_reason(name)
        return f"{reason}: {detail}" if detail else reason
    if lookup.view is not None:
        cache.mark_maybe_over_reserved(name)
    return reason


def score_lookup(cache: NRTCache, name: str, lookup: Lookup) -> Lookup:
    """What Score rates on ``name``, given the ``lookup`` Filter decided on: the cache's best
    estimate where it has one (never for Filter: it may show more than the kubelet has)."""
    if lookup.fresh and lookup.view is not None and _estimates(cache):
        view = cache.score_views((name,)).get(name)
        if view is not None:
            return Lookup(view, True)
    return lookup


def _estimates(cache: object) -> TypeGuard[ScoreViewsCache]:
    return implements(cache, ScoreViewsCache)


def _rescore(
    cache: NRTCache, table: NodeTable, rows: Ints, wanted: Bools, scores: Ints, scorer: Scorer
) -> None:
    """Score the ``wanted`` rows (fresh ones) again on the cache's best estimates, where it has any."""
    views = cache.score_views() if _estimates(cache) else None
    if not views:
        return
    index = table.index
    at = {row: view for name, view in views.items() if (row := index.get(name)) is not None}
    # A row -> bool column (cheaper than np.isin), over every row: untracked names share one
    # that no name maps to (rte.consumer.kernel.mirror).
    present = np.zeros(table.size, np.bool_)
    present[np.fromiter(at, np.int64, len(at))] = True
    for k in np.flatnonzero(wanted & present[rows]).tolist():
        scores[k] = scorer(at[int(rows[k])])


def score_one(prep: PreparedPod, lookup: Lookup, scorer: Scorer, load: LoadAwareConfig) -> int:
    """The score (0..100) on one node from its lookup; scaled in the load-aware score mode."""
    score = scorer(lookup.view, fresh=lookup.fresh)
    if load.mode is LoadMode.SCORE and score and lookup.view is not None:
        # The zone the kubelet would pick decides whether the pod lands on a busy zone.
        numa_id = filter_node(prep, lookup.view, fresh=lookup.fresh).numa_id
        score = weighted_score(score, lookup.view, load, numa_id)
    return score


def filter_nodes(
    prep: PreparedPod,
    nodes: Iterable[str],
    cache: NRTCache,
    allocatable: Mapping[str, Collection[str]] | None = None,
) -> FilterOutcome:
    """Filter ``prep`` on ``nodes`` through ``cache``, keeping the cache's failure marks current.

    ``allocatable`` maps a node name to the names in its ``status.allocatable``; a node missing
    from it (or None) skips the node-allocatable check, as when the Node object is unknown.
    """
    return _evaluate(prep, nodes, cache, allocatable, None).filtered


def evaluate_nodes(
    prep: PreparedPod,
    nodes: Iterable[str],
    cache: NRTCache,
    scorer: Scorer,
    allocatable: Mapping[str, Collection[str]] | None = None,
) -> Evaluation:
    """:func:`filter_nodes` and :func:`score_nodes` on the nodes that pass, in one pass: one
    snapshot of the cache, one decision (what a scheduler using the library does per pod).

    Pass the same tuple of names from one pod to the next: its rows are then remembered by
    identity, and a cycle in which few nodes changed costs little more than the kernel itself.
    """
    return _evaluate(prep, nodes, cache, allocatable, scorer)


def _evaluate(
    prep: PreparedPod,
    nodes: Iterable[str],
    cache: NRTCache,
    allocatable: Mapping[str, Collection[str]] | None,
    scorer: Scorer | None,
) -> Evaluation:
    names = nodes if isinstance(nodes, list | tuple) else list(nodes)
    mirror = mirror_of(cache)
    strategy = None if scorer is None else scorer.strategy
    with mirror.lock:
        rows = mirror.sync(names, cache, prep.pod)
        selection = None if mirror.whole else rows
        per_row = list(map(allocatable.get, names)) if allocatable else None
        verdicts = decide(prep, mirror.table, selection, strategy, allocatable=per_row, memo=mirror.memo)
        fresh, has_view = mirror.table.fresh.take(rows), mirror.table.has_view.take(rows)
        views = {} if scorer is None else _load_views(cache, mirror.table, rows, verdicts.fits)
    fits = verdicts.fits
    marked_at = np.flatnonzero(~fits & fresh & has_view).tolist()
    unfresh_at = np.flatnonzero(~fits & ~fresh).tolist()
    passed = compress(names, fits.tolist())
    marked = [names[k] for k in marked_at]
    unfresh = [names[k] for k in unfresh_at]
    if is_batched(cache):
        details = cache.record_filter(passed, marked, unfresh)
    else:
        details = _record_each(cache, passed, marked, unfresh)
    texts, codes = verdicts.texts, verdicts.reason_codes
    failed = {names[k]: texts[c] for k, c in zip(*_where(~fits, codes), strict=True)}
    for k, name, detail in zip(unfresh_at, unfresh, details, strict=True):
        if detail:
            failed[name] = f"{texts[int(codes[k])]}: {detail}"
    scores = verdicts.scores if verdicts.scores is not None else np.full(len(names), -1, np.int64)
    _weigh(cache, views, scores, verdicts)
    if scorer is not None:
        _rescore(cache, mirror.table, rows, fits & fresh, scores, scorer)
    return Evaluation(FilterOutcome(names, fits, failed, codes, texts), scores)


def _load_views(cache: NRTCache, table: NodeTable, rows: Ints, wanted: Bools) -> dict[int, NumaView]:
    """In the load-aware score mode, the views of the ``wanted`` rows (by position), for
    :func:`_weigh`; read under the mirror's lock, as the rows may be rewritten after it."""
    if cache.config.load.mode is not LoadMode.SCORE:
        return {}
    views = table.views
    return {k: v for k in np.flatnonzero(wanted).tolist() if (v := views[int(rows[k])]) is not None}


def _weigh(cache: NRTCache, views: Mapping[int, NumaView], scores: Ints, verdicts: Verdicts) -> None:
    """Scale the scores down where the zone the kubelet would pick is busy (load-aware mode)."""
    load = cache.config.load
    for k, view in views.items():
        if scores[k] > 0:
            scores[k] = weighted_score(int(scores[k]), view, load, verdicts.numa_id(k))


def _where(mask: Bools, codes: Ints) -> tuple[list[int], list[int]]:
    at = np.flatnonzero(mask)
    return at.tolist(), codes[at].tolist()


def _record_each(cache: NRTCache, passed: Iterable[str], marked: list[str], unfresh: list[str]) -> list[str]:
    """:meth:`BatchedCache.record_filter` for a cache without it: node by node."""
    for name in passed:
        cache.note_filter_success(name)
    for name in marked:
        cache.mark_maybe_over_reserved(name)
    return [cache.unfresh_reason(name) for name in unfresh]


def score_nodes(
    prep: PreparedPod, nodes: Iterable[str], cache: NRTCache, scorer: Scorer
) -> list[tuple[str, int]]:
    """``(node, score 0..100)`` of ``prep`` on each of ``nodes`` through ``cache``, in the order asked.

    ``scorer`` must have been built for ``prep`` (its strategy is used). Nodes are assumed to have
    passed Filter, as the scheduler only scores those; any node given is scored.
    """
    names = nodes if isinstance(nodes, list | tuple) else list(nodes)
    return list(zip(names, score_columns(prep, names, cache, scorer).tolist(), strict=True))


def score_columns(prep: PreparedPod, names: Sequence[str], cache: NRTCache, scorer: Scorer) -> Ints:
    """:func:`score_nodes`' scores alone, as a column in the order of ``names`` (for a front end
    that encodes them without a Python pair per node)."""
    mirror = mirror_of(cache)
    with mirror.lock:
        rows = mirror.sync(names, cache, prep.pod)
        selection = None if mirror.whole else rows
        verdicts = decide(prep, mirror.table, selection, scorer.strategy, score_failed=True, memo=mirror.memo)
        views = _load_views(cache, mirror.table, rows, np.ones(len(rows), np.bool_))
        fresh = mirror.table.fresh.take(rows) & mirror.table.has_view.take(rows)
    assert verdicts.scores is not None
    _weigh(cache, views, verdicts.scores, verdicts)
    _rescore(cache, mirror.table, rows, fresh, verdicts.scores, scorer)
    return verdicts.scores
