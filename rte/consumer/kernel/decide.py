"""Filter and Score of one pod on many table rows: the kernel where it covers the shape, the
scalar path where it does not, with the same answers either way.

:func:`decide` runs, in the order :func:`rte.consumer.filter.filter_node` checks them: a
BestEffort pod without devices passes everywhere; a row the cache distrusts fails; a row without
an NRT passes; then the node-allocatable check (per distinct allocatable collection, not per
row); then the kubelet's rules, per group of rows sharing the facts that decide the pod's
admission units (:mod:`.fastpath`), and Score on the zone each admitted row chose
(:mod:`.zonescore`). Rows the kernel leaves undecided, and every row under the reference
plugin's rules, go through the scalar Filter and Score one by one.

Reasons are interned: each verdict carries the index of its reason in a short list of distinct
texts (one per zone, per refusal pattern, per constant verdict, per scalar verdict), so a
decision over 50,000 rows builds only a handful of strings.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rte.consumer.filter import filter_node
from rte.consumer.kernel.fastpath import Selection, decide_group, pick, put_at
from rte.consumer.kernel.rowbits import count_true
from rte.consumer.kernel.scorerows import score_rows
from rte.consumer.kernel.table import Bools, Ints, NodeTable
from rte.consumer.kernel.texts import ReasonTexts
from rte.consumer.kernel.verdictarrays import VerdictArrays
from rte.consumer.kubelet_filter import admitted_on, checked_allocatable, not_allocatable
from rte.consumer.requests import PreparedPod, kubelet_units
from rte.consumer.score import ScoringStrategy


@dataclass(frozen=True, slots=True, eq=False)
class Verdicts:
    """Filter's verdict (and Score's, when asked) on each selected row, in selection order.

    Each decision has arrays of its own, but Filter's may be read-only and shared within it
    (where every row fits a zone whose id is its slot, :attr:`numa_ids` is :attr:`reason_codes`):
    copy one before changing it. :attr:`scores` is always the caller's to change."""

    table_names: Sequence[str]
    rows: Ints
    """The table rows decided, in the order asked."""
    fits: Bools
    reason_codes: Ints
    texts: Sequence[str]
    numa_ids: Ints
    """The zone the kubelet would pick where the verdict names one (-1: none)."""
    scores: Ints | None
    """0..100 where scored (rows that fit, or every row with ``score_failed``), else -1; None
    when no strategy was given."""
    scalar_rows: int
    """How many rows the scalar path decided (the rest: the kernel)."""

    def __len__(self) -> int:
        return len(self.rows)

    def names(self) -> list[str]:
        names = self.table_names
        return [names[r] for r in self.rows.tolist()]

    def reasons(self) -> list[str]:
        texts = self.texts
        return [texts[c] for c in self.reason_codes.tolist()]

    def reason(self, k: int) -> str:
        return self.texts[int(self.reason_codes[k])]

    def score(self, k: int) -> int | None:
        if self.scores is None or self.scores[k] < 0:
            return None
        return int(self.scores[k])

    def numa_id(self, k: int) -> int | None:
        numa_id = int(self.numa_ids[k])
        return None if numa_id < 0 else numa_id


Rows = Sequence[int] | Ints | None
"""The table rows a decision is asked on (None: every row)."""


class HalvesMemo(Protocol):
    """What :func:`decide` asks of a memo of earlier decisions: each half, possibly from an entry.

    :class:`~rte.consumer.kernel.memo.DecisionMemo` is the one; it computes what it does not hold
    with this module's public halves (:func:`filter_rows`, :func:`scored_after`,
    :func:`score_rows`), so the memo sits above this module and this module names only the
    protocol (no import cycle).
    """

    def filtered(self, prep: PreparedPod, table: NodeTable, rows: Rows) -> Filtered: ...

    def scored(
        self,
        prep: PreparedPod,
        table: NodeTable,
        rows: Rows,
        f: Filtered,
        strategy: ScoringStrategy,
        failed: bool,
    ) -> Ints: ...


def decide(
    prep: PreparedPod,
    table: NodeTable,
    rows: Sequence[int] | Ints | None = None,
    strategy: ScoringStrategy | None = None,
    *,
    allocatable: Sequence[Collection[str] | None] | None = None,
    score_failed: bool = False,
    memo: HalvesMemo | None = None,
) -> Verdicts:
    """Filter (and, with ``strategy``, Score) ``prep`` on the table's ``rows`` (None: every row).

    ``allocatable`` gives, per selected row, the names of the Node's allocatable resources (None
    where unknown); without it the table's own column is read. Score is computed where Filter
    passes, or everywhere with ``score_failed`` (what a prioritize request asks). ``memo``
    (the table's, see :class:`~rte.consumer.kernel.memo.DecisionMemo`) may answer either half.
    """
    if memo is not None and allocatable is None:
        f = memo.filtered(prep, table, rows)
    else:
        f = filter_rows(prep, table, rows, allocatable)
    scores = None
    if strategy is not None:
        if memo is not None and allocatable is None:
            scores = memo.scored(prep, table, rows, f, strategy, score_failed).copy()  # callers weigh them
        else:
            scores = scored_after(prep, strategy, table, f, score_failed)
    return Verdicts(table.names, f.chosen, f.fits, f.codes, f.texts, f.numa, scores, f.scalar_rows)


