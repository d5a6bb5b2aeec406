"""Equal parts of different nodes are one object (identity), and sharing changes no answer.

At 20 000 NRTs the extender's memory was mostly per-node copies of what nodes of one hardware
model publish alike (bench/bench_serve_start.py measures it); these tests pin the sharing that
removed them, and that what the views, rows and files say is unchanged.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from rte.consumer import nrtfile, numaview
from rte.consumer.cache.nodestate import NO_PODS, SMALL_SET, NodeState
from rte.consumer.kernel.rows import row_data
from rte.consumer.numaview import build_view, make_thresholds, subtract_requests
from rte.consumer.store import resource_names_of
from rte.model import fingerprint
from rte.model.admission.facts import facts_from_attributes
from rte.model.nrt import LIST_KIND, from_nrt, to_nrt
from rte.model.topology import Attribute, Cost, NodeTopology, ResourceInfo, Zone

GI = 2**30


def _node(name: str, cpus: tuple[int, int], memory: int = 10 * GI) -> NodeTopology:
    zones = tuple(
        Zone(
            name=f"node-{z}",
            costs=(Cost("node-0", 10 if z == 0 else 21), Cost("node-1", 21 if z == 0 else 10)),
            resources=(
                ResourceInfo("memory", 64 * GI, 60 * GI, memory),
                ResourceInfo("cpu", 16, 15, cpus[z]),
            ),
        )
        for z in (0, 1)
    )
    attrs = (Attribute("topologyManagerPolicy", "single-numa-node"),)
    return NodeTopology(name=name, zones=zones, attributes=attrs)


def test_views_of_equal_hardware_share_their_equal_parts() -> None:
    a, b = build_view(_node("a", (3, 4))), build_view(_node("b", (7, 0), memory=GI))
    assert a.zone_available != b.zone_available
    for attr in ("zone_capacity", "zone_allocatable", "distances", "ids", "facts", "tm", "present"):
        assert getattr(a, attr) is getattr(b, attr), attr
    assert a.resource_names is b.resource_names is resource_names_of(_node("c", (1, 1)))
    assert a.memo is b.memo  # LeastNUMANodes tables depend on ids and distances only
    assert a.ceil_available is a.available  # integral amounts: one dict serves both


def test_nodes_differing_only_in_their_pods_fingerprint_share_their_facts() -> None:
    """Every node publishes its own fingerprint, which no admission fact reads: their facts are
    one object, equal to those read from all the attributes (issue #27: 50 000 copies before)."""

    def fingerprinted(name: str, pods: list[tuple[str, str]]) -> NodeTopology:
        node = _node(name, (3, 4))
        extra = (
            Attribute("cpuManagerPolicy", "static"),
            Attribute(fingerprint.ATTRIBUTE, fingerprint.compute(pods)),
        )
        return replace(node, attributes=node.attributes + extra)

    a, b = fingerprinted("a", [("rte", "agent-a")]), fingerprinted("b", [("rte", "agent-b")])
    assert a.attributes != b.attributes
    view_a, view_b = build_view(a), build_view(b)
    assert view_a.facts is view_b.facts
    tm = view_a.tm
    whole = facts_from_attributes(
        a.attributes, policy=tm.policy, scope=tm.scope, max_numa_nodes=tm.max_numa_nodes
    )
    assert view_a.facts == whole
    # An attribute a fact does read still tells nodes apart.
    c = replace(a, attributes=(*a.attributes, Attribute("cpuManagerPolicy", "none")))
    assert build_view(c).facts != view_a.facts


def test_views_share_past_the_tables_limit_as_nodes_keep_coming(monkeypatch: pytest.MonkeyPatch) -> None:
    """More nodes of one hardware model than :data:`SHARED_LIMIT`, each with its own amounts and
    fingerprint (issue #27: the 50 000-node bench): no part of a view is keyed by what is each
    node's own, so the table stays small and the first and last nodes share every equal part."""
    monkeypatch.setattr(numaview, "_SHARED", {})  # a fresh table: what other tests left is not counted
    views = []
    for i in range(numaview.SHARED_LIMIT + 16):
        node = _node(f"n{i}", (i % 16, (i // 16) % 16), memory=(i % 60) * GI)
        pods = Attribute(fingerprint.ATTRIBUTE, fingerprint.compute([("rte", f"agent-{i}")]))
        views.append(build_view(replace(node, attributes=(pods,))))
    assert len(numaview._SHARED) < 100
    first, last = views[0], views[-1]
    for attr in ("zone_capacity", "zone_allocatable", "distances", "ids", "facts", "tm", "present", "memo"):
        assert getattr(first, attr) is getattr(last, attr), attr


def test_zone_amounts_read_back_as_published() -> None:
    topology = _node("a", (3, -2))  # a negative available reads as 0
    view = build_view(topology)
    assert [list(zone.items()) for zone in view.zone_available] == [
        [("memory", 10 * GI), ("cpu", 3)],
        [("memory", 10 * GI), ("cpu", 0)],
    ]
    assert view.zone(1) == {"memory": 10 * GI, "cpu": 0}
    assert view.zone_available[-1] is view.zone_available[1]
    assert view.zone_available[::-1] == (view.zone_available[1], view.zone_available[0])
    with pytest.raises(IndexError):
        view.zone_available[2]
    reserved = subtract_requests(view, [{"cpu": 2}])
    assert [dict(z) for z in reserved.zone_available] == [
        {"memory": 10 * GI, "cpu": 1},
        {"memory": 10 * GI, "cpu": 0},
    ]
    assert reserved.memo is view.memo and reserved.zone_capacity is view.zone_capacity


def test_thresholds_built_on_first_use_as_before() -> None:
    view = build_view(_node("a", (3, 4)))
    assert view.thresholds == {r: make_thresholds(row, view.present[r]) for r, row in view.available.items()}
    assert view.thresholds is view.thresholds


def test_kernel_rows_reuse_the_views_rows() -> None:
    a, b = build_view(_node("a", (3, 4))), build_view(_node("b", (5, 6)))
    ra, rb = row_data(a), row_data(b)
    assert ra.available is a.available
    assert ra.fractional is rb.fractional == {}
    assert ra.at_minimum is rb.at_minimum and ra.units is rb.units and ra.present is a.present
    fractional = build_view(
        NodeTopology(
            name="f", zones=(Zone("node-0", resources=(ResourceInfo("cpu", 4, 4, Fraction(3, 2)),)),)
        )
    )
    data = row_data(fractional)
    assert data.available == {"cpu": (1,)} and data.fractional == {"cpu": (True,)}


def test_empty_accounted_sets_are_one_object() -> None:
    one, two = NodeState(), NodeState()
    one.accounted = frozenset()
    two.accounted = frozenset(set())
    assert one.accounted is two.accounted is NO_PODS
    pods = frozenset({("ns", "p")})
    one.accounted = pods
    assert one.accounted == (("ns", "p"),)  # a node's one pod: a tuple, not a set (issue #27)
    many = frozenset(("ns", f"p{i}") for i in range(SMALL_SET + 1))
    one.accounted = many
    assert one.accounted is many


def _write(path: Path, topologies: list[NodeTopology]) -> None:
    items = []
    for t in topologies:
        obj = to_nrt(t)
        obj["metadata"]["labels"] = {"pool": "gpu"}
        items.append(obj)
    path.write_text(json.dumps({"apiVersion": "v1", "kind": LIST_KIND, "items": items}))


def test_nrt_file_shares_maps_and_reads_the_same_past_its_part_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topologies = [_node(f"w{i}", (i % 5, 3), memory=(i % 3) * GI) for i in range(40)]
    path = tmp_path / "nrts.json"
    _write(path, topologies)
    expected = [from_nrt(json.loads(json.dumps(to_nrt(t)))) for t in topologies]
    whole = nrtfile.read_nrt_file(path)
    assert whole[0].labels is whole[1].labels == {"pool": "gpu"}
    assert whole[0].zones[0].costs is whole[1].zones[0].costs
    monkeypatch.setattr(nrtfile, "PARTS_LIMIT", 8)
    bounded = nrtfile.read_nrt_file(path)
    for got in (whole, bounded):
        assert [t.zones for t in got] == [t.zones for t in expected]
        assert [t.attributes for t in got] == [t.attributes for t in expected]


def test_the_watch_reader_keeps_no_fingerprint_after_the_nrt_is_gone() -> None:
    """A fingerprint is each node's own and changes with its pods: the reader of a watch that
    lives as long as the process must not remember every one it read (issue #27), and two reads
    with different fingerprints keep each its own."""
    reader = nrtfile.CompactReader()
    read = []
    for i in range(3):
        obj = to_nrt(_node("a", (3, 4)))
        obj["attributes"].append(
            {"name": fingerprint.ATTRIBUTE, "value": fingerprint.compute([("rte", f"p{i}")])}
        )
        read.append(reader.read(obj))
    values = [dict((a.name, a.value) for a in t.attributes)[fingerprint.ATTRIBUTE] for t in read]
    assert values == [fingerprint.compute([("rte", f"p{i}")]) for i in range(3)]
    assert not any(v in reader._texts for v in values)
    assert read[0].zones is read[1].zones  # the rest is still shared
