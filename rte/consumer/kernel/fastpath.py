"""Filter by the kubelet's rules on many table rows at once, where no search over masks is needed.

Two shapes are decided here, each exactly as the scalar path decides it; every other row is
left to the scalar path (:func:`rte.consumer.kubelet_filter.admitted_on`):

* **Nothing to align.** No unit (nor a part of a pod-scope unit) asks the CPU or memory manager
  for anything, and no requested device resource has a topology on the node (no zone lists it,
  none of its devices has an unknown NUMA node): every provider answers "no preference", every
  merge admits, every allocation is empty. Policy ``none`` says so in its own words; the other
  policies admit with :data:`~rte.model.admission.reasons.NOTHING_TO_ALIGN`, whatever the number
  of zones (nothing is enumerated).
* **One unit on a ``single-numa-node`` or ``restricted`` node**, the fast path of
  :mod:`rte.consumer.kubelet_filter` with the same conditions (no memory groups, no
  ``prefer-closest-numa-nodes`` under ``restricted``, something hinted): per hinted resource, a
  ``(rows x zones)`` comparison of the available amount with the request; the unit fits the
  lowest zone where all hold, unless ``full-pcpus-only``'s check fails (left to the scalar path,
  which names it). Where no zone holds everything, ``single-numa-node`` refuses (unless memory
  fits no single zone: the memory manager may still have wider masks), and the refusal is kept as
  a small bit pattern (which hinted resources the node has a topology for, which no zone holds
  alone) that :func:`refusal_reason` turns into the scalar path's words once per pattern.

Devices attached to several zones (``nodeMultiNUMAResources``) need no routing: both shapes
read single zones only, and a zone's count holds every device attached to it, shared or not,
which is what the device manager counts for a mask of that one zone.

Neither shape depends on how a unit's CPUs are split between zones, the one thing the CPU manager
option ``distribute-cpus-across-numa`` changes (:mod:`rte.model.admission.distribute`): the split
only decides what the pod's *later* units find, and both shapes have no later unit (nothing is
allocated, or the pod is one unit). Nodes with the option therefore take the same path here;
a pod of several units, where the split matters, is always the scalar path's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from rte.consumer.kernel.rowbits import count_true, first_true, rows_any
from rte.consumer.kernel.table import ABSENT, POLICY_CODES, Bools, Ints, NodeTable
from rte.model.admission.reasons import listing, request_text
from rte.model.admission.units import AdmissionUnit
from rte.model.topology_manager import POLICY_NONE, POLICY_SINGLE_NUMA_NODE

Selection = slice | Ints
"""Rows of a table: a slice (whole columns, no copy) or row indices."""

_NONE = POLICY_CODES[POLICY_NONE]
_SINGLE = POLICY_CODES[POLICY_SINGLE_NUMA_NODE]
MAX_PATTERN_ENTRIES = 31
"""Refusal patterns take two bits per hinted resource in an int64."""


_Column = TypeVar("_Column", Ints, Bools)


def pick(column: _Column, selection: Selection) -> _Column:
    """The selected rows of a column or matrix: a view for a slice, else gathered with ``take``
    (a quarter of fancy indexing's time: 17 µs instead of 75 for 5000 rows of 8 zones), which
    matters when the candidates are not the table's rows in order, as kube-scheduler's are not."""
    if isinstance(selection, slice):
        return column[selection]
    return column.take(selection, axis=0)


def put_at(column: _Column, at: Ints, values: _Column) -> _Column:
    """A copy of ``column`` with ``values`` at the positions ``at``."""
    out = column.copy()
    out[at] = values
    return out


def selection_size(table: NodeTable, selection: Selection) -> int:
    if isinstance(selection, slice):
        return len(range(*selection.indices(table.size)))
    return len(selection)


def available(table: NodeTable, name: str, selection: Selection, rows: int) -> Ints:
    """The available matrix of ``name`` over ``selection`` (all ABSENT for a resource no row lists)."""
    matrix = table.available.get(name)
    if matrix is None:
        return np.full((rows, table.width), ABSENT, np.int64)
    return pick(matrix, selection)


def has_topology(table: NodeTable, name: str, selection: Selection, rows: int) -> Bools:
    """Rows where device resource ``name`` gets hints: some zone lists it, or some of its devices
    have an unknown NUMA node (hinted, though toward no mask)."""
    listed = table.listed.get(name)
    unknown = table.unknown_numa.get(name)
    out = np.zeros(rows, np.bool_) if listed is None else pick(listed, selection)
    return out if unknown is None else out | pick(unknown, selection)


def nothing_asked(units: tuple[AdmissionUnit, ...]) -> frozenset[str] | None:
    """The device resources the units ask for when no unit or part asks the CPU or memory
    manager for anything; None otherwise."""
    devices: set[str] = set()
    for unit in units:
        for part in (unit, *unit.parts):
            if part.cpus or part.memory:
                return None
            devices.update(part.devices)
    return frozenset(devices)


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """What the kernel decided for rows sharing one set of admission units."""

    position: Ints
    """The zone slot the single unit fits (the lowest), -1 where not decided as such a fit."""
    nothing: Bools | None
    """Admitted with nothing to align (None: no row)."""
    refused: Bools | None
    """Refused by ``single-numa-node``, with its reason in :attr:`patterns` (None: no row)."""
    patterns: Ints | None
    entries: tuple[tuple[str, int], ...]
    """(resource, amount) of each resource a refusal pattern speaks of, in the reasons' order."""
    placed_all: bool = False
    """The unit fits some zone of every row (:attr:`position` >= 0 throughout): the usual case,
    which then needs no mask."""


def decide_group(table: NodeTable, selection: Selection, units: tuple[AdmissionUnit, ...]) -> GroupOutcome:
    """The kernel's verdicts on ``selection``, rows whose units are ``units`` (live rows: a fresh
    view, the node-allocatable check passed)."""
    rows = selection_size(table, selection)
    nothing: Bools | None = None
    devices = nothing_asked(units)
    if devices is not None:
        zone_count = pick(table.zone_count, selection)
        nothing = (zone_count >= 1) & (pick(table.policy, selection) >= 0)
        for name in devices:
            nothing &= ~has_topology(table, name, selection, rows)
        if not count_true(nothing):
            nothing = None
    if len(units) != 1 or units[0].shared_pool_error or len(units[0].parts) > 1:
        return GroupOutcome(np.full(rows, -1, np.int64), nothing, None, None, ())
    outcome = _single_unit(table, selection, rows, units[0])
    if nothing is None:  # nothing admitted without alignment: the unit's outcome stands
        return outcome
    keep = ~nothing
    refused = None if outcome.refused is None else outcome.refused & keep
    position = np.where(keep, outcome.position, -1)
    return GroupOutcome(position, nothing, refused, outcome.patterns, outcome.entries)


Entry = tuple[str, int, Bools | None, Bools | None]
"""(resource, amount, the rows with a topology for it (None: all), the zones holding it alone
(None: every zone))."""


def _single_unit(table: NodeTable, selection: Selection, rows: int, unit: AdmissionUnit) -> GroupOutcome:
    eligible = pick(table.single_unit, selection)  # exact, no memory groups, the policies
    cpus, memory_items = unit.cpus, unit.memory_items
    # None: every row (the CPU or memory manager hints); else the rows some device hints on.
    hinted: Bools | None = None if cpus or memory_items else np.zeros(rows, np.bool_)
    entries: list[Entry] = []
    fit: Bools | None = None
    if cpus:
        fit = available(table, "cpu", selection, rows) >= cpus
        entries.append(("cpu", cpus, None, fit))
    memory: Bools | None = None  # None: every zone (no memory type asks for more than 0)
    for memory_type, amount in memory_items:
        if amount:
            enough = available(table, memory_type, selection, rows) >= amount
            memory = enough if memory is None else memory & enough
    entries += [(memory_type, amount, None, memory) for memory_type, amount in memory_items]
    if memory is not None:
        fit = memory if fit is None else fit & memory
    for resource, amount in unit.device_items:
        topology = has_topology(table, resource, selection, rows)
        if hinted is not None:
            hinted |= topology
        holds: Bools | None = None
        if amount:
            holds = available(table, resource, selection, rows) >= amount
            constraint = holds | ~topology[:, None]  # a resource without topology constrains nothing
            fit = constraint if fit is None else fit & constraint
        entries.append((resource, amount, topology, holds))
    if fit is None:
        fit = pick(table.ids, selection) >= 0
    any_fit = rows_any(fit)
    if hinted is not None:
        eligible = eligible & hinted  # a new array: ``eligible`` may be the table's own column
    success = eligible & any_fit
    threads = pick(table.smt_threads, selection)
    if cpus and np.count_nonzero(threads):  # any(), without its reduction
        physical = pick(table.smt_physical, selection)
        misaligned = (cpus % np.maximum(threads, 1) != 0) | ((physical >= 0) & (cpus > physical))
        success &= ~((threads > 0) & misaligned)  # the scalar path names the SMTAlignmentError
    position = first_true(fit)
    placed_all = count_true(success) == rows
    if not placed_all:
        np.copyto(position, -1, where=~success)
    refused: Bools | None = None
    patterns = None
    if count_true(any_fit) != rows:  # some row has no zone holding everything
        refused = eligible & ~any_fit
        refused &= pick(table.policy, selection) == _SINGLE
        if memory_items and memory is not None:
            refused &= rows_any(memory)
        if not count_true(refused) or len(entries) > MAX_PATTERN_ENTRIES:
            refused = None
        else:
            patterns = _patterns(entries, refused)
    spoken = tuple((r, q) for r, q, _, _ in entries)
    return GroupOutcome(position, None, refused, patterns, spoken, placed_all)


def _patterns(entries: list[Entry], refused: Bools) -> Ints:
    """Per row (meaningful where refused): bit 2k set when the node has a topology for entry k,
    bit 2k+1 when no zone holds it alone."""
    out = np.zeros(len(refused), np.int64)
    where = np.flatnonzero(refused)
    for k, (_, _, topology, holds) in enumerate(entries):
        present = np.ones(len(where), np.bool_) if topology is None else topology[where]
        empty = np.zeros(len(where), np.bool_) if holds is None else ~holds[where].any(axis=1)
        out[where] |= present.astype(np.int64) << (2 * k) | empty.astype(np.int64) << (2 * k + 1)
    return out


def refusal_reason(entries: tuple[tuple[str, int], ...], pattern: int) -> str:
    """``single-numa-node``'s refusal of one unit in the scalar path's words
    (:func:`rte.consumer.kubelet_filter.fast_verdict`): the hinted resources no single zone
    holds, or all of them when each fits somewhere but never together."""
    hinted = [
        (r, q, pattern >> (2 * k + 1) & 1) for k, (r, q) in enumerate(entries) if pattern >> (2 * k) & 1
    ]
    alone = [(r, q) for r, q, empty in hinted if empty] or [(r, q) for r, q, _ in hinted]
    what = listing([request_text(r, q) for r, q in alone])
    return f"{POLICY_SINGLE_NUMA_NODE}: no single NUMA zone holds {what}"