@dataclass(frozen=True, slots=True, eq=False)
class Filtered:
    """Filter's half of a decision (never written to once made: a memo may hand it out again);
    Score's half starts from it (:func:`scored_after`)."""

    chosen: Ints
    fits: Bools
    codes: Ints
    texts: Sequence[str]
    numa: Ints
    position: Ints
    """The zone slot the kernel admitted the pod to, -1 where it did not decide a fit."""
    usable: Bools
    scalar: Bools
    """The rows the scalar path decided."""
    flat: Ints | None = None
    """:func:`~.zonescore.flat_at` of every row at :attr:`position` when the kernel placed every
    row (Score reads its zones there), for a table :attr:`flat_width` wide; else None."""
    flat_width: int = 0

    @property
    def scalar_rows(self) -> int:
        return count_true(self.scalar)

    def frozen(self) -> Filtered:
        arrays = (self.chosen, self.fits, self.codes, self.numa, self.position, self.usable, self.scalar)
        for array in (*arrays, *(() if self.flat is None else (self.flat,))):
            array.flags.writeable = False  # shared by every decision the entry answers
        return self

    def patched(self, at: Ints, sub: Filtered) -> Filtered:
        """This decision with the positions ``at`` decided again (``sub``: a decision on exactly
        those positions' rows), reasons merged into one list of distinct texts."""
        texts = ReasonTexts(self.texts)
        remap = np.array([texts.code(t) for t in sub.texts], np.int64)
        codes = put_at(self.codes, at, remap[sub.codes] if len(remap) else sub.codes)
        numa, position = put_at(self.numa, at, sub.numa), put_at(self.position, at, sub.position)
        fits, usable, scalar = (
            put_at(a, at, b)
            for a, b in ((self.fits, sub.fits), (self.usable, sub.usable), (self.scalar, sub.scalar))
        )
        return Filtered(self.chosen, fits, codes, texts.items, numa, position, usable, scalar)


def filter_rows(
    prep: PreparedPod,
    table: NodeTable,
    rows: Sequence[int] | Ints | None,
    allocatable: Sequence[Collection[str] | None] | None,
) -> Filtered:
    """Filter's half of :func:`decide`, computed (no memo)."""
    if rows is None:
        selection: Selection = slice(0, table.size)
        chosen = _all_rows(table.size)
    else:
        chosen = np.asarray(rows, dtype=np.int64)
        selection = _run_of(chosen, table.size)
    count = len(chosen)
    texts = ReasonTexts(zones=table.max_numa_id + 1)  # a zone's code is its NUMA id
    state = VerdictArrays(table, selection, chosen, texts)
    fresh = pick(table.fresh, selection)
    usable = fresh & pick(table.has_view, selection)
    if prep.no_alignment_needed:
        fits, codes, *_ = state.defaults()
        fits[:] = True
        codes[:] = texts.code(filter_node(prep, None).reason)
    else:
        if count_true(usable) != count:  # the usual table has a fresh view on every row
            fits, codes, *_ = state.defaults()
            codes[~fresh] = texts.code(filter_node(prep, None, fresh=False).reason)
            absent = fresh & ~usable
            fits[absent] = True
            codes[absent] = texts.code(filter_node(prep, None).reason)
        if prep.reference:
            state.defaults()
            state.scalar = usable.copy()  # the reference's own allocatable check words its reasons
        else:
            live = _allocatable_passed(prep, table, selection, allocatable, usable, state)
            everything = count_true(live) == count and count > 0
            groups = _groups(table, selection, live, everything)
            if not everything or len(groups) != 1:  # else one outcome makes every verdict
                state.defaults()
            for group, where in groups:
                units = kubelet_units(prep, table.units_facts[group], table.units_keys[group])
                sub = selection if where is None else chosen[where]
                outcome = decide_group(table, sub, units)
                if where is None:
                    state.apply(outcome, None if everything else np.flatnonzero(live), True)
                else:
                    state.apply(outcome, where, False)
    fits, codes, numa, position, scalar = state.defaults()  # (made above, unless none were needed)
    flat = state.flat
    if count_true(scalar):  # usually none: no index list to make
        flat = None
        for k in np.flatnonzero(scalar).tolist():
            view = table.views[int(chosen[k])]
            if prep.reference:
                result = filter_node(prep, view, _allocatable_of(table, chosen, allocatable, k))
            else:
                assert view is not None  # live rows have a view
                result = admitted_on(prep, view)
            fits[k] = result.fits
            codes[k] = texts.code(result.reason)
            numa[k] = -1 if result.numa_id is None else result.numa_id
    return Filtered(chosen, fits, codes, texts.items, numa, position, usable, scalar, flat, table.width)


