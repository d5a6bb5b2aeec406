"""From one reading of the node to the object to publish: the agent's one pure pipeline.

``rte run`` (every cycle), ``rte dump`` (once) and the simulator's agent all call
:func:`compute_topology`, so they always produce the same object for the same reading:
accounting (:func:`rte.agent.compute.accounting.account`), the fingerprinted pod set
(:func:`rte.agent.compute.podset.fingerprint_pods`), the zone attributes, then the object
(:func:`rte.agent.compute.builder.build_topology`). A reading that carries its reader's pod tally
(:mod:`rte.agent.compute.podtally`) is computed from sums kept across cycles, and the fingerprint from
verdicts kept per pod, instead of from every pod: the same object, at a cost that follows the
pods that changed.

**Inconsistent kubelet data.** When the kubelet's data contradicts itself (a pod listed twice,
a CPU or device assigned twice, a memory block on a NUMA node the machine lacks, empty names:
:data:`rte.agent.compute.ledger.INCONSISTENT_KINDS`), accounting already charges the worst case it can
name. On top of that, no zone may then publish more available of a resource than the last
consistent computation did (``NodeReading.last_consistent``): whatever the contradiction hides,
the published numbers are never more optimistic than the last state the agent could trust.
Resources the last consistent state did not have keep their worst-case value. The result says
so in :attr:`Computed.consistent`, which the daemon's readiness reflects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from rte.agent.compute.accounting import Accounting, account
from rte.agent.compute.builder import build_topology
from rte.agent.compute.placement import Placement, compute_placement
from rte.agent.compute.podset import fingerprint_pods
from rte.agent.compute.reading import NodeReading
from rte.agent.compute.zonenames import (
    dense_numbering,
    renumber_accounting,
    renumber_placement,
    sparse_ids_warning,
)
from rte.model.quantity import Amount
from rte.model.topology import Attribute, NodeTopology, Zone
from rte.model.vocabulary import ZoneNames
from rte.podres.types import AllocatableResources


@dataclass(frozen=True)
class Computed:
    """The object, the accounting behind it, the pods its fingerprint covers, and the placement.

    ``fingerprinted`` None: no kubelet data, so nothing was counted and no fingerprint published.
    ``accounting`` (with the placement vectors on its zones) is in kernel NUMA ids whatever the
    zone names published; ``topology`` and ``placement`` are in the published numbering.
    """

    topology: NodeTopology
    accounting: Accounting
    fingerprinted: tuple[tuple[str, str], ...] | None
    placement: Placement | None = None
    """The numaplacement attributes published, or why none (:mod:`rte.agent.compute.placement`)."""
    numbering: Mapping[int, int] | None = None
    """Kernel NUMA id -> published zone id when the zones are renumbered (``dense``); None: the same."""
    zone_names_warning: str | None = None
    """Why the published zone names may crash a consumer (sparse ids published as they are)."""

    @property
    def consistent(self) -> bool:
        """False when the kubelet's data contradicted itself: the numbers are capped (module docstring)."""
        return self.accounting.consistent

    def available(self) -> dict[tuple[str, str], Amount]:
        """Available per (kernel zone name, resource): what the next reading's ``last_consistent`` holds."""
        return {(z.name, r.name): r.available for z in self.accounting.zones for r in z.resources}


def compute_topology(reading: NodeReading) -> Computed:
    """The canonical NodeTopology for ``reading`` (see :class:`~rte.agent.compute.reading.NodeReading`)."""
    kubelet = reading.kubelet
    sign: str | None = None
    if kubelet is None:
        accounting = account(reading.machine, reading.config)
        counted = None
    else:
        # A kubelet without GetAllocatableResources: allocatable comes from sysfs and the config.
        allocatable = kubelet.allocatable if kubelet.allocatable is not None else AllocatableResources()
        tally = kubelet.tally
        if tally is not None:
            tally.sync(kubelet.pods)
        accounting = account(
            reading.machine, reading.config, allocatable, kubelet.pods, kubelet.checkpoints, tally=tally
        )
        rules = reading.rules
        published = {r.name for z in accounting.zones for r in z.resources}
        if tally is not None and reading.specs is not None:
            counted, sign = tally.specs.fingerprint(
                reading.specs,
                tally.listed_keys(),
                rules.method,
                published_resources=published,
                informer_mode=rules.informer_mode,
                exclude=rules.exclude,
            )
        elif tally is not None and tally.clean and not rules.exclude:
            counted, sign = tally.fingerprint(rules.method)
        else:
            counted = tuple(
                fingerprint_pods(
                    kubelet.pods,
                    rules.method,
                    specs=reading.specs,
                    published_resources=published,
                    informer_mode=rules.informer_mode,
                    exclude=rules.exclude,
                )
            )
    if not accounting.consistent and reading.last_consistent:
        accounting = replace(accounting, zones=_capped(accounting.zones, reading.last_consistent))
    if reading.zone_attributes:
        accounting = replace(
            accounting, zones=_with_zone_attributes(accounting.zones, reading.zone_attributes)
        )
    placement = compute_placement(
        reading.rules.numa_placement,
        reading.config,
        reading.machine.node_ids,
        reading.machine.cpu_to_node(),
        kubelet.pods if kubelet is not None else (),
        counted,
        [key for key, pod in reading.specs.items() if pod.is_terminal] if reading.specs else (),
    )
    if placement.vectors:
        accounting = replace(
            accounting, zones=_with_zone_attributes(accounting.zones, placement.zone_attributes())
        )
    to_publish = accounting
    numbering = None
    if reading.rules.zone_names is ZoneNames.DENSE:
        numbering = dense_numbering(reading.machine.node_ids)
        placement = renumber_placement(placement, numbering)
        to_publish = renumber_accounting(accounting, numbering, placement.vectors)
    topology = build_topology(
        reading.node_name,
        to_publish,
        config=reading.config,
        fingerprint_pods=counted,
        fingerprint_method=reading.rules.method,
        fingerprint=sign,
        placement_metadata=placement.metadata,
    )
    warning = sparse_ids_warning(reading.machine.node_ids, reading.rules.zone_names)
    return Computed(topology, accounting, counted, placement, numbering, warning)


def _capped(zones: tuple[Zone, ...], ceiling: Mapping[tuple[str, str], Amount]) -> tuple[Zone, ...]:
    out = []
    for zone in zones:
        resources = tuple(
            replace(r, available=min(r.available, ceiling.get((zone.name, r.name), r.available)))
            for r in zone.resources
        )
        out.append(replace(zone, resources=resources))
    return tuple(out)


def _with_zone_attributes(
    zones: tuple[Zone, ...], extra: Mapping[int, Mapping[str, str]]
) -> tuple[Zone, ...]:
    out = []
    for zone in zones:
        values = extra.get(zone.numa_id) if zone.numa_id is not None else None
        if values:
            kept = [a for a in zone.attributes if a.name not in values]
            zone = replace(zone, attributes=(*kept, *(Attribute(k, v) for k, v in values.items())))
        out.append(zone)
    return tuple(out)
