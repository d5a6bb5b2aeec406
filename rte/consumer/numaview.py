"""A node's NUMA zones as Filter and Score read them, precomputed once per NRT version.

The reference plugin rebuilds its NUMA list from the NRT on every Filter and Score call. We build
an immutable :class:`NumaView` once per NRT update (and once per reservation change, see
:func:`subtract_requests`) and keep everything the hot loops want as flat tuples.

What a view holds, and the rules that differ from the reference on purpose:

* Only zones of type ``Node`` named ``node-<id>`` with ``0 <= id <= 63`` (:data:`MAX_NUMA_ID`).
  The kubelet's Topology Manager works on a 64-bit NUMA mask, so a zone with a larger id can
  never be an alignment target; the reference drops ids above 64 and crashes on exactly 64.
  A second zone with an id already seen (``node-1`` and ``node-01``) is ignored.
* Zones are kept in **ascending id order**, the kubelet's tie-break order (lowest NUMA id first,
  narrower masks with lower bits first). The published order is kept in ``published_ids`` for
  display only: the reference's dependence on it is a bug (it walks list positions where it
  means ids), and with sorted publication, as producers are told to do, both agree.
* Filter and Score read ``available`` (a negative available counts as 0); kubelet-exact
  admission also reads each zone's ``capacity`` and ``allocatable`` and the node attributes it
  needs (:attr:`NumaView.facts`, :func:`rte.model.admission.facts.facts_from_attributes`).
* Costs are keyed by the real id of the zone they point to; a missing entry is 255.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from rte.consumer.tmconfig import TopologyManagerConfig, tm_config_from
from rte.model.admission.facts import facts_from_attributes
from rte.model.admission.node import NodeFacts
from rte.model.fingerprint import ATTRIBUTE as FINGERPRINT_ATTRIBUTE
from rte.model.quantity import Amount, ceil_value
from rte.model.topology import ZONE_TYPE_NUMA, NodeTopology, numa_id_of

MAX_NUMA_ID = 63
"""The highest NUMA id the kubelet's 64-bit Topology Manager mask can express."""
MISSING_DISTANCE = 255
"""SLIT's "unknown / unreachable"; used where a zone publishes no cost toward another."""

T = TypeVar("T")

SHARED_LIMIT = 1 << 14
"""How many distinct parts :func:`shared` keeps before starting over (bounds its memory when
values churn; sharing is an optimisation only, no answer depends on identity)."""
_SHARED: dict[Any, Any] = {}


def shared(key: Any, value: T) -> T:
    """The value first registered under ``key``, or ``value`` (registered now).

    Nodes of one hardware model publish equal capacities, allocatables, distances and resource
    names: a view holds the one shared copy instead of its own (at 20 000 NRTs × 8 zones, per-view
    copies were about half of the extender's memory). ``key`` must determine ``value`` exactly,
    types included (``1 == 1.0 == True``), and the value must never be mutated.
    """
    got = _SHARED.get(key)
    if got is None:
        if len(_SHARED) >= SHARED_LIMIT:
            _SHARED.clear()
        got = _SHARED.setdefault(key, value)
    return cast(T, got)


def _shared_amounts(amounts: dict[str, Amount]) -> tuple[Any, Mapping[str, Amount]]:
    """(its key, the shared copy) of one zone's name -> amount dict, order and types included."""
    key = ("amounts", *((name, type(a), a) for name, a in amounts.items()))
    return key, shared(key, amounts)


Thresholds = tuple[tuple[Amount, ...], tuple[int, ...]]
"""The availabilities of a resource in ascending order (repeats kept), and for each one the mask
of zones holding at least that much, followed by a final 0 (no zone holds more than the largest),
so that ``masks[bisect_left(values, amount)]`` is always the answer."""


def make_thresholds(row: Sequence[Amount], mask: int) -> Thresholds:
    """Index ``row`` (available per position) over the positions set in ``mask``."""
    pairs = sorted((row[i], 1 << i) for i in range(len(row)) if mask >> i & 1)
    masks = []
    acc = 0
    for _, bit in reversed(pairs):
        acc |= bit
        masks.append(acc)
    masks.reverse()
    masks.append(0)
    return tuple(a for a, _ in pairs), tuple(masks)


def zones_with_at_least(thresholds: Thresholds, amount: Amount) -> int:
    """The mask of zones whose available is ``>= amount`` (exact comparison), in O(log n)."""
    values, masks = thresholds
    return masks[bisect_left(values, amount)]


_THRESHOLDS = "thresholds"


