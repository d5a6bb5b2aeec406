"""The kernel's zone scores equal the scalar path's arithmetic on the widest range of amounts:
integers across twelve orders of magnitude, fractions on both sides, zero and absent amounts,
requests larger than the zone, any weights; with no NumPy warning on any lane."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from rte.consumer.kernel.table import NodeTable
from rte.consumer.kernel.zonescore import allocated_scores, balanced_scores, flat_at
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.score import Weighted, zone_score_at
from rte.model.quantity import Amount, ceil_value, parse_quantity
from tests.helpers.consumer import topology

NAMES = ("cpu", "memory", "hugepages-2Mi", "vendor.com/a", "vendor.com/b")


def _quantity(rng: random.Random) -> str | int:
    if rng.random() < 0.15:
        return f"{rng.randint(1, 99999)}m"
    return rng.choice([0, rng.randint(1, 10 ** rng.randint(1, 12))])


def _amount(rng: random.Random) -> Amount:
    return parse_quantity(_quantity(rng))


def _views(rng: random.Random, count: int) -> list[NumaView]:
    views = []
    for i in range(count):
        zone = {r: _quantity(rng) for r in NAMES if rng.random() < 0.9}
        views.append(build_view(topology({0: zone, 1: {"cpu": 1}}, name=f"n{i}")))
    return views


def _weighted(rng: random.Random) -> Weighted:
    items = []
    for name in sorted(rng.sample(NAMES, rng.randint(1, len(NAMES)))):
        amount = _amount(rng)
        items.append((name, amount, ceil_value(amount), rng.randint(1, 4)))
    return tuple(items), sum(w for *_, w in items)


@pytest.mark.parametrize("seed", range(4))
def test_zone_scores_equal_the_scalar_arithmetic(seed: int) -> None:
    rng = random.Random(seed)
    views = _views(rng, 1500)
    table = NodeTable.of([v.node_name for v in views], views)
    rows = np.arange(len(views), dtype=np.int64)
    at = flat_at(table, rows, np.zeros(len(views), np.int64))
    for _ in range(20):
        weighted = _weighted(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            balanced = balanced_scores(table, at, weighted).tolist()
            most, most_undecided = allocated_scores(table, at, weighted, True)
            least, least_undecided = allocated_scores(table, at, weighted, False)
        none = np.zeros(len(views), np.bool_)  # undecided None: the kernel rated every row
        most_undecided = none if most_undecided is None else most_undecided
        least_undecided = none if least_undecided is None else least_undecided
        for k, node in enumerate(views):
            where = f"seed={seed} request={weighted} zone={node.zone_available[0]}"
            assert balanced[k] == zone_score_at(weighted, node, 0, False, True), where
            if not most_undecided[k]:
                assert most[k] == zone_score_at(weighted, node, 0, True, False), where
            if not least_undecided[k]:
                assert least[k] == zone_score_at(weighted, node, 0, False, False), where
