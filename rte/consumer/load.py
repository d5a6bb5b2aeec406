"""Load-aware zone selection: per-node utilisation thresholds, applied per NUMA zone.

The idea is Koordinator's load-aware scheduling (koordinator-sh/koordinator
``docs/proposals/scheduling/20220510-load-aware-scheduling.md``), which filters and scores whole
nodes by their reported utilisation; here the unit is the NUMA zone.

The agent may publish integer-percent load attributes on zones (``cpuUtilizationPercent``,
``memoryPressurePercent``) while a zone is outside its normal band. A zone above a configured
threshold is *busy*; at the threshold it is not (a threshold of 80 allows 80 %). Two ways to
use that, both off by default:

* filter mode: busy zones are removed from the view, so the NUMA filter and the scores only
  consider the others (a node whose zones are all busy fits nothing);
* score mode: the view is unchanged and the front end scales the score the score module
  computed (:func:`weighted_score`): by the factor when the zone the filter picked is busy, or
  by the share of busy zones when no single zone was picked.

A zone without the attribute, or with a value that is not an integer, is not busy: missing data
must not make a node unusable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rte.consumer.config import LoadAwareConfig, LoadMode
from rte.consumer.numaview import NumaView
from rte.model.topology import NodeTopology, Zone, zone_name


def zone_load(zone: Zone, attribute: str) -> int | None:
    """The zone's published percent for ``attribute``, or None when absent or unreadable."""
    raw = zone.attribute(attribute)
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        return None


def is_busy(zone: Zone, thresholds: Mapping[str, int]) -> bool:
    for attribute, threshold in thresholds.items():
        load = zone_load(zone, attribute)
        if load is not None and load > threshold:
            return True
    return False


def busy_zones(topology: NodeTopology, thresholds: Mapping[str, int]) -> frozenset[str]:
    """Names of the zones above any threshold."""
    return frozenset(z.name for z in topology.zones if is_busy(z, thresholds))


def filter_view(topology: NodeTopology, config: LoadAwareConfig) -> NodeTopology:
    """In filter mode, ``topology`` without its busy zones; otherwise ``topology`` itself."""
    if config.mode is not LoadMode.FILTER:
        return topology
    busy = busy_zones(topology, config.thresholds)
    if not busy:
        return topology
    return replace(topology, zones=tuple(z for z in topology.zones if z.name not in busy))


def score_weight(
    topology: NodeTopology, config: LoadAwareConfig, zones: frozenset[str] | None = None
) -> float:
    """The factor (0..1] to multiply a node score by in score mode; 1.0 otherwise.

    ``zones`` narrows the question to the zones the pod would land on, when the caller knows
    them; by default the factor scales with the share of busy NUMA zones, so one hot zone out
    of eight costs less than a node that is hot everywhere.
    """
    if config.mode is not LoadMode.SCORE:
        return 1.0
    candidates = [z for z in topology.numa_zones() if zones is None or z.name in zones]
    if not candidates:
        return 1.0
    busy = sum(1 for z in candidates if is_busy(z, config.thresholds))
    share = busy / len(candidates)
    return 1.0 - share * (1.0 - config.score_factor)


def weighted_score(
    score: int, view: NumaView | None, config: LoadAwareConfig, numa_id: int | None = None
) -> int:
    """``score`` (0..100) scaled down for load in score mode; unchanged otherwise.

    ``numa_id`` is the zone the filter says the kubelet would pick (``FilterResult.numa_id``),
    when there is one. The view's ``source`` NRT carries the zone attributes.
    """
    if config.mode is not LoadMode.SCORE or view is None or view.source is None:
        return score
    zones = None if numa_id is None else frozenset({zone_name(numa_id)})
    return int(score * score_weight(view.source, config, zones))