class ZoneAmounts(Sequence[Mapping[str, Amount]]):
    """Per position, resource name -> available, as the zone listed them (order included), read
    from the view's per-resource rows when first asked for.

    A view used to keep one dict per zone besides those rows: 1.5 KiB per 8-zone node, which the
    decision kernel never reads; only the scalar path and reservations do.
    """

    __slots__ = ("_layout", "_made", "_names", "_rows")

    def __init__(
        self,
        rows: Mapping[str, tuple[Amount, ...]],
        names: tuple[tuple[str, ...], ...],
        layout: tuple[Mapping[str, int], frozenset[str]] | None = None,
    ) -> None:
        self._rows = rows
        self._names = names
        self._layout = layout
        """(present, resource names) of a view whose zones list exactly ``names``: given by
        :meth:`NumaView.with_zone_available`, so that a derived view skips recomputing them."""
        self._made: list[Mapping[str, Amount] | None] | None = None

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, index: int) -> Mapping[str, Amount]:  # type: ignore[override]
        if isinstance(index, slice):  # as a tuple would (no caller slices today)
            return tuple(self[i] for i in range(len(self._names))[index])
        made = self._made
        if made is None:
            made = self._made = [None] * len(self._names)
        zone = made[index]
        if zone is None:
            position = range(len(self._names))[index]  # negative indexes, IndexError
            zone = made[index] = {r: self._rows[r][position] for r in self._names[position]}
        return zone

    def __iter__(self) -> Iterator[Mapping[str, Amount]]:
        return (self[i] for i in range(len(self._names)))


@dataclass(frozen=True, slots=True, eq=False)
class NumaView:
    """One node's usable NUMA zones, with per-resource rows aligned on :attr:`ids`."""

    node_name: str
    tm: TopologyManagerConfig
    ids: tuple[int, ...]
    """Real NUMA ids, ascending. Position ``i`` of every row below is zone ``ids[i]``."""
    published_ids: tuple[int, ...]
    """The same zones in the order the NRT listed them (informational)."""
    zone_available: Sequence[Mapping[str, Amount]]
    """Per position: resource name -> available (only resources the zone lists); kept as a
    :class:`ZoneAmounts` over :attr:`available` once the view is built."""
    distances: tuple[tuple[int, ...], ...]
    """``distances[i][j]``: cost from zone ``ids[i]`` to zone ``ids[j]`` (255 when unpublished)."""
    source: NodeTopology | None = None
    zone_capacity: tuple[Mapping[str, Amount], ...] = ()
    """Per position: resource name -> capacity, as published (kubelet-exact admission only)."""
    zone_allocatable: tuple[Mapping[str, Amount], ...] = ()
    """Per position: resource name -> allocatable, as published (kubelet-exact admission only)."""
    facts: NodeFacts = field(default_factory=NodeFacts)
    """What kubelet-exact admission reads from the node attributes, with the TM config."""
    zone_shortfall: tuple[Mapping[str, Amount], ...] = ()
    """Per position (empty: nothing anywhere): what a subtraction took beyond 0 and the clamp
    hid (:func:`subtract_requests`), the zone then really being ``available - shortfall`` short.
    Room given back to the zone pays it off first (:func:`signed_zones`): the reserve cache's
    credits are applied before its reservations for that reason, and NUMA-aware preemption
    credits its victims to the view the cache serves."""
    # Derived lookup tables (filled in __post_init__).
    available: Mapping[str, tuple[Amount, ...]] = field(init=False)
    """Per resource: available in every zone, 0 where the zone does not list it."""
    ceil_available: Mapping[str, tuple[int, ...]] = field(init=False)
    """Per resource: ``Quantity.Value()`` (rounded up) of :attr:`available`; the very same tuple
    object when every value is already an integer."""
    present: Mapping[str, int] = field(init=False)
    """Per resource: bit ``i`` set when zone ``ids[i]`` lists it."""
    resource_names: frozenset[str] = field(init=False)
    """Every resource name listed by some usable zone."""
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)
    """Pod-independent tables computed on first use (LeastNUMANodes combinations). They depend on
    ids and distances only, so views derived by :func:`subtract_requests` share this dict, and
    :func:`build_view` gives views of equal ids and distances the same one. What else is kept
    here must say what it was computed from (as the kernel's row shape does)."""
    local: dict[object, object] = field(default_factory=dict, compare=False, repr=False)
    """Pod-independent tables of this view alone (what admission reads), computed on first use."""

    def __post_init__(self) -> None:
        zones = self.zone_available
        if isinstance(zones, ZoneAmounts) and zones._layout is not None:
            # A view derived by with_zone_available (issue #27: every reservation change makes
            # one): same zones listing the same names, only the amounts differ.
            rows = zones._rows
            if all(type(a) is int for row in rows.values() for a in row):
                object.__setattr__(self, "ceil_available", rows)  # as below: all integral
            else:
                object.__setattr__(self, "ceil_available", _ceil_rows(rows))
            present_bits, names_set = zones._layout
            object.__setattr__(self, "available", rows)
            object.__setattr__(self, "present", present_bits)
            object.__setattr__(self, "resource_names", names_set)
            return
        n = len(self.ids)
        zone_names = tuple(shared(("zone", *zone), tuple(zone)) for zone in self.zone_available)
        names = sorted({r for zone in zone_names for r in zone})
        available: dict[str, tuple[Amount, ...]] = {}
        present: dict[str, int] = {}
        for r in names:
            available[r] = tuple(zone.get(r, 0) for zone in self.zone_available)
            present[r] = sum(1 << i for i in range(n) if r in self.zone_available[i])
        object.__setattr__(self, "available", available)
        object.__setattr__(self, "ceil_available", _ceil_rows(available))
        object.__setattr__(self, "present", shared(("present", *present.items()), present))
        object.__setattr__(
            self, "zone_available", ZoneAmounts(available, shared(("by-zone", zone_names), zone_names))
        )
        object.__setattr__(self, "resource_names", shared(("names", *names), frozenset(names)))

    @property
    def thresholds(self) -> Mapping[str, Thresholds]:
        """Per resource: the zones holding at least a given amount, answered by bisection
        (see :func:`zones_with_at_least`); only zones listing the resource take part. Built on
        first use: the decision kernel does not read them, only the scalar path does."""
        got = self.local.get(_THRESHOLDS)
        if got is None:
            present = self.present
            got = self.local[_THRESHOLDS] = {
                r: make_thresholds(row, present[r]) for r, row in self.available.items()
            }
        return cast(Mapping[str, Thresholds], got)

    def with_zone_available(
        self, zones: Sequence[Mapping[str, Amount]], shortfall: Sequence[Mapping[str, Amount]] = ()
    ) -> NumaView:
        """This view with other amounts left per zone (reservations subtracted) and what the
        clamp at 0 hid (:attr:`zone_shortfall`): the shared ``memo`` goes along, the view's own
        ``local`` tables do not (they read the amounts)."""
        mine = self.zone_available
        if (
            isinstance(mine, ZoneAmounts)
            and len(zones) == len(mine._names)
            and all(tuple(z) == listed for z, listed in zip(zones, mine._names, strict=True))
        ):
            # The zones list the same names as ours (subtractions keep them): hand over what
            # only those names decide, and the rows, instead of having them found again.
            rows = {r: tuple(z.get(r, 0) for z in zones) for r in self.available}
            zones = ZoneAmounts(rows, mine._names, (self.present, self.resource_names))
        return NumaView(
            node_name=self.node_name,
            tm=self.tm,
            ids=self.ids,
            published_ids=self.published_ids,
            zone_available=zones,
            distances=self.distances,
            source=self.source,
            zone_capacity=self.zone_capacity,
            zone_allocatable=self.zone_allocatable,
            facts=self.facts,
            zone_shortfall=tuple(shortfall),
            memo=self.memo,
        )

    def zone(self, numa_id: int) -> Mapping[str, Amount] | None:
        """Available resources of zone ``numa_id``, or None when the view has no such zone."""
        try:
            return self.zone_available[self.ids.index(numa_id)]
        except ValueError:
            return None


