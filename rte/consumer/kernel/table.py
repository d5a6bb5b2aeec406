"""Many nodes' NUMA views as columns: what the decision kernel reads.

A :class:`NodeTable` holds one row per node. Per resource, one ``(rows x zone slots)`` int64
matrix of the available amount (rounded down, ``-1`` where the zone does not list the resource
or the slot holds no zone) and, only for resources where some zone publishes a fraction, a bool
matrix saying where the amount was rounded (the rounded-up value is the matrix plus it). Zone
slots follow the view's positions: ascending NUMA ids, so slot 0 is the lowest id. Per node, fact
columns: the Topology Manager policy and scope, the options and node attributes the kubelet's
fast path reads, the zones where a pod earns LeastNUMANodes' distance bonus, and whether the row
is *exact*: every amount fits the kernel's integer and float arithmetic without rounding
(at most 2^53), and the view's Topology Manager config agrees with its admission facts. Rows that
are not exact are decided by the scalar path.

A row is written from a :class:`~rte.consumer.numaview.NumaView` (what it extracts is memoised
on the view, so a view seen again costs one dictionary lookup) and rewritten in place when the
node's view changes; the table keeps the view itself for the scalar path. Reading whole columns
(``available["cpu"][:table.size]``) never copies.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from rte.consumer.kernel.rows import (
    ABSENT,
    EXACT_LIMIT,
    POLICY_CODES,
    UNKNOWN_POLICY,
    Bools,
    Ints,
    RowData,
    row_data,
    same_shape,
)
from rte.consumer.numaview import NumaView
from rte.model.admission.node import NodeFacts

__all__ = [
    "ABSENT",
    "EXACT_LIMIT",
    "POLICY_CODES",
    "UNKNOWN_POLICY",
    "Bools",
    "Ints",
    "NodeTable",
    "RowData",
    "row_data",
]


_LOG_KEPT = 32
"""Writes whose rows :meth:`NodeTable.rewritten_since` can name."""


def _grown(array: npt.NDArray[np.generic], rows: int, width: int, fill: object) -> npt.NDArray[np.generic]:
    """``array`` copied into a larger one (rows x width, or rows), the rest set to ``fill``."""
    shape = (rows, width) if array.ndim == 2 else (rows,)
    out = np.full(shape, fill, dtype=array.dtype)
    if array.ndim == 2:
        out[: array.shape[0], : array.shape[1]] = array
    else:
        out[: array.shape[0]] = array
    return out


def _matrix(rows: Sequence[tuple[int, ...] | None], width: int, fill: int) -> npt.NDArray[np.generic]:
    """``rows`` as a ``len(rows) x width`` array, each padded with ``fill`` (None: all ``fill``).

    Full-width rows go in as they are, in one conversion: padding copies of 20 000 rows' tuples
    were freed only after the whole table was written, leaving that much heap behind as RSS.
    """
    out: npt.NDArray[np.generic] = np.full(
        (len(rows), width), fill, np.bool_ if isinstance(fill, bool) else np.int64
    )
    full = [k for k, row in enumerate(rows) if row is not None and len(row) == width]
    if full:
        out[full] = [row for row in rows if row is not None and len(row) == width]
    for k, row in enumerate(rows):
        if row is not None and 0 < len(row) < width:
            out[k, : len(row)] = row
    return out


class NodeTable:
    """Rows of nodes, columns of what Filter and Score read; see the module docstring.

    Rows are addressed by index (:meth:`row` gives a node's, adding it on first use). A row
    without a view (:meth:`put` with None) is a node without an NRT; ``fresh`` False says the
    cache distrusts the view; ``allocatable`` holds the names of the Node's allocatable resources
    when known. The table is not thread-safe: its owner serialises writes and decisions.
    """

    def __init__(self, width: int = 8, capacity: int = 64) -> None:
        self.width = max(width, 1)
        self.capacity = max(capacity, 1)
        self.size = 0
        self.generation = 0
        """Counts the writes: equal generations, equal contents (memos of decisions check it)."""
        self._log: deque[tuple[int, ...] | None] = deque(maxlen=_LOG_KEPT)
        """The rows each of the last writes rewrote, one entry per generation (None: a write
        that may have changed any row's decision: the table grew)."""
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.views: list[NumaView | None] = []
        self.allocatable: list[Collection[str] | None] = []
        self.tokens: list[tuple[NumaView | None, bool]] = []
        """Per row, the (view, fresh) it was last written from: a cheap "did it change?"."""
        self.allocatable_sets: list[frozenset[str]] = []
        """The distinct allocatable name sets, indexed by :attr:`allocatable_code`."""
        self._allocatable_codes: dict[frozenset[str], int] = {}
        self.units_keys: list[tuple[object, ...]] = []
        self.units_facts: list[NodeFacts] = []
        self._units_codes: dict[tuple[object, ...], int] = {}
        rows, width = self.capacity, self.width
        self.ids: Ints = np.full((rows, width), ABSENT, np.int64)
        self.zone_count: Ints = np.zeros(rows, np.int64)
        self.available: dict[str, Ints] = {}
        self.fractional: dict[str, Bools] = {}
        self.listed: dict[str, Bools] = {}
        self.unknown_numa: dict[str, Bools] = {}
        self.at_minimum: Bools = np.zeros((rows, width), np.bool_)
        self.has_view: Bools = np.zeros(rows, np.bool_)
        self.fresh: Bools = np.ones(rows, np.bool_)
        self.exact: Bools = np.zeros(rows, np.bool_)
        self.policy: Ints = np.full(rows, UNKNOWN_POLICY, np.int64)
        self.pod_scope: Bools = np.zeros(rows, np.bool_)
        self.prefer_closest: Bools = np.zeros(rows, np.bool_)
        self.memory_groups: Bools = np.zeros(rows, np.bool_)
        self.smt_threads: Ints = np.zeros(rows, np.int64)
        self.smt_physical: Ints = np.full(rows, -1, np.int64)
        self.max_numa_nodes: Ints = np.ones(rows, np.int64)
        self.single_unit: Bools = np.zeros(rows, np.bool_)
        """Per row: :attr:`RowData.single_unit`, the fast path's eligibility."""
        self.slot_ids: Bools = np.ones(rows, np.bool_)
        """Per row: :attr:`RowData.slot_ids` (True without a view: no zone to name)."""
        self.max_numa_id = 0
        """The highest NUMA id any row has held (never lowered): the zone reasons a decision
        may need are those of ids 0 .. this (at most :data:`~rte.consumer.numaview.MAX_NUMA_ID`)."""
        self.units_code: Ints = np.zeros(rows, np.int64)
        self.allocatable_code: Ints = np.full(rows, -1, np.int64)
        """Per row: the index of its allocatable names in :attr:`allocatable_sets`, -1 when unknown."""

    # --- shape ---------------------------------------------------------------------------------

    _FACT_COLUMNS = (
        ("exact", False),
        ("policy", UNKNOWN_POLICY),
        ("pod_scope", False),
        ("prefer_closest", False),
        ("memory_groups", False),
        ("smt_threads", 0),
        ("smt_physical", -1),
        ("max_numa_nodes", 1),
        ("single_unit", False),
        ("slot_ids", True),
    )
    """Per-node columns copied from the :class:`RowData` field of the same name, with the value
    of a row without a view."""
    _ROW_COLUMNS = (
        ("zone_count", 0),
        ("has_view", False),
        ("fresh", True),
        *_FACT_COLUMNS,
        ("units_code", 0),
        ("allocatable_code", -1),
    )

    def _resize(self, rows: int, width: int) -> None:
        """Grow to ``rows`` rows and ``width`` zone slots (never shrinks)."""
        self._written(None)
        self.ids = _grown(self.ids, rows, width, ABSENT)  # type: ignore[assignment]
        self.at_minimum = _grown(self.at_minimum, rows, width, False)  # type: ignore[assignment]
        for matrices, fill in ((self.available, ABSENT), (self.fractional, False)):
            for name, array in matrices.items():
                matrices[name] = _grown(array, rows, width, fill)  # type: ignore[assignment]
        for columns in (self.listed, self.unknown_numa):
            for name, column in columns.items():
                columns[name] = _grown(column, rows, width, False)  # type: ignore[assignment]
        for attr, fill in self._ROW_COLUMNS:
            setattr(self, attr, _grown(getattr(self, attr), rows, width, fill))
        self.capacity, self.width = rows, width

    def _resource(self, name: str) -> Ints:
        array = self.available.get(name)
        if array is None:
            array = self.available[name] = np.full((self.capacity, self.width), ABSENT, np.int64)
            self.listed[name] = np.zeros(self.capacity, np.bool_)
        return array

    def _units(self, data: RowData) -> int:
        code = self._units_codes.get(data.units)
        if code is None:
            code = self._units_codes[data.units] = len(self.units_keys)
            self.units_keys.append(data.units)
            self.units_facts.append(data.facts)
        return code

    def _flags(self, name: str) -> Bools:
        flags = self.fractional.get(name)
        if flags is None:
            flags = self.fractional[name] = np.zeros((self.capacity, self.width), np.bool_)
        return flags

    def _unknown(self, name: str) -> Bools:
        column = self.unknown_numa.get(name)
        if column is None:
            column = self.unknown_numa[name] = np.zeros(self.capacity, np.bool_)
        return column

    def _allocatable(self, names: Collection[str] | None) -> int:
        if names is None:
            return -1
        key = frozenset(names)
        code = self._allocatable_codes.get(key)
        if code is None:
            code = self._allocatable_codes[key] = len(self.allocatable_sets)
            self.allocatable_sets.append(key)
        return code

    # --- rows ----------------------------------------------------------------------------------

    def _written(self, rows: tuple[int, ...] | None) -> None:
        self.generation += 1
        self._log.append(rows)

    def rewritten_since(self, generation: int) -> Ints | None:
        """The rows rewritten since ``generation`` (ascending, distinct), or None when that is
        unknown (too long ago) or the table grew meanwhile: then any row may decide otherwise.

        A decision on a row reads that row's columns only, so one made at ``generation`` holds
        for every other row (:class:`rte.consumer.kernel.memo.DecisionMemo`)."""
        count = self.generation - generation
        if count < 0 or count > len(self._log):
            return None
        rows: set[int] = set()
        for k in range(len(self._log) - count, len(self._log)):
            entry = self._log[k]
            if entry is None:
                return None
            rows.update(entry)
        return np.array(sorted(rows), np.int64)  # a few rows: cheaper than np.unique

    def row(self, name: str) -> int:
        """The row of node ``name``, added (without a view) on first use."""
        row = self.index.get(name)
        if row is not None:
            return row
        row = self._add(name)
        self.index[name] = row
        return row

    def unindexed_row(self, label: str) -> int:
        """A new row (without a view) that no name maps to: one row standing for many names
        (:mod:`rte.consumer.kernel.mirror`'s untracked names); ``label`` is its :attr:`names` entry."""
        return self._add(label)

    def _add(self, name: str) -> int:
        row = self.size
        self._written(None)
        if row == self.capacity:
            # By a quarter, not double: the spare rows are filled (resident) columns, 5 MiB at
            # 20 000 nodes when doubled; resizes stay amortised O(1) per row.
            self._resize(self.capacity + max(self.capacity // 4, 1), self.width)
        self.size += 1
        self.names.append(name)
        self.views.append(None)
        self.allocatable.append(None)
        self.tokens.append((None, True))
        return row

    def put(
        self,
        row: int,
        view: NumaView | None,
        fresh: bool = True,
        allocatable: Collection[str] | None = None,
    ) -> None:
        """(Re)write ``row`` from ``view`` (None: the node has no NRT). When the row holds a view
        that ``view`` differs from in amounts only (reservations added or removed), only the
        amounts are written."""
        self._written((row,))
        old = self.views[row]
        if view is not None and old is not None and same_shape(row_data(old), view):
            self._put_amounts(row, view, fresh, allocatable)
            return
        self.views[row] = view
        self.tokens[row] = (view, fresh)
        self.allocatable[row] = allocatable
        self.allocatable_code[row] = self._allocatable(allocatable)
        self.fresh[row] = fresh
        self.has_view[row] = view is not None
        for array in self.available.values():
            array[row] = ABSENT
        for flags in (*self.fractional.values(), *self.listed.values(), *self.unknown_numa.values()):
            flags[row] = False
        if view is None:
            self.zone_count[row] = 0
            self.ids[row] = ABSENT
            self.at_minimum[row] = False
            self._facts(row, None)
            return
        data = row_data(view)
        count = len(data.ids)
        if count > self.width:
            self._resize(self.capacity, count)
        self.zone_count[row] = count
        self.ids[row] = ABSENT
        self.ids[row, :count] = data.ids
        self.max_numa_id = max([self.max_numa_id, *data.ids[-1:]])  # ascending ids: the last
        for name, floors in data.available.items():
            self._resource(name)[row, :count] = floors
            self.listed[name][row] = True
        for name, rounded in data.fractional.items():
            self._flags(name)[row, :count] = rounded
        for name in data.unknown_numa:
            self._unknown(name)[row] = True
        self.at_minimum[row] = False
        self.at_minimum[row, :count] = data.at_minimum
        self._facts(row, data)

    def _put_amounts(
        self, row: int, view: NumaView, fresh: bool, allocatable: Collection[str] | None
    ) -> None:
        data = row_data(view)
        self.views[row] = view
        self.tokens[row] = (view, fresh)
        self.allocatable[row] = allocatable
        self.allocatable_code[row] = self._allocatable(allocatable)
        self.fresh[row] = fresh
        self.exact[row] = data.exact
        self.single_unit[row] = data.single_unit
        count = len(data.ids)
        for name, floors in data.available.items():  # the same resources as the row's view
            self.available[name][row, :count] = floors
        for flags in self.fractional.values():
            flags[row] = False
        for name, rounded in data.fractional.items():
            self._flags(name)[row, :count] = rounded

    def _facts(self, row: int, data: RowData | None) -> None:
        for attr, fill in self._FACT_COLUMNS:
            getattr(self, attr)[row] = fill if data is None else getattr(data, attr)
        self.units_code[row] = 0 if data is None else self._units(data)

    def put_all(
        self,
        names: Sequence[str],
        views: Sequence[NumaView | None],
        fresh: Sequence[bool] | None = None,
        allocatable: Sequence[Collection[str] | None] | None = None,
    ) -> None:
        """:meth:`put_many` by node name, adding the rows of new names."""
        self.put_many([self.row(name) for name in names], views, fresh, allocatable)

    def put_many(
        self,
        rows: Sequence[int],
        views: Sequence[NumaView | None],
        fresh: Sequence[bool] | None = None,
        allocatable: Sequence[Collection[str] | None] | None = None,
    ) -> None:
        """:meth:`put` for many rows at once: each column is assembled from a Python list in one
        conversion, much faster than row by row (a later duplicate row wins, as with :meth:`put`)."""
        if not rows:
            return
        self._written(tuple(rows))
        data = [None if v is None else row_data(v) for v in views]
        width = max([self.width, *(len(d.ids) for d in data if d is not None)])
        if width > self.width:
            self._resize(self.capacity, width)
        codes: dict[int, int] = {}  # allocatable sets by identity first: most nodes share one
        allocatable_codes = []
        for k, row in enumerate(rows):
            names = None if allocatable is None else allocatable[k]
            flag = True if fresh is None else fresh[k]
            self.views[row] = views[k]
            self.allocatable[row] = names
            self.tokens[row] = (views[k], flag)
            code = codes.get(id(names))
            if code is None:
                code = codes[id(names)] = self._allocatable(names)
            allocatable_codes.append(code)
        at = np.asarray(rows, np.int64)
        self.fresh[at] = True if fresh is None else np.asarray(fresh, np.bool_)
        self.allocatable_code[at] = allocatable_codes
        self._assemble(at, data)

    def _assemble(self, at: Ints, data: Sequence[RowData | None]) -> None:
        width = self.width
        for array in self.available.values():
            array[at] = ABSENT
        for flags in (*self.fractional.values(), *self.listed.values(), *self.unknown_numa.values()):
            flags[at] = False
        live = [d for d in data if d is not None]
        self.has_view[at] = [d is not None for d in data]
        self.zone_count[at] = [0 if d is None else len(d.ids) for d in data]
        self.ids[at] = _matrix([None if d is None else d.ids for d in data], width, ABSENT)
        self.max_numa_id = max([self.max_numa_id, *(d.ids[-1] for d in live if d.ids)])  # ascending ids
        self.at_minimum[at] = _matrix([None if d is None else d.at_minimum for d in data], width, False)
        for name in sorted({name for d in live for name in d.available}):
            self._resource(name)[at] = _matrix(
                [None if d is None else d.available.get(name) for d in data], width, ABSENT
            )
            self.listed[name][at] = [d is not None and name in d.available for d in data]
        for name in sorted({name for d in live for name in d.fractional}):
            self._flags(name)[at] = _matrix(
                [None if d is None else d.fractional.get(name) for d in data], width, False
            )
        for name in sorted({name for d in live for name in d.unknown_numa}):
            self._unknown(name)[at] = [d is not None and name in d.unknown_numa for d in data]
        for attr, fill in self._FACT_COLUMNS:
            getattr(self, attr)[at] = [fill if d is None else getattr(d, attr) for d in data]
        self.units_code[at] = [0 if d is None else self._units(d) for d in data]

    @classmethod
    def of(
        cls,
        names: Sequence[str],
        views: Sequence[NumaView | None],
        fresh: Sequence[bool] | None = None,
        allocatable: Sequence[Collection[str] | None] | None = None,
    ) -> NodeTable:
        """A table of these nodes, row ``k`` for ``names[k]`` (names must be distinct)."""
        table = cls(capacity=max(len(names), 1))
        table.put_all(names, views, fresh, allocatable)
        return table

    def rows_of(self, names: Iterable[str]) -> Ints:
        """The rows of ``names`` (each must have one)."""
        index = self.index
        return np.fromiter((index[n] for n in names), np.int64)
