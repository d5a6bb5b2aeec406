"""What a node table row holds of one NUMA view, extracted once per view (:func:`row_data`).

The column types and codes of :mod:`rte.consumer.kernel.table` are defined here too. A view
derived from another by subtracting reservations shares that one's facts and zones, so only its
amounts are extracted again, and a table row holding one is rewritten in its amounts only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import cast

import numpy as np
import numpy.typing as npt

from rte.consumer.least_numa import zones_at_minimum_distance
from rte.consumer.numaview import NumaView, shared
from rte.consumer.requests import units_key
from rte.model.admission.node import NodeFacts
from rte.model.topology_manager import (
    POLICY_BEST_EFFORT,
    POLICY_NONE,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_POD,
)

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

EXACT_LIMIT = 2**53
"""The largest amount the kernel handles: float64 holds every integer up to it, so the
BalancedAllocation fractions equal Python's, and ``amount * 100 * weight`` stays in int64."""

POLICY_CODES: Mapping[str, int] = {
    POLICY_NONE: 0,
    POLICY_BEST_EFFORT: 1,
    POLICY_RESTRICTED: 2,
    POLICY_SINGLE_NUMA_NODE: 3,
}
UNKNOWN_POLICY = -1
ABSENT = -1
"""The available amount of a zone that does not list the resource (or of an unused zone slot):
below any request, which is at least 1 wherever the kernel compares."""


@dataclass(frozen=True, slots=True)
class RowData:
    """One view as a table row stores it, extracted once per view."""

    exact: bool
    ids: tuple[int, ...]
    slot_ids: bool
    """The NUMA id of each zone slot is the slot's index (ids 0, 1, ..., as on nearly every
    machine): the zone the kernel picks is then its id, with nothing gathered."""
    available: Mapping[str, tuple[int, ...]]
    """Per listed resource: the amount rounded down per position, ABSENT where unlisted."""
    fractional: Mapping[str, tuple[bool, ...]]
    """Per resource with some fractional amount: where the amount was rounded down."""
    at_minimum: tuple[bool, ...]
    policy: int
    pod_scope: bool
    prefer_closest: bool
    memory_groups: bool
    smt_threads: int
    """Threads per core when ``full-pcpus-only``'s check applies, else 0."""
    smt_physical: int
    """Free physical CPUs for that check; -1 when the node does not publish them."""
    max_numa_nodes: int
    unknown_numa: frozenset[str]
    units: tuple[object, ...]
    """What decides the pod's admission units on this node (:func:`rte.consumer.requests.units_key`)."""
    facts: NodeFacts
    present: Mapping[str, int]
    """Per resource, the positions listing it (:attr:`NumaView.present`)."""

    @property
    def single_unit(self) -> bool:
        """Whether the kernel's one-unit fast path applies (:func:`rte.consumer.kernel.fastpath.
        decide_group`): exact, no memory groups, ``single-numa-node``, or ``restricted`` without
        ``prefer-closest-numa-nodes``; one column, so a decision does not combine five."""
        if not self.exact or self.memory_groups:
            return False
        if self.policy == POLICY_CODES[POLICY_SINGLE_NUMA_NODE]:
            return True
        return self.policy == POLICY_CODES[POLICY_RESTRICTED] and not self.prefer_closest


_NONE_ROUNDED: Mapping[str, tuple[bool, ...]] = MappingProxyType({})
"""The :attr:`RowData.fractional` of every row without fractions (nearly all): one shared."""

ROW_KEY = "kernel-row"
"""Key of :attr:`NumaView.local` under which a view's extracted row is memoised."""
_SHAPE_KEY = "kernel-row-shape"