def _ceil_rows(available: Mapping[str, tuple[Amount, ...]]) -> Mapping[str, tuple[int, ...]]:
    """Per resource, ``Quantity.Value()`` of every zone's available; ``available`` itself when
    every value is integral (nearly always), else integral rows are shared tuples: Score then
    knows it can skip rounding."""
    ceil_available: dict[str, tuple[int, ...]] = {}
    same = True
    for r, row in available.items():
        ceil_row = tuple(ceil_value(a) for a in row)
        if ceil_row == row:
            ceil_available[r] = cast(tuple[int, ...], row)
        else:
            ceil_available[r] = ceil_row
            same = False
    return cast(Mapping[str, tuple[int, ...]], available) if same else ceil_available


def _available(value: Amount) -> Amount:
    # The CRD's quantity pattern admits a negative available, which no producer should send;
    # read it as "nothing left" rather than as room that a request could "fit" into.
    return value if value > 0 else 0


def build_view(topology: NodeTopology, tm: TopologyManagerConfig | None = None) -> NumaView:
    """Build the view of one NRT (``tm`` defaults to the config derived from its attributes)."""
    zones: dict[int, tuple[dict[str, Amount], dict[int, int]]] = {}
    totals: dict[int, tuple[dict[str, Amount], dict[str, Amount]]] = {}
    published: list[int] = []
    for zone in topology.zones:
        if zone.type != ZONE_TYPE_NUMA:
            continue
        numa_id = numa_id_of(zone.name)
        if numa_id is None or numa_id > MAX_NUMA_ID or numa_id in zones:
            continue
        resources: dict[str, Amount] = {}
        capacity: dict[str, Amount] = {}
        allocatable: dict[str, Amount] = {}
        for res in zone.resources:
            resources[res.name] = _available(res.available)  # a duplicate: the last wins, as upstream
            capacity[res.name] = res.capacity
            allocatable[res.name] = res.allocatable
        costs: dict[int, int] = {}
        for cost in zone.costs:
            target = numa_id_of(cost.name)
            if target is not None and target <= MAX_NUMA_ID:
                costs[target] = cost.value  # last entry wins, as in the reference's map
        zones[numa_id] = (resources, costs)
        totals[numa_id] = (capacity, allocatable)
        published.append(numa_id)
    ids = tuple(sorted(zones))
    rows = tuple(tuple(zones[i][1].get(j, MISSING_DISTANCE) for j in ids) for i in ids)
    distances = shared(("distances", rows, *(type(d) for row in rows for d in row)), rows)
    config = tm if tm is not None else tm_config_from(topology)
    config = shared(("tm", config), config)
    return NumaView(
        node_name=topology.name,
        tm=config,
        ids=shared(("ids", *ids), ids),
        published_ids=shared(("ids", *published), tuple(published)),
        zone_available=tuple(zones[i][0] for i in ids),
        distances=distances,
        source=topology,
        zone_capacity=_shared_zones([totals[i][0] for i in ids]),
        zone_allocatable=_shared_zones([totals[i][1] for i in ids]),
        facts=_facts(topology, config),
        memo=shared(("memo", ids, distances), {}),
    )


