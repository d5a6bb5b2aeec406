"""Scoring options shared by ``rte fit`` and ``rte extender``: ``--strategy`` and ``--weight RES=W``.

Parsed here rather than by click types so that a mistake is one line naming the option and the
value (exit status 2), like every other bad input.
"""

from __future__ import annotations

from collections.abc import Iterable

from rte.consumer.score import DEFAULT_WEIGHTS, LEAST_ALLOCATED, STRATEGIES, ScoringStrategy
from rte.errors import ConfigError


def parse_weight(text: str, source: str = "--weight") -> tuple[str, int]:
    """``"cpu=2"`` -> ``("cpu", 2)``.

    Any integer is accepted, as by the reference plugin arguments: a weight below 1 acts as 1.
    """
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(source, f"expected RESOURCE=WEIGHT, got {text!r}")
    try:
        weight = int(value.strip())
    except ValueError:
        raise ConfigError(source, f"weight of {name} is not an integer: {value.strip()!r}") from None
    return name, weight


def scoring_strategy(
    strategy: str | None, weights: Iterable[str] = (), source: str = "--strategy"
) -> ScoringStrategy:
    """The strategy named ``strategy`` (default LeastAllocated) with ``weights`` over the defaults.

    The defaults (cpu=1, memory=1) stay unless overridden; resources not listed weigh 1 anyway.
    """
    name = (strategy or LEAST_ALLOCATED).strip()
    if name not in STRATEGIES:
        raise ConfigError(source, f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
    table = dict(DEFAULT_WEIGHTS)
    for item in weights:
        resource, weight = parse_weight(item)
        table[resource] = weight
    return ScoringStrategy(name, table)
