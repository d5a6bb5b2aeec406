"""Score on many table rows at once: the zone the kernel admitted each pod to, rated by
:mod:`.zonescore`; the rows it did not place (or cannot rate exactly) by the scalar
:class:`~rte.consumer.score.Scorer`, one by one. Score's half of :mod:`.decide`."""

from __future__ import annotations

import numpy as np

from rte.consumer.kernel.rowbits import count_true
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
    if not prep.guaranteed:
        scores = np.full(len(chosen), -1, np.int64)
        scores[target] = MAX_SCORE  # the scorer's constant: only Guaranteed pods are ranked
        return scores
    if flat is not None and count_true(target) == len(target):
        # Filter made ``flat`` only when it placed every chosen row (each usable, each placed):
        # the usual whole-table case, where no mask is needed and, as a rule, no default either.
        values = _usual_scores(prep, strategy, table, chosen, flat)
        if values is not None:
            return values
    scores = np.full(len(chosen), -1, np.int64)
    where: Ints | None = None
    rest: Bools | None = None  # the rows left to the scalar Scorer (None: none)
    if flat is not None and count_true(target) == len(target):
        rows, at = chosen, flat
    else:
        rows, at, where, rest = _kernel_rows(table, chosen, target, usable, position, scores)
    if len(rows):
        for part, req in _parts(prep, table, rows):
            positions: Ints | slice
            if part is None:
                values, undecided = _zone_scores(strategy, table, rows, at, req)
                positions = slice(None) if where is None else where
            else:
                values, undecided = _zone_scores(strategy, table, rows[part], at[part], req)
                positions = np.flatnonzero(part) if where is None else where[part]
            scores[positions] = values
            if undecided is not None and count_true(undecided):
                if rest is None:
                    rest = np.zeros(len(scores), np.bool_)
                rest[np.arange(len(scores))[positions][undecided]] = True
    if rest is not None and count_true(rest):
        scorer = Scorer(prep, strategy)
        for k in np.flatnonzero(rest).tolist():
            scores[k] = scorer(table.views[int(chosen[k])])
    return scores


def _parts(prep: PreparedPod, table: NodeTable, rows: Ints) -> list[tuple[Bools | None, Request | None]]:
    """(rows (None: all), the request rated there): the pod's on pod-scope rows, its first
    container's on the others."""
    containers = prep.init + prep.app
    container = containers[0] if containers else None
    if not count_true(table.pod_scope[: table.size]):  # no row of the table: nothing to gather
        return [(None, container)]
    pod_scope = table.pod_scope.take(rows)
    scoped = count_true(pod_scope)
    if not scoped:
        return [(None, container)]
    if scoped == len(rows):
        return [(None, prep.pod_request)]
    return [(pod_scope, prep.pod_request), (~pod_scope, container)]


def _usual_scores(
    prep: PreparedPod, strategy: ScoringStrategy, table: NodeTable, rows: Ints, at: Ints
) -> Ints | None:
    """The scores of every row when one request is rated on all of them and the kernel rates
    each exactly (the usual case); else None."""
    parts = _parts(prep, table, rows)
    if len(parts) != 1:
        return None
    values, undecided = _zone_scores(strategy, table, rows, at, parts[0][1])
    if undecided is not None and count_true(undecided):
        return None
    return values if values.base is None else values.copy()  # callers weigh them


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
) -> tuple[Ints, Bools | None]:
    """Scores of one zone per row (``at``: the flat (row, zone) positions) for a pod whose
    single unit requests ``req``, and the rows the kernel could not score exactly (None: none)."""
    kind = strategy.type
    if kind == LEAST_NUMA_NODES:
        return least_numa_scores(table, rows, at), None
    if req is None or not req.items:
        return np.full(len(rows), MAX_SCORE, np.int64), None
    weighted = _weighted(req, strategy)
    if not exact_enough(weighted):
        return np.zeros(len(rows), np.int64), np.ones(len(rows), np.bool_)
    if kind == BALANCED_ALLOCATION:
        return balanced_scores(table, at, weighted), None
    return allocated_scores(table, at, weighted, kind == MOST_ALLOCATED)