def row_data(view: NumaView) -> RowData:
    """What a table row holds of ``view``, memoised on the view. A view derived from another
    (reservations subtracted, :meth:`NumaView.with_zone_available`) shares that one's ``memo``,
    facts and zones: only its amounts are extracted again."""
    cached = view.local.get(ROW_KEY)
    if cached is not None:
        return cached  # type: ignore[return-value]
    shape = view.memo.get(_SHAPE_KEY)
    if isinstance(shape, RowData) and same_shape(shape, view):
        exact, available, fractional = _amounts(view)
        config = shape.policy != UNKNOWN_POLICY and view.tm.policy == view.facts.policy
        config = config and view.tm.pod_scope == shape.pod_scope
        data = replace(shape, exact=exact and config, available=available, fractional=fractional)
    else:
        data = view.memo[_SHAPE_KEY] = _row_data(view)
    view.local[ROW_KEY] = data
    return data


def same_shape(data: RowData, view: NumaView) -> bool:
    """Whether ``view`` differs from the view ``data`` was extracted from in amounts only."""
    return data.facts is view.facts and data.ids == view.ids and data.present == view.present


def _amounts(
    view: NumaView,
) -> tuple[bool, Mapping[str, tuple[int, ...]], Mapping[str, tuple[bool, ...]]]:
    """(the amounts are exact, the floors per resource, where they were rounded)."""
    exact = len(view.ids) >= 1
    available: dict[str, tuple[int, ...]] = {}
    fractional: dict[str, tuple[bool, ...]] = {}
    every = (1 << len(view.ids)) - 1
    for name, row in view.available.items():
        listed = view.present.get(name, 0)
        if listed == every and all(type(a) is int and 0 <= a < EXACT_LIMIT for a in row):
            available[name] = cast(tuple[int, ...], row)  # the floors are the amounts: share the view's row
            continue
        floors: list[int] = []
        rounded: list[bool] = []
        for position, amount in enumerate(row):
            if not listed >> position & 1:
                floors.append(ABSENT)
                rounded.append(False)
                continue
            whole = amount if isinstance(amount, int) else math.floor(amount)
            floors.append(whole)
            rounded.append(whole != amount)
            if whole < 0 or whole + 1 > EXACT_LIMIT:
                exact = False
        available[name] = tuple(floors)
        if any(rounded):
            fractional[name] = tuple(rounded)
    if all(available[name] is row for name, row in view.available.items()):
        available = cast(dict[str, tuple[int, ...]], view.available)  # the view's own rows: one dict
    return exact, available, fractional or _NONE_ROUNDED


def _row_data(view: NumaView) -> RowData:
    count = len(view.ids)
    exact, available, fractional = _amounts(view)
    facts, tm = view.facts, view.tm
    policy = POLICY_CODES.get(facts.policy, UNKNOWN_POLICY)
    pod_scope = facts.scope == SCOPE_POD
    if policy == UNKNOWN_POLICY or tm.policy != facts.policy or tm.pod_scope != pod_scope:
        exact = False  # Filter and Score would read different configs: leave it to the scalar path
    at_minimum = zones_at_minimum_distance(view) if count else 0
    smt = facts.full_pcpus_only and facts.threads_per_core is not None
    # Parts equal across nodes are shared (:func:`rte.consumer.numaview.shared`): one copy each.
    unknown = frozenset(facts.unknown_numa_devices)
    units = units_key(facts)
    data = RowData(
        exact=exact,
        ids=view.ids,
        slot_ids=view.ids == tuple(range(count)),
        available=available,
        fractional=fractional,
        at_minimum=shared(
            ("at-minimum", count, at_minimum), tuple(bool(at_minimum >> i & 1) for i in range(count))
        ),
        policy=policy,
        pod_scope=pod_scope,
        prefer_closest=facts.prefer_closest_numa,
        memory_groups=bool(facts.memory_groups),
        smt_threads=(facts.threads_per_core or 1) if smt else 0,
        smt_physical=-1 if facts.available_physical_cpus is None else facts.available_physical_cpus,
        max_numa_nodes=tm.max_numa_nodes,
        unknown_numa=shared(("unknown", unknown), unknown),
        units=shared(("units", units), units),
        facts=facts,
        present=view.present,  # shared by equal views (rte.consumer.numaview.shared)
    )
    return data