def _run_of(chosen: Ints, size: int) -> Selection:
    """``chosen`` as a slice when it is an ascending run of the table's rows (``a, a+1, ...,
    b``), else itself: the columns are then read in place instead of gathered (a ``take`` of
    every ``rows x zones`` matrix the pod reads, 320 KB each at 5000 x 8), as for a whole table."""
    count = len(chosen)
    if not count or int(chosen[-1]) - int(chosen[0]) != count - 1:
        return chosen
    if int(chosen[0]) < 0 or int(chosen[-1]) >= size:
        return chosen  # not rows of the table: ``take`` says so
    if count_true(chosen[1:] <= chosen[:-1]):  # strictly increasing from a to a+n-1: the run
        return chosen
    return slice(int(chosen[0]), int(chosen[0]) + count)


_ALL_ROWS: list[Ints] = [np.arange(0, dtype=np.int64)]
"""The last whole-table row list made (read-only), for the next decision on a table that size."""


def _all_rows(size: int) -> Ints:
    """``0 .. size-1``, shared between decisions: every whole-table decision names its rows
    with it, and a fresh one per decision was, with its page faults, 1-2 % of one."""
    rows = _ALL_ROWS[0]
    if len(rows) != size:
        rows = np.arange(size, dtype=np.int64)
        rows.flags.writeable = False
        _ALL_ROWS[0] = rows
    return rows


def _allocatable_of(
    table: NodeTable, chosen: Ints, allocatable: Sequence[Collection[str] | None] | None, k: int
) -> Collection[str] | None:
    return table.allocatable[int(chosen[k])] if allocatable is None else allocatable[k]


def _allocatable_passed(
    prep: PreparedPod,
    table: NodeTable,
    selection: Selection,
    allocatable: Sequence[Collection[str] | None] | None,
    usable: Bools,
    state: VerdictArrays,
) -> Bools:
    """``usable`` (or a copy, when some are dropped) without the rows whose Node lacks a
    requested resource (their reason set), each distinct allocatable collection checked once."""
    if not checked_allocatable(prep):
        return usable
    inverse: Ints | None = None  # None: every row has the one collection
    if allocatable is None:
        codes = pick(table.allocatable_code, selection)
        first = int(codes[0]) if len(codes) else -1
        if count_true(codes != first):  # usually one collection for every node: no sort
            distinct, inverse = np.unique(codes, return_inverse=True)
        else:
            distinct = np.array([first], np.int64)
        sets = table.allocatable_sets
        verdicts = [None if c < 0 else not_allocatable(prep, sets[c]) for c in distinct.tolist()]
    else:
        keys = np.fromiter(map(id, allocatable), np.int64, len(allocatable))
        _, first_at, inverse = np.unique(keys, return_index=True, return_inverse=True)
        given = [allocatable[k] for k in first_at.tolist()]
        verdicts = [None if names is None else not_allocatable(prep, names) for names in given]
    live = usable
    for j, missing in enumerate(verdicts):
        if missing is not None:
            if live is usable:
                live = usable.copy()
            _, codes_out, *_ = state.defaults()
            lacking = live.copy() if inverse is None else live & (inverse == j)
            live[lacking] = False
            codes_out[lacking] = state.texts.code(missing)
    return live


def _groups(
    table: NodeTable, selection: Selection, live: Bools, everything: bool
) -> list[tuple[int, Ints | None]]:
    """(units code, selected positions) per group of live rows sharing their admission units;
    positions None for the usual single group, decided over the whole selection at once
    (``everything``: every row is live)."""
    if not everything and not count_true(live):
        return []
    codes = pick(table.units_code, selection)
    present = codes if everything else codes[live]
    first = int(present[0])
    if not count_true(present != first):
        return [(first, None)]
    return [(int(c), np.flatnonzero(live & (codes == c))) for c in np.unique(present)]


def scored_after(
    prep: PreparedPod, strategy: ScoringStrategy, table: NodeTable, f: Filtered, score_failed: bool
) -> Ints:
    """Score after Filter's half ``f`` (where it passed, or everywhere with ``score_failed``)."""
    target = np.ones(len(f.chosen), np.bool_) if score_failed else f.fits
    flat = f.flat if f.flat_width == table.width else None
    return score_rows(prep, strategy, table, f.chosen, target, f.usable, f.position, flat)
