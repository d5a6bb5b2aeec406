"""Filter: would the node's kubelet admit this pod? And, on request, what would the reference plugin say?

Common to both rules:

* A BestEffort pod that requests no non-native resource passes without looking at the node (no
  manager aligns anything for it).
* A stale view (``fresh=False``, the reserve cache's verdict) is Unschedulable; a node without
  an NRT passes.

**Kubelet rules** (the default, :mod:`rte.consumer.kubelet_filter`): the pod is admitted as the
node's kubelet admits it, every Topology Manager policy and scope, init containers, sidecars,
pod-level resources and all (:mod:`rte.model.admission`).

**Reference rules** (``Compat.REFERENCE``): the decisions of kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/filter.go`` bit for bit, with NUMA ids handled as ids, never as list
positions:

* A node whose policy is not ``single-numa-node`` passes.
* Per request, only non-zero quantities count. A resource missing from the node's allocatable
  rejects. A resource listed by no zone passes when it is host-level (storage, devices) and
  rejects otherwise (cpu, memory, hugepages). A resource listed by some zones must fit in one.
* Guaranteed pods need ``available >= request`` in the zone for everything. Other pods only need
  cpu, memory and hugepages to be *listed* by the zone (they run in the shared pool), while
  devices are always checked against ``available``. Comparisons are exact.
* The kubelet picks the lowest-id zone that fits; container scope subtracts each app container
  from its zone before placing the next one. Init containers, sidecars included, are checked
  against the untouched zones: they run one at a time before the app containers.

Node allocatable: pass the Node's ``status.allocatable`` names when you have the Node object.
Without it (``None``) the "resource not allocatable on the node" check is skipped and passes,
since nothing says the node lacks the resource. As in the scheduler framework, ``cpu``,
``memory``, ``pods`` and ``ephemeral-storage`` always count as known.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Mapping

from rte.consumer.kubelet_filter import kubelet_filter
from rte.consumer.numaview import MAX_NUMA_ID, NumaView, Thresholds, make_thresholds
from rte.consumer.requests import Item, PreparedPod, Request, as_prepared
from rte.consumer.verdict import FilterCode, FilterResult
from rte.model.admission.units import KIND_SIDECAR
from rte.model.pod import Pod
from rte.model.quantity import Amount, quantity_text

__all__ = [
    "REASON_CONTAINER",
    "REASON_INCONSISTENT",
    "REASON_INIT_CONTAINER",
    "REASON_INVALID_TOPOLOGY",
    "REASON_POD",
    "REASON_SIDECAR_CONTAINER",
    "FilterCode",
    "FilterResult",
    "filter_node",
]

REASON_CONTAINER = "cannot align container"
REASON_INIT_CONTAINER = "cannot align init container"
REASON_SIDECAR_CONTAINER = "cannot align sidecar container"
REASON_POD = "cannot align pod"
REASON_INVALID_TOPOLOGY = "invalid node topology data"
REASON_INCONSISTENT = "inconsistent resource accounting"

_UNCONSTRAINED = -1  # every bit set: no request narrowed the choice of zone
_FITS_ZONE = tuple(f"fits NUMA zone {i}" for i in range(MAX_NUMA_ID + 1))


_SUCCESS = FilterCode.SUCCESS  # a module global: reading an Enum member off its class is slow


class _Misfit(Exception):
    """Internal: a request cannot be aligned (carries the human-readable detail)."""


def _fit_mask(
    items: tuple[Item, ...],
    thresholds: Mapping[str, Thresholds],
    present: Mapping[str, int],
    guaranteed: bool,
    allocatable: Collection[str] | None,
) -> int:
    """Bitmask (over view positions) of the zones where every item fits; raises _Misfit if none."""
    mask = _UNCONSTRAINED
    for name, amount, _, affine, host_level, always_allocatable in items:
        if allocatable is not None and not always_allocatable and name not in allocatable:
            raise _Misfit(f"{name} is not allocatable on the node")
        index = thresholds.get(name)
        if index is None:  # listed by no zone
            if host_level:
                continue
            raise _Misfit(f"{name} is published in no NUMA zone")
        if affine and not guaranteed:
            mask &= present[name]  # shared pool: being listed is enough
        else:
            values, masks = index
            mask &= masks[bisect_left(values, amount)]
        if not mask:
            raise _Misfit(f"{name}={quantity_text(amount)} fits in no single NUMA zone with the rest")
    return mask


def _lowest(mask: int) -> int | None:
    return None if mask == _UNCONSTRAINED else (mask & -mask).bit_length() - 1


class _Zones:
    """Container scope's working availability: the view's, copied on the first subtraction."""

    def __init__(self, view: NumaView) -> None:
        self.view = view
        self.thresholds: Mapping[str, Thresholds] = view.thresholds
        self._rows: dict[str, list[Amount]] = {}
        self._owned: dict[str, Thresholds] | None = None

    def subtract(self, request: Request, position: int, guaranteed: bool) -> None:
        """Take ``request`` from the zone at ``position``; ValueError if it would go negative."""
        present = self.view.present
        for name, amount, _, affine, _, _ in request.nonzero:
            if affine and not guaranteed:
                continue  # shared-pool cpu/memory: nothing exclusive to take
            mask = present.get(name, 0)
            if not mask >> position & 1:
                continue  # the zone does not list it
            row = self._rows.get(name)
            if row is None:
                row = self._rows[name] = list(self.view.available[name])
            left = row[position] - amount
            if left < 0:
                raise ValueError(f"{name} would go negative in NUMA zone {self.view.ids[position]}")
            row[position] = left
            if self._owned is None:
                self.thresholds = self._owned = dict(self.view.thresholds)
            self._owned[name] = make_thresholds(row, mask)


def _container_scope(prep: PreparedPod, view: NumaView, allocatable: Collection[str] | None) -> FilterResult:
    guaranteed = prep.guaranteed
    present = view.present
    ids = view.ids
    if not prep.init and len(prep.app) == 1:  # the usual shape: nothing to subtract, ever
        req = prep.app[0]
        try:
            mask = _fit_mask(req.nonzero, view.thresholds, present, guaranteed, allocatable)
        except _Misfit as e:
            return FilterResult(FilterCode.UNSCHEDULABLE, f'{REASON_CONTAINER} "{req.name}": {e}')
        zone = None if mask == _UNCONSTRAINED else ids[(mask & -mask).bit_length() - 1]
        return _success(prep, ((req.name, zone),))
    zones: _Zones | None = None  # created on the first subtraction only
    placed: list[tuple[str, int | None]] = []
    for req in prep.init:
        try:
            mask = _fit_mask(
                req.nonzero, zones.thresholds if zones else view.thresholds, present, guaranteed, allocatable
            )
        except _Misfit as e:
            base = REASON_SIDECAR_CONTAINER if req.kind == KIND_SIDECAR else REASON_INIT_CONTAINER
            return FilterResult(FilterCode.UNSCHEDULABLE, f'{base} "{req.name}": {e}')
    last = prep.app[-1] if prep.app else None
    for req in prep.app:
        try:
            mask = _fit_mask(
                req.nonzero, zones.thresholds if zones else view.thresholds, present, guaranteed, allocatable
            )
        except _Misfit as e:
            return FilterResult(FilterCode.UNSCHEDULABLE, f'{REASON_CONTAINER} "{req.name}": {e}')
        if req is last:  # nothing is checked after the last app container: no subtraction
            placed.append(
                (req.name, None if mask == _UNCONSTRAINED else ids[(mask & -mask).bit_length() - 1])
            )
            break
        zones = zones or _Zones(view)
        failure = _place(zones, req, mask, guaranteed, placed, subtract=True)
        if failure is not None:
            return failure
    return _success(prep, tuple(placed))


def _success(prep: PreparedPod, placed: tuple[tuple[str, int | None], ...]) -> FilterResult:
    """The (immutable, so shareable) success result for a placement, cached on the pod."""
    key = ("placed", placed)
    cached = prep.memo.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    used = {z for _, z in placed if z is not None}
    if len(used) == 1:
        numa_id = used.pop()
        result = FilterResult(FilterCode.SUCCESS, _FITS_ZONE[numa_id], numa_id, placed)
    elif not used:
        result = FilterResult(FilterCode.SUCCESS, "fits: no request needs NUMA alignment", None, placed)
    else:
        where = ", ".join(f"{name}={'any' if z is None else z}" for name, z in placed)
        result = FilterResult(FilterCode.SUCCESS, f"fits NUMA zones {where}", None, placed)
    prep.memo[key] = result
    return result


def _place(
    zones: _Zones,
    req: Request,
    mask: int,
    guaranteed: bool,
    placed: list[tuple[str, int | None]],
    *,
    subtract: bool,
) -> FilterResult | None:
    position = _lowest(mask)
    if position is None:
        placed.append((req.name, None))
        return None
    if subtract:
        try:
            zones.subtract(req, position, guaranteed)
        except ValueError as e:  # cannot happen after a successful fit; the reference's guard
            return FilterResult(FilterCode.ERROR, f"{REASON_INCONSISTENT}: {e}")
    placed.append((req.name, zones.view.ids[position]))
    return None


def _pod_scope(prep: PreparedPod, view: NumaView, allocatable: Collection[str] | None) -> FilterResult:
    try:
        mask = _fit_mask(
            prep.pod_request.nonzero, view.thresholds, view.present, prep.guaranteed, allocatable
        )
    except _Misfit as e:
        return FilterResult(FilterCode.UNSCHEDULABLE, f"{REASON_POD}: {e}")
    position = _lowest(mask)
    if position is None:
        return FilterResult(FilterCode.SUCCESS, "fits: no request needs NUMA alignment")
    numa_id = view.ids[position]
    return FilterResult(FilterCode.SUCCESS, _FITS_ZONE[numa_id], numa_id)


_BEST_EFFORT = FilterResult(FilterCode.SUCCESS, "BestEffort pod without devices: nothing to align")
_STALE = FilterResult(FilterCode.UNSCHEDULABLE, REASON_INVALID_TOPOLOGY)
_NO_NRT = FilterResult(FilterCode.SUCCESS, "node publishes no NodeResourceTopology")


def filter_node(
    pod: Pod | PreparedPod,
    view: NumaView | None,
    node_allocatable: Collection[str] | None = None,
    *,
    fresh: bool = True,
) -> FilterResult:
    """Filter one pod against one node, by the rules the pod was prepared for.

    ``view`` is the node's :class:`NumaView` (None when the node publishes no NRT);
    ``node_allocatable`` the names in the Node's ``status.allocatable`` (a mapping works), or
    None when the Node object is unknown; ``fresh=False`` says the cache distrusts the view.
    A plain :class:`Pod` is prepared for the kubelet's rules.
    """
    prep = pod if isinstance(pod, PreparedPod) else as_prepared(pod)
    if prep.no_alignment_needed:
        return _BEST_EFFORT
    if not fresh:
        return _STALE
    if view is None:
        return _NO_NRT
    if not prep.reference:
        return kubelet_filter(prep, view, node_allocatable)
    tm = view.tm
    if not tm.single_numa_node:
        return FilterResult(FilterCode.SUCCESS, f"topology manager policy {tm.policy}: not filtered")
    if tm.pod_scope:
        return _pod_scope(prep, view, node_allocatable)
    return _container_scope(prep, view, node_allocatable)
