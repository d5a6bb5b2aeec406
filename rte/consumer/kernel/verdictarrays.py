"""The per-row verdict arrays of one Filter (:func:`rte.consumer.kernel.decide.filter_rows`),
and how each group's outcome (:func:`rte.consumer.kernel.fastpath.decide_group`) lands in them.

The usual decision (every row live, one group, every row fitting a zone) makes no default
arrays: the outcome's arrays are the verdicts, a zone's reason code is its NUMA id
(:mod:`.texts`), and the zone is the slot itself where the rows' ids are their slots.
"""

from __future__ import annotations

import numpy as np

from rte.consumer.kernel.fastpath import GroupOutcome, Selection, pick, refusal_reason
from rte.consumer.kernel.rowbits import count_true
from rte.consumer.kernel.table import POLICY_CODES, Bools, Ints, NodeTable
from rte.consumer.kernel.texts import ReasonTexts
from rte.consumer.kernel.zonescore import flat_at
from rte.model.admission.reasons import NOTHING_TO_ALIGN, POLICY_NONE_ADMITTED
from rte.model.topology_manager import POLICY_NONE

_NONE = POLICY_CODES[POLICY_NONE]


class VerdictArrays:
    """The per-row verdict arrays :func:`~.decide.filter_rows` fills, and how a group's outcome lands in them.

    The arrays are made on first need (:meth:`defaults`): in the usual decision one outcome
    covers every row and its arrays *are* the verdicts (filling defaults first cost more than
    the arithmetic: five arrays of fresh pages per call)."""

    def __init__(self, table: NodeTable, selection: Selection, chosen: Ints, texts: ReasonTexts) -> None:
        self.table, self.selection, self.chosen, self.texts = table, selection, chosen, texts
        self.fits: Bools | None = None
        self.codes: Ints | None = None
        self.numa: Ints | None = None
        self.position: Ints | None = None
        self.scalar: Bools | None = None
        self.flat: Ints | None = None
        """The flat (row, zone) positions, when one outcome placed the pod on every chosen row."""

    def defaults(self) -> tuple[Bools, Ints, Ints, Ints, Bools]:
        """(fits, codes, numa, position, scalar), made (False, -1, -1, -1, False) if not yet."""
        count = len(self.chosen)
        if self.fits is None:
            self.fits = np.zeros(count, np.bool_)
        if self.codes is None:
            self.codes = np.full(count, -1, np.int64)
        if self.numa is None:
            self.numa = np.full(count, -1, np.int64)
        if self.position is None:
            self.position = np.full(count, -1, np.int64)
        if self.scalar is None:
            self.scalar = np.zeros(count, np.bool_)
        return self.fits, self.codes, self.numa, self.position, self.scalar

    def _numa(self, rows: Ints, where: Ints | None, position: Ints, flat: Ints, placed_all: bool) -> Ints:
        """The NUMA id of each row's zone slot ``position`` (-1 stays -1): the slot itself on the
        usual rows, whose ids are their slots (nothing gathered; ``position`` itself when every
        row is placed), else read from the table."""
        table = self.table
        slot_ids = pick(table.slot_ids, self.selection) if where is None else table.slot_ids.take(rows)
        if count_true(slot_ids) == len(rows):
            return position if placed_all else position.copy()  # (the scalar path writes to numa)
        numa = table.ids.take(flat)
        numa[position < 0] = -1
        return numa

    def apply(self, outcome: GroupOutcome, where: Ints | None, whole: bool) -> None:
        """Copy ``outcome`` to the selected positions ``where`` (None: all of them; the outcome
        covers the whole selection when ``whole``, else exactly ``where``).

        The group's verdicts are built as whole arrays over its positions (which hold the
        defaults: a live row is in one group only) and stored at once; when the group is the
        whole selection, as it usually is, nothing is gathered or scattered by index."""
        position, nothing, refused, patterns = (
            outcome.position,
            outcome.nothing,
            outcome.refused,
            outcome.patterns,
        )
        if where is not None and whole:
            position = position[where]
            nothing = None if nothing is None else nothing[where]
            refused = None if refused is None else refused[where]
            patterns = None if patterns is None else patterns[where]
        rows = self.chosen if where is None else self.chosen[where]
        count = len(rows)
        placed: Bools | None = None
        everywhere = outcome.placed_all
        if not everywhere:
            placed = position >= 0
            everywhere = count_true(placed) == count
        if everywhere:  # the usual case: every row fits a zone, each reason is its zone's
            flat = flat_at(self.table, rows, position)
            if where is None:
                self.flat = flat  # Score's zones too
            numa = self._numa(rows, where, position, flat, True)
            if numa is position:
                numa.flags.writeable = False  # also the position: no caller may change one alone
            fits = np.ones(count, np.bool_)
            self._store(where, fits, position, numa, numa, np.zeros(count, np.bool_))
            return
        assert placed is not None
        if count_true(placed):
            flat = flat_at(self.table, rows, np.maximum(position, 0))
            numa = self._numa(rows, where, position, flat, False)
            codes = numa.copy()  # the zone's reason where placed; -1 (no reason yet) elsewhere
        else:
            numa = np.full(count, -1, np.int64)
            codes = np.full(count, -1, np.int64)
        fits = placed
        if nothing is not None:
            fits = placed | nothing
            policy_none = self.table.policy.take(rows[nothing]) == _NONE
            codes[nothing] = np.where(
                policy_none, self.texts.code(POLICY_NONE_ADMITTED), self.texts.code(NOTHING_TO_ALIGN)
            )
        if refused is not None and count_true(refused):
            assert patterns is not None
            refusals = patterns[refused]
            k = np.flatnonzero(refused)
            for pattern in np.unique(refusals).tolist():
                code = self.texts.code(refusal_reason(outcome.entries, pattern))
                codes[k[refusals == pattern]] = code
            scalar = ~(fits | refused)
        else:
            scalar = ~fits
        self._store(where, fits, position, numa, codes, scalar)

    def _store(
        self, where: Ints | None, fits: Bools, position: Ints, numa: Ints, codes: Ints, scalar: Bools
    ) -> None:
        if where is None:  # the outcome covers every position: its arrays are the verdicts
            self.fits, self.position, self.numa, self.codes, self.scalar = fits, position, numa, codes, scalar
            return
        defaults_fits, defaults_codes, defaults_numa, defaults_position, defaults_scalar = self.defaults()
        defaults_fits[where] = fits
        defaults_position[where] = position  # -1 where not placed
        defaults_numa[where] = numa
        defaults_codes[where] = codes
        defaults_scalar[where] = scalar
