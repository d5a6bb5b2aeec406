"""The numaplacement codec against vectors printed by the upstream Go package.

tests/fixtures/numaplacement/upstream_vectors.json was printed by
k8stopologyawareschedwg/numaplacement at commit 05c4e97 (its note says how); each case there is
one test here. The property tests cover what the vectors cannot enumerate.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rte.model import numaplacement as np_
from rte.model.numaplacement import ContainerId, NumaPlacementError, Payload
from tests.helpers.paths import FIXTURES

VECTORS: dict[str, Any] = json.loads((FIXTURES / "numaplacement" / "upstream_vectors.json").read_text())


def _containers(case: dict[str, Any]) -> list[tuple[ContainerId, int]]:
    series = case.get("series")
    if series is None:
        return [(ContainerId(ns, pod, ctr), numa) for ns, pod, ctr, numa in case["containers"]]
    exceptions = {int(i): numa for i, numa in series["exceptions"].items()}
    return [
        (
            ContainerId(series["namespace"], f"{series['pod_prefix']}{i}", series["container"]),
            exceptions.get(i, series["numa"]),
        )
        for i in range(series["count"])
    ]


def _payload(metadata: str, vectors: dict[str, str]) -> Payload:
    return np_.unpack_metadata(metadata).with_vectors({int(k): v for k, v in vectors.items()})


@pytest.mark.parametrize("case", VECTORS["encode"], ids=lambda c: c["name"])
def test_encode_matches_upstream(case: dict[str, Any]) -> None:
    placements = _containers(case)
    if "error" in case:
        with pytest.raises(NumaPlacementError) as caught:
            np_.encode(case["numa_nodes"], placements)
        assert caught.value.upstream == case["error"]
        return
    payload = np_.encode(case["numa_nodes"], placements)
    assert payload.pack_metadata() == case["metadata"]
    assert {str(k): v for k, v in payload.vectors.items()} == case["vectors"]


@pytest.mark.parametrize("case", [c for c in VECTORS["encode"] if "error" not in c], ids=lambda c: c["name"])
def test_what_upstream_encodes_decodes_back_to_each_containers_last_node(case: dict[str, Any]) -> None:
    placements = _containers(case)
    decoded = np_.decode(_payload(case["metadata"], case["vectors"]), [cid for cid, _ in placements])
    assert decoded == dict(placements)


# Upstream decodes this one to a placement although its vector holds a byte outside the alphabet;
# the module docstring says why we refuse it (tested on its own below).
_MISREAD = "unmapped byte as delta"


@pytest.mark.parametrize(
    "case", [c for c in VECTORS["decode"] if c["name"] != _MISREAD], ids=lambda c: c["name"]
)
def test_decode_matches_upstream(case: dict[str, Any]) -> None:
    ids = [ContainerId(*c) for c in case["containers"]]
    error = case.get("error")
    if error is None:
        decoded = np_.decode(_payload(case["metadata"], case["vectors"]), ids)
        assert [decoded[cid] for cid in ids] == case["placement"]
        return
    with pytest.raises(NumaPlacementError) as caught:
        np_.decode(_payload(case["metadata"], case["vectors"]), ids)
    if error == "panic":
        # Upstream crashes on these vectors; a damaged vector is corrupted, never a placement.
        assert isinstance(caught.value, np_.CorruptedNUMAVectorError)
    else:
        assert caught.value.upstream == error


def test_upstream_misreads_a_byte_outside_the_alphabet_and_we_refuse_it() -> None:
    """Upstream reads ``\\`` as digit -1 and places 3 containers; the vector is corrupted."""
    case = next(c for c in VECTORS["decode"] if c["name"] == _MISREAD)
    assert case["placement"] == [1, 1, 0]  # what the Go decoder returned
    with pytest.raises(np_.CorruptedNUMAVectorError):
        np_.decode(_payload(case["metadata"], case["vectors"]), [ContainerId(*c) for c in case["containers"]])


@pytest.mark.parametrize("row", VECTORS["hashes"], ids=lambda r: "/".join(r[:3]))
def test_container_hash_matches_upstream(row: list[str]) -> None:
    assert np_.container_hash(ContainerId(*row[:3])) == int(row[3])


@pytest.mark.parametrize("row", VECTORS["leb89"], ids=lambda r: str(r[0]))
def test_leb89_matches_upstream(row: list[Any]) -> None:
    value, text = row
    assert np_.leb89_encode(value) == text
    assert np_.leb89_decode(text) == (value, len(text))


def test_leb89_lengths_at_the_boundaries() -> None:
    lengths = {v: len(np_.leb89_encode(v)) for v in (63, 64, 1663, 1664, 40063, 40064)}
    assert lengths == {63: 1, 64: 2, 1663: 2, 1664: 3, 40063: 3, 40064: 4}


def test_leb89_alphabet_is_json_safe_and_has_89_characters() -> None:
    alphabet = "".join(np_.leb89_encode(i) for i in range(64)) + "".join(
        np_.leb89_encode(64 + 64 * i)[0] for i in range(25)
    )
    assert len(set(alphabet)) == 89
    assert json.dumps(alphabet)[1:-1] == alphabet
    assert not set(alphabet) & set('"&<>\\ ')


# --- properties ---------------------------------------------------------------------------------

_names = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x2FF), max_size=6)
_ids = st.builds(ContainerId, _names, _names, _names)


@st.composite
def _placements(draw: st.DrawFn) -> tuple[int, list[tuple[ContainerId, int]]]:
    nodes = draw(st.integers(1, 8))
    pairs = draw(st.lists(st.tuples(_ids, st.integers(0, nodes - 1)), max_size=60))
    return nodes, pairs


@settings(max_examples=200, deadline=None)
@given(_placements())
def test_round_trip_gives_each_container_its_last_node(
    case: tuple[int, list[tuple[ContainerId, int]]],
) -> None:
    nodes, pairs = case
    payload = np_.encode(nodes, pairs)
    reread = _payload(payload.pack_metadata(), {str(k): v for k, v in payload.vectors.items()})
    assert reread == payload
    assert np_.decode(reread, [cid for cid, _ in pairs]) == dict(pairs)


@settings(max_examples=200, deadline=None)
@given(_placements())
def test_busiest_node_has_the_most_containers_and_the_lowest_id_on_ties(
    case: tuple[int, list[tuple[ContainerId, int]]],
) -> None:
    nodes, pairs = case
    payload = np_.encode(nodes, pairs)
    counts = [0] * nodes
    for numa in dict(pairs).values():
        counts[numa] += 1
    assert payload.busiest_node == (counts.index(max(counts)) if pairs else 0)
    assert payload.busiest_node not in payload.vectors
    assert set(payload.vectors) == {n for n in range(nodes) if counts[n] and n != payload.busiest_node}


@settings(max_examples=200, deadline=None)
@given(_placements(), st.data())
def test_a_set_of_another_size_is_never_decoded(
    case: tuple[int, list[tuple[ContainerId, int]]], data: st.DataObject
) -> None:
    nodes, pairs = case
    payload = np_.encode(nodes, pairs)
    ids = list(dict(pairs))
    if ids and data.draw(st.booleans()):
        ids.pop(data.draw(st.integers(0, len(ids) - 1)))
    else:
        extra = data.draw(_ids.filter(lambda c: c not in dict(pairs)))
        ids.append(extra)
    with pytest.raises(np_.InconsistentContainerSetError):
        np_.decode(payload, ids)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 100_000), unique=True).map(sorted))
def test_vector_round_trip(offsets: list[int]) -> None:
    assert np_.decode_vector(np_.encode_vector(offsets)) == offsets


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12), st.integers(0, 5))
def test_arbitrary_vector_text_decodes_or_raises_our_error(text: str, containers: int) -> None:
    """Never a crash nor an offset outside the set: any text either decodes or is refused."""
    payload = Payload(containers, 2, 0, vectors={1: text})
    ids = [ContainerId("ns", f"p{i}", "c") for i in range(containers)]
    try:
        decoded = np_.decode(payload, ids)
    except NumaPlacementError:
        return
    assert set(decoded) == set(ids)
    assert set(decoded.values()) <= {0, 1}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_metadata_parses_or_raises_our_error(text: str) -> None:
    try:
        payload = np_.unpack_metadata("npv0v001::" + text)
    except NumaPlacementError:
        return
    try:
        payload.validate()
    except NumaPlacementError:
        return
    assert 0 <= payload.busiest_node < payload.numa_nodes
