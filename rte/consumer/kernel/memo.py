"""The last few decisions on one table, kept current as its rows are rewritten.

kube-scheduler sends prioritize, right after filter, the same pod and (when every candidate
passed) the same candidates, and the next pod of a ReplicaSet is the same spec again: the
extender's mirror (:mod:`.mirror`) then gives the same rows array, the pods have the same
shape (:func:`~rte.consumer.requests.shape_key`: what decides, the pod's name and uid left
out), and Filter's verdicts and zones, and Score's scores, are those already computed. A
library scheduler passing the same tuple of names each cycle gets the same.

Between two pods, a few rows are usually rewritten (a reservation, a new NRT). A decision on a
row reads only that row's columns, so one made before holds for every other row: only the
chosen rows among those rewritten (:meth:`NodeTable.rewritten_since`) are decided again, when
they are few; any other change (the table grew, the log no longer reaches back, many rows
rewritten) decides everything afresh. The differential tests hold this equal to fresh decisions
over random cache histories (``tests/consumer/test_decision_memo.py``, ``test_pod_shapes.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from rte.consumer.kept import CANDIDATES_KEPT
from rte.consumer.kernel.decide import Filtered, filter_rows, scored_after
from rte.consumer.kernel.fastpath import put_at
from rte.consumer.kernel.scorerows import score_rows
from rte.consumer.kernel.table import Ints, NodeTable
from rte.consumer.requests import PreparedPod, shape_of
from rte.consumer.score import ScoringStrategy

_Rows = Sequence[int] | Ints | None
_Entry = TypeVar("_Entry")


def _keepable(rows: _Rows) -> bool:
    """Whether a decision on ``rows`` may be kept: not over :data:`~rte.consumer.kept.CANDIDATES_KEPT`
    candidates (a decision holds some 64 bytes per candidate; a client sending lists of a million
    names would otherwise make each entry tens of megabytes). ``None``, the whole table, is the
    tracked nodes: bounded by the cluster."""
    return rows is None or len(rows) <= CANDIDATES_KEPT


class DecisionMemo:
    """Filter's half and Score's of the last few decisions on one table, by pod shape, rows and
    (for Score) strategy; see the module docstring.

    Entries are matched by shape and by the identity of the rows array (held here, so that its
    identity cannot pass to another object), and what they hold is read-only. Use under the lock
    that serialises the table.
    """

    def __init__(self, table: NodeTable, kept: int = 4) -> None:
        self.table = table
        self.kept = kept
        self._entries: list[tuple[object, object, int, Filtered]] = []
        self._scores: list[tuple[object, object, int, Ints]] = []
        self.hits = 0
        """Filter halves answered from an entry as it stood."""
        self.patches = 0
        """Filter halves answered from an entry with a few rows decided again."""
        self.score_hits = 0
        """Score halves answered from an entry, as it stood or with a few rows scored again."""

    def filtered(self, prep: PreparedPod, table: NodeTable, rows: _Rows) -> Filtered:
        if table is not self.table:
            raise ValueError("a decision memo serves the one table it was made for")
        generation = table.generation
        token = shape_of(prep)
        entries = self._entries
        patched = None
        for k, (p, r, g, f) in enumerate(entries):
            if r is rows and (p is token or p == token):
                if g == generation:
                    self.hits += 1
                    return f
                del entries[k]
                at = self._rewritten(table, f.chosen, g)
                if at is not None:
                    self.patches += 1
                    patched = (
                        f if not len(at) else f.patched(at, filter_rows(prep, table, f.chosen[at], None))
                    )
                break
        f = (filter_rows(prep, table, rows, None) if patched is None else patched).frozen()
        if _keepable(rows):
            self._keep(entries, (token, rows, generation, f))
        return f

    def scored(
        self,
        prep: PreparedPod,
        table: NodeTable,
        rows: _Rows,
        f: Filtered,
        strategy: ScoringStrategy,
        failed: bool,
    ) -> Ints:
        """Score after :meth:`filtered`'s ``f`` (made now); read-only."""
        generation = table.generation
        token = (shape_of(prep), strategy.type, tuple(sorted(strategy.weights.items())), failed)
        entries = self._scores
        scores = None
        for k, (p, r, g, s) in enumerate(entries):
            if r is rows and (p is token or p == token):
                del entries[k]
                at = np.zeros(0, np.int64) if g == generation else self._rewritten(table, f.chosen, g)
                if at is not None:
                    self.score_hits += 1
                    scores = s
                    if len(at):
                        target = np.ones(len(at), np.bool_) if failed else f.fits[at]
                        fresh = score_rows(
                            prep, strategy, table, f.chosen[at], target, f.usable[at], f.position[at]
                        )
                        scores = put_at(s, at, fresh)
                break
        if scores is None:
            scores = scored_after(prep, strategy, table, f, failed)
        scores.flags.writeable = False
        if _keepable(rows):
            self._keep(entries, (token, rows, generation, scores))
        return scores

    def _keep(self, entries: list[_Entry], entry: _Entry) -> None:
        del entries[: max(0, len(entries) - self.kept + 1)]
        entries.append(entry)

    @staticmethod
    def _rewritten(table: NodeTable, chosen: Ints, generation: int) -> Ints | None:
        """The positions of ``chosen`` whose rows were rewritten since ``generation``; None when
        that is unknown or deciding everything afresh is cheaper."""
        changed = table.rewritten_since(generation)
        if changed is None or len(changed) > max(len(chosen) // 4, 1):
            return None
        mark = np.zeros(table.size, np.bool_)
        mark[changed] = True
        return np.flatnonzero(mark.take(chosen))
