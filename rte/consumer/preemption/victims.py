"""Victim sets that make the kubelet admit the preemptor, per node; or none when nothing helps.

kube-scheduler picks victims on a node with node-level fit only
(kubernetes/kubernetes ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``
``SelectVictimsOnNode``: remove every lower-priority pod, then reprieve them one by one, more
important first and PDB-violating ones before the others, keeping out only those the pod needs).
Its set is what the pod needs node-wide, so it is kept whole; here it is checked against the
kubelet's admission on the node's zones:

1. the scheduler's victims give back what they hold on their zones (:func:`credited_view`);
   when the admission model then admits the pod, the set stands as it is;
2. otherwise lower-priority pods the scheduler reprieved are added, when evicting them makes
   the pod admitted: the same reprieve walk over them, run once over all of them and once per
   zone over the pods of that zone (a single-zone pod needs its victims on one zone, and the
   walk over all may end on another); the best set wins: fewest PDB violations, fewest victims,
   then the lowest highest priority and the lowest sum of priorities (the criteria
   ``pickOneNodeForPreemption`` weighs between nodes, where priorities come before the count;
   within one node, fewer evictions come first here);
3. a node where even every such pod evicted leaves the pod refused is dropped.

A pod whose zones are unknown gives back nothing (:mod:`.placements`): its eviction may free
the wrong zone, so it is never added, and a scheduler's set relying on it is refused unless the
known part suffices. Every decision is the Filter's own (:func:`rte.consumer.filter.filter_node`),
for every policy and scope, on the view the cache serves plus the credits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rte.consumer.cache.predict import ZoneCharge
from rte.consumer.cache.reservations import per_zone_totals
from rte.consumer.filter import filter_node
from rte.consumer.lowerbound import is_lower_bound, mark_lower_bound
from rte.consumer.numaview import NumaView, clamped, signed_zones
from rte.consumer.requests import PreparedPod
from rte.model.pod import Pod


@dataclass(frozen=True, slots=True)
class Candidate:
    """A pod on the node that preemption may evict."""

    pod: Pod
    zones: ZoneCharge | None
    """What its eviction gives back per zone (NUMA id -> resource -> amount); None: unknown."""
    violates_pdb: bool = False
    """Evicting it would violate a PodDisruptionBudget."""

    @property
    def priority(self) -> int:
        return self.pod.priority


@dataclass(frozen=True, slots=True)
class VictimChoice:
    """The victims chosen on one node."""

    victims: tuple[Candidate, ...]
    """The scheduler's victims, then those added."""
    added: tuple[Candidate, ...]
    """Victims beyond the scheduler's."""

    @property
    def pdb_violations(self) -> int:
        return sum(c.violates_pdb for c in self.victims)


def credited_view(view: NumaView, charges: Iterable[ZoneCharge]) -> NumaView:
    """``view`` with each charge given back to its zone, at most up to the zone's allocatable
    (when published). A reserve cache's lower bound stays one: each credit is room the kubelet
    gets back on that zone when the pod ends, and it first pays off what the cache's clamp at 0
    hid (:attr:`~rte.consumer.numaview.NumaView.zone_shortfall`: reservations beyond the zone's
    room, which the kubelet may still place there). Added to the clamped amount instead, a
    victim's hold would show room that pods in flight are about to take, and the node would be
    nominated for a pod the kubelet then cannot place (a false eviction)."""
    per_zone = per_zone_totals(charges)
    if not per_zone:
        return view
    signed = []
    for i, (numa_id, amounts) in enumerate(zip(view.ids, signed_zones(view), strict=True)):
        zone = dict(amounts)
        limit = view.zone_allocatable[i] if view.zone_allocatable else {}
        for res, qty in per_zone.get(numa_id, {}).items():
            if res not in zone:
                continue  # the zone does not list it: the model has no room to give it back to
            raised = zone[res] + qty
            zone[res] = min(raised, limit[res]) if res in limit else raised
        signed.append(zone)
    out = view.with_zone_available(*clamped(signed))
    return mark_lower_bound(out) if is_lower_bound(view) else out


def admits(prep: PreparedPod, view: NumaView | None) -> bool:
    """The Filter's verdict on ``view``, without leaving it in the pod's memo (each trial view
    is used once)."""
    verdict = filter_node(prep, view)
    prep.memo.pop(view, None)
    return verdict.fits


def _credits(victims: Iterable[Candidate]) -> list[ZoneCharge]:
    return [c.zones for c in victims if c.zones]


def _reprieve_order(candidates: Iterable[Candidate]) -> list[Candidate]:
    """PDB-violating pods first, each group more important first (higher priority; then the
    name, for a stable order where the scheduler compares start times)."""
    return sorted(candidates, key=lambda c: (not c.violates_pdb, -c.priority, c.pod.namespace, c.pod.name))


def _reprieve(
    prep: PreparedPod, view: NumaView, given: Sequence[Candidate], group: Sequence[Candidate]
) -> tuple[Candidate, ...] | None:
    """Evict ``group`` (with ``given``), then keep back every pod the pod does not need; None
    when even the whole group does not help."""
    base = _credits(given)
    if not admits(prep, credited_view(view, [*base, *_credits(group)])):
        return None
    evicted = list(group)
    for candidate in _reprieve_order(group):
        rest = [c for c in evicted if c is not candidate]
        if admits(prep, credited_view(view, [*base, *_credits(rest)])):
            evicted = rest
    return tuple(evicted)


def _cost(added: Sequence[Candidate], given: Sequence[Candidate]) -> tuple[int, int, int, int]:
    every = [*given, *added]
    return (
        sum(c.violates_pdb for c in every),
        len(every),
        max((c.priority for c in every), default=0),
        sum(c.priority for c in every),
    )


def choose_victims(
    prep: PreparedPod,
    view: NumaView | None,
    given: Sequence[Candidate],
    others: Sequence[Candidate],
    priority: int | None = None,
) -> VictimChoice | None:
    """The victims on one node for the pod ``prep`` (see the module docstring): ``given`` the
    scheduler's victims, ``others`` the other pods of the node; None when nothing helps.

    ``view`` is what the cache serves for the node (None: no NRT, where the Filter does not
    refuse). Only ``others`` of lower priority than the pod (``priority``, by default its
    ``spec.priority``), with known zones, are added."""
    if admits(prep, credited_view(view, _credits(given)) if view is not None else None):
        return VictimChoice(tuple(given), ())
    if view is None:
        return None
    ceiling = prep.pod.priority if priority is None else priority
    usable = [c for c in others if c.zones and c.priority < ceiling]
    groups: list[list[Candidate]] = [usable]
    for numa_id in view.ids:
        here = [c for c in usable if c.zones and set(c.zones) == {numa_id}]
        if here and len(here) < len(usable):
            groups.append(here)
    best: tuple[Candidate, ...] | None = None
    for group in groups:
        added = _reprieve(prep, view, given, group)
        if added is not None and (best is None or _cost(added, given) < _cost(best, given)):
            best = added
    if best is None:
        return None
    order = {id(c): i for i, c in enumerate(others)}
    added_sorted = tuple(sorted(best, key=lambda c: order[id(c)]))
    return VictimChoice((*given, *added_sorted), added_sorted)
