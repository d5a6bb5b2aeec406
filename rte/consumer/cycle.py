"""One scheduling cycle through an NRT cache: Filter and Score many nodes for one pod.

:mod:`rte.consumer.filter` and :mod:`rte.consumer.score` decide on a view. Around them, the
reference plugin keeps the reserve cache informed, and every front end (the scheduler
extender, a Python scheduler using the library) must do it the same way:

* each node's view comes from the cache (``cache.get``), which may distrust it (not fresh);
* a node that fails Filter on data the cache trusts is marked "maybe over-reserved": perhaps
  only our own pessimistic reservations rejected it, so the next resync checks its fingerprint
  (after ``dirty_after_failures`` failures in a row); a node that passes resets that streak;
* a node the cache distrusts fails with the reference's reason plus the cache's explanation;
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

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from rte.consumer.cache.config import LoadAwareConfig, LoadMode
from rte.consumer.cache.interface import Lookup, NRTCache
from rte.consumer.filter import filter_node
from rte.consumer.kernel.decide import decide
from rte.consumer.kernel.mirror import mirror_of
from rte.consumer.load import weighted_score
from rte.consumer.requests import PreparedPod
from rte.consumer.score import Scorer
from rte.consumer.verdict import FilterResult


@dataclass(frozen=True)
class FilterOutcome:
    """Which nodes passed (in the order asked), why not for the others, and every node's reason."""

    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    """The filter's reason for every node, passed ones included ("fits NUMA zone 1")."""


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
    names = list(nodes)
    mirror = mirror_of(cache)
    with mirror.lock:
        rows, lookups = mirror.sync(names, cache, prep.pod)
        per_row = [allocatable.get(name) for name in names] if allocatable else None
        verdicts = decide(prep, mirror.table, rows, allocatable=per_row)
    outcome = FilterOutcome()
    for name, lookup, fits, reason in zip(
        names, lookups, verdicts.fits.tolist(), verdicts.reasons(), strict=True
    ):
        reason = outcome.reasons[name] = record_outcome(cache, name, fits, reason, lookup)
        if fits:
            outcome.passed.append(name)
        else:
            outcome.failed[name] = reason
    return outcome


def score_nodes(
    prep: PreparedPod, nodes: Iterable[str], cache: NRTCache, scorer: Scorer
) -> list[tuple[str, int]]:
    """``(node, score 0..100)`` of ``prep`` on each of ``nodes`` through ``cache``, in the order asked.

    ``scorer`` must have been built for ``prep`` (its strategy is used). Nodes are assumed to have
    passed Filter, as the scheduler only scores those; any node given is scored.
    """
    names = list(nodes)
    mirror = mirror_of(cache)
    with mirror.lock:
        rows, lookups = mirror.sync(names, cache, prep.pod)
        verdicts = decide(prep, mirror.table, rows, scorer.strategy, score_failed=True)
    assert verdicts.scores is not None
    scores = verdicts.scores.tolist()
    load = cache.config.load
    if load.mode is LoadMode.SCORE:
        # The zone the kubelet would pick decides whether the pod lands on a busy zone.
        for k, lookup in enumerate(lookups):
            if scores[k] and lookup.view is not None:
                scores[k] = weighted_score(scores[k], lookup.view, load, verdicts.numa_id(k))
    return list(zip(names, scores, strict=True))
