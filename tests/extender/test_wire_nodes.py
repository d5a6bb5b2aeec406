"""Whole-Node requests (``nodeCacheCapable: false``) through the fast decoder: the filter's
answer is byte for byte the one built from the whole decoder's objects, and what the decoder
shares between Nodes and requests (allocatable sets, the list of names) is shared by identity,
which the kernel's dedupe and the mirror's row memo rely on."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from rte.consumer import kept
from rte.extender import wirenodes
from rte.extender.wire import _decode_fast, _decode_whole, filter_result
from rte.extender.wirenodes import Recent
from rte.yamlfile import encode_json
from tests.helpers.extender import node

_ALLOCATABLE = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "hugepages-1Gi", "example.com/nic"]),
    st.sampled_from(["1", "64Gi", "110", "0"]),
    max_size=4,
)


def _body(nodes: list[dict[str, object]]) -> bytes:
    return orjson.dumps({"Pod": {"metadata": {"name": "p"}}, "Nodes": {"metadata": {}, "items": nodes}})


@given(
    allocatable=st.lists(_ALLOCATABLE, min_size=0, max_size=8),
    passing=st.lists(st.booleans(), min_size=8, max_size=8),
    failed=st.dictionaries(st.sampled_from(["n0", "n1", "x"]), st.text(max_size=5), max_size=2),
)
def test_the_filter_answer_is_byte_identical_to_the_whole_decoders(
    allocatable: list[dict[str, str]], passing: list[bool], failed: dict[str, str]
) -> None:
    nodes = [node(f"n{i}", a, labels={"zone": "é" if i % 2 else "a"}) for i, a in enumerate(allocatable)]
    body = _body(nodes)
    fast, whole = _decode_fast(body), _decode_whole(body)
    assert fast is not None
    passed = [n["metadata"]["name"] for n, keep in zip(nodes, passing, strict=False) if keep]
    answer = encode_json(filter_result(fast, passed, failed))
    assert answer == encode_json(filter_result(whole, passed, failed))
    assert orjson.loads(answer)["Nodes"]["items"] == [n for n in nodes if n["metadata"]["name"] in passed]


def test_nodes_listing_the_same_allocatable_names_share_one_set() -> None:
    body = _body(
        [
            node("a", {"cpu": "1", "memory": "1Gi"}),
            node("b", {"memory": "2Gi", "cpu": "8"}),  # other values and order, same names
            node("c", {"cpu": "1"}),
            {"metadata": {"name": "d"}},  # no status: no names, as allocatable_names() says
            {"metadata": {"name": "e"}, "status": {"allocatable": None}},
        ]
    )
    fast = _decode_fast(body)
    assert fast is not None and fast.nodes is not None
    a, b, c, d, e = fast.nodes
    assert a.allocatable == {"cpu", "memory"} and a.allocatable is b.allocatable
    assert c.allocatable == {"cpu"}
    assert d.allocatable == e.allocatable == frozenset() and d.allocatable is e.allocatable
    assert [(n.name, n.allocatable) for n in fast.nodes] == [
        (n.name, n.allocatable) for n in _decode_whole(body).nodes or ()
    ]


def test_an_equal_node_list_gives_the_same_tuple_of_names() -> None:
    one = _decode_fast(_body([node("a", {}), node("b", {})]))
    two = _decode_fast(_body([node("a", {"cpu": "1"}), node("b", {})]))
    other = _decode_fast(_body([node("b", {}), node("a", {})]))
    assert one is not None and two is not None and other is not None
    assert one.candidate_names() == ("a", "b") and one.candidate_names() is two.candidate_names()
    assert other.candidate_names() == ("b", "a")


def test_a_status_that_is_not_an_object_is_left_to_the_whole_decoder() -> None:
    body = _body([{"metadata": {"name": "a"}, "status": None}])
    assert _decode_fast(body) is None
    assert [n.allocatable for n in _decode_whole(body).nodes or ()] == [frozenset()]


def test_a_node_list_sent_again_is_the_same_decoded_list_until_two_others_came() -> None:
    nodes = [node("a", {"cpu": "1"}), node("b", {})]
    first = _decode_fast(_body(nodes))
    again = _decode_fast(
        orjson.dumps({"Pod": {"metadata": {"name": "q"}}, "Nodes": {"metadata": {}, "items": nodes}})
    )
    assert first is not None and again is not None and first.nodes is again.nodes
    assert again.pod == {"metadata": {"name": "q"}}
    changed = _decode_fast(_body([node("a", {"cpu": "2"}), node("b", {})]))
    assert changed is not None and changed.nodes is not first.nodes
    assert first.nodes is not None and changed.nodes is not None
    assert list(changed.nodes) != list(first.nodes)
    assert changed.candidate_names() is first.candidate_names()  # the same names: one tuple
    _decode_fast(_body([node("c", {})]))  # a third list: the first is forgotten, decoded anew
    last = _decode_fast(_body(nodes))
    assert last is not None and last.nodes is not None
    assert last.nodes is not first.nodes and list(last.nodes) == list(first.nodes)


def test_decoded_nodes_read_as_a_sequence_of_wire_nodes() -> None:
    fast = _decode_fast(_body([node("a", {"cpu": "1"}), node("b", {}), node("c", {"x": "1"})]))
    assert fast is not None and fast.nodes is not None
    nodes = fast.nodes
    assert len(nodes) == 3 and [n.name for n in nodes] == ["a", "b", "c"]
    assert nodes[1].name == "b" and nodes[-1].allocatable == {"x"}
    assert [n.name for n in nodes[1:]] == ["b", "c"]
    assert orjson.loads(bytes(nodes[0].echo)) == node("a", {"cpu": "1"})


def test_a_body_sent_again_gives_the_same_arguments_and_the_next_body_decodes_afresh() -> None:
    body = _body([node("a", {"cpu": "1"}), node("b", {})])
    first = _decode_fast(body)
    assert first is not None and _decode_fast(bytes(bytearray(body))) is first  # equal, not identical
    other = _decode_fast(_body([node("a", {"cpu": "1"})]))
    assert other is not None and other is not first
    again = _decode_fast(body)
    assert again is not None and again is not first and again.nodes is first.nodes  # the list kept


def test_keys_spelt_otherwise_are_read_as_go_reads_them_with_the_same_nodes() -> None:
    nodes = [node("a", {"cpu": "1"}), node("b", {})]
    go = _decode_fast(_body(nodes))
    other = _decode_fast(orjson.dumps({"pod": {"metadata": {"name": "p"}}, "nodes": {"items": nodes}}))
    assert go is not None and other is not None and other is not go
    assert other.pod == go.pod and other.nodes is go.nodes  # the same list, remembered
    assert encode_json(filter_result(other, ["b"], {})) == encode_json(filter_result(go, ["b"], {}))


def test_recent_keeps_the_values_last_used() -> None:
    recent = Recent(2)
    recent.keep([b"a"], 1)
    recent.keep([b"b"], 2)
    assert recent.get([b"a"]) == 1  # used: now the most recent
    recent.keep([b"c"], 3)
    assert (recent.get([b"a"]), recent.get([b"b"]), recent.get([b"c"])) == (1, None, 3)


_MAPS = [{}, {"cpu": "1"}, {"cpu": "2"}, {"memory": "1Gi", "cpu": "1"}]


@given(st.lists(st.sampled_from(_MAPS), max_size=12))
def test_runs_of_equal_maps_read_as_each_node_alone(allocatable: list[dict[str, str]]) -> None:
    body = _body([node(f"n{i}", a) for i, a in enumerate(allocatable)])
    fast = _decode_fast(body)
    assert fast is not None and fast.nodes is not None
    assert [n.allocatable for n in fast.nodes] == [frozenset(a) for a in allocatable]
    by_names: dict[frozenset[str], frozenset[str]] = {}
    assert all(by_names.setdefault(n.allocatable, n.allocatable) is n.allocatable for n in fast.nodes)


def test_allocatable_by_name_is_what_each_node_lists_the_last_of_a_name_winning() -> None:
    body = _body([node("a", {"cpu": "1"}), node("b", {}), node("a", {"memory": "1Gi"})])
    for args in (_decode_fast(body), _decode_whole(body)):
        assert args is not None and args.nodes is not None
        assert args.allocatable_by_name() == {n.name: n.allocatable for n in args.nodes}
        assert args.allocatable_by_name() == {"a": {"memory"}, "b": frozenset()}
    names_only = _decode_fast(orjson.dumps({"Pod": {}, "NodeNames": ["a"]}))
    assert names_only is not None and names_only.allocatable_by_name() is None


@given(
    allocatable=st.lists(st.sampled_from(_MAPS), min_size=2, max_size=8),
    chosen=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_a_part_of_a_kept_list_reads_as_decoded_cold(
    allocatable: list[dict[str, str]], chosen: list[bool]
) -> None:
    """The part is read off the kept list (prioritize's Nodes, those of filter's that passed)."""
    nodes = [node(f"n{i}", a) for i, a in enumerate(allocatable)]
    part = [n for n, keep in zip(nodes, chosen, strict=False) if keep][: len(nodes) - 1]
    whole = _decode_fast(_body(nodes))  # kept
    found = _decode_fast(_body(part))
    assert whole is not None and found is not None and found.nodes is not None
    assert [(n.name, n.allocatable, bytes(n.echo)) for n in found.nodes] == [
        (n.name, n.allocatable, orjson.dumps(n.echo)) for n in _decode_whole(_body(part)).nodes or ()
    ]


def test_a_list_not_in_kept_order_is_decoded_itself() -> None:
    a, b, c = node("a", {"cpu": "1"}), node("b", {}), node("c", {"memory": "1"})
    assert _decode_fast(_body([a, b, c])) is not None
    swapped = _decode_fast(_body([c, a]))
    changed = _decode_fast(_body([a, node("b", {"cpu": "1"})]))
    assert swapped is not None and swapped.nodes is not None
    assert [(n.name, n.allocatable) for n in swapped.nodes] == [("c", {"memory"}), ("a", {"cpu"})]
    assert changed is not None and changed.nodes is not None
    assert [(n.name, n.allocatable) for n in changed.nodes] == [("a", {"cpu"}), ("b", {"cpu"})]


def test_recent_keeps_values_within_their_byte_budget() -> None:
    """Issue #26, item 1: the request memos weigh what they keep, not only count it."""
    recent = Recent(4, total=100, each=60)
    recent.keep([b"big"], "big", 61)  # over one value's budget: not kept
    assert recent.get([b"big"]) is None
    recent.keep([b"a"], "a", 50)
    recent.keep([b"b"], "b", 40)
    recent.keep([b"c"], "c", 30)  # 120 together: the oldest goes
    assert (recent.get([b"a"]), recent.get([b"b"]), recent.get([b"c"])) == (None, "b", "c")


def test_a_names_list_too_long_is_decoded_but_not_remembered(monkeypatch: Any) -> None:
    monkeypatch.setattr(kept, "LIST_BYTES_KEPT", 200)
    long = orjson.dumps([f"ghost-{i}" for i in range(50)])
    first = wirenodes.decode_names(long)
    assert first is not None and len(first) == 50
    assert long not in wirenodes._NAME_LISTS.values
    assert wirenodes.decode_names(long) is not first  # decoded again: nothing was kept
    short = orjson.dumps(["a", "b"])
    assert wirenodes.decode_names(short) is wirenodes.decode_names(short)
