"""Score by the kubelet's rules on many rows at once: the zone each pod was admitted to, rated.

Where the kernel admitted a pod's single unit to one zone, the scalar path
(:meth:`rte.consumer.score.Scorer.__call__`) rates that zone alone
(:func:`rte.consumer.score.zone_score_at`); here the same arithmetic runs on the gathered
``(row, zone)`` values of every such row:

* MostAllocated / LeastAllocated: per requested resource, ``q * 100 // a`` or
  ``(a - q) * 100 // a`` on the rounded-up amounts when the zone has some and at least the
  request (compared exactly: a fractional request against a fractional amount is left to the
  scalar path), weighted, summed, divided by the weight sum, clamped;
* BalancedAllocation: the request fractions as Python computes them (float64 division of
  integers below 2^53 is the correctly rounded quotient either way), any fraction above 1 scoring
  0, then gonum's variance with its exact operation order, element-wise, and ``int()``;
* LeastNUMANodes: one zone, with the bonus where the zone's self distance is the minimum (the
  table's ``at_minimum``, from :func:`rte.consumer.least_numa.zones_at_minimum_distance`).
"""

from __future__ import annotations

from typing import TypeVar, cast

import numpy as np

from rte.consumer.kernel.table import EXACT_LIMIT, Bools, Ints, NodeTable
from rte.consumer.nodescore import MAX_SCORE, MIN_SCORE
from rte.consumer.score import Weighted

_Matrix = TypeVar("_Matrix", Ints, Bools)


def exact_enough(weighted: Weighted) -> bool:
    """The request fits the kernel's arithmetic (else every row goes to the scalar path)."""
    items, weight_sum = weighted
    return all(0 <= ceil <= EXACT_LIMIT for _, _, ceil, _ in items) and weight_sum * MAX_SCORE < 2**62


def _clamp(scores: Ints) -> Ints:
    return np.minimum(np.maximum(scores, MIN_SCORE), MAX_SCORE)  # np.clip's checks cost more


def pairs_at(matrix: _Matrix, rows: Ints, zones: Ints) -> _Matrix:
    """``matrix[rows, zones]``, gathered from the flat C-ordered matrix with ``take`` (a few
    times faster than indexing with two arrays)."""
    return cast(_Matrix, matrix.take(rows * matrix.shape[1] + zones))


def flat_at(table: NodeTable, rows: Ints, zones: Ints) -> Ints:
    """The flat positions of the (row, zone) pairs in the table's C-ordered matrices (all of
    them are ``capacity x width``): computed once per decision, then one ``take`` per matrix."""
    flat = rows * table.width
    flat += zones  # in place: one new array, not two
    return flat


def _amounts(table: NodeTable, name: str, at: Ints) -> tuple[Ints, Ints, Bools | None]:
    """(rounded down, rounded up, rounded: None where nothing is) amounts of ``name`` at the flat
    positions ``at``; negative where absent (every use treats them as 0: they hold nothing)."""
    matrix = table.available.get(name)
    if matrix is None:
        zero = np.zeros(len(at), np.int64)
        return zero, zero, None
    floor = matrix.take(at)
    flags = table.fractional.get(name)
    if flags is None:
        return floor, floor, None
    rounded = flags.take(at)
    return floor, floor + rounded, rounded


def allocated_scores(table: NodeTable, at: Ints, weighted: Weighted, most: bool) -> tuple[Ints, Bools | None]:
    """Most/LeastAllocated of one zone per row (``at``: :func:`flat_at`); and the rows the
    kernel cannot decide exactly (None: none)."""
    items, weight_sum = weighted
    total: Ints | None = None  # the first item's scores start it: no zeros to add them to
    undecided: Bools | None = None
    bounded = True  # every item counted on every row: each share is within 0..100, no clamping
    for name, amount, ceil_amount, weight in items:
        floor, ceil, rounded = _amounts(table, name, at)
        if isinstance(amount, int):
            counted = amount <= floor  # an integer request fits a fractional amount's floor
        else:
            counted = ceil_amount <= floor  # a fractional request against an integral amount
            if rounded is not None:
                guess = (ceil > 0) & rounded  # a fraction against a fraction: exact rationals
                undecided = guess if undecided is None else undecided | guess
        if ceil_amount <= 0:
            counted &= ceil > 0  # else a zone with some of it holds at least the request
        everywhere = int(np.count_nonzero(counted)) == len(counted)  # all(), without its reduction
        # Where counted, the zone holds at least 1; elsewhere the share is dropped: any divisor.
        divisor = ceil if everywhere and ceil_amount > 0 else np.maximum(ceil, 1)
        if most:
            score = np.full(len(at), ceil_amount * MAX_SCORE, np.int64)
        else:
            score = ceil - ceil_amount
            score *= MAX_SCORE
        score //= divisor
        if weight != 1:
            score *= weight
        if not everywhere:
            bounded = False
            score = np.where(counted, score, 0)
        if total is None:
            total = score
        else:
            total += score
    if total is None:  # no items (callers score those rows MAX_SCORE before asking)
        total = np.zeros(len(at), np.int64)
    if weight_sum > 0 and weight_sum & (weight_sum - 1) == 0:
        # Floor division by 2**k is the arithmetic right shift, negative totals included (the
        # one NumPy does on int64), at a third of the division's cost: LeastAllocated's default
        # weights (cpu 1, memory 1) sum to 2.
        total >>= weight_sum.bit_length() - 1
    else:
        total //= weight_sum
    return (total if bounded else _clamp(total)), undecided


def balanced_scores(table: NodeTable, at: Ints, weighted: Weighted) -> Ints:
    """BalancedAllocation of one zone per row (``at``: :func:`flat_at`)."""
    items, _ = weighted
    over = np.zeros(len(at), np.bool_)
    fractions = []
    for name, _, ceil_amount, _ in items:
        _, ceil, _ = _amounts(table, name, at)
        fraction = np.where(ceil > 0, ceil_amount / np.maximum(ceil, 1), 1.0)
        over |= fraction > 1
        fractions.append(fraction)
    count = len(fractions)
    if count < 2:
        variance = np.zeros(len(at))
    else:
        # rte.consumer.score.sample_variance, element-wise: the same operations in the same order.
        mean = np.zeros(len(at))
        for fraction in fractions:
            mean = mean + fraction
        mean = mean / count
        squares = np.zeros(len(at))
        compensation = np.zeros(len(at))
        for fraction in fractions:
            d = fraction - mean
            squares = squares + d * d
            compensation = compensation + d
        variance = (squares - compensation * compensation / count) / (count - 1)
    variance = np.where(over, 0.0, variance)  # those rows score 0; keep their lanes castable
    scores = ((1 - variance) * MAX_SCORE).astype(np.int64)  # int(): truncation toward zero
    return _clamp(np.where(over, MIN_SCORE, scores))


def least_numa_scores(table: NodeTable, rows: Ints, at: Ints) -> Ints:
    """LeastNUMANodes of a pod admitted to one zone (:func:`rte.consumer.least_numa.normalize`)."""
    step = MAX_SCORE // table.max_numa_nodes.take(rows)
    bonus = np.where(table.at_minimum.take(at), step // 2, 0)
    return _clamp(MAX_SCORE - step + bonus)
