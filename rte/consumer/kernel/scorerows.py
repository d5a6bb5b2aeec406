"""Score on many table rows at once: the zone the kernel admitted each pod to, rated by
:mod:`.zonescore`; the rows it did not place (or cannot rate exactly) by the scalar
:class:`~rte.consumer.score.Scorer`, one by one. Score's half of :mod:`.decide`."""

from __future__ import annotations

import numpy as np

from rte.consumer.kernel.table import Bools, Ints, NodeTable
from rte.consumer.kernel.zonescore import (
    allocated_scores,
    balanced_scores,
    exact_enough,
    flat_at,
    least_numa_scores,
)
from rte.consumer.nodescore import MAX_SCORE, MIN_SCORE
from rte.consumer.requests import PreparedPod, Request
from rte.consumer.score import Scorer, ScoringStrategy, Weighted
from rte.consumer.strategies import BALANCED_ALLOCATION, LEAST_NUMA_NODES, MOST_ALLOCATED


def _weighted(req: Request, strategy: ScoringStrategy) -> Weighted:
    items = tuple((i.name, i.amount, i.ceil, strategy.weight(i.name)) for i in req.items)
    return items, sum(w for *_, w in items)


def score_rows(
    prep: PreparedPod,
    strategy: ScoringStrategy,
    table: NodeTable,
    chosen: Ints,
    target: Bools,
    usable: Bools,
    position: Ints,
    flat: Ints | None = None,
) -> Ints:
    """Score on the ``target`` rows (-1 elsewhere), as :class:`~rte.consumer.score.Scorer` does.

    ``flat``: Filter's :func:`~.zonescore.flat_at` of every chosen row at ``position``, when it
    made them for this table's width (saves computing them again)."""
    scores = np.full(len(chosen), -1, np.int64)
    if not prep.guaranteed:
        scores[target] = MAX_SCORE  # the scorer's constant: only Guaranteed pods are ranked
        return scores
    where: Ints | None = None
    rest: Bools | None = None  # the rows left to the scalar Scorer (None: none)
    if flat is not None and target.all():
        # Filter made ``flat`` only when it placed every chosen row (each usable, each placed):
        # the usual whole-table case, where no mask is needed.
        rows, at = chosen, flat
    else:
        rows, at, where, rest = _kernel_rows(table, chosen, target, usable, position, scores)
    if len(rows):
        pod_scope = table.pod_scope.take(rows)
        containers = prep.init + prep.app
        container = containers[0] if containers else None
        parts: list[tuple[Bools | None, Request | None]]  # None: every row (the usual case)
        if not pod_scope.any():
            parts = [(None, container)]
        elif pod_scope.all():
            parts = [(None, prep.pod_request)]
        else:
            parts = [(pod_scope, prep.pod_request), (~pod_scope, container)]
        for part, req in parts:
            positions: Ints | slice
            if part is None:
                values, undecided = _zone_scores(strategy, table, rows, at, req)
                if where is None and rest is None and not undecided.any():  # every row, as usual
                    return values if values.base is None else values.copy()  # callers weigh them
                positions = slice(None) if where is None else where
            else:
                values, undecided = _zone_scores(strategy, table, rows[part], at[part], req)
                positions = np.flatnonzero(part) if where is None else where[part]
            scores[positions] = values
            if undecided.any():
                if rest is None:
                    rest = np.zeros(len(scores), np.bool_)
                rest[np.arange(len(scores))[positions][undecided]] = True
    if rest is not None and rest.any():
        scorer = Scorer(prep, strategy)
        for k in np.flatnonzero(rest).tolist():
            scores[k] = scorer(table.views[int(chosen[k])])
    return scores


def _kernel_rows(
    table: NodeTable, chosen: Ints, target: Bools, usable: Bools, position: Ints, scores: Ints
) -> tuple[Ints, Ints, Ints | None, Bools]:
    """(rows, flat positions, their positions in ``chosen`` (None: all), the rows left to the
    scalar Scorer) of the ``target`` rows the kernel scores; rows without a view score
    MIN_SCORE in ``scores``."""
    kernel = target & usable
    kernel &= position >= 0
    rest = target & usable
    rest ^= kernel
    if not usable.all():
        scores[target & ~usable] = MIN_SCORE
    where: Ints | None = None
    if kernel.all():  # every row placed by the kernel, nothing gathered
        rows, at = chosen, flat_at(table, chosen, position)
    elif kernel.any():
        where = np.flatnonzero(kernel)
        rows = chosen.take(where)
        at = flat_at(table, rows, position.take(where))
    else:
        rows, at = chosen[:0], position[:0]
    return rows, at, where, rest


def _zone_scores(
    strategy: ScoringStrategy, table: NodeTable, rows: Ints, at: Ints, req: Request | None
) -> tuple[Ints, Bools]:
    """Scores of one zone per row (``at``: the flat (row, zone) positions) for a pod whose
    single unit requests ``req``, and the rows the kernel could not score exactly."""
    kind = strategy.type
    undecided = np.zeros(len(rows), np.bool_)
    if kind == LEAST_NUMA_NODES:
        return least_numa_scores(table, rows, at), undecided
    if req is None or not req.items:
        return np.full(len(rows), MAX_SCORE, np.int64), undecided
    weighted = _weighted(req, strategy)
    if not exact_enough(weighted):
        return np.zeros(len(rows), np.int64), ~undecided
    if kind == BALANCED_ALLOCATION:
        return balanced_scores(table, at, weighted), undecided
    return allocated_scores(table, at, weighted, kind == MOST_ALLOCATED)
