"""Filter: can the kubelet's ``single-numa-node`` Topology Manager admit this pod on this node?

The decisions follow the reference plugin (reference-consumer.md §3), with NUMA ids handled as
ids, never as list positions:

* A BestEffort pod that requests no non-native resource passes without looking at the node.
* A stale view (``fresh=False``, the reserve cache's verdict) is Unschedulable; a node without
  an NRT passes; a node whose policy is not ``single-numa-node`` passes.
* Per request, only non-zero quantities count. A resource missing from the node's allocatable
  rejects. A resource listed by no zone passes when it is host-level (storage, devices) and
  rejects otherwise (cpu, memory, hugepages). A resource listed by some zones must fit in one.
* Guaranteed pods need ``available >= request`` in the zone for everything. Other pods only need
  cpu, memory and hugepages to be *listed* by the zone (they run in the shared pool), while
  devices are always checked against ``available``. Comparisons are exact.
* The kubelet picks the lowest-id zone that fits; container scope subtracts each app container
  from its zone before placing the next one. Init containers are checked against the untouched
  zones: they run one at a time before the app containers.

Sidecars (restartable init containers) are treated as plain init containers by default, like
the reference. Prepare the pod with ``kubelet_accurate_sidecars=True``
(:func:`rte.consumer.requests.prepare_pod`) to account for them as the kubelet does: each
sidecar keeps its zone's resources for the pod's life, so it is subtracted like an app
container, and later init containers and the app containers see what it left. In pod scope the
option swaps the reference's effective request for the kubelet's (sidecars summed with the app
containers).

Node allocatable: pass the Node's ``status.allocatable`` names when you have the Node object.
Without it (``None``) the "resource not allocatable on the node" check is skipped and passes,
since nothing says the node lacks the resource. As in the scheduler framework, ``cpu``,
``memory``, ``pods`` and ``ephemeral-storage`` always count as known.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import Enum

from rte.consumer.numaview import NumaView
from rte.consumer.requests import KIND_SIDECAR, Item, PreparedPod, Request, as_prepared
from rte.model.pod import Pod
from rte.model.quantity import Amount, quantity_text

REASON_CONTAINER = "cannot align container"
REASON_INIT_CONTAINER = "cannot align init container"
REASON_SIDECAR_CONTAINER = "cannot align sidecar container"
REASON_POD = "cannot align pod"
REASON_INVALID_TOPOLOGY = "invalid node topology data"
REASON_INCONSISTENT = "inconsistent resource accounting"

# The scheduler framework's NodeInfo always carries these, even at 0.
_ALWAYS_ALLOCATABLE = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})
_UNCONSTRAINED = -1  # every bit set: no request narrowed the choice of zone


class FilterCode(Enum):
    """The scheduler framework status codes Filter can return."""

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class FilterResult:
    """Filter's verdict for one pod on one node."""

    code: FilterCode
    reason: str
    numa_id: int | None = None
    """The zone the kubelet would pick: for pod scope, the pod's zone; for container scope, the
    zone shared by every placed container, or None when they spread (or nothing constrained)."""
    placements: tuple[tuple[str, int | None], ...] = ()
    """Container scope: (container name, zone) for each app container (and, with
    kubelet-accurate sidecars, each sidecar); None where no request constrained the zone."""

    @property
    def fits(self) -> bool:
        return self.code is FilterCode.SUCCESS


def _passes(reason: str) -> FilterResult:
    return FilterResult(FilterCode.SUCCESS, reason)


class _Misfit(Exception):
    """Internal: a request cannot be aligned (carries the human-readable detail)."""


def _fit_mask(
    items: tuple[Item, ...],
    rows: Mapping[str, tuple[tuple[int, Amount], ...]],
    present: Mapping[str, int],
    guaranteed: bool,
    allocatable: Collection[str] | None,
) -> int:
    """Bitmask (over view positions) of the zones where every item fits; raises _Misfit if none."""
    mask = _UNCONSTRAINED
    for item in items:
        name = item.name
        if allocatable is not None and name not in allocatable and name not in _ALWAYS_ALLOCATABLE:
            raise _Misfit(f"{name} is not allocatable on the node")
        row = rows.get(name)
        if row is None:  # listed by no zone
            if item.host_level:
                continue
            raise _Misfit(f"{name} is published in no NUMA zone")
        if item.affine and not guaranteed:
            bits = present[name]  # shared pool: being listed is enough
        else:
            bits = 0
            amount = item.amount
            for bit, available in row:
                if available >= amount:
                    bits |= bit
        mask &= bits
        if not mask:
            raise _Misfit(f"{name}={quantity_text(item.amount)} fits in no single NUMA zone with the rest")
    return mask


def _lowest(mask: int) -> int | None:
    return None if mask == _UNCONSTRAINED else (mask & -mask).bit_length() - 1


