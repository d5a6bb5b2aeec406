"""The kernel's node table: what its columns hold, one write path equal to the other, and rows
left to the scalar path when the kernel's arithmetic could not be exact."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from rte.consumer.cache.passthrough import PassthroughCache
from rte.consumer.config import CacheConfig
from rte.consumer.kernel.mirror import mirror_of
from rte.consumer.kernel.rows import same_shape
from rte.consumer.kernel.table import ABSENT, NodeTable, row_data
from rte.consumer.least_numa import _single_zone_table, zones_at_minimum_distance
from rte.consumer.numaview import NumaView, build_view, subtract_requests
from rte.consumer.store import ADDED, NRTStore
from rte.model.admission.node import NodeFacts
from tests.consumer.test_kernel_differential import random_topology
from tests.helpers.consumer import GI, topology, view

COLUMNS = (
    "ids",
    "zone_count",
    "at_minimum",
    "has_view",
    "fresh",
    "exact",
    "policy",
    "pod_scope",
    "prefer_closest",
    "memory_groups",
    "smt_threads",
    "smt_physical",
    "max_numa_nodes",
    "units_code",
    "allocatable_code",
)


def _snapshot(table: NodeTable) -> dict[str, object]:
    """Every column over the used rows (zone slots beyond the widest node trimmed)."""
    size = table.size
    out: dict[str, object] = {name: getattr(table, name)[:size].tolist() for name in COLUMNS}
    for kind in ("available", "fractional", "listed", "unknown_numa"):
        columns = getattr(table, kind)
        out[kind] = {
            name: columns[name][:size].tolist() for name in sorted(columns) if columns[name][:size].any()
        }
    out["views"] = [id(v) for v in table.views]
    return out


def test_columns_hold_rounded_down_amounts_with_absent_zones_and_rounding_flags() -> None:
    one = view({0: {"cpu": "1500m", "memory": 4 * GI}, 1: {"cpu": 2}}, name="a")
    table = NodeTable.of(["a"], [one])
    assert table.available["cpu"][0, :2].tolist() == [1, 2]
    assert table.fractional["cpu"][0, :2].tolist() == [True, False]
    assert table.available["memory"][0, :2].tolist() == [4 * GI, ABSENT]
    assert table.listed["memory"][0] and "memory" not in table.fractional
    assert table.ids[0, :3].tolist() == [0, 1, ABSENT]
    assert bool(table.exact[0])


def test_rows_written_one_by_one_equal_rows_written_at_once_including_rewrites() -> None:
    rng = random.Random(5)
    names = [f"n{i}" for i in range(60)]
    first = [build_view(random_topology(rng, n)) for n in names]
    second: list[NumaView | None] = [
        None if rng.random() < 0.2 else build_view(random_topology(rng, n)) for n in names
    ]
    fresh = [rng.random() < 0.8 for _ in names]
    allocatable = [frozenset({"cpu", "memory"}) if rng.random() < 0.5 else None for _ in names]
    bulk = NodeTable.of(names, first)
    bulk.put_many(list(range(len(names))), second, fresh, allocatable)
    single = NodeTable(width=1, capacity=1)
    for name, v in zip(names, first, strict=True):
        single.put(single.row(name), v)
    for k, name in enumerate(names):
        single.put(single.row(name), second[k], fresh[k], allocatable[k])
    assert _snapshot(single) == _snapshot(bulk)


def test_a_row_rewritten_with_reservations_subtracted_equals_a_row_written_from_scratch() -> None:
    rng = random.Random(11)
    names = [f"n{i}" for i in range(80)]
    bases = [build_view(random_topology(rng, n)) for n in names]
    requests = [
        [
            {"cpu": rng.choice([1, Fraction(1, 2), 3]), "memory": rng.randrange(1, 8) * GI},
            *[{"vendor.com/nic": 1}, {"hugepages-1Gi": GI}][: rng.randrange(3)],
        ]
        for _ in names
    ]
    derived = [subtract_requests(v, r) for v, r in zip(bases, requests, strict=True)]
    again = [subtract_requests(v, r[:1]) for v, r in zip(derived, requests, strict=True)]
    in_place = NodeTable.of(names, bases)
    for k in range(len(names)):  # the amounts-only path: each view derived from the row's
        in_place.put(k, derived[k], rng.random() < 0.9)
        in_place.put(k, again[k], bool(in_place.fresh[k]))
    scratch = NodeTable(capacity=len(names))
    for k, name in enumerate(names):
        scratch.put(scratch.row(name), again[k], bool(in_place.fresh[k]))
    assert _snapshot(in_place) == _snapshot(scratch)
    # every rewrite took the amounts-only path
    assert all(same_shape(row_data(b), d) for b, d in zip(bases, derived, strict=True))
    assert all(same_shape(row_data(d), a) for d, a in zip(derived, again, strict=True))


def test_a_node_wider_than_the_table_widens_every_matrix() -> None:
    table = NodeTable.of(["a"], [view({0: {"cpu": 4}, 1: {"cpu": 4}}, name="a")])
    table.put(table.row("b"), view({i: {"cpu": i} for i in range(12)}, name="b"))
    assert table.width == 12
    assert table.available["cpu"][1, :12].tolist() == list(range(12))
    assert table.available["cpu"][0].tolist() == [4, 4] + [ABSENT] * 10


@pytest.mark.parametrize(
    ("case", "node"),
    [
        ("an amount above 2^53", view({0: {"cpu": 4, "memory": 2**60}})),
        ("no usable zone", view({"socket-0": {"cpu": 4}})),
    ],
)
def test_rows_the_kernel_cannot_compute_exactly_are_marked_for_the_scalar_path(
    case: str, node: NumaView
) -> None:
    assert not row_data(node).exact, case


def test_a_view_whose_tm_config_disagrees_with_its_admission_facts_is_not_exact() -> None:
    agreeing = build_view(topology({0: {"cpu": 4}}, policy="single-numa-node"))
    assert row_data(agreeing).exact
    disagreeing = NumaView(
        node_name="n1",
        tm=agreeing.tm,
        ids=agreeing.ids,
        published_ids=agreeing.published_ids,
        zone_available=agreeing.zone_available,
        distances=agreeing.distances,
        facts=NodeFacts(policy="restricted"),
    )
    assert not row_data(disagreeing).exact


def test_the_mirror_rewrites_only_the_rows_whose_view_changed() -> None:
    store = NRTStore()
    for name, cpus in (("a", 4), ("b", 8)):
        store.apply(ADDED, topology({0: {"cpu": cpus}}, name=name))
    cache = PassthroughCache(store, CacheConfig())
    mirror = mirror_of(cache)
    with mirror.lock:
        rows = mirror.sync(["a", "b"], cache)
    kept = mirror.table.views[int(rows[0])]
    store.apply(ADDED, topology({0: {"cpu": "500m"}}, name="b"))
    with mirror.lock:
        again = mirror.sync(["b", "a"], cache)
    assert again.tolist() == rows[::-1].tolist()
    assert mirror.table.views[int(rows[0])] is kept
    assert mirror.table.views[int(rows[1])] is cache.get("b").view
    assert bool(np.asarray(mirror.table.fractional["cpu"][int(rows[1]), 0]))
    assert mirror.lookups == 3  # a and b once, then b alone: a did not change
    assert mirror_of(cache) is mirror


def test_the_zones_earning_the_distance_bonus_equal_the_least_numa_walks_single_zone_table() -> None:
    rng = random.Random(7)
    for i in range(300):
        node = build_view(random_topology(rng, f"n{i}"))
        fresh = build_view(node.source)  # its memo not yet filled by the walk below
        assert zones_at_minimum_distance(fresh) == _single_zone_table(node)[0], node.distances
