"""The score strategies by name, their default weights and the ``RES=W`` weight syntax.

Every command that takes a strategy (``rte fit``, ``rte extender``, ``rte simulate``) offers the
names listed here and parses weights here; :mod:`rte.consumer.score` maps each name to its
score function. This module imports nothing heavy, so the command line can list the choices
without loading the consumer.

Names are matched in any case (``leastallocated`` is ``LeastAllocated``); the reference plugin's
own spelling is what comes back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rte.errors import ConfigError

MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
BALANCED_ALLOCATION = "BalancedAllocation"
LEAST_NUMA_NODES = "LeastNUMANodes"
STRATEGIES = (MOST_ALLOCATED, LEAST_ALLOCATED, BALANCED_ALLOCATION, LEAST_NUMA_NODES)
DEFAULT_STRATEGY_NAME = LEAST_ALLOCATED
"""The reference plugin's default ``scoringStrategy.type``."""
DEFAULT_WEIGHTS: Mapping[str, int] = {"cpu": 1, "memory": 1}
"""The reference plugin's default ``scoringStrategy.resources``; unlisted resources weigh 1."""


def strategy_name(text: str, source: str = "--strategy") -> str:
    """The strategy called ``text`` in any case, spelled as the reference spells it."""
    wanted = text.strip().casefold()
    for name in STRATEGIES:
        if name.casefold() == wanted:
            return name
    raise ConfigError(source, f"{text!r} is not one of {', '.join(STRATEGIES)}")


def parse_weight(text: str, source: str = "--weight") -> tuple[str, int]:
    """``"cpu=2"`` -> ``("cpu", 2)``; the weight must be a positive integer.

    The reference plugin's score silently treats a weight below 1 as 1
    (kubernetes-sigs/scheduler-plugins pkg/noderesourcetopology/score.go), and its argument
    validation only checks the strategy type; but the same project's validation of resource
    weights elsewhere (apis/config/validation/validation_pluginargs.go, ``validateResources``)
    rejects weights that are not positive, as kube-scheduler does for NodeResourcesFit
    (kubernetes/kubernetes pkg/scheduler/apis/config/validation/validation_pluginargs.go). A
    ``cpu=0`` typed on purpose means something the score would not do, so it is refused here.
    """
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(source, f"expected RESOURCE=WEIGHT, got {text!r}")
    try:
        weight = int(value.strip())
    except ValueError:
        raise ConfigError(source, f"weight of {name} is not an integer: {value.strip()!r}") from None
    if weight < 1:
        raise ConfigError(source, f"weight of {name} must be a positive integer, got {weight}")
    return name, weight


def weight_table(items: Iterable[str], source: str = "--weight") -> dict[str, int]:
    """The default weights with ``RES=W`` ``items`` applied over them (a later item wins)."""
    table = dict(DEFAULT_WEIGHTS)
    for item in items:
        resource, weight = parse_weight(item, source)
        table[resource] = weight
    return table