def _facts(topology: NodeTopology, config: TopologyManagerConfig) -> NodeFacts:
    """The node's admission facts, shared by the nodes with the same attributes and config.

    The pods' fingerprint is left out of the key: no fact reads it, and it differs from node to
    node, so keyed with it every node had facts of its own (about 360 bytes) and its key filled
    :data:`_SHARED` until it started over, every 16 384 nodes at 50 000 (issue #27)."""
    attributes = tuple(a for a in topology.attributes if a.name != FINGERPRINT_ATTRIBUTE)
    key = ("facts", attributes, config.policy, config.scope, config.max_numa_nodes)
    facts = _SHARED.get(key)
    if facts is None:
        facts = facts_from_attributes(
            attributes,
            policy=config.policy,
            scope=config.scope,
            max_numa_nodes=config.max_numa_nodes,
        )
        facts = shared(key, facts)
    return cast(NodeFacts, facts)


def _shared_zones(zones: list[dict[str, Amount]]) -> tuple[Mapping[str, Amount], ...]:
    """The shared copy of per-zone amounts that equal-hardware nodes publish alike."""
    keys, dicts = zip(*map(_shared_amounts, zones), strict=True) if zones else ((), ())
    return shared(("zones", *keys), tuple(dicts))


def subtract_requests(view: NumaView, requests: Iterable[Mapping[str, Amount]]) -> NumaView:
    """A new view with every request subtracted from **every** zone that lists the resource.

    This is the over-reserve cache's pessimism: the scheduler does not know which zone the
    kubelet picked for a pod it has just placed, so it assumes every zone lost the resources,
    clamping at 0. The view's Topology Manager config, ids, distances and memo are kept.
    """
    totals: dict[str, Amount] = {}
    for request in requests:
        for res, qty in request.items():
            if qty > 0:
                totals[res] = totals.get(res, 0) + qty
    if not totals:
        return view
    signed = [{r: a - totals.get(r, 0) for r, a in zone.items()} for zone in signed_zones(view)]
    return view.with_zone_available(*clamped(signed))


def signed_zones(view: NumaView) -> Sequence[Mapping[str, Amount]]:
    """Per position: what the zone really has, negative where a subtraction went beyond 0
    (``available - shortfall``, :attr:`NumaView.zone_shortfall`)."""
    if not view.zone_shortfall:
        return view.zone_available
    return [
        {r: a - short.get(r, 0) for r, a in zone.items()}
        for zone, short in zip(view.zone_available, view.zone_shortfall, strict=True)
    ]


def clamped(
    signed: Sequence[Mapping[str, Amount]],
) -> tuple[list[dict[str, Amount]], list[dict[str, Amount]]]:
    """Per position amounts that may be negative, as what a view shows (clamped at 0) and what
    the clamp hid (empty when nothing was hidden); the arguments of
    :meth:`NumaView.with_zone_available`."""
    zones = [{r: a if a > 0 else 0 for r, a in zone.items()} for zone in signed]
    shortfall = [{r: -a for r, a in zone.items() if a < 0} for zone in signed]
    return zones, shortfall if any(shortfall) else []