def _subtract(
    rows: dict[str, tuple[tuple[int, Amount], ...]], request: Request, position: int, guaranteed: bool
) -> None:
    """Take ``request`` from the zone at ``position`` in the working rows (in place)."""
    bit = 1 << position
    for item in request.nonzero:
        if item.affine and not guaranteed:
            continue  # shared-pool cpu/memory: nothing exclusive to take
        row = rows.get(item.name)
        if row is None:
            continue
        new_row = []
        for b, available in row:
            if b == bit:
                available = available - item.amount
                if available < 0:
                    raise ValueError(f"{item.name} would go negative in the chosen zone")
            new_row.append((b, available))
        rows[item.name] = tuple(new_row)


def _container_scope(prep: PreparedPod, view: NumaView, allocatable: Collection[str] | None) -> FilterResult:
    guaranteed = prep.guaranteed
    present = view.present
    rows: dict[str, tuple[tuple[int, Amount], ...]] = dict(view.fit_rows)
    placed: list[tuple[str, int | None]] = []
    accurate = prep.kubelet_accurate_sidecars
    for req in prep.init:
        try:
            mask = _fit_mask(req.nonzero, rows, present, guaranteed, allocatable)
        except _Misfit as e:
            base = REASON_SIDECAR_CONTAINER if req.kind == KIND_SIDECAR else REASON_INIT_CONTAINER
            return FilterResult(FilterCode.UNSCHEDULABLE, f'{base} "{req.name}": {e}')
        if accurate and req.kind == KIND_SIDECAR:
            failure = _place(rows, req, mask, view, guaranteed, placed)
            if failure is not None:
                return failure
    for req in prep.app:
        try:
            mask = _fit_mask(req.nonzero, rows, present, guaranteed, allocatable)
        except _Misfit as e:
            return FilterResult(FilterCode.UNSCHEDULABLE, f'{REASON_CONTAINER} "{req.name}": {e}')
        failure = _place(rows, req, mask, view, guaranteed, placed)
        if failure is not None:
            return failure
    zones = {z for _, z in placed if z is not None}
    numa_id = zones.pop() if len(zones) == 1 else None
    where = f"NUMA zone {numa_id}" if numa_id is not None else "NUMA zones " + _describe(placed)
    return FilterResult(FilterCode.SUCCESS, f"fits {where}", numa_id, tuple(placed))


def _place(
    rows: dict[str, tuple[tuple[int, Amount], ...]],
    req: Request,
    mask: int,
    view: NumaView,
    guaranteed: bool,
    placed: list[tuple[str, int | None]],
) -> FilterResult | None:
    position = _lowest(mask)
    if position is None:
        placed.append((req.name, None))
        return None
    try:
        _subtract(rows, req, position, guaranteed)
    except ValueError as e:  # cannot happen after a successful fit; kept as the reference's guard
        return FilterResult(FilterCode.ERROR, f"{REASON_INCONSISTENT}: {e}")
    placed.append((req.name, view.ids[position]))
    return None


def _describe(placed: list[tuple[str, int | None]]) -> str:
    return ", ".join(f"{name}={'any' if z is None else z}" for name, z in placed) or "(none needed)"


def _pod_scope(prep: PreparedPod, view: NumaView, allocatable: Collection[str] | None) -> FilterResult:
    try:
        mask = _fit_mask(prep.pod_request.nonzero, view.fit_rows, view.present, prep.guaranteed, allocatable)
    except _Misfit as e:
        return FilterResult(FilterCode.UNSCHEDULABLE, f"{REASON_POD}: {e}")
    position = _lowest(mask)
    if position is None:
        return FilterResult(FilterCode.SUCCESS, "fits: no request needs NUMA alignment")
    numa_id = view.ids[position]
    return FilterResult(FilterCode.SUCCESS, f"fits NUMA zone {numa_id}", numa_id)


def filter_node(
    pod: Pod | PreparedPod,
    view: NumaView | None,
    node_allocatable: Collection[str] | None = None,
    *,
    fresh: bool = True,
) -> FilterResult:
    """Filter one pod against one node.

    ``view`` is the node's :class:`NumaView` (None when the node publishes no NRT);
    ``node_allocatable`` the names in the Node's ``status.allocatable`` (a mapping works), or
    None when the Node object is unknown; ``fresh=False`` says the cache distrusts the view.
    """
    prep = as_prepared(pod)
    if prep.best_effort and not prep.requests_non_native:
        return _passes("BestEffort pod without devices: nothing to align")
    if not fresh:
        return FilterResult(FilterCode.UNSCHEDULABLE, REASON_INVALID_TOPOLOGY)
    if view is None:
        return _passes("node publishes no NodeResourceTopology")
    if not view.tm.single_numa_node:
        return _passes(f"topology manager policy {view.tm.policy}: not filtered")
    if view.tm.pod_scope:
        return _pod_scope(prep, view, node_allocatable)
    return _container_scope(prep, view, node_allocatable)
